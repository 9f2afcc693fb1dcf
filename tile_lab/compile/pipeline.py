"""The compile pipeline: one function per stage, each stage's text mapped to source lines.

    Python kernel + signature
      -> cuTile front end ..... cuTile IR (``// file:line:col`` per op)  cutile_stage
      -> Tile IR bytecode ..... tileirdisasm -g (``loc(...)`` per op)    tileir.py:
                                                                         disassemble_tileir
      -> tileiras --lineinfo .. cubin + YAML remarks                     run_tileiras,
                                                                         parse_remarks
      -> nvdisasm -g -gp ...... SASS (``//## File ..., line N``)         disassembly.py:
      -> cubin section ........ PTX (lines mapped through the SASS)      sass_from_cubin,
                                                                         ptx_from_cubin

SASS and PTX are lazy in ``compile_kernel``: nvdisasm costs 0.5-1.5 s of CPU for any
cubin (more than all of tile_lab's other work), and the API's users that never read them
(the tuner's "why" view, ``cpp.compare``, panes without SASS/PTX) should not wait for it.
The Tile IR text (tileirdisasm) is made the same way, so a compile whose Tile IR nobody
reads (a timing run) needs no tileirdisasm. :func:`machine_code_work` schedules both: in an
IPython session it starts each on a small background pool the moment its input exists (a
subprocess, so the GIL stays free), elsewhere the first read runs it (``TILE_LAB_SASS``
chooses); the stages wait for it only when first read (``LazyStages``).

PTX: tileiras has no PTX output option (not even under ``--help-hidden``), but with
``--lineinfo`` it embeds the PTX it compiled in the cubin (``.nv_debug_ptx_txt``) and
maps each SASS instruction to a PTX line; ``ptx_from_cubin`` reads both.

Stage texts are made for display: location suffixes and tables are removed (the line
map carries them) and no temporary path appears in any text.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import _cutile_compat as compat
from ..errors import CompileError, SignatureError, TileLabError
from .artifacts import LazyStages, Remark, StageText
from .disassembly import clear_cache as _clear_disassembly_cache
from .disassembly import cubin_stage_names, disassemble_cubin
from .errors import compile_error_from_tile_error, source_location
from .tileir import clear_cache as _clear_tileir_cache
from .tileir import disassemble_tileir
from .toolchain import run_cached

T = TypeVar("T")

_TOOL_TIMEOUT = 300.0  # seconds; big tiles can make tileiras slow
# Tool outputs are memoised by input bytes: re-running an unchanged cell only pays for
# cuTile's front end (tens of ms) instead of tileiras + nvdisasm (about a second); in this
# process (lru_cache) and, for other processes and later sessions, on disk (run_cached).
_CACHE_SIZE = 64


def clear_caches() -> None:
    """Forget this process's memoised tool outputs (the ones on disk stay: benchmarks of
    cold compiles also set ``TILE_LAB_CACHE_DIR=off``, see
    :func:`tile_lab.compile.toolchain.run_cached`)."""
    _tileiras.cache_clear()
    _clear_tileir_cache()
    _clear_disassembly_cache()


@dataclass(frozen=True)
class CompileResult:
    """Everything one compile produced (``_inspect`` wraps it into an Inspection).

    ``stages`` is a LazyStages: "tileir", "sass" and "ptx" (present when the cubin embeds
    PTX) may still be in the making and wait for tileirdisasm or nvdisasm when read."""

    symbol: str
    stages: LazyStages
    cubin: bytes
    bytecode: bytes
    remarks: tuple[Remark, ...]


def compile_kernel(kernel: Any, signature: Any, *, arch: str, options: Any,
                   filename: str) -> CompileResult:
    """Run every stage for one kernel signature. ``filename`` is the kernel's source file
    (line maps point into it). Compile errors raise CompileError at the user's line."""
    front = run_frontend(kernel, signature, arch, options)
    cutile = cutile_stage(front.cutile_ir, filename)
    opt = compat.opt_level(options, arch)
    # Tile IR text is for reading, like SASS: tileirdisasm runs as nvdisasm does (at once on
    # the background pool, overlapping tileiras, or when the Tile IR is first read:
    # when_machine_code says which), so a compile nobody reads the Tile IR of (a timing
    # run, a tuner) needs no tileirdisasm, and its failure fails only that read.
    tileir = machine_code_work(lambda: disassemble_tileir(front.bytecode, filename=filename))
    cubin, remarks_yaml = run_tileiras(front.bytecode, arch, opt)
    machine_code = machine_code_work(lambda: disassemble_cubin(cubin, arch, filename=filename))
    names = cubin_stage_names(cubin)
    stages = LazyStages({"cutile": cutile}, names, machine_code, own={"tileir": tileir})
    return CompileResult(symbol=front.symbol, stages=stages,
                         cubin=cubin, bytecode=front.bytecode,
                         remarks=parse_remarks(remarks_yaml, filename))


# -- when the texts made only for reading are made (machine_code_work) -------------------

ENV_WHEN = "TILE_LAB_SASS"
BACKGROUND, ON_READ = "background", "on-read"


def when_machine_code() -> str:
    """When the compiles disassemble: ``"background"`` (start at once, on the background
    pool) or ``"on-read"`` (when the SASS is first read).

    ``TILE_LAB_SASS`` says which; unset, ``background`` in an IPython session (a notebook's
    kernel, where the cell's display reads the SASS right after the compile: nvdisasm then
    overlaps the rest of the cell) and ``on-read`` elsewhere (a script, a tuner, a test run
    compiles many kernels and reads the SASS of few: ~0.7 s of CPU saved per compile whose
    SASS nobody reads)."""
    value = os.environ.get(ENV_WHEN, "").strip().lower()
    if value in (BACKGROUND, ON_READ):
        return value
    if value:
        raise TileLabError(f"{ENV_WHEN}={value!r}: use {BACKGROUND} (disassemble as soon as "
                           f"the cubin exists) or {ON_READ} (when the SASS is first read)")
    return BACKGROUND if _in_ipython() else ON_READ


def _in_ipython() -> bool:
    # IPython is loaded with tile_lab (tile_lab.errors); outside a session get_ipython()
    # is None. Asked through sys.modules so that this module imports nothing of it.
    ipython = sys.modules.get("IPython")
    try:
        return ipython is not None and ipython.get_ipython() is not None
    except Exception:  # an IPython too broken to answer is no session to serve
        return False


def machine_code_work(work: Callable[[], T]) -> Future[T]:
    """A Future of ``work()`` (a disassembly: Tile IR, SASS and PTX, or a C++ kernel's SASS)
    scheduled as :func:`when_machine_code` says: started now on the background pool, or run
    by the first ``result()`` in the reading thread; its errors come out of ``result()``."""
    if when_machine_code() == BACKGROUND:
        return _background_pool().submit(work)
    return OnFirstRead(work)


class OnFirstRead(Future[T]):
    """A Future whose work runs in the thread that first asks for its result (``result``
    or ``exception``); others asking meanwhile wait for it. Cancelled before that, it never
    runs. ``done()`` is False until then: nothing has been made."""

    def __init__(self, work: Callable[[], T]) -> None:
        super().__init__()
        self._work: Callable[[], T] | None = work
        self._run_lock = threading.Lock()

    def _run_once(self) -> None:
        with self._run_lock:
            if self.done() or self._work is None:
                return
            try:
                value = self._work()
            except Exception as e:  # every reader gets it, as from a pool's Future
                self._settle(self.set_exception, e)
            else:
                self._settle(self.set_result, value)
            # a KeyboardInterrupt leaves the work pending: the next read runs it again

    def _settle(self, settle: Callable[[object], None], outcome: object) -> None:
        self._work = None
        with contextlib.suppress(InvalidStateError):  # cancelled while it ran: no reader
            settle(outcome)

    def result(self, timeout: float | None = None) -> T:
        self._run_once()
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._run_once()
        return super().exception(timeout)


# One small pool per process: a few disassemblies at once at most (each nvdisasm or
# tileirdisasm keeps a core busy), and a forked child must not inherit the parent's pool,
# whose threads it does not have (submitting to it would wait forever).
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _background_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1),
                                       thread_name_prefix="tile_lab-disasm")
        return _pool


def _forget_pool_in_child() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


# -- stage 1: the cuTile front end ----------------------------------------------------

def run_frontend(kernel: Any, signature: Any, arch: str, options: Any) -> compat.FrontendResult:
    """cuTile IR and Tile IR bytecode; cuTile's errors become CompileError/SignatureError."""
    try:
        return compat.compile_frontend(kernel, signature, arch, options)
    except Exception as e:
        if compat.is_tile_error(e):
            raise compile_error_from_tile_error(e) from None
        if isinstance(e, TypeError) and "kernel parameter" in str(e):
            # cuTile checks signatures against annotations with a plain TypeError
            raise SignatureError(str(e).replace("Invalid kernel parameter", "parameter")) from None
        raise


_CUTILE_LOC = re.compile(r"\s*//\s*(?P<file>.*?):(?P<line>\d+):(?P<col>\d+)\s*$")


def cutile_stage(text: str, filename: str) -> StageText:
    """cuTile IR text with each op's ``// file:line:col`` turned into the line map.

    The comment stays as ``// line N`` (``// other.py:N`` for code from another file) so
    the text reads on its own; full paths are dropped to keep output deterministic.
    """
    lines, line_map = [], []
    for raw in text.splitlines():
        m = _CUTILE_LOC.search(raw)
        if not m:
            lines.append(raw.rstrip())
            line_map.append(None)
            continue
        body, file, line = raw[:m.start()].rstrip(), m.group("file"), int(m.group("line"))
        if file == "<unknown>" or line == 0:
            lines.append(body)
            line_map.append(None)
        elif file == filename:
            lines.append(f"{body}  // line {line}")
            line_map.append(line)
        else:
            lines.append(f"{body}  // {os.path.basename(file)}:{line}")
            line_map.append(None)
    return StageText("cutile", "\n".join(lines), tuple(line_map))


# -- stage 3: tileiras -> cubin + remarks ---------------------------------------------

def run_tileiras(bytecode: bytes, arch: str, opt_level: int = 3) -> tuple[bytes, str]:
    """Compile bytecode to a cubin with line info; returns (cubin, remarks YAML text).

    tileiras failures raise CompileError at the source line tileiras names.
    """
    return _tileiras(bytes(bytecode), arch, opt_level)


def tileiras_args(src: str, out: str, remarks: str, arch: str, opt_level: int) -> list[str]:
    """The arguments tile_lab runs tileiras with (after the executable): ``src`` Tile IR
    bytecode to cubin ``out``, with line info and every remark as YAML in ``remarks``.
    ``tile_lab.reproducer`` records exactly this command line."""
    return [src, "-o", out, f"--gpu-name={arch}", f"-O{opt_level}", "--lineinfo",
            "--remark-format=yaml", "--remarks=all", f"--remarks-output-file={remarks}"]


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _tileiras(bytecode: bytes, arch: str, opt_level: int) -> tuple[bytes, str]:
    src, out, remarks = "kernel.tileirbc", "kernel.cubin", "remarks.yaml"
    # tileiras runs ptxas for its last step: a new ptxas is a new cache key too
    proc = run_cached("tileiras", tileiras_args(src, out, remarks, arch, opt_level),
                      inputs={src: bytecode}, outputs=(out, remarks), also=("ptxas",),
                      timeout=_TOOL_TIMEOUT)
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", "replace").replace(proc.workdir + os.sep, "")
        message, where = compat.parse_tileiras_stderr(stderr)
        location = source_location(*where) if where else None
        raise CompileError(f"tileiras failed for {arch}: {message.strip()}", location,
                           hint="tileiras is cuTile's optimizing assembler; the line "
                                "shown is where it reports the problem")
    if out not in proc.files:
        raise CompileError(f"tileiras wrote no cubin for {arch}")
    remarks_text = proc.files.get(remarks, b"").decode("utf-8", "replace")
    return proc.files[out], remarks_text


_DOC_START = re.compile(r"^---\s*!(\w+)")
_DEBUG_LOC = re.compile(r"File:\s*'(?P<file>[^']*)',\s*Line:\s*(?P<line>\d+),"
                        r"\s*Column:\s*(?P<col>\d+)")
_ARG = re.compile(r"^\s*-\s*(\w+):\s*(.*)$")
_KIND = {"Passed": "passed", "Missed": "missed", "Failure": "failed", "Analysis": "analysis"}


def _yaml_scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"')
    return text


def parse_remarks(yaml_text: str, filename: str | None = None) -> tuple[Remark, ...]:
    """Remarks from tileiras' YAML remarks file (LLVM optimization-record format).

    Each ``--- !Kind`` document becomes one Remark: category from ``Pass``, the message
    from the ``Remark`` argument plus the other arguments (reasons de-duplicated, their
    absolute-path ``loc(...)`` prefixes removed). Duplicates are dropped; the result is
    sorted by source line. Locations outside ``filename`` (when given) get line None.
    """
    docs: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for raw in yaml_text.splitlines():
        m = _DOC_START.match(raw)
        if m:
            cur = {"kind": _KIND.get(m.group(1), m.group(1).lower()), "args": []}
            docs.append(cur)
            continue
        if cur is None or raw.strip() == "...":
            continue
        am = _ARG.match(raw)
        if am and raw.startswith(" "):
            cur["args"].append((am.group(1), _yaml_scalar(am.group(2))))
        elif ":" in raw and not raw.startswith(" "):
            key, _, value = raw.partition(":")
            cur[key.strip()] = value.strip()
    remarks = []
    for d in docs:
        line = col = None
        lm = _DEBUG_LOC.search(d.get("DebugLoc", ""))
        if lm and (filename is None or lm.group("file") == filename):
            line, col = int(lm.group("line")), int(lm.group("col"))
        remarks.append(Remark(kind=d["kind"], category=_category(d.get("Pass", "")),
                              message=_remark_message(d["args"]), line=line, col=col,
                              pass_name=_yaml_scalar(d.get("Name", ""))))
    unique = list(dict.fromkeys(remarks))
    return tuple(sorted(unique, key=lambda r: (r.line is None, r.line or 0, r.col or 0)))


def _category(pass_field: str) -> str:
    return re.sub(r"[^a-z]", "", _yaml_scalar(pass_field).lower())  # "Tensor-core" -> "tensorcore"


_LOC_PREFIX = re.compile(r'^loc\([^)]*\):\s*')


def _remark_message(args: list[tuple[str, str]]) -> str:
    main = next((v for k, v in args if k == "Remark"), "")
    reasons = list(dict.fromkeys(_LOC_PREFIX.sub("", v) for k, v in args if k == "Reason"))
    extras = [f"{k}: {v}" for k, v in args if k not in ("Remark", "Reason", "RemarkId")]
    text = main
    if reasons:
        text += ": " + "; ".join(reasons)
    if extras:
        text += " (" + "; ".join(extras) + ")"
    return text
