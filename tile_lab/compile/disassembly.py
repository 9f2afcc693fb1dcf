"""Stage 4 of the compile pipeline (:mod:`tile_lab.compile.pipeline`): SASS and PTX from a cubin.

One ``nvdisasm -c -g -gp`` run gives the SASS with its source lines (``//## File ...,
line N``) and, for each instruction, the PTX line it came from; the PTX text is the section
tileiras embeds with ``--lineinfo`` (``.nv_debug_ptx_txt``), its lines mapped to source
through the SASS. nvdisasm costs 0.5-1.5 s of CPU for any cubin (its start-up, whatever
the cubin), so the compiles hand it to :func:`machine_code_work`, which either starts it at
once on a small background pool (in an IPython session, where the cell's display reads the
SASS next) or runs it when the SASS is first read (scripts, tuners and test runs that
compile many kernels and read few SASS texts); ``TILE_LAB_SASS`` chooses. Texts are made
for display: no temporary path appears in them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import struct
import sys
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from typing import TypeVar

from ..errors import TileLabError, ToolchainError
from . import tool_cache
from .artifacts import StageText
from .stage_rows import sass_offset
from .tileir import is_code_line
from .toolchain import tool_failure

T = TypeVar("T")

ENV_WHEN = "TILE_LAB_SASS"
BACKGROUND, ON_READ = "background", "on-read"

_TOOL_TIMEOUT = 300.0  # seconds, as for the other tools of the pipeline
_CACHE_SIZE = 64  # memoised by input bytes (and on disk: tool_cache), as the other tools' outputs


def clear_cache() -> None:
    """Forget memoised nvdisasm outputs."""
    _nvdisasm.cache_clear()


def sass_from_cubin(cubin: bytes, arch: str, *, filename: str | None = None) -> StageText:
    """SASS of ``cubin`` (``nvdisasm -c -g -gp``), each instruction mapped to its source line.

    ``arch`` is only used in error messages (nvdisasm reads the target from the cubin).
    ``filename``: the source file line numbers refer to; by default the first file the
    line info names.
    """
    return sass_stage(_nvdisasm(bytes(cubin), arch), filename)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _nvdisasm(cubin: bytes, arch: str) -> str:
    # -g: source lines, -gp: PTX lines (one run: nvdisasm's start-up costs ~0.5 s CPU).
    # Dataflow analysis stays on: without it BRX branch targets go unlabelled.
    proc = tool_cache.run("nvdisasm", ["-c", "-g", "-gp", "kernel.cubin"],
                          inputs={"kernel.cubin": cubin}, timeout=_TOOL_TIMEOUT)
    if proc.returncode != 0:
        # without the temporary directory, the message is the same on every run
        err = tool_failure("nvdisasm", proc).message.replace(proc.workdir + os.sep, "")
        raise ToolchainError(f"disassembling the {arch} cubin: {err}")
    return proc.stdout.decode("utf-8", "replace")


PTX_SECTION = ".nv_debug_ptx_txt"  # PTX text tileiras embeds with --lineinfo, NUL-separated
_SASS_FILE = re.compile(r'^\s*//##\s*File\s+"(?P<file>[^"]*)",\s*line\s+(?P<line>\d+)')
_SASS_DIRECTIVE = re.compile(r"^\s*\.(section|align|global|type|size|other|elftype|headerflags"
                             r"|weak|zero)\b")
_SASS_LABEL = re.compile(r"^\s*([.\w$]+):\s*$")


def sass_stage(text: str, filename: str | None = None) -> StageText:
    """Turn ``nvdisasm -g [-gp]`` output into display text and a line map.

    ``//## File`` comments become the line map; ELF bookkeeping directives and the
    ``.text.<name>:`` section labels are dropped; instructions and branch labels stay.
    """
    return _parse_sass(text, filename)[0]


def _parse_sass(text: str, filename: str | None
                ) -> tuple[StageText, list[tuple[int, int | None]]]:
    """(SASS stage, [(PTX line, source line) per instruction with PTX line info])."""
    lines: list[str] = []
    line_map: list[int | None] = []
    ptx_pairs: list[tuple[int, int | None]] = []
    current: int | None = None
    current_ptx: int | None = None
    for raw in text.splitlines():
        fm = _SASS_FILE.match(raw)
        if fm:
            file, line = fm.group("file"), int(fm.group("line"))
            if file == PTX_SECTION:
                current_ptx = line
                continue
            if filename is None:
                filename = file
            current = line if file == filename and is_code_line(filename, line) else None
            continue
        if _SASS_DIRECTIVE.match(raw):
            continue
        lm = _SASS_LABEL.match(raw)
        if lm and lm.group(1).startswith(".text."):
            continue
        if sass_offset(raw) is not None:  # an instruction
            lines.append(raw.rstrip())
            line_map.append(current)
            if current_ptx is not None:
                ptx_pairs.append((current_ptx, current))
            continue
        if lm and not lm.group(1).startswith(".L"):
            # a new function starts: no line until its first "//## File"
            current = current_ptx = None
        if not raw.strip() and (not lines or not lines[-1].strip()):
            continue  # collapse runs of blank lines
        lines.append(raw.rstrip())
        line_map.append(None)
    while lines and not lines[-1].strip():
        lines.pop()
        line_map.pop()
    return StageText("sass", "\n".join(lines), tuple(line_map)), ptx_pairs


def disassemble_cubin(cubin: bytes, arch: str, *, filename: str | None = None
                      ) -> dict[str, StageText]:
    """The "ptx" (where the cubin embeds PTX) and "sass" stages from one nvdisasm run:
    the same stages as ``ptx_from_cubin`` and ``sass_from_cubin``, keys as
    ``cubin_stage_names`` says."""
    cubin = bytes(cubin)
    sass, pairs = _parse_sass(_nvdisasm(cubin, arch), filename)
    section = elf_section(cubin, PTX_SECTION)
    out = {"ptx": _ptx_stage(section, pairs)} if section else {}
    out["sass"] = sass
    return out


def cubin_stage_names(cubin: bytes) -> tuple[str, ...]:
    """The stages ``disassemble_cubin`` makes for ``cubin``, known without disassembling."""
    return ("ptx", "sass") if elf_section(bytes(cubin), PTX_SECTION) else ("sass",)


def disassemble_cubin_async(cubin: bytes, arch: str, *, filename: str | None = None
                            ) -> Future[dict[str, StageText]]:
    """``disassemble_cubin`` as :func:`machine_code_work` schedules it; its errors come out
    of ``result()``."""
    return machine_code_work(lambda: disassemble_cubin(cubin, arch, filename=filename))


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
    """A Future of ``work()`` (a disassembly) scheduled as :func:`when_machine_code` says:
    started now on the background pool, or run by the first ``result()`` in the reading
    thread."""
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


# One small pool per process: a few disassemblies at once at most (each nvdisasm keeps a
# core busy), and a forked child must not inherit the parent's pool, whose threads it
# does not have (submitting to it would wait forever).
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _background_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1),
                                       thread_name_prefix="tile_lab-nvdisasm")
        return _pool


def _forget_pool_in_child() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def elf_section(image: bytes, name: str) -> bytes | None:
    """The contents of section ``name`` of a 64-bit little-endian ELF image (a cubin)."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", image, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", image, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx][4]
    for sh_name, _type, _flags, _addr, offset, size in headers:
        end = image.index(b"\0", strtab + sh_name)
        if image[strtab + sh_name:end].decode("ascii", "replace") == name:
            return image[offset:offset + size]
    return None


def ptx_from_cubin(cubin: bytes, arch: str, *, filename: str | None = None
                   ) -> StageText | None:
    """The PTX tileiras compiled the kernel through, with a line map; None if absent.

    tileiras has no PTX output option, but with ``--lineinfo`` it embeds the PTX text in
    the cubin's ``.nv_debug_ptx_txt`` section (one NUL-terminated string per PTX line,
    ``.loc`` lines blanked) and maps every SASS instruction to a PTX line. A PTX line
    takes the source line most of its SASS instructions map to.
    """
    section = elf_section(bytes(cubin), PTX_SECTION)
    if not section:
        return None
    _, pairs = _parse_sass(_nvdisasm(bytes(cubin), arch), filename)
    return _ptx_stage(section, pairs)


def _ptx_stage(section: bytes, pairs: list[tuple[int, int | None]]) -> StageText:
    """The PTX stage from the cubin's PTX section and the SASS's (PTX line, source line)
    pairs."""
    votes: dict[int, Counter] = {}
    for ptx_line, src_line in pairs:
        if src_line is not None:
            votes.setdefault(ptx_line, Counter())[src_line] += 1
    raw_lines = section.decode("utf-8", "replace").split("\0")
    source_of = _ptx_statement_lines(raw_lines, votes)
    lines: list[str] = []
    line_map: list[int | None] = []
    depth = 0
    for number, raw in enumerate(raw_lines, start=1):
        text = raw.strip()
        if not text:
            if lines and lines[-1]:
                lines.append("")
                line_map.append(None)
            continue
        if text.startswith("}"):
            depth = max(depth - 1, 0)
        is_label = text.endswith(":") and not text.startswith(".")
        lines.append(("\t" * (depth - is_label if depth else 0)) + text)
        line_map.append(source_of.get(number))
        if text.endswith("{"):
            depth += 1
    while lines and not lines[-1]:
        lines.pop()
        line_map.pop()
    return StageText("ptx", "\n".join(lines), tuple(line_map))


def _ptx_statement_lines(raw_lines: list[str], votes: dict[int, Counter]) -> dict[int, int]:
    """PTX line number -> source line, deciding per statement.

    A statement may span lines (``mma.sync...`` then operand lines ending in ``;``) and
    its SASS maps to any of them, so the votes of all its lines are pooled and the
    winner (most SASS instructions, then the lower line) is given to every line.
    """
    out: dict[int, int] = {}
    statement: list[int] = []
    depth = 0

    def close() -> None:
        pooled: Counter = Counter()
        for n in statement:
            pooled.update(votes.get(n, {}))
        if pooled:
            winner = min(pooled.items(), key=lambda kv: (-kv[1], kv[0]))[0]
            out.update(dict.fromkeys(statement, winner))
        statement.clear()

    for number, raw in enumerate(raw_lines, start=1):
        text = raw.strip()
        if not text:
            continue
        statement.append(number)
        if text.startswith("}"):
            depth = max(depth - 1, 0)
        if text.endswith("{"):
            depth += 1
        if depth == 0 or text.endswith((";", "{", "}", ":")):
            close()
    close()
    return out
