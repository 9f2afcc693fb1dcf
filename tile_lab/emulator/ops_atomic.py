"""Atomic read-modify-write operations, with sequential semantics.

Blocks run one after another and the lanes of one atomic apply in lane order, which is
one of the orders a GPU may produce. A spin lock built on ``atomic_cas`` therefore works
(the lock is always free when a block tries it), and a CAS that keeps failing on the same
element with the same expected value can never succeed: that is reported, not hung.
"""

from __future__ import annotations

import cuda.tile as ct
import numpy as np

from . import dtypes, poison
from .ops_gather import index_lanes, values_for
from .ops_memory import check_array, implicit_cast_check
from .recording import record_points
from .registry import emulates
from .rmw import RMW
from .state import current, kernel_error, user_frame
from .tile import Tile

_ACQ_REL, _DEVICE = ct.MemoryOrder.ACQ_REL, ct.MemoryScope.DEVICE
CAS_SPIN_LIMIT = 1_000  # consecutive failures of one CAS (same site, element, expected)


def _scalar_lane(arr, indices, *values):
    """Index and values of a one-lane atomic (the lock / counter case), else None."""
    idx = indices if isinstance(indices, tuple) else (indices,)
    if len(idx) != arr._data.ndim:
        return None
    pos = []
    for i in idx:
        if isinstance(i, Tile) and i.ndim == 0 and dtypes.is_integer(i.dtype):
            pos.append(int(i._a))
        elif isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            pos.append(int(i))
        else:
            return None
    for v in values:
        if isinstance(v, Tile) and v.ndim != 0:
            return None
    return tuple(pos)


def _in_bounds(pos, shape) -> bool:
    return all(0 <= p < n for p, n in zip(pos, shape))


def _scalar_value(v, arr, what: str) -> np.ndarray:
    if isinstance(v, Tile):
        if v.dtype is arr._dtype:
            return v._a
        implicit_cast_check(v, v.dtype, arr, what)
        return dtypes.cast(v._a, arr._dtype)
    implicit_cast_check(v, None, arr, what)
    return dtypes.cast(np.asarray(v), arr._dtype)


# array dtypes each atomic supports (cuTile 1.7)
_INT_32_64 = frozenset({ct.int32, ct.int64, ct.uint32, ct.uint64})
_SUPPORTED = {
    "xchg": _INT_32_64 | {ct.float32, ct.float64},
    "cas": _INT_32_64 | {ct.float32, ct.float64},
    "add": _INT_32_64 | {ct.float16, ct.bfloat16, ct.float32, ct.float64},  # bf16: sm_90+
    "max": _INT_32_64, "min": _INT_32_64,
    "and": _INT_32_64, "or": _INT_32_64, "xor": _INT_32_64,
}


def _check_atomic(op: str, arr, update) -> None:
    if arr.dtype not in _SUPPORTED[op]:
        allowed = ", ".join(sorted(str(d) for d in _SUPPORTED[op]))
        raise kernel_error(f"atomic_{op} does not support arrays of {arr.dtype} "
                           f"({arr.name}); supported: {allowed}")
    if op in ("and", "or", "xor") and isinstance(update, Tile) and update.dtype is not arr.dtype:
        raise kernel_error(f"bitwise atomics need the update dtype ({update.dtype}) to match "
                           f"the array dtype ({arr.dtype}) exactly")


def _atomic_rmw(op: str, array, indices, update, check_bounds) -> Tile:
    name = f"atomic_{op}"
    arr = check_array(array, name)
    _check_atomic(op, arr, update)
    data, rmw = arr._data, RMW[op]
    pos = _scalar_lane(arr, indices, update)
    if pos is not None:
        if not _in_bounds(pos, data.shape):
            record_points("atomic", name, arr, tuple(np.zeros(0, int) for _ in pos), 1, 0,
                           not check_bounds)
            return Tile(np.zeros((), data.dtype), arr._dtype)
        cur = np.array(data[pos])
        data[pos] = rmw(cur, _scalar_value(update, arr, "update"), arr._dtype)
        if type(update) is poison.Poisoned:
            poison.sink_points(update, arr, tuple(np.array(p) for p in pos), None, (), name)
        record_points("atomic", name, arr, tuple(np.array([p]) for p in pos), 0, 0,
                       not check_bounds)
        return Tile(cur, arr._dtype)
    parts, shape, live, oob, _ = index_lanes(arr, indices, None, check_bounds, name)
    upd = values_for(update, arr, shape, "update")
    old = np.zeros(shape, dtype=data.dtype)  # out-of-bounds lanes: implementation-defined
    sel = tuple(p[live] for p in parts)
    old[live] = rmw_lanes(data, sel, upd[live], rmw, arr._dtype)
    if type(update) is poison.Poisoned:
        poison.sink_points(update, arr, tuple(parts), live, shape, name)
    record_points("atomic", name, arr, sel, oob, 0, not check_bounds)
    return Tile(old, arr._dtype)


def rmw_lanes(data: np.ndarray, sel: tuple[np.ndarray, ...], lane_upd: np.ndarray, rmw,
              dtype: object) -> np.ndarray:
    """Apply ``rmw`` at the elements ``sel`` of ``data`` (one lane each, in lane order) and
    return the values each lane saw before its update."""
    lanes = sel[0].size if sel else 0
    flat = np.ravel_multi_index(sel, data.shape) if lanes else np.zeros(0, int)
    if np.unique(flat).size == flat.size:
        cur = data[sel]
        data[sel] = rmw(cur, lane_upd, dtype)
        return cur
    olds = np.empty(flat.size, dtype=data.dtype)  # repeated elements: one after another
    for k in range(flat.size):
        at = tuple(int(p[k]) for p in sel)
        olds[k] = data[at]
        data[at] = rmw(np.asarray(olds[k]), np.asarray(lane_upd[k]), dtype)
    return olds


def cas_lanes(data: np.ndarray, sel: tuple[np.ndarray, ...], e: np.ndarray, d: np.ndarray
              ) -> tuple[np.ndarray, int, np.ndarray]:
    """Compare-and-swap at the elements ``sel`` (lane order): the values the lanes saw, how
    many succeeded, and the flat element numbers (for the spin watch)."""
    lanes = sel[0].size if sel else 0
    flat = np.ravel_multi_index(sel, data.shape) if lanes else np.zeros(0, int)
    if np.unique(flat).size == flat.size:
        cur = data[sel]
        ok = cur == e
        data[tuple(s[ok] for s in sel)] = d[ok]
        return cur, int(np.count_nonzero(ok)), flat
    olds, succeeded = np.empty(lanes, dtype=data.dtype), 0
    for k in range(lanes):  # repeated elements: one after another
        at = tuple(int(p[k]) for p in sel)
        olds[k] = data[at]
        if olds[k] == e[k]:
            data[at] = d[k]
            succeeded += 1
    return olds, succeeded, flat


def _rmw_op(op: str, stub):
    @emulates(stub)
    def impl(array, indices, update, /, *, check_bounds=True, memory_order=_ACQ_REL,
             memory_scope=_DEVICE) -> Tile:
        return _atomic_rmw(op, array, indices, update, check_bounds)
    impl.__name__ = impl.__qualname__ = f"atomic_{op}"
    return impl


atomic_xchg = _rmw_op("xchg", ct.atomic_xchg)
atomic_add = _rmw_op("add", ct.atomic_add)
atomic_max = _rmw_op("max", ct.atomic_max)
atomic_min = _rmw_op("min", ct.atomic_min)
atomic_and = _rmw_op("and", ct.atomic_and)
atomic_or = _rmw_op("or", ct.atomic_or)
atomic_xor = _rmw_op("xor", ct.atomic_xor)


@emulates(ct.atomic_cas)
def atomic_cas(array, indices, expected, desired, /, *, check_bounds=True,
               memory_order=_ACQ_REL, memory_scope=_DEVICE) -> Tile:
    arr = check_array(array, "atomic_cas")
    _check_atomic("cas", arr, None)
    data = arr._data
    pos = _scalar_lane(arr, indices, expected, desired)
    if pos is not None:
        exp = _scalar_value(expected, arr, "expected")
        if not _in_bounds(pos, data.shape):
            record_points("atomic", "atomic_cas", arr, tuple(np.zeros(0, int) for _ in pos), 1,
                           0, not check_bounds)
            return Tile(np.array(exp), arr._dtype)
        cur = np.array(data[pos])
        ok = bool(cur == exp)
        if ok:
            data[pos] = _scalar_value(desired, arr, "desired")
        record_points("atomic", "atomic_cas", arr, tuple(np.array([p]) for p in pos), 0, 0,
                       not check_bounds)
        watch_spin(ok, (pos, exp.tobytes()))
        return Tile(cur, arr._dtype)
    parts, shape, live, oob, _ = index_lanes(arr, indices, None, check_bounds, "atomic_cas")
    exp = values_for(expected, arr, shape, "expected")
    des = values_for(desired, arr, shape, "desired")
    old = np.array(exp)  # out-of-bounds lanes return `expected`
    sel = tuple(p[live] for p in parts)
    lanes = sel[0].size if sel else 0
    e = exp[live]
    old[live], succeeded, flat = cas_lanes(data, sel, e, des[live])
    if type(desired) is poison.Poisoned:
        poison.sink_points(desired, arr, tuple(parts), live, shape, "atomic_cas")
    record_points("atomic", "atomic_cas", arr, sel, oob, 0, not check_bounds)
    if lanes:
        watch_spin(succeeded > 0, (flat.tobytes(), e.tobytes()))
    return Tile(old, arr._dtype)


def watch_spin(succeeded: bool, target: tuple) -> None:
    """Blocks run one after another, so a CAS that keeps failing in one block on the same
    element and expected value can never succeed (no other block runs meanwhile)."""
    state = current()
    frame = user_frame(1)
    key = (None if frame is None else (frame.f_code, frame.f_lasti), target)
    if succeeded:
        state.cas_failures.pop(key, None)
        return
    fails = state.cas_failures.get(key, 0) + 1
    state.cas_failures[key] = fails
    if fails >= CAS_SPIN_LIMIT:
        raise kernel_error(
            f"atomic_cas failed {fails} times in a row on the same element: the emulator runs "
            "blocks one after another, so no other block can change it meanwhile and this "
            "spin can never succeed (a lock never released, or waiting for a later block)")
