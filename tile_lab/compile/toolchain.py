"""Finding and running the CUDA tools tile_lab needs, their outputs kept on disk (the doctor
is ``_doctor.py``).

Tools come from NVIDIA's pip wheels (``nvidia/cu13/bin`` inside the environment) first,
then from ``PATH``. Every tool runs with ``CUDA_HOME``/``CUDA_PATH`` removed from its
environment: an older system toolkit named there makes tileiras load the wrong libnvvm
and fail with "failed to compile Tile IR program".

tileiras, tileirdisasm, nvdisasm and nvcc cost 0.1-1.5 s of CPU a run, and each process
(a restarted notebook kernel, a script, a test worker) used to run them again for a kernel
another process had just compiled. :func:`run_cached` runs a tool in a fresh temporary
folder with its input files named by role (``kernel.cubin``) and relative paths in the
arguments, so the command line holds no temporary path, and keeps what a successful run
produced (stdout, stderr and the output files asked for) under a key that is a SHA-256 of:

* the cache's format;
* each tool's identity: its resolved path, size and modification time (an upgraded or
  reinstalled toolchain is a new key, without running ``--version``) — for tileiras also
  ptxas, which it runs;
* the argument list (with the role names), and the bytes of every input file;
* ``extra``: what else the caller knows the output depends on (nvcc: included headers).

A failing run is never kept: it runs, and fails with its own message, every time.

Entries are single files written to a temporary name and renamed into place
(``os.replace``), so concurrent processes (test workers, notebook kernels) see a whole entry
or none; each ends with a SHA-256 of its body, and an entry that does not check out (cut
short, corrupted, another format) is a miss and is removed. Reading an entry touches its
modification time; after each write the least recently used entries are removed until the
folder holds at most ``TILE_LAB_CACHE_MAX_MB`` (512 by default).

Where: ``TILE_LAB_CACHE_DIR`` (an absolute path), else ``$XDG_CACHE_HOME/tile_lab/tools``
(``~/.cache/tile_lab/tools``, beside the emulator's verdict cache);
``TILE_LAB_CACHE_DIR=off`` turns it off. A cache that cannot be written is skipped silently:
it only saves time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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


# -- running tools, their outputs kept on disk (see the module docstring) ---------------

CACHE_DIR_ENV = "TILE_LAB_CACHE_DIR"
CACHE_MAX_MB_ENV = "TILE_LAB_CACHE_MAX_MB"
DEFAULT_CACHE_MAX_MB = 512
CACHE_FORMAT = b"tile_lab tool cache 1\n"
_OFF = ("off", "0", "false", "no", "none")


@dataclass(frozen=True)
class ToolRun:
    """A tool's run: exit status, output, the output files it wrote (role -> bytes; a file
    the tool did not write is absent), and ``workdir``, the folder it ran in (for an entry
    read from the cache, the folder of the run that made it: tools such as nvcc write it
    into their output)."""

    returncode: int
    stdout: bytes
    stderr: bytes
    files: Mapping[str, bytes] = field(default_factory=dict)
    workdir: str = ""
    cached: bool = False


def cache_directory() -> Path | None:
    """The cache folder, or None when ``TILE_LAB_CACHE_DIR=off``."""
    value = os.environ.get(CACHE_DIR_ENV, "").strip()
    if value.lower() in _OFF:
        return None
    if value:
        if not os.path.isabs(value):
            raise ToolchainError(f"{CACHE_DIR_ENV}={value!r}: use off (no cache) or an "
                                 "absolute folder path")
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tile_lab" / "tools"


def cache_max_bytes() -> int:
    """The size bound (``TILE_LAB_CACHE_MAX_MB``, default 512 MB)."""
    try:
        return int(float(os.environ.get(CACHE_MAX_MB_ENV, DEFAULT_CACHE_MAX_MB)) * 2**20)
    except ValueError:
        return DEFAULT_CACHE_MAX_MB * 2**20


def tool_identity(name: str) -> str:
    """Resolved path, size and mtime of tool ``name``: changes whenever the tool does."""
    path = find_tool(name).resolve()
    st = path.stat()
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def cache_key(tools: Sequence[str], args: Sequence[str], inputs: Mapping[str, bytes],
              outputs: Sequence[str], extra: bytes = b"") -> str:
    """The entry's name: a SHA-256 of everything the run's output depends on."""
    h = hashlib.sha256(CACHE_FORMAT)
    for part in ([tool_identity(t) for t in tools], list(args), sorted(outputs)):
        h.update(json.dumps(part).encode() + b"\0")
    for role in sorted(inputs):
        data = inputs[role]
        h.update(f"{role}:{len(data)}:".encode())
        h.update(data)
    h.update(b"extra:")
    h.update(extra)
    return h.hexdigest()


def run_cached(tool: str, args: Sequence[str], *, inputs: Mapping[str, bytes],
               outputs: Sequence[str] = (), timeout: float | None = 120,
               also: Sequence[str] = (), extra: bytes | None = b"") -> ToolRun:
    """Run ``tool args`` in a fresh temporary folder holding ``inputs`` (file name -> bytes),
    or return the outputs of an earlier successful run of the same command on the same
    bytes. ``args`` name files relatively (``kernel.cubin``); ``outputs`` are the files to
    keep; ``also`` names tools the run depends on besides ``tool`` (tileiras runs ptxas);
    ``extra`` is what else the output depends on, None when the caller cannot say (then
    the run is not cached).
    Errors of the tool itself (missing, timeout) raise ToolchainError as ``run_tool``."""
    where = cache_directory() if extra is not None else None
    digest = (cache_key([tool, *also], args, inputs, outputs, extra or b"")
              if where is not None else "")
    if where is not None:
        hit = _read(where, digest)
        if hit is not None:
            return hit
    with tempfile.TemporaryDirectory(prefix="tile_lab_") as tmp:
        tmp = os.path.realpath(tmp)  # as the tool's getcwd() names it (nvcc records it)
        for role, data in inputs.items():
            (Path(tmp) / role).write_bytes(data)
        proc = run_tool(tool, list(args), timeout=timeout, cwd=tmp)
        files = {}
        if proc.returncode == 0:
            for role in outputs:
                path = Path(tmp) / role
                if path.is_file():
                    files[role] = path.read_bytes()
    result = ToolRun(proc.returncode, proc.stdout or b"", proc.stderr or b"", files, tmp)
    if where is not None and proc.returncode == 0:
        _write(where, digest, result)
    return result


# -- cache entries: CACHE_FORMAT, a JSON header line, the blobs, then a SHA-256 of all that

def _entry_path(where: Path, digest: str) -> Path:
    return where / digest[:2] / digest


def _read(where: Path, digest: str) -> ToolRun | None:
    path = _entry_path(where, digest)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        body, check = data[:-32], data[-32:]
        if hashlib.sha256(body).digest() != check or not body.startswith(CACHE_FORMAT):
            raise ValueError("corrupt")
        header_end = body.index(b"\n", len(CACHE_FORMAT))
        header = json.loads(body[len(CACHE_FORMAT):header_end])
        blobs, at = [], header_end + 1
        for size in header["sizes"]:
            blobs.append(body[at:at + size])
            at += size
        if at != len(body):
            raise ValueError("corrupt")
        stdout, stderr, *files = blobs
        result = ToolRun(0, stdout, stderr, dict(zip(header["files"], files, strict=True)),
                         header["workdir"], cached=True)
    except (ValueError, KeyError, TypeError, IndexError):
        _remove(path)  # a cut-short or foreign entry: a miss, and made again
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # "recently used", for eviction
    return result


def _write(where: Path, digest: str, result: ToolRun) -> None:
    names = list(result.files)
    blobs = [result.stdout, result.stderr, *(result.files[n] for n in names)]
    header = {"files": names, "sizes": [len(b) for b in blobs], "workdir": result.workdir}
    body = CACHE_FORMAT + json.dumps(header).encode() + b"\n" + b"".join(blobs)
    path = _entry_path(where, digest)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(body + hashlib.sha256(body).digest())
            os.replace(tmp, path)  # atomic: readers see the whole entry or none
        except BaseException:
            _remove(Path(tmp))
            raise
        evict(where, cache_max_bytes())
    except OSError:  # read-only home, full disk: the cache only saves time
        pass


def evict(where: Path, limit: int) -> None:
    """Remove the least recently used entries until those left take at most ``limit`` bytes."""
    entries = []
    stale = time.time_ns() - 3600 * 10**9
    for sub in where.glob("??"):
        try:
            with os.scandir(sub) as it:
                for e in it:
                    st = e.stat()
                    if not e.name.startswith(".tmp-"):
                        entries.append((st.st_mtime_ns, st.st_size, e.path))
                    elif st.st_mtime_ns < stale:  # left by a process killed mid-write
                        _remove(Path(e.path))
        except OSError:
            continue
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        _remove(Path(path))
        total -= size


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):  # another process removed it first
        path.unlink()


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
