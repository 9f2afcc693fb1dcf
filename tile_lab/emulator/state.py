"""The state of the emulated launch in progress: the current block, the grid, and the
access recorder. Ops read it through ``current()``; the runtime sets it per block.

Also maps a Python frame back to the user's kernel line, for trace records and errors.
"""

from __future__ import annotations

import linecache
import sys
import threading
from types import CodeType, FrameType

from ..errors import EmulationError, SourceLocation
from ..tracing.trace import format_block


class RunState:
    """Mutable per-launch state (a stack per thread: launches may nest or run in threads)."""

    __slots__ = ("bid", "bid_tiles", "cas_failures", "grid", "grid_tiles", "line_counts",
                 "mma_recorder", "outside_tiles", "padding", "poison_values", "recorder", "typed",
                 "undetermined", "user_codes")

    def __init__(self, grid: tuple[int, int, int], recorder, user_codes: set[CodeType]) -> None:
        self.grid = grid
        self.bid: tuple[int, int, int] = (0, 0, 0)
        self.bid_tiles: tuple = ()
        self.grid_tiles: tuple = ()
        self.recorder = recorder  # None when not tracing
        self.mma_recorder: list | None = None if recorder is None else []  # MmaCalls
        self.user_codes = user_codes  # code objects of the kernel and its emulated helpers
        self.line_counts: dict[tuple[str, int], int] = {}  # per block: executions of a line
        self.cas_failures: dict[tuple[str, int], int] = {}  # per block: consecutive CAS fails
        self.poison_values = True  # undetermined lanes hold NaN / 0xDB.. (False: zeros)
        self.padding = "poison"  # the policy (request.PADDINGS) that set poison_values
        self.undetermined: list = []  # UndeterminedWrite records (always collected)
        # (file, line) -> (op, arg, tile index, first block, count): tiles entirely outside
        self.outside_tiles: dict[tuple[str, int], tuple] = {}
        # cuTile's front end accepted the kernel for this signature: what it evaluated at
        # compile time (static_assert, constant shapes) is known to hold
        self.typed = False


class _Stack(threading.local):
    def __init__(self) -> None:
        self.runs: list[RunState] = []  # launches in progress on this thread


_LOCAL = _Stack()


def current() -> RunState:
    runs = _LOCAL.runs
    if not runs:
        raise EmulationError("cuTile operations can only run inside an emulated kernel "
                             "(tile_lab.emulate / tile_lab.trace)")
    return runs[-1]


def typed() -> bool:
    """True inside a launch whose kernel cuTile's front end accepted for its signature."""
    runs = _LOCAL.runs
    return bool(runs) and runs[-1].typed


def running() -> bool:
    """True while an emulated launch is in progress on this thread."""
    return bool(_LOCAL.runs)


# how many launches, on any thread, are recording a trace: while 0 the memory ops' fast
# paths need not look up the current launch to know that nothing is recorded
RECORDING = [0]


def push(state: RunState) -> None:
    _LOCAL.runs.append(state)
    if state.recorder is not None:
        RECORDING[0] += 1


def pop() -> None:
    state = _LOCAL.runs.pop()
    if state.recorder is not None:
        RECORDING[0] -= 1


def user_frame(depth: int = 2) -> FrameType | None:
    """The innermost frame running user kernel code (kernel body or an emulated helper)."""
    runs = _LOCAL.runs
    codes = runs[-1].user_codes if runs else set()
    frame = sys._getframe(depth)
    while frame is not None and frame.f_code not in codes:
        frame = frame.f_back
    return frame


def record_site(state: RunState) -> tuple[str, int, int]:
    """(filename, line, iteration) of the user line running now, for a trace record.

    ``iteration`` counts earlier executions of the same call site by the current block."""
    frame = user_frame(1)
    if frame is None:
        return "", 0, 0
    key = (frame.f_code, frame.f_lasti)
    counts = state.line_counts
    it = counts.get(key, 0)
    counts[key] = it + 1
    return frame.f_code.co_filename, frame.f_lineno, it


def note_outside_tile(op: str, arg: str, tile: tuple[int, ...]) -> None:
    """A tile-space access lying entirely outside its array (undefined behaviour)."""
    run = _LOCAL.runs[-1] if _LOCAL.runs else None
    frame = user_frame(2)
    if run is None or frame is None:
        return
    key = (frame.f_code.co_filename, frame.f_lineno)
    seen = run.outside_tiles.get(key)
    block = format_block(run.bid, run.grid)
    run.outside_tiles[key] = (op, arg, tile, block, 1) if seen is None else \
        (*seen[:4], seen[4] + 1)


def location_of(frame: FrameType | None) -> SourceLocation | None:
    if frame is None:
        return None
    filename, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(filename, line) or None
    return SourceLocation(filename=filename, line=line, text=text)


def location_in_traceback(exc: BaseException, user_codes) -> SourceLocation | None:
    """The innermost kernel line (a frame running one of ``user_codes``) in ``exc``'s
    traceback."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code in user_codes:
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    filename = found.tb_frame.f_code.co_filename
    return SourceLocation(filename, found.tb_lineno,
                          text=linecache.getline(filename, found.tb_lineno) or None)


def kernel_error(message: str, hint: str | None = None) -> EmulationError:
    """An EmulationError pointing at the user's kernel line currently executing."""
    state = _LOCAL.runs[-1] if _LOCAL.runs else None
    where = (f" (block {format_block(state.bid, state.grid)})" if state is not None else "")
    return EmulationError(message + where, location_of(user_frame(2)), hint)
