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
* **Interruptible.** Ctrl-C (SIGINT, in the main thread) is deferred to the end of the
  current block: the run stops *between* blocks with :class:`EmulationInterrupted` naming the
  next block, every earlier block complete and none after it started. A second Ctrl-C stops
  at once (a block that never ends, e.g. a spin loop).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import cuda.tile as ct
import numpy as np

from ..errors import EmulationError, TileLabWarning
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


_LIMITS: list[Limits] = []
_LIMITS_LOCK = threading.Lock()


def current_limits() -> Limits:
    """The limits in force: the innermost ``limits()`` block, else ``set_limits``, else the
    defaults with ``TILE_LAB_EMULATE_MAX_SECONDS`` applied."""
    if _LIMITS:
        return _LIMITS[-1]
    env = os.environ.get("TILE_LAB_EMULATE_MAX_SECONDS", "").strip()
    if env:
        try:
            return Limits(max_seconds=float(env))
        except ValueError:
            raise EmulationError(f"TILE_LAB_EMULATE_MAX_SECONDS={env!r} is not a number of "
                                 "seconds") from None
    return Limits()


def set_limits(**changes: Any) -> Limits:
    """Change the limits for the rest of the process (``max_seconds=``, ``probe_blocks=``)."""
    with _LIMITS_LOCK:
        new = dataclasses.replace(current_limits(), **changes)
        if _LIMITS:
            _LIMITS[0] = new
        else:
            _LIMITS.append(new)
    return new


@contextlib.contextmanager
def limits(**changes: Any) -> Iterator[Limits]:
    """Limits for the launches inside this block only."""
    new = dataclasses.replace(current_limits(), **changes)
    _LIMITS.append(new)
    try:
        yield new
    finally:
        _LIMITS.remove(new)


class OutOfArrayTileWarning(TileLabWarning):
    """Plain ``emulate`` ran a tile lying entirely outside its array (undefined behaviour)."""


class EmulationInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped an emulated launch (a KeyboardInterrupt, so notebooks treat it as one).

    ``block``: the block that did not run (or, after a second Ctrl-C, was cut short);
    ``done``: how many blocks completed before it."""

    def __init__(self, message: str, block: Block3, done: int, total: int) -> None:
        super().__init__(message)
        self.block, self.done, self.total = block, done, total


# ---- which blocks ----------------------------------------------------------------------------

def block_ids(grid: Block3, subset: tuple[Block3, ...] | None) -> tuple[Iterator[Block3], int]:
    """The blocks to run in order (x fastest), and how many."""
    if subset is not None:
        return iter(subset), len(subset)
    gx, gy, gz = grid
    ids = ((x, y, z) for z in range(gz) for y in range(gy) for x in range(gx))
    return ids, gx * gy * gz


# ---- the loop --------------------------------------------------------------------------------

def run_blocks(fn: Callable[..., Any], args: list[Any], run: state.RunState, grid: Block3,
               subset: tuple[Block3, ...] | None, desc: str) -> None:
    """Call ``fn(*args)`` once per block with the block context set."""
    ids, total = block_ids(grid, subset)
    done = 0
    current = (0, 0, 0)
    with _deferred_sigint() as guard, contextlib.ExitStack() as bars:
        bar, started = None, time.perf_counter()
        y_last = z_last = -1
        ty = tz = None
        try:
            for current in ids:
                if guard.pending:
                    raise _interrupted(desc, current, done, total, between=True)
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
                fn(*args)
                done += 1
                if not done & 63:
                    if bar is None and time.perf_counter() - started > 1.0:
                        bar = _open_bar(bars, total, desc, done)
                    elif bar is not None:
                        bar.update(64)
        except KeyboardInterrupt as exc:
            if isinstance(exc, EmulationInterrupted):
                raise
            raise _interrupted(desc, current, done, total, between=False) from None


def _open_bar(stack: contextlib.ExitStack, total: int, desc: str, done: int):
    from ..progress import progress

    bar = stack.enter_context(progress(total, desc, unit="block", delay_s=0.0))
    bar.update(done)
    return bar


def _interrupted(desc: str, block: Block3, done: int, total: int, *, between: bool
                 ) -> EmulationInterrupted:
    where = (f"before block {block}" if between else f"in the middle of block {block} "
             "(a second Ctrl-C: that block's writes are partial)")
    return EmulationInterrupted(
        f"{desc}: interrupted {where}; {done} of {total} blocks ran completely, the arrays "
        "hold their results", block, done, total)


class _Guard:
    pending = False


@contextlib.contextmanager
def _deferred_sigint() -> Iterator[_Guard]:
    """While the loop runs, the first SIGINT only sets ``pending`` (the loop stops at the
    next block boundary); a second one interrupts at once. Only the main thread can take
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

    def handler(signum, frame):
        if guard.pending:
            raise KeyboardInterrupt
        guard.pending = True

    signal.signal(signal.SIGINT, handler)
    try:
        yield guard
    finally:
        signal.signal(signal.SIGINT, previous)


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
