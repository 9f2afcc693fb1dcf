"""Finding and running the CUDA tools tile_lab needs (the doctor is ``_doctor.py``).

Tools come from NVIDIA's pip wheels (``nvidia/cu13/bin`` inside the environment) first,
then from ``PATH``. Every tool runs with ``CUDA_HOME``/``CUDA_PATH`` removed from its
environment: an older system toolkit named there makes tileiras load the wrong libnvvm
and fail with "failed to compile Tile IR program".
"""

from __future__ import annotations

import functools
import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

from ..errors import ToolchainError

# tool -> the pip package that ships it (named in errors and in the doctor's fixes)
TOOL_PACKAGES: dict[str, str] = {
    "tileiras": "nvidia-cuda-tileiras (pip install 'cuda-tile[tileiras]')",
    "tileirdisasm": "nvidia-cuda-tileiras (pip install 'cuda-tile[tileiras]')",
    "ptxas": "nvidia-cuda-nvcc (pip install 'cuda-tile[tileiras]')",
    "nvcc": "nvidia-cuda-nvcc (pip install nvidia-cuda-nvcc)",
    "nvdisasm": "nvidia-cuda-nvdisasm (pip install nvidia-cuda-nvdisasm)",
    "cuobjdump": "nvidia-cuda-cuobjdump (pip install nvidia-cuda-cuobjdump)",
}

# tool -> what a user loses without it (the doctor says so beside each missing tool)
TOOL_DISABLES: dict[str, str] = {
    "tileiras": "compiling anything: tile_lab.inspect, %%tile --sig/--args, tune, C++ cells",
    "tileirdisasm": "the Tile IR pane of the inspect view",
    "ptxas": "compiling anything (tileiras runs ptxas for its last step)",
    "nvdisasm": "the SASS and PTX panes of the inspect view",
    "nvcc": "CUDA Tile C++: %%tile --lang c++, inspect_cpp, compare, launch_cpp",
    "cuobjdump": "nothing: tile_lab itself does not use it (it is handy for reading a saved "
                 "cubin by hand: cuobjdump -sass kernel.cubin)",
}

# Environment variables never passed to a tool (see module docstring).
STRIPPED_ENV = ("CUDA_HOME", "CUDA_PATH")

# What tile_lab runs (cuobjdump is only listed by the doctor when installed).
REQUIRED_TOOLS = ("tileiras", "tileirdisasm", "ptxas", "nvdisasm")

# cuTile needs a driver that supports CUDA 13.0, i.e. r580 or newer.
MIN_DRIVER_CUDA_VERSION = (13, 0)


# -- finding tools ---------------------------------------------------------------------

def _pip_bin_dirs() -> list[Path]:
    """``bin`` folders of NVIDIA's CUDA 13 pip wheels (namespace package ``nvidia.cu13``)."""
    try:
        import nvidia.cu13 as cu13  # type: ignore[import-not-found]
    except ImportError:
        return []
    return [Path(p) / "bin" for p in getattr(cu13, "__path__", [])]


@functools.cache
def find_tool(name: str) -> Path:
    """Absolute path of tool ``name`` (pip wheel first, then ``PATH``).

    Raises ToolchainError naming the pip package that provides the tool.
    """
    if name not in TOOL_PACKAGES:
        raise ToolchainError(f"unknown tool {name!r}; known tools: {', '.join(TOOL_PACKAGES)}")
    for d in _pip_bin_dirs():
        found = shutil.which(name, path=str(d))
        if found:
            return Path(found)
    found = shutil.which(name)
    if found:
        return Path(found)
    raise ToolchainError(
        f"{name} was not found (looked in the NVIDIA pip wheels and on PATH)",
        hint=f"install {TOOL_PACKAGES[name]}")


def tool_env() -> dict[str, str]:
    """The environment tools run with: ours, minus CUDA_HOME/CUDA_PATH."""
    return {k: v for k, v in os.environ.items() if k not in STRIPPED_ENV}


def run_tool(name: str, args: list[str], *, timeout: float | None = 120,
             input: bytes | None = None, cwd: str | os.PathLike | None = None
             ) -> subprocess.CompletedProcess:
    """Run tool ``name`` with ``args`` (in folder ``cwd``, if given); stdout/stderr captured
    as bytes.

    The exit status is left to the caller (``CompletedProcess.returncode``); a missing
    tool, a tool that cannot start, or a timeout raises ToolchainError.
    """
    exe = find_tool(name)
    try:
        return subprocess.run([str(exe), *args], input=input, capture_output=True,
                              timeout=timeout, env=tool_env(), check=False, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        raise ToolchainError(f"{name} did not finish within {timeout} s",
                             hint="a smaller tile size usually compiles faster") from e
    except OSError as e:
        raise ToolchainError(f"{name} at {exe} could not be started: {e}",
                             hint=f"reinstall {TOOL_PACKAGES[name]}") from e


def tool_failure(name: str, proc: subprocess.CompletedProcess) -> ToolchainError:
    """A ToolchainError describing a tool that exited with a non-zero status."""
    err = proc.stderr.decode("utf-8", "replace").strip() if proc.stderr else ""
    return ToolchainError(f"{name} failed with exit status {proc.returncode}"
                          + (f":\n{err}" if err else ""))


# -- versions --------------------------------------------------------------------------

_RELEASE_RE = re.compile(r"release\s+(\d+\.\d+),\s+V(\d+\.\d+\.\d+)")


def parse_cuda_tool_version(text: str) -> str | None:
    """'13.4.92' from a ``--version`` banner ("Cuda compilation tools, release 13.4, V13.4.92")."""
    m = _RELEASE_RE.search(text)
    if m:
        return m.group(2)
    m = re.search(r"release\s+(\d+\.\d+)", text)
    return m.group(1) if m else None


@functools.cache
def tool_version(name: str) -> str:
    """The version of tool ``name``, e.g. "13.4.92"; raises ToolchainError when unusable."""
    proc = run_tool(name, ["--version"], timeout=30)
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    version = parse_cuda_tool_version(text)
    if proc.returncode != 0 or version is None:
        raise tool_failure(name, proc)
    return version


def tool_versions() -> dict[str, str]:
    """Versions of Python, cuda.tile and each CUDA tool that is installed.

    A tool that is missing or broken reads ``"missing"`` / ``"broken"`` rather than
    raising, so this can always be shown.
    """
    from .. import _cutile_compat

    out = {"python": platform.python_version(),
           "cuda.tile": _cutile_compat.installed_version()}
    for name in ("tileiras", "tileirdisasm", "ptxas", "nvdisasm", "cuobjdump", "nvcc"):
        try:
            out[name] = tool_version(name)
        except ToolchainError as e:
            out[name] = "missing" if "not found" in e.message else "broken"
    return out


@functools.cache
def tileiras_gpu_names() -> tuple[str, ...]:
    """GPU architectures the installed tileiras compiles for (from ``tileiras --help``)."""
    proc = run_tool("tileiras", ["--help"], timeout=30)
    if proc.returncode != 0:
        raise tool_failure("tileiras", proc)
    return parse_tileiras_gpu_names(proc.stdout.decode("utf-8", "replace"))


def parse_tileiras_gpu_names(help_text: str) -> tuple[str, ...]:
    """The ``=sm_XY`` values listed under ``--gpu-name`` in tileiras' help text."""
    names: list[str] = []
    in_gpu_name = False
    for line in help_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("--gpu-name"):
            in_gpu_name = True
            continue
        if in_gpu_name:
            m = re.match(r"=(sm_\d+[a-z]?)\b", stripped)
            if m:
                names.append(m.group(1))
            else:
                in_gpu_name = False
    return tuple(dict.fromkeys(names))


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def cuda_home_version(cuda_home: str | os.PathLike) -> str | None:
    """The CUDA version of the toolkit at ``cuda_home`` (version.json, else bin/nvcc)."""
    root = Path(cuda_home)
    vj = root / "version.json"
    if vj.is_file():
        try:
            data = json.loads(vj.read_text())
            v = data.get("cuda", {}).get("version")
            if v:
                return str(v)
        except (OSError, ValueError, AttributeError):
            pass
    vt = root / "version.txt"  # CUDA <= 11.0
    if vt.is_file():
        m = re.search(r"(\d+\.\d+(?:\.\d+)?)", vt.read_text(errors="replace"))
        if m:
            return m.group(1)
    nvcc = root / "bin" / "nvcc"
    if nvcc.is_file():
        try:
            proc = subprocess.run([str(nvcc), "--version"], capture_output=True, timeout=30,
                                  env=tool_env(), check=False)
            return parse_cuda_tool_version(proc.stdout.decode("utf-8", "replace"))
        except (OSError, subprocess.TimeoutExpired):
            return None
    return None
