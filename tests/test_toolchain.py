"""Finding and running tools, versions, and the doctor's trap detection."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from tile_lab.compile import toolchain
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
