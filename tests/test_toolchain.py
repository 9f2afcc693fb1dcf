"""Finding and running tools, versions, and the doctor's trap detection."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from tile_lab import _cutile_compat, toolchain
from tile_lab.__main__ import main
from tile_lab.errors import ToolchainError

# the tools tile_lab's dependencies install (cuobjdump is optional)
TOOLS = ("tileiras", "tileirdisasm", "ptxas", "nvdisasm", "nvcc")


@pytest.mark.parametrize("name", TOOLS)
def test_find_tool_finds_the_pip_tools(name):
    path = toolchain.find_tool(name)
    assert path.name == name and os.access(path, os.X_OK)


def test_missing_tool_names_its_pip_package(monkeypatch):
    monkeypatch.setattr(toolchain, "_pip_bin_dirs", lambda: [])
    monkeypatch.setenv("PATH", "/nonexistent")
    toolchain.find_tool.cache_clear()
    try:
        with pytest.raises(ToolchainError) as info:
            toolchain.find_tool("nvdisasm")
        assert "nvdisasm was not found" in info.value.message
        assert "nvidia-cuda-nvdisasm" in info.value.hint
        with pytest.raises(ToolchainError, match="unknown tool"):
            toolchain.find_tool("gcc")
    finally:
        toolchain.find_tool.cache_clear()


def test_run_tool_strips_cuda_home(monkeypatch):
    # `env` stands in for a CUDA tool: it prints the environment it was started with
    monkeypatch.setattr(toolchain, "find_tool", lambda name: Path(shutil.which("env")))
    monkeypatch.setenv("CUDA_HOME", "/opt/old-cuda")
    monkeypatch.setenv("CUDA_PATH", "/opt/old-cuda")
    monkeypatch.setenv("TILE_LAB_MARKER", "kept")
    out = toolchain.run_tool("tileiras", []).stdout.decode()
    assert "TILE_LAB_MARKER=kept" in out
    assert "CUDA_HOME" not in out and "CUDA_PATH" not in out


def test_run_tool_timeout_raises():
    with pytest.raises(ToolchainError, match="did not finish"):
        toolchain.run_tool("nvdisasm", ["--help"], timeout=1e-6)


def test_versions():
    versions = toolchain.tool_versions()
    assert versions["cuda.tile"].startswith("1.7")
    assert versions["tileiras"].startswith("13.")
    assert toolchain.parse_cuda_tool_version(
        "Cuda compilation tools, release 12.4, V12.4.131") == "12.4.131"


def test_tileiras_gpu_names():
    names = toolchain.tileiras_gpu_names()
    assert {"sm_80", "sm_90", "sm_100"} <= set(names)
    assert "sm_75" not in names


def _fake_toolkit(root: Path, version: str, *, with_json: bool) -> Path:
    (root / "bin").mkdir(parents=True)
    if with_json:
        (root / "version.json").write_text(json.dumps({"cuda": {"version": version}}))
    else:
        nvcc = root / "bin" / "nvcc"
        nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release "
                        f"{version.rsplit('.', 1)[0]}, V{version}'\n")
        nvcc.chmod(nvcc.stat().st_mode | stat.S_IXUSR)
    return root


@pytest.mark.parametrize("with_json", [True, False])
def test_cuda_home_version(tmp_path, with_json):
    home = _fake_toolkit(tmp_path / "cuda", "12.4.1", with_json=with_json)
    assert toolchain.cuda_home_version(home) == "12.4.1"


@pytest.mark.parametrize("with_json", [True, False])
def test_doctor_flags_an_old_cuda_home(tmp_path, monkeypatch, with_json):
    # a fake toolkit has no libnvvm, so tileiras really fails with it: the doctor says so
    home = _fake_toolkit(tmp_path / "cuda-12.4", "12.4.1", with_json=with_json)
    monkeypatch.setenv("CUDA_HOME", str(home))
    [finding] = [f for f in toolchain.doctor().findings if "CUDA_HOME" in f.message]
    assert finding.level == "warning" and "unset CUDA_HOME" in finding.fix
    assert "(CUDA 12.4.1) set, tileiras fails" in finding.message
    # a toolkit tileiras happens to survive is still flagged for its version
    monkeypatch.setattr(toolchain, "smoke_compile", lambda keep_env=False: None)
    [finding] = [f for f in toolchain.doctor().findings if "CUDA_HOME" in f.message]
    assert "12.4.1" in finding.message and "older than tileiras" in finding.message


def test_doctor_accepts_a_new_cuda_home(tmp_path, monkeypatch):
    home = _fake_toolkit(tmp_path / "cuda-13.4", "13.4.0", with_json=True)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setattr(toolchain, "smoke_compile", lambda keep_env=False: None)  # works
    assert not [f for f in toolchain.doctor().findings if "CUDA_HOME" in f.message]


def _fake_gpu(monkeypatch, cc, driver_cuda, smi=(None, None)):
    for var in ("CUDA_HOME", "CUDA_PATH"):  # keep the machine's toolkit out of these tests
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(_cutile_compat, "gpu_compute_capability", lambda device=0: cc)
    monkeypatch.setattr(_cutile_compat, "driver_cuda_version", lambda: driver_cuda)
    monkeypatch.setattr(toolchain, "_nvidia_smi_name_and_driver", lambda: smi)


def test_doctor_flags_an_arch_tileiras_cannot_compile_for(monkeypatch):
    _fake_gpu(monkeypatch, (7, 5), (13, 0), ("Tesla T4", "580.65.06"))
    report = toolchain.doctor()
    assert report.gpu.arch == "sm_75" and report.gpu.name == "Tesla T4"
    [finding] = [f for f in report.findings if "sm_75" in f.message]
    assert finding.level == "error" and "sm_90" in finding.message
    assert not report.ok


@pytest.mark.parametrize("cuda, smi_driver", [((12, 4), None), ((13, 0), "550.54.15")])
def test_doctor_flags_a_driver_older_than_r580(monkeypatch, cuda, smi_driver):
    _fake_gpu(monkeypatch, (9, 0), cuda, ("NVIDIA H100", smi_driver) if smi_driver else
              (None, None))
    report = toolchain.doctor()
    [finding] = [f for f in report.findings if "r580" in f.message]
    assert finding.level == "error" and "580" in finding.fix


def _complete_front_end(monkeypatch):
    """The extension, Node and Chromium all present, whatever this machine has."""
    monkeypatch.setattr(toolchain, "_front_end_pieces", lambda: ([], []))


def _findings_but_cuobjdump(report):
    return [f for f in report.findings if "cuobjdump" not in f.message]


def test_doctor_is_happy_with_a_good_gpu(monkeypatch):
    _fake_gpu(monkeypatch, (9, 0), (13, 0), ("NVIDIA H100", "580.65.06"))
    _complete_front_end(monkeypatch)
    report = toolchain.doctor()
    assert report.ok and _findings_but_cuobjdump(report) == []
    assert "NVIDIA H100 (sm_90)" in str(report)


def test_doctor_reports_a_missing_tool(monkeypatch):
    real_find_tool = toolchain.find_tool

    def find_tool(name):
        if name in ("nvdisasm", "cuobjdump"):
            raise ToolchainError(f"{name} was not found")
        return real_find_tool(name)

    monkeypatch.setattr(toolchain, "find_tool", find_tool)
    report = toolchain.doctor()
    versions = [(c.name, c.version) for c in report.components]
    assert ("nvdisasm", "missing") in versions and ("cuobjdump", "missing") in versions
    [finding] = [f for f in report.findings if "nvdisasm" in f.message]
    assert finding.level == "error" and finding.fix == "pip install nvidia-cuda-nvdisasm"
    assert "SASS and PTX panes" in finding.message  # what the missing tool disables
    [optional] = [f for f in report.findings if "cuobjdump" in f.message]
    assert optional.level == "info" and "nothing in tile_lab" in optional.message


def test_doctor_says_a_missing_nvcc_disables_cpp(monkeypatch):
    real_find_tool = toolchain.find_tool

    def find_tool(name):
        if name == "nvcc":
            raise ToolchainError("nvcc was not found")
        return real_find_tool(name)

    monkeypatch.setattr(toolchain, "find_tool", find_tool)
    [finding] = [f for f in toolchain.doctor().findings if "nvcc" in f.message]
    assert finding.level == "warning" and "%%tile --lang c++" in finding.message


def test_doctor_reports_extension_node_and_chromium_missing(tmp_path, monkeypatch):
    monkeypatch.setattr("jupyter_core.paths.jupyter_path",
                        lambda *parts: [str(tmp_path / "data" / Path(*parts))])
    monkeypatch.delenv("TILE_LAB_CHROMIUM", raising=False)
    monkeypatch.setattr(toolchain.shutil, "which", lambda name, **kw: None)
    components, findings = toolchain._front_end_pieces()
    rows = {c.name: c.version for c in components}
    assert rows == {"JupyterLab extension": "not installed", "node": "missing",
                    "chromium": "missing"}
    text = " ".join(f.message for f in findings)
    assert "JupyterLab extension is not installed" in text and "HTML fallback" in text
    assert "Node.js not found" in text and "Chromium not found" in text
    assert "browser tests" in text


def test_doctor_sees_a_disabled_extension(tmp_path, monkeypatch):
    ext = tmp_path / "data" / "labextensions" / "tile-lab"
    ext.mkdir(parents=True)
    (ext / "package.json").write_text("{}")
    conf = tmp_path / "conf" / "labconfig"
    conf.mkdir(parents=True)
    monkeypatch.setattr("jupyter_core.paths.jupyter_path",
                        lambda *parts: [str(tmp_path / "data" / Path(*parts))])
    monkeypatch.setattr("jupyter_core.paths.jupyter_config_path",
                        lambda: [str(tmp_path / "conf")])
    assert toolchain.labextension_status() == (str(ext), True)
    (conf / "page_config.json").write_text('{"disabledExtensions": {"tile-lab": true}}')
    assert toolchain.labextension_status() == (str(ext), False)


def test_doctor_report_without_gpu(monkeypatch):
    _fake_gpu(monkeypatch, None, None)
    _complete_front_end(monkeypatch)
    report = toolchain.doctor()
    assert report.gpu is None and report.ok
    [no_gpu] = _findings_but_cuobjdump(report)
    assert no_gpu.level == "info"
    assert "need an NVIDIA GPU (Hopper or newer, driver ≥ r580)" in no_gpu.message
    text, html = str(report), report._repr_html_()
    assert str(toolchain.find_tool("tileiras")) in text
    assert "<table>" in html and "tileiras" in html and "no NVIDIA GPU" in html
    assert toolchain.doctor()._repr_html_() == html  # deterministic


def test_doctor_flags_an_unsupported_cutile(monkeypatch):
    monkeypatch.setattr(_cutile_compat, "installed_version", lambda: "1.8.0")
    report = toolchain.doctor()
    assert any(f.level == "error" and "1.8.0" in f.message for f in report.findings)


def test_command_line_doctor(capsys, monkeypatch):
    _fake_gpu(monkeypatch, None, None)
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "tile_lab doctor" in out and "tileiras" in out
    _fake_gpu(monkeypatch, (7, 5), (13, 0))
    assert main(["doctor"]) == 1


def test_smoke_compile():
    assert toolchain.smoke_compile() is None


def test_doctor_catches_the_libnvvm_trap(tmp_path, monkeypatch):
    # an "old toolkit" whose libnvvm tileiras would load if CUDA_HOME reached it
    home = tmp_path / "cuda-12.2"
    (home / "nvvm" / "lib64").mkdir(parents=True)
    (home / "nvvm" / "lib64" / "libnvvm.so").write_bytes(b"not a shared library")
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert "failed to compile Tile IR program" in toolchain.smoke_compile(keep_env=True)
    assert toolchain.smoke_compile() is None  # tile_lab's own runs strip CUDA_HOME
    report = toolchain.doctor()
    [finding] = [f for f in report.findings if "CUDA_HOME" in f.message]
    assert finding.level == "warning" and "failed to compile Tile IR program" in finding.message
    assert finding.fix.startswith("unset CUDA_HOME")
