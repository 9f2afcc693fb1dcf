"""The environment doctor (tile_lab._doctor): every piece, what a missing one disables,
and the known traps, with their fixes."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_toolchain import _fake_toolkit

from tile_lab import _cutile_compat, _doctor
from tile_lab.__main__ import main
from tile_lab.compile import toolchain
from tile_lab.errors import ToolchainError


@pytest.mark.parametrize("with_json", [True, False])
def test_doctor_flags_an_old_cuda_home(tmp_path, monkeypatch, with_json):
    # a fake toolkit has no libnvvm, so tileiras really fails with it: the doctor says so
    home = _fake_toolkit(tmp_path / "cuda-12.4", "12.4.1", with_json=with_json)
    monkeypatch.setenv("CUDA_HOME", str(home))
    [finding] = [f for f in _doctor.doctor().findings if "CUDA_HOME" in f.message]
    assert finding.level == "warning" and "unset CUDA_HOME" in finding.fix
    assert "(CUDA 12.4.1) set, tileiras fails" in finding.message
    # a toolkit tileiras happens to survive is still flagged for its version
    monkeypatch.setattr(_doctor, "smoke_compile", lambda keep_env=False: None)
    [finding] = [f for f in _doctor.doctor().findings if "CUDA_HOME" in f.message]
    assert "12.4.1" in finding.message and "older than tileiras" in finding.message


def test_doctor_accepts_a_new_cuda_home(tmp_path, monkeypatch):
    home = _fake_toolkit(tmp_path / "cuda-13.4", "13.4.0", with_json=True)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setattr(_doctor, "smoke_compile", lambda keep_env=False: None)  # works
    assert not [f for f in _doctor.doctor().findings if "CUDA_HOME" in f.message]


def _fake_gpu(monkeypatch, cc, driver_cuda, smi=(None, None)):
    for var in ("CUDA_HOME", "CUDA_PATH"):  # keep the machine's toolkit out of these tests
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(_cutile_compat, "gpu_compute_capability", lambda device=0: cc)
    monkeypatch.setattr(_cutile_compat, "driver_cuda_version", lambda: driver_cuda)
    monkeypatch.setattr(_doctor, "_nvidia_smi_name_and_driver", lambda: smi)


def test_doctor_flags_an_arch_tileiras_cannot_compile_for(monkeypatch):
    _fake_gpu(monkeypatch, (7, 5), (13, 0), ("Tesla T4", "580.65.06"))
    report = _doctor.doctor()
    assert report.gpu.arch == "sm_75" and report.gpu.name == "Tesla T4"
    [finding] = [f for f in report.findings if "sm_75" in f.message]
    assert finding.level == "error" and "sm_90" in finding.message
    assert not report.ok


@pytest.mark.parametrize("cuda, smi_driver", [((12, 4), None), ((13, 0), "550.54.15")])
def test_doctor_flags_a_driver_older_than_r580(monkeypatch, cuda, smi_driver):
    _fake_gpu(monkeypatch, (9, 0), cuda, ("NVIDIA H100", smi_driver) if smi_driver else
              (None, None))
    report = _doctor.doctor()
    [finding] = [f for f in report.findings if "r580" in f.message]
    assert finding.level == "error" and "580" in finding.fix


def _complete_front_end(monkeypatch):
    """The extension, Node and Chromium all present, whatever this machine has."""
    monkeypatch.setattr(_doctor, "_front_end_pieces", lambda: ([], []))


def _findings_but_cuobjdump(report):
    return [f for f in report.findings if "cuobjdump" not in f.message]


def test_doctor_is_happy_with_a_good_gpu(monkeypatch):
    _fake_gpu(monkeypatch, (9, 0), (13, 0), ("NVIDIA H100", "580.65.06"))
    _complete_front_end(monkeypatch)
    report = _doctor.doctor()
    assert report.ok and _findings_but_cuobjdump(report) == []
    assert "NVIDIA H100 (sm_90)" in str(report)


def test_doctor_reports_a_missing_tool(monkeypatch):
    real_find_tool = toolchain.find_tool

    def find_tool(name):
        if name in ("nvdisasm", "cuobjdump"):
            raise ToolchainError(f"{name} was not found")
        return real_find_tool(name)

    monkeypatch.setattr(toolchain, "find_tool", find_tool)
    report = _doctor.doctor()
    versions = [(c.name, c.version) for c in report.components]
    assert ("nvdisasm", "missing") in versions and ("cuobjdump", "missing") in versions
    [finding] = [f for f in report.findings if "nvdisasm" in f.message]
    assert finding.level == "error" and finding.fix == "pip install nvidia-cuda-nvdisasm"
    assert "SASS and PTX panes" in finding.message  # what the missing tool disables
    [optional] = [f for f in report.findings if "cuobjdump" in f.message]
    assert optional.level == "info" and "tile_lab itself does not use it" in optional.message


def test_doctor_says_a_missing_nvcc_disables_cpp(monkeypatch):
    real_find_tool = toolchain.find_tool

    def find_tool(name):
        if name == "nvcc":
            raise ToolchainError("nvcc was not found")
        return real_find_tool(name)

    monkeypatch.setattr(toolchain, "find_tool", find_tool)
    [finding] = [f for f in _doctor.doctor().findings if "nvcc" in f.message]
    assert finding.level == "warning" and "%%tile --lang c++" in finding.message


def test_doctor_reports_extension_node_and_chromium_missing(tmp_path, monkeypatch):
    monkeypatch.setattr("jupyter_core.paths.jupyter_path",
                        lambda *parts: [str(tmp_path / "data" / Path(*parts))])
    monkeypatch.delenv("TILE_LAB_CHROMIUM", raising=False)
    monkeypatch.setattr(_doctor.shutil, "which", lambda name, **kw: None)
    components, findings = _doctor._front_end_pieces()
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
    assert _doctor.labextension_status() == (str(ext), True)
    (conf / "page_config.json").write_text('{"disabledExtensions": {"tile-lab": true}}')
    assert _doctor.labextension_status() == (str(ext), False)


def test_doctor_report_without_gpu(monkeypatch):
    _fake_gpu(monkeypatch, None, None)
    _complete_front_end(monkeypatch)
    report = _doctor.doctor()
    assert report.gpu is None and report.ok
    [no_gpu] = _findings_but_cuobjdump(report)
    assert no_gpu.level == "info"
    assert "need an NVIDIA GPU (Hopper or newer, driver ≥ r580)" in no_gpu.message
    text, html = str(report), report._repr_html_()
    assert str(toolchain.find_tool("tileiras")) in text
    assert "<table>" in html and "tileiras" in html and "no NVIDIA GPU" in html
    assert _doctor.doctor()._repr_html_() == html  # deterministic


def test_doctor_flags_an_unsupported_cutile(monkeypatch):
    monkeypatch.setattr(_cutile_compat, "installed_version", lambda: "1.8.0")
    report = _doctor.doctor()
    assert any(f.level == "error" and "1.8.0" in f.message for f in report.findings)


def test_command_line_doctor(capsys, monkeypatch):
    _fake_gpu(monkeypatch, None, None)
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "tile_lab doctor" in out and "tileiras" in out
    _fake_gpu(monkeypatch, (7, 5), (13, 0))
    assert main(["doctor"]) == 1


def test_report_displays_as_its_text_in_a_terminal(monkeypatch):
    from IPython.core.formatters import DisplayFormatter

    _fake_gpu(monkeypatch, None, None)
    report = _doctor.doctor()
    # a terminal IPython asks for text/plain only: the table, not the dataclass repr
    terminal, _ = DisplayFormatter().format(report, include={"text/plain"})
    assert terminal == {"text/plain": str(report)}
    assert str(report).startswith("tile_lab doctor\n")
    assert DisplayFormatter().format(report)[0]["text/html"] == report._repr_html_()


def test_smoke_compile():
    assert _doctor.smoke_compile() is None


def test_doctor_catches_the_libnvvm_trap(tmp_path, monkeypatch):
    # an "old toolkit" whose libnvvm tileiras would load if CUDA_HOME reached it
    home = tmp_path / "cuda-12.2"
    (home / "nvvm" / "lib64").mkdir(parents=True)
    (home / "nvvm" / "lib64" / "libnvvm.so").write_bytes(b"not a shared library")
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert "failed to compile Tile IR program" in _doctor.smoke_compile(keep_env=True)
    assert _doctor.smoke_compile() is None  # tile_lab's own runs strip CUDA_HOME
    report = _doctor.doctor()
    [finding] = [f for f in report.findings if "CUDA_HOME" in f.message]
    assert finding.level == "warning" and "failed to compile Tile IR program" in finding.message
    assert finding.fix.startswith("unset CUDA_HOME")


def test_doctor_reports_triton_and_what_it_enables(monkeypatch):
    versions = {"triton": "3.5.1", "torch": "2.9.1"}
    monkeypatch.setattr(_doctor, "_dist_version", lambda name: versions.get(name))
    report = _doctor.doctor()
    (row,) = [c for c in report.components if c.name == "triton"]
    assert row.version == "3.5.1"
    assert row.where.startswith("enables %%tile --lang triton") and "notebook 19" in row.where
    assert not [f for f in report.findings if "%%tile --lang triton" in f.message]
    versions["triton"] = None  # as without the extra
    report = _doctor.doctor()
    (missing,) = [f for f in report.findings if "%%tile --lang triton" in f.message]
    assert missing.message.startswith("triton not installed: no %%tile --lang triton")
    assert missing.fix == 'pip install "tile_lab[triton]"'
    assert {c.name: c.version for c in report.components}["triton"] == \
        "not installed (optional)"


def test_command_line_refuses_abbreviated_options(capsys, tmp_path):
    # "--out" is not taken for --output: an option is written in full or refused, by name
    with pytest.raises(SystemExit) as exited:
        main(["export", str(tmp_path / "n.ipynb"), "--out", str(tmp_path / "n.html")])
    assert exited.value.code == 2
    assert "tile-lab: error: unrecognized arguments: --out" in capsys.readouterr().err
