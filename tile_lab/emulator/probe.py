"""The launch-time probe: before a launch of more blocks than ``Limits.probe_blocks`` runs
block by block, a few of its blocks (first, middle, last) are timed to estimate the whole, so
that a launch estimated over ``Limits.max_seconds`` is refused before anything runs
(``blocks.check_budget``). The probed blocks run on stand-ins for the arrays: nothing the
user passed is written, and no array is copied that the probe only reads.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

from . import blocks, state
from .ops_memory import Array, int32


def probe(fn: Any, converted: list[Any], run: state.RunState, subset: Any, total: int
          ) -> blocks.Estimate | None:
    """Time a few blocks on stand-ins for the arrays, so that nothing the user passed is
    written: read-only views of them at first and, for each array a probed block turns out
    to write, a writable stand-in (:func:`_make_writable`), the blocks run again after each.
    A launch this large has large arrays: copying every one of them up front cost as much
    memory again and, for a vector add of 10^8 elements, 40 % of the launch's CPU time."""
    twins: list[Array] = []
    args = [_stand_in(a, twins) for a in converted]
    picks = blocks.probe_blocks(total, run.grid, subset)
    copied = False
    for _ in range(len(twins) + 2):
        probe = state.RunState(run.grid, [], run.user_codes)
        probe.grid_tiles = run.grid_tiles
        probe.poison_values, probe.padding = run.poison_values, run.padding
        probe.typed = run.typed
        try:
            elapsed = _time_blocks(fn, args, probe, picks)
        except ValueError as exc:
            if "read-only" not in str(exc) or copied:
                return None  # the real run reports it, at the right block
            twin = _written_twin(exc, twins)
            if twin is not None and not twin._data.flags.writeable:
                _make_writable(twin, probe.recorder or [])
            else:  # written through an array derived from one (a slice): copy them all
                args, copied = [_copy_arg(a) for a in converted], True
            continue
        except Exception:  # the real run reports it, at the right block
            return None
        n = len(picks)
        return blocks.Estimate(total, elapsed / n, len(probe.recorder or ()) / n)
    return None


def _time_blocks(fn, args: list[Any], probe: state.RunState, picks) -> float:
    """Seconds for the probed blocks, the second time they run (the first pays one-off costs:
    caches)."""
    state.push(probe)
    try:
        with np.errstate(all="ignore"):
            for timed in (False, True):
                started = time.perf_counter()
                if timed:
                    probe.recorder.clear()
                for b in picks:
                    probe.bid, probe.bid_tiles = b, tuple(int32(v) for v in b)
                    probe.line_counts, probe.cas_failures = {}, {}
                    fn(*args)
            return time.perf_counter() - started
    finally:
        state.pop()


def _stand_in(value: Any, twins: list[Array]) -> Any:
    """An array argument seen through a read-only view (a write raises ValueError)."""
    if isinstance(value, Array):
        twin = copy.copy(value)
        twin._data = value._data.view()
        twin._data.flags.writeable = False
        twins.append(twin)
        return twin
    if isinstance(value, (list, tuple)):
        return type(value)(_stand_in(v, twins) for v in value)
    return value


def _written_twin(exc: BaseException, twins: list[Array]) -> Array | None:
    """The stand-in whose write raised ``exc``: the array the innermost frame holding one was
    writing (None when that is an array derived from a stand-in, e.g. a slice)."""
    ids = {id(t) for t in twins}
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        held = {id(v): v for v in frame.f_locals.values() if isinstance(v, Array)}
        if held:  # one array: the one written (``array`` and ``arr`` may both name it)
            return next(iter(held.values())) if len(held) == 1 and held.keys() <= ids else None
    return None


def _make_writable(twin: Array, accesses: list[Any]) -> None:
    """A copy of the array when the probe read it before writing it; otherwise zeros, whose
    pages the OS hands out only where the probed blocks write (an output array costs next to
    nothing). A probed block that reads its output after writing it then reads zeros where
    it wrote nothing: the estimate may move, the user's arrays are untouched either way."""
    read = any(a.arg == twin.name and a.kind != "store" for a in accesses)
    data = twin._data
    twin._data = data.copy() if read else np.zeros(data.shape, data.dtype)


def _copy_arg(value: Any) -> Any:
    if isinstance(value, Array):
        twin = copy.copy(value)
        twin._data = value._data.copy()
        return twin
    if isinstance(value, (list, tuple)):
        return type(value)(_copy_arg(v) for v in value)
    return value
