"""The compile tools' outputs on disk, shared by every process of the user.

tileiras, tileirdisasm, nvdisasm and nvcc cost 0.1-1.5 s of CPU a run, and each process
(a restarted notebook kernel, a script, a test worker) used to run them again for a kernel
another process had just compiled. :func:`run` runs a tool in a fresh temporary folder with
its input files named by role (``kernel.cubin``) and relative paths in the arguments, so
the command line holds no temporary path, and keeps what a successful run produced (stdout,
stderr and the output files asked for) under a key that is a SHA-256 of:

* this cache's format;
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
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ToolchainError
from .toolchain import find_tool, run_tool

ENV_DIR = "TILE_LAB_CACHE_DIR"
ENV_MAX_MB = "TILE_LAB_CACHE_MAX_MB"
DEFAULT_MAX_MB = 512
FORMAT = b"tile_lab tool cache 1\n"
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


def directory() -> Path | None:
    """The cache folder, or None when ``TILE_LAB_CACHE_DIR=off``."""
    value = os.environ.get(ENV_DIR, "").strip()
    if value.lower() in _OFF:
        return None
    if value:
        if not os.path.isabs(value):
            raise ToolchainError(f"{ENV_DIR}={value!r}: use off (no cache) or an absolute "
                                 "folder path")
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tile_lab" / "tools"


def max_bytes() -> int:
    """The size bound (``TILE_LAB_CACHE_MAX_MB``, default 512 MB)."""
    try:
        return int(float(os.environ.get(ENV_MAX_MB, DEFAULT_MAX_MB)) * 2**20)
    except ValueError:
        return DEFAULT_MAX_MB * 2**20


def tool_identity(name: str) -> str:
    """Resolved path, size and mtime of tool ``name``: changes whenever the tool does."""
    path = find_tool(name).resolve()
    st = path.stat()
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def key(tools: Sequence[str], args: Sequence[str], inputs: Mapping[str, bytes],
        outputs: Sequence[str], extra: bytes = b"") -> str:
    """The entry's name: a SHA-256 of everything the run's output depends on."""
    h = hashlib.sha256(FORMAT)
    for part in ([tool_identity(t) for t in tools], list(args), sorted(outputs)):
        h.update(json.dumps(part).encode() + b"\0")
    for role in sorted(inputs):
        data = inputs[role]
        h.update(f"{role}:{len(data)}:".encode())
        h.update(data)
    h.update(b"extra:")
    h.update(extra)
    return h.hexdigest()


def run(tool: str, args: Sequence[str], *, inputs: Mapping[str, bytes],
        outputs: Sequence[str] = (), timeout: float | None = 120,
        also: Sequence[str] = (), extra: bytes | None = b"") -> ToolRun:
    """Run ``tool args`` in a fresh temporary folder holding ``inputs`` (file name -> bytes),
    or return the outputs of an earlier successful run of the same command on the same
    bytes. ``args`` name files relatively (``kernel.cubin``); ``outputs`` are the files to
    keep; ``also`` names tools the run depends on besides ``tool`` (tileiras runs ptxas);
    ``extra`` is what else the output depends on, None when the caller cannot say (then
    the run is not cached).
    Errors of the tool itself (missing, timeout) raise ToolchainError as ``run_tool``."""
    where = directory() if extra is not None else None
    digest = key([tool, *also], args, inputs, outputs, extra or b"") if where is not None else ""
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


# -- entries: FORMAT, a JSON header line, the blobs, then a SHA-256 of all that ---------

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
        if hashlib.sha256(body).digest() != check or not body.startswith(FORMAT):
            raise ValueError("corrupt")
        header_end = body.index(b"\n", len(FORMAT))
        header = json.loads(body[len(FORMAT):header_end])
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
    body = FORMAT + json.dumps(header).encode() + b"\n" + b"".join(blobs)
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
        evict(where, max_bytes())
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
