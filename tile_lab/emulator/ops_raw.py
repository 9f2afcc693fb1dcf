"""``Array.get_raw_memory()``: an array's memory addressed by element offset from its base
pointer, with loads, stores and every atomic (cuTile's ``RawArrayMemory``).

An offset counts elements from the array's first element in memory order, whatever the
array's shape and strides (a row-major ``(M, N)`` array's ``(i, j)`` is offset ``i * N + j``).
The memory reachable is the kernel argument's, from the base pointer to its last element: a
sliced array's raw memory runs on through the rest of the argument it came from. A live lane
(not masked off) whose offset falls outside that memory is undefined behaviour on the GPU (a
fault, or a silent read or write of whatever lies there, e.g. the rest of the allocation's
granule): the emulator touches nothing there; a load, an atomic's old value or a CAS result
in such a lane is undetermined (poisoned, as an ``UNDETERMINED`` padding is), and the access
is recorded as out of bounds and unchecked, so ``tile_lab.sanitize`` reports it. Masked-off
lanes touch nothing: a load gives ``padding_value`` there, a CAS gives ``expected``.

Every access is recorded in the trace as the argument elements it touched (an offset into a
gap of a strided argument is memory the argument does not own: counted as out of bounds).
"""

from __future__ import annotations

from typing import Any

import cuda.tile as ct
import numpy as np

from .._cutile_compat.device import raw_array_memory_stub
from . import dtypes, poison
from .ops_atomic import _check_atomic, cas_lanes, rmw_lanes, watch_spin
from .ops_gather import values_for
from .ops_memory import Array
from .recording import record_points
from .registry import IMPLEMENTATIONS, emulates_method
from .rmw import RMW
from .state import kernel_error
from .tile import Tile, as_tile

_ACQ_REL, _DEVICE = ct.MemoryOrder.ACQ_REL, ct.MemoryScope.DEVICE
_RAW = raw_array_memory_stub()  # cuTile's stub class (cuda.tile does not export it)


class RawArrayMemory:
    """What ``array.get_raw_memory()`` returns: the array's base pointer and dtype."""

    __slots__ = ("_array", "_base", "_mem", "_root_strides")

    def __init__(self, array: Array) -> None:
        data = array._data
        item = data.itemsize
        self._array = array
        self._root_strides = tuple(s // item for s in data.strides)
        # where this array starts inside the argument it came from, in elements
        self._base = sum(o * s for o, s in zip(array._origin, self._root_strides))
        top = sum(max(0, (n - 1) * s) for n, s in zip(array._root_shape, self._root_strides))
        size = top - self._base + 1 if all(array._root_shape) else 0
        self._mem = np.lib.stride_tricks.as_strided(data, shape=(max(size, 0),),
                                                    strides=(item,))

    @property
    def dtype(self) -> object:
        return self._array._dtype

    # ---- lanes ---------------------------------------------------------------------------

    def _lanes(self, offset: Any, mask: Any, op: str):
        """(positions, shape, live lanes, masked-off count, lanes outside the memory) of an
        access at ``offset``; live lanes are in the memory."""
        off = as_tile(offset, "offset")
        if not dtypes.is_integer(off.dtype):
            raise kernel_error(f"RawArrayMemory.{op}: offset must be an integer tile or int, "
                               f"got {off.dtype}")
        raw = np.asarray(off._a)
        shape, size = raw.shape, self._mem.shape[0]
        if mask is None:
            live, masked = np.ones(shape, dtype=bool), 0
        else:
            m = as_tile(mask, "mask")
            if m.dtype is not ct.bool_:
                raise kernel_error(f"RawArrayMemory.{op}: mask must be a bool tile, got "
                                   f"{m.dtype}")
            try:
                live = np.broadcast_to(np.asarray(m._a, dtype=bool), shape)
            except ValueError:
                raise kernel_error(f"RawArrayMemory.{op}: mask of shape {m.shape} does not "
                                   f"broadcast to the offset shape {shape}") from None
            masked = int(np.count_nonzero(~live))
        # cuTile converts offsets to uint64: a negative one is as far out as a huge one
        outside = (raw >= size) if raw.dtype.kind == "u" else (raw < 0) | (raw >= size)
        outside = live & outside
        pos = np.where(outside, 0, raw).astype(np.int64)
        return pos, shape, live & ~outside, masked, outside

    def _argument_coords(self, pos: np.ndarray):
        """Per position: the argument element it is (indices relative to this array's
        origin, as the trace and the poison report take them) and whether it is one."""
        arr = self._array
        q = pos + self._base
        strides, shape = self._root_strides, arr._root_shape
        rem, idx = q.copy(), [None] * len(shape)
        for k in sorted(range(len(shape)), key=lambda k: -strides[k]):
            s = strides[k]
            idx[k] = np.zeros_like(q) if s <= 0 else rem // s
            rem = rem - idx[k] * max(s, 0)
        ok = rem == 0
        for k, n in enumerate(shape):
            ok &= (idx[k] >= 0) & (idx[k] < n)
        parts = tuple(i - o for i, o in zip(idx, arr._origin))
        return parts, ok

    def _record(self, kind: str, op: str, pos: np.ndarray, live: np.ndarray, masked: int,
                outside: np.ndarray) -> None:
        parts, ok = self._argument_coords(pos[live])
        sel = tuple(p[ok] for p in parts)
        wild = int(np.count_nonzero(outside))
        record_points(kind, op, self._array, sel, int(np.count_nonzero(~ok)) + wild, masked,
                      wild > 0)

    def _undetermined(self, out: np.ndarray, outside: np.ndarray, op: str) -> Tile:
        """``out`` as a tile whose ``outside`` lanes (read nowhere) are undetermined."""
        if not outside.any():
            return Tile(out, self._array._dtype)
        out[outside] = 0  # what "zero" padding shows; poison overwrites it
        return poison.padded(out, outside, self._array._dtype, self._array.name, op,
                             filled=False)

    def _sink(self, value: Any, pos: np.ndarray, live: np.ndarray, shape, op: str) -> None:
        if type(value) is not poison.Poisoned:
            return
        parts, ok = self._argument_coords(np.broadcast_to(pos, shape))
        poison.sink_points(value, self._array, parts, live & ok, shape, op)

    # ---- loads and stores ----------------------------------------------------------------

    @emulates_method(_RAW.load_offset)
    def load_offset(self, offset, /, *, mask=None, padding_value=0, latency=None) -> Tile:
        arr = self._array
        pos, shape, live, masked, outside = self._lanes(offset, mask, "load_offset")
        if masked:
            out = np.array(values_for(padding_value, arr, shape, "padding_value"))
            out[live] = self._mem[pos[live]]
        else:
            out = np.asarray(self._mem[pos])  # fancy indexing: a copy
        self._record("gather", "load_offset", pos, live, masked, outside)
        return self._undetermined(out, outside, "load_offset")

    @emulates_method(_RAW.store_offset)
    def store_offset(self, offset, value, /, *, mask=None, latency=None) -> None:
        arr = self._array
        pos, shape, live, masked, outside = self._lanes(offset, mask, "store_offset")
        vals = values_for(value, arr, shape, "value")
        self._mem[pos[live]] = vals[live]
        self._sink(value, pos, live, shape, "store_offset")
        self._record("scatter", "store_offset", pos, live, masked, outside)

    # ---- atomics -------------------------------------------------------------------------

    def _rmw(self, op: str, offset, update, mask) -> Tile:
        arr, name = self._array, f"atomic_{op}_offset"
        _check_atomic(op, arr, update)
        pos, shape, live, masked, outside = self._lanes(offset, mask, name)
        upd = values_for(update, arr, shape, "update")
        old = np.zeros(shape, dtype=arr._data.dtype)  # masked-off lanes: unspecified
        old[live] = rmw_lanes(self._mem, (pos[live],), upd[live], RMW[op], arr._dtype)
        self._sink(update, pos, live, shape, name)
        self._record("atomic", name, pos, live, masked, outside)
        return self._undetermined(old, outside, name)

    @emulates_method(_RAW.atomic_cas_offset)
    def atomic_cas_offset(self, offset, expected, desired, /, *, mask=None,
                          memory_order=_ACQ_REL, memory_scope=_DEVICE) -> Tile:
        arr = self._array
        _check_atomic("cas", arr, None)
        pos, shape, live, masked, outside = self._lanes(offset, mask, "atomic_cas_offset")
        exp = values_for(expected, arr, shape, "expected")
        des = values_for(desired, arr, shape, "desired")
        old = np.array(exp)  # masked-off lanes return `expected`
        e = exp[live]
        old[live], succeeded, flat = cas_lanes(self._mem, (pos[live],), e, des[live])
        self._sink(desired, pos, live, shape, "atomic_cas_offset")
        self._record("atomic", "atomic_cas_offset", pos, live, masked, outside)
        if flat.size:
            watch_spin(succeeded > 0, (flat.tobytes(), e.tobytes()))
        return self._undetermined(old, outside, "atomic_cas_offset")

    @emulates_method(_RAW.atomic_xchg_offset)
    def atomic_xchg_offset(self, offset, update, /, *, mask=None, memory_order=_ACQ_REL,
                           memory_scope=_DEVICE) -> Tile:
        return self._rmw("xchg", offset, update, mask)

    @emulates_method(_RAW.atomic_add_offset)
    def atomic_add_offset(self, offset, update, /, *, mask=None, memory_order=_ACQ_REL,
                          memory_scope=_DEVICE) -> Tile:
        return self._rmw("add", offset, update, mask)

    @emulates_method(_RAW.atomic_max_offset)
    def atomic_max_offset(self, offset, update, /, *, mask=None, memory_order=_ACQ_REL,
                          memory_scope=_DEVICE) -> Tile:
        return self._rmw("max", offset, update, mask)

    @emulates_method(_RAW.atomic_min_offset)
    def atomic_min_offset(self, offset, update, /, *, mask=None, memory_order=_ACQ_REL,
                          memory_scope=_DEVICE) -> Tile:
        return self._rmw("min", offset, update, mask)

    @emulates_method(_RAW.atomic_and_offset)
    def atomic_and_offset(self, offset, update, /, *, mask=None, memory_order=_ACQ_REL,
                          memory_scope=_DEVICE) -> Tile:
        return self._rmw("and", offset, update, mask)

    @emulates_method(_RAW.atomic_or_offset)
    def atomic_or_offset(self, offset, update, /, *, mask=None, memory_order=_ACQ_REL,
                         memory_scope=_DEVICE) -> Tile:
        return self._rmw("or", offset, update, mask)

    @emulates_method(_RAW.atomic_xor_offset)
    def atomic_xor_offset(self, offset, update, /, *, mask=None, memory_order=_ACQ_REL,
                          memory_scope=_DEVICE) -> Tile:
        return self._rmw("xor", offset, update, mask)

    def __repr__(self) -> str:
        return f"<raw memory of {self._array.name}[{self._array._dtype}]>"


IMPLEMENTATIONS["RawArrayMemory"] = RawArrayMemory  # Array.get_raw_memory builds it
