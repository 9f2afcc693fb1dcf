"""The block loop: every block of the grid in turn, bounded, visible and interruptible.

* **Bounded.** A launch of more than ``Limits.probe_blocks`` blocks (65,536) is first
  *probed*: a few blocks (first, middle, last) run on copies of the arrays, timed, with
  their memory ops counted. When blocks × time per block exceeds ``Limits.max_seconds``
  the launch is refused before anything is written, with the estimate and what to do
  instead (a smaller grid, or ``tile_lab.trace(..., blocks=[...])`` for a sample of
  blocks). Set the limit with ``set_limits(max_seconds=...)``, ``with
  limits(max_seconds=...)``, or the environment variable ``TILE_LAB_EMULATE_MAX_SECONDS``.
* **Visible.** A run still going after a second shows a ``tqdm.auto`` bar (blocks done,
  ETA), through :mod:`tile_lab.progress`; short runs import nothing and print nothing.
* **Interruptible.** Ctrl-C (SIGINT, in the main thread: Jupyter's stop button) lets the
  current block finish if it does so within ``GRACE_SECONDS`` (half a second): the run then
  stops *between* blocks with :class:`EmulationInterrupted` naming the next block, every
  earlier block complete and none after it started. A block still running after the grace
  period (a loop that never ends) is stopped where it is, and the message names the block
  and the kernel line it was on; its writes so far stay in the arrays (partial). A second
  Ctrl-C stops at once.
* **Step budget** (off by default): ``Limits.max_steps`` bounds the kernel lines one block may
  execute; a block over it stops with an :class:`~tile_lab.errors.EmulationError` at the line
  it was on (``set_limits(max_steps=...)``, ``TILE_LAB_EMULATE_MAX_STEPS``, or ``%config
  TileMagics.emulator_max_steps``). Counting lines uses ``sys.settrace``, so a budget slows
  the run down (several times); without one nothing is traced.
"""

from __future__ import annotations

import _thread
import contextlib
import dataclasses
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import cuda.tile as ct
import numpy as np

from ..errors import EmulationError, TileLabWarning
from ..tracing.trace import format_block
from . import state
from .ops_memory import int32
from .tile import Tile

_I32, _CT_I32 = np.dtype(np.int32), ct.int32

Block3 = tuple[int, int, int]


@dataclass(frozen=True)
class Limits:
    """How much work one emulated launch may do."""

    max_seconds: float = 600.0  # refuse launches estimated to take longer (inf: never)
    # launches with more blocks are probed before they run (the probe copies the arrays,
    # so smaller launches, which Ctrl-C and the progress bar cover, skip it)
    probe_blocks: int = 65_536
    # kernel lines one block may execute before it is stopped (0: no budget)
    max_steps: int = 0

    def __post_init__(self) -> None:
        for name, value, low in (("max_seconds", self.max_seconds, 0.0),
                                 ("probe_blocks", self.probe_blocks, 1),
                                 ("max_steps", self.max_steps, 0)):
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            if name != "max_seconds" and not isinstance(value, int):
                numeric = False
            if not numeric or value != value or value < low:  # value != value: NaN
                kind = "a number of seconds > 0" if name == "max_seconds" else \
                    f"an int >= {low}" + (" (0: no budget)" if name == "max_steps" else "")
                raise EmulationError(f"emulator limit {name}={value!r}: must be {kind}")
            if name == "max_seconds" and value == 0:
                raise EmulationError("emulator limit max_seconds=0: must be a number of "
                                     "seconds > 0 (inf: no limit)")


_LIMITS: list[Limits] = []
_LIMITS_LOCK = threading.Lock()
_ENV = {"TILE_LAB_EMULATE_MAX_SECONDS": ("max_seconds", float, "a number of seconds"),
        "TILE_LAB_EMULATE_MAX_STEPS": ("max_steps", int,
                                       "a whole number of steps (0: no budget)")}


def current_limits() -> Limits:
    """The limits in force: the innermost ``limits()`` block, else ``set_limits``, else the
    defaults with ``TILE_LAB_EMULATE_MAX_SECONDS`` / ``TILE_LAB_EMULATE_MAX_STEPS`` applied."""
    if _LIMITS:
        return _LIMITS[-1]
    changes: dict[str, Any] = {}
    for var, (field, kind, what) in _ENV.items():
        env = os.environ.get(var, "").strip()
        if not env:
            continue
        try:
            changes[field] = kind(env.replace("_", ""))
        except ValueError:
            raise EmulationError(f"{var}={env!r} is not {what}") from None
    try:
        return Limits(**changes)
    except EmulationError as exc:
        raise EmulationError(f"{exc} (from the environment: {', '.join(_ENV)})") from None


def set_limits(**changes: Any) -> Limits:
    """Change the limits for the rest of the process (``max_seconds=``, ``probe_blocks=``,
    ``max_steps=``)."""
    with _LIMITS_LOCK:
        new = _replace(current_limits(), changes)
        if _LIMITS:
            _LIMITS[0] = new
        else:
            _LIMITS.append(new)
    return new


def _replace(limits: Limits, changes: dict[str, Any]) -> Limits:
    names = [f.name for f in dataclasses.fields(Limits)]
    unknown = [k for k in changes if k not in names]
    if unknown:
        raise EmulationError(f"unknown emulator limit {unknown[0]!r}; the limits are "
                             f"{', '.join(names)}")
    return dataclasses.replace(limits, **changes)


@contextlib.contextmanager
def limits(**changes: Any) -> Iterator[Limits]:
    """Limits for the launches inside this block only."""
    new = _replace(current_limits(), changes)
    _LIMITS.append(new)
    try:
        yield new
    finally:
        _LIMITS.remove(new)


class OutOfArrayTileWarning(TileLabWarning):
    """Plain ``emulate`` ran a tile lying entirely outside its array (undefined behaviour)."""


class EmulationInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped an emulated launch (a KeyboardInterrupt, so notebooks treat it as one).

    ``block``: the block that did not run, or that was cut short (then ``location`` is the
    kernel line it was on); ``done``: how many blocks completed before it."""

    def __init__(self, message: str, block: Block3, done: int, total: int,
                 location: Any = None) -> None:
        super().__init__(message)
        self.block, self.done, self.total = block, done, total
        self.location = location  # the kernel line a block was stopped on (None: between)

    def render(self, *, file_line: bool = False) -> str:
        """Like a kernel error (``TileLabError.render``): the message, then, for a block
        stopped inside the kernel, ``file:line``, the line and a caret at its statement."""
        lines = [f"{type(self).__name__}: {self}"]
        where = self.location
        if where is not None and file_line:
            lines.append(f"  at {where.filename}:{where.line}")
        if where is not None and where.text:
            text = where.text.rstrip()
            lines.append(f"  {where.line:>4} | {text}")
            if file_line:
                lines.append("       | " + " " * (len(text) - len(text.lstrip())) + "^")
        return "\n".join(lines)

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of printing the stack of tile_lab's block loop
        return self.render().splitlines()


# ---- which blocks ----------------------------------------------------------------------------

def block_ids(grid: Block3, subset: tuple[Block3, ...] | None) -> tuple[Iterator[Block3], int]:
    """The blocks to run in order (x fastest), and how many."""
    if subset is not None:
        return iter(subset), len(subset)
    gx, gy, gz = grid
    ids = ((x, y, z) for z in range(gz) for y in range(gy) for x in range(gx))
    return ids, gx * gy * gz


# ---- the loop --------------------------------------------------------------------------------

GRACE_SECONDS = 0.5  # after Ctrl-C, how long the running block may take to finish


def run_blocks(fn: Callable[..., Any], args: list[Any], run: state.RunState, grid: Block3,
               subset: tuple[Block3, ...] | None, desc: str) -> None:
    """Call ``fn(*args)`` once per block with the block context set."""
    ids, total = block_ids(grid, subset)
    done = 0
    current = (0, 0, 0)
    max_steps = current_limits().max_steps
    with _sigint_guard() as guard, _step_budget(run, max_steps) as steps, \
            contextlib.ExitStack() as bars:
        bar, started = None, time.perf_counter()
        y_last = z_last = -1
        ty = tz = None
        try:
            for current in ids:
                if guard.pending:
                    raise _interrupted(desc, current, grid, done, total, None)
                x, y, z = current
                if y != y_last:
                    ty, y_last = int32(y), y
                if z != z_last:
                    tz, z_last = int32(z), z
                run.bid = current
                run.bid_tiles = (Tile(np.array(x, _I32), _CT_I32), ty, tz)  # int32(x), inlined
                if run.line_counts:  # per-block state, reset only when used
                    run.line_counts = {}
                if run.cas_failures:
                    run.cas_failures = {}
                if steps is not None:
                    steps[0] = 0
                fn(*args)
                done += 1
                guard.done = done
                if not done & 63:
                    if bar is None and time.perf_counter() - started > 1.0:
                        bar = _open_bar(bars, total, desc, done)
                    elif bar is not None:
                        bar.update(64)
        except KeyboardInterrupt as exc:
            if isinstance(exc, EmulationInterrupted):
                raise
            where = state.location_in_traceback(exc, run.user_codes)
            raise _interrupted(desc, current, grid, done, total, where) from None
        except _StepsExceeded as exc:
            where = state.location_in_traceback(exc, run.user_codes)
            shown = format_block(current, grid)
            raise EmulationError(
                f"block {shown} executed more than {max_steps:,} kernel lines without "
                f"finishing (the step budget), stopped at this line; {done} of {total} blocks "
                f"ran completely and the arrays hold their writes (block {shown}'s own "
                "writes are partial)", where,
                hint="a loop that never ends? Otherwise raise the budget with "
                     "tile_lab.emulator.set_limits(max_steps=N) or %config "
                     "TileMagics.emulator_max_steps = N (0: no budget)") from None


def _open_bar(stack: contextlib.ExitStack, total: int, desc: str, done: int):
    from ..progress import progress

    bar = stack.enter_context(progress(total, desc, unit="block", delay_s=0.0))
    bar.update(done)
    return bar


def _interrupted(desc: str, block: Block3, grid: Block3, done: int, total: int, where: Any
                 ) -> EmulationInterrupted:
    """``where``: the kernel line a block was stopped on (None: stopped between blocks). The
    block is named as the user's grid is written (``(5,)`` in grid ``(8,)``)."""
    shown = format_block(block, grid)
    if where is None:
        return EmulationInterrupted(
            f"{desc}: interrupted before block {shown}; {done} of {total} blocks ran "
            "completely, the arrays hold their results", block, done, total)
    from ..errors import location_label

    label = location_label(where.filename)
    at = f"{label}, line {where.line}" if label.startswith("Cell In[") else \
        f"{label}:{where.line}"
    code = f" `{where.text.strip()}`" if where.text else ""
    return EmulationInterrupted(
        f"{desc}: interrupted in block {shown}, at {at}{code}; {done} of {total} blocks ran "
        f"completely and the arrays hold their writes (block {shown}'s own writes are "
        "partial)", block, done, total, where)


class _Guard:
    pending = False
    active = True
    done = 0


@contextlib.contextmanager
def _sigint_guard() -> Iterator[_Guard]:
    """While the loop runs, the first SIGINT sets ``pending`` (the loop stops at the next block
    boundary) and starts a watchdog: a block still running ``GRACE_SECONDS`` later is
    interrupted where it is. A second SIGINT interrupts at once. Only the main thread can take
    over SIGINT: elsewhere Ctrl-C interrupts at once, as before."""
    guard = _Guard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    try:
        previous = signal.getsignal(signal.SIGINT)
    except ValueError:  # pragma: no cover - no signal support here
        yield guard
        return
    timers: list[threading.Timer] = []

    def watchdog(done_then: int) -> None:
        if guard.active and guard.done == done_then:  # still in the same block
            _thread.interrupt_main()  # runs ``handler`` again in the main thread

    def handler(signum, frame):
        if guard.pending:
            raise KeyboardInterrupt
        guard.pending = True
        timer = threading.Timer(GRACE_SECONDS, watchdog, (guard.done,))
        timer.daemon = True
        timers.append(timer)
        timer.start()

    signal.signal(signal.SIGINT, handler)
    try:
        yield guard
    finally:
        guard.active = False
        for timer in timers:
            timer.cancel()
        signal.signal(signal.SIGINT, previous)


class _StepsExceeded(Exception):
    """Raised inside the kernel by the step counter (turned into an EmulationError)."""


@contextlib.contextmanager
def _step_budget(run: state.RunState, max_steps: int) -> Iterator[list[int] | None]:
    """Count the kernel lines each block executes (``sys.settrace`` on the kernel's own frames
    only) and stop a block past ``max_steps``. Yields the counter (reset per block), or None
    without a budget. A tracer already in place (a debugger, coverage) keeps running."""
    if not max_steps:
        yield None
        return
    codes = run.user_codes
    count = [0]
    outer = sys.gettrace()

    def local(frame, event, arg):
        if event == "line":
            count[0] += 1
            if count[0] > max_steps:
                raise _StepsExceeded
        return local

    def chained_local(inner):
        def trace(frame, event, arg):
            nonlocal inner
            local(frame, event, arg)
            if inner is not None:
                inner = inner(frame, event, arg)
            return trace
        return trace

    def global_trace(frame, event, arg):
        inner = outer(frame, event, arg) if outer is not None else None
        if frame.f_code in codes:
            return local if outer is None else chained_local(inner)
        return inner

    sys.settrace(global_trace)
    try:
        yield count
    finally:
        sys.settrace(outer)


# ---- the budget ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Estimate:
    """What a launch would cost, from a few probed blocks."""

    blocks: int
    seconds_per_block: float
    memory_ops_per_block: float

    @property
    def seconds(self) -> float:
        return self.blocks * self.seconds_per_block

    def describe(self) -> str:
        return (f"{self.blocks:,} blocks × {_duration(self.seconds_per_block)} per block "
                f"(≈{self.memory_ops_per_block:.0f} memory ops each) ≈ "
                f"{_duration(self.seconds)}")


def probe_blocks(total: int, grid: Block3, subset: tuple[Block3, ...] | None
                 ) -> tuple[Block3, ...]:
    """First, middle and last of the blocks to run."""
    if subset is not None:
        picks = {0, total // 2, total - 1}
        return tuple(b for i, b in enumerate(subset) if i in picks)
    gx, gy, _gz = grid

    def at(i: int) -> Block3:
        return (i % gx, (i // gx) % gy, i // (gx * gy))

    return tuple(dict.fromkeys((at(0), at(total // 2), at(total - 1))))


def check_budget(estimate: Estimate, kernel: str, limit: Limits) -> None:
    if estimate.seconds <= limit.max_seconds:
        return
    raise EmulationError(
        f"emulating {kernel} would take about {_duration(estimate.seconds)}: "
        f"{estimate.describe()}, over the limit of {_duration(limit.max_seconds)}; nothing "
        "was run",
        hint="emulate a smaller grid (fewer or larger tiles), or run a sample of blocks for "
             "a diagram with tile_lab.trace(kernel, grid, args, blocks=[(0,), (1,)]); raise "
             "the limit with tile_lab.emulator.set_limits(max_seconds=...) or "
             "TILE_LAB_EMULATE_MAX_SECONDS")


def _duration(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    days = seconds / 86400
    return f"{days:,.0f} days" if days < 3650 else f"{days / 365:,.0f} years"
