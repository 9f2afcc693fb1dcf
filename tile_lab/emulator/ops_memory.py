"""Arrays and tile-space memory operations: ``load``/``store``, tiled views, slices, and the
helpers every memory op shares (argument checks, implicit casts, trace recording).

Every operation records one :class:`~tile_lab.tracing.trace.MemoryAccess` when tracing is on,
in element indices of the *kernel argument* (a slice's shifted back into its parent's).
Semantics follow cuTile's API reference: a tile partly outside the array is padded on a load
(``padding_mode``; UNDETERMINED lanes are poisoned: ``poison.py``) and its outside lanes
discarded on a store; gather/scatter/atomics skip out-of-bounds and masked-off lanes. A tile
*entirely* outside is undefined behaviour in cuTile: padded / discarded like a partial tile
and recorded, for the sanitizer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cuda.tile as ct
import numpy as np

from ..errors import CompileError
from . import dtypes, poison
from .operands import VALID_SHAPES, const_int, const_shape
from .recording import record_box as _record_box
from .registry import IMPLEMENTATIONS, emulates, emulates_method
from .rmw import RMW
from .state import RECORDING as _RECORDING
from .state import current, kernel_error, note_outside_tile
from .tile import _INDEX_DTYPES, Tile, is_loose

_WEAK, _NOSCOPE = ct.MemoryOrder.WEAK, ct.MemoryScope.NONE
_ACQ_REL, _DEVICE = ct.MemoryOrder.ACQ_REL, ct.MemoryScope.DEVICE
_UNDETERMINED = ct.PaddingMode.UNDETERMINED


def int32(value: int) -> Tile:
    return Tile(np.array(value, dtype=np.int32), ct.int32)


def _index(value: int) -> Tile:
    """A shape or stride as the kernel sees it: int32, or int64 past int32's range (which
    the launch allows only for ``ct.IndexedWithInt64`` parameters)."""
    if -2**31 <= value < 2**31:
        return int32(value)
    return Tile(np.array(value, dtype=np.int64), ct.int64)


class Array:
    """A global array argument (a NumPy array, written in place)."""

    __slots__ = ("_data", "_dtype", "_origin", "_root_shape", "_shape_tiles", "_sliced", "name")
    _foreign = False  # an Array.from_foreign view (ops_foreign.ForeignArray) says True

    def __init__(self, data: np.ndarray, dtype: object, name: str,
                 origin: tuple[int, ...] | None = None,
                 root_shape: tuple[int, ...] | None = None,
                 static_dims: tuple[int, ...] = ()) -> None:
        self._data = data
        self._dtype = dtype
        self.name = name  # the kernel parameter this array came from
        self._origin = origin or (0,) * data.ndim
        self._sliced = any(self._origin)
        self._root_shape = root_shape or data.shape
        # shapes are int32 run-time values, except dims the kernel declared static
        # (ct.ArrayAnnotation(static_shape_dims=...)), which are compile-time ints
        static = {d % data.ndim for d in static_dims} if data.ndim else set()
        self._shape_tiles = tuple(n if k in static else _index(n)
                                  for k, n in enumerate(data.shape))

    @property
    def dtype(self) -> object:
        return self._dtype

    @property
    def shape(self) -> tuple[Tile, ...]:
        return self._shape_tiles

    @property
    def strides(self) -> tuple[Tile, ...]:
        return tuple(_index(s // self._data.itemsize) for s in self._data.strides)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @emulates_method(ct.Array.slice)
    def slice(self, axis, start, stop) -> Array:
        axis = const_int(axis, "axis")
        nd = self._data.ndim
        if not -nd <= axis < nd:
            raise kernel_error(f"slice axis {axis} is out of range for a {nd}-d array")
        axis %= nd
        start, stop = int(start), int(stop)
        n = self._data.shape[axis]
        if not (0 <= start <= stop <= n):
            raise kernel_error(f"slice [{start}, {stop}) is outside axis {axis} of size {n}")
        sl = [slice(None)] * nd
        sl[axis] = slice(start, stop)
        origin = list(self._origin)
        origin[axis] += start
        return Array(self._data[tuple(sl)], self._dtype, self.name, tuple(origin),
                     self._root_shape)

    @emulates_method(ct.Array.tiled_view)
    def tiled_view(self, tile_shape, *, padding_mode=_UNDETERMINED,
                   traversal_steps=None) -> TiledView:
        shape = const_shape(tile_shape, "tile_shape", allow_empty=True)
        if shape and len(shape) != self.ndim:
            raise kernel_error(f"tile_shape {shape} must have the array's rank {self.ndim}")
        steps = (shape if shape else (1,) * self.ndim) if traversal_steps is None else \
            const_shape(traversal_steps, "traversal_steps", power_of_two=False)
        if len(steps) != self.ndim or any(s <= 0 for s in steps):
            raise kernel_error(f"traversal_steps {steps} must be {self.ndim} positive ints")
        return TiledView(self, shape, padding_mode, steps)

    @property
    @emulates_method(ct.Array.foreign_pointer)
    def foreign_pointer(self):
        return IMPLEMENTATIONS["Array.foreign_pointer"](self)  # ops_foreign

    @staticmethod
    @emulates_method(ct.Array.from_foreign)
    def from_foreign(pointer, shape, strides):
        return IMPLEMENTATIONS["Array.from_foreign"](pointer, shape, strides)

    @emulates_method(ct.Array.get_raw_memory)
    def get_raw_memory(self):
        return IMPLEMENTATIONS["RawArrayMemory"](self)  # ops_raw.RawArrayMemory

    def __repr__(self) -> str:
        return f"<array {self.name}[{self._dtype}, {self._data.shape}]>"


class TiledView:
    """``Array.tiled_view``: an array seen as a grid of fixed-shape tiles."""

    __slots__ = ("_array", "_padding", "_steps", "_tile_shape")

    def __init__(self, array: Array, tile_shape: tuple[int, ...], padding, steps) -> None:
        self._array, self._tile_shape, self._padding, self._steps = \
            array, tile_shape, padding, steps

    @property
    def dtype(self) -> object:
        return self._array._dtype

    @property
    def tile_shape(self) -> tuple[int, ...]:
        return self._tile_shape

    @property
    def traversal_steps(self) -> tuple[int, ...]:
        return self._steps

    def _full_shape(self) -> tuple[int, ...]:
        return self._tile_shape or (1,) * self._array.ndim

    @emulates_method(ct.TiledView.num_tiles)
    def num_tiles(self, axis) -> Tile:
        axis = const_int(axis, "axis")
        n = self._array._data.shape[axis]
        s = self._steps[axis]
        # origins 0, s, 2s, ... while the tile still starts inside the array (the last ones
        # may reach past its end and are padded), as cuTile counts them: cdiv(n, s)
        return int32(-(-n // s) if n > 0 else 0)

    def _start(self, index) -> tuple[int, ...]:
        idx = _tile_index(index, self._array.ndim)
        return tuple(i * s for i, s in zip(idx, self._steps)), idx

    @emulates_method(ct.TiledView.load)
    def load(self, index, *, check_bounds=True, latency=None, allow_tma=None) -> Tile:
        if check_bounds is False and self._padding is not _UNDETERMINED:
            raise _padding_without_bounds("TiledView.load", self._padding)
        arr = self._array
        start, idx = self._start(index)
        shape = self._full_shape()
        tile = _read_box(arr, arr._data, start, shape, self._padding, self._tile_shape,
                         "tiled_view.load",
                         lambda: poison.tma_eligible(arr._data, shape, allow_tma))
        _record_box("load", "tiled_view.load", arr, idx, shape, start, None, self._padding,
                    not check_bounds)
        return tile

    @emulates_method(ct.TiledView.store)
    def store(self, index, tile, *, check_bounds=True, latency=None, allow_tma=None) -> None:
        arr = self._array
        start, idx = self._start(index)
        shape = self._full_shape()
        _write_box(arr, arr._data, start, shape, _store_values(tile, arr, shape, "tile"))
        if type(tile) is poison.Poisoned:
            poison.sink_box(tile, arr, start, shape, None, "tiled_view.store")
        _record_box("store", "tiled_view.store", arr, idx, shape, start, None, None,
                    not check_bounds)

    def _atomic_store(self, op: str, index, update) -> None:
        arr = self._array
        start, idx = self._start(index)
        shape = self._full_shape()
        values = _store_values(update, arr, shape, "update")
        sl, src = _clip(arr._data.shape, start, shape)
        if sl is not None:
            view = arr._data[sl]
            view[...] = RMW[op](view, values[src], arr._dtype)
        if type(update) is poison.Poisoned:
            poison.sink_box(update, arr, start, shape, None, f"atomic_store_{op}")
        _record_box("atomic", f"atomic_store_{op}", arr, idx, shape, start, None, None, False)

    @emulates_method(ct.TiledView.atomic_store_add)
    def atomic_store_add(self, index, update, /) -> None:
        self._atomic_store("add", index, update)

    @emulates_method(ct.TiledView.atomic_store_max)
    def atomic_store_max(self, index, update, /) -> None:
        self._atomic_store("max", index, update)

    @emulates_method(ct.TiledView.atomic_store_min)
    def atomic_store_min(self, index, update, /) -> None:
        self._atomic_store("min", index, update)

    @emulates_method(ct.TiledView.atomic_store_and)
    def atomic_store_and(self, index, update, /) -> None:
        self._atomic_store("and", index, update)

    @emulates_method(ct.TiledView.atomic_store_or)
    def atomic_store_or(self, index, update, /) -> None:
        self._atomic_store("or", index, update)

    @emulates_method(ct.TiledView.atomic_store_xor)
    def atomic_store_xor(self, index, update, /) -> None:
        self._atomic_store("xor", index, update)


class Slice:
    """``ct.Slice(start, length)``: a dense dimension of advanced indexing."""

    __slots__ = ("length", "start")

    @emulates_method(ct.Slice.__init__)
    def __init__(self, start, length, /) -> None:
        self.start = int(start)
        self.length = const_int(length, "Slice length")
        if self.length <= 0 or self.length & (self.length - 1):
            raise kernel_error(f"Slice length {self.length} must be a power of two")


IMPLEMENTATIONS["Slice"] = Slice


# ---- argument checking ----------------------------------------------------------------

def _padding_without_bounds(op: str, padding_mode: Any) -> CompileError:
    """A padded load without bounds checks: cuTile passes it, tileiras (13.4) fails on it."""
    return CompileError(
        f"{op} with check_bounds=False and padding_mode={padding_mode.name}: tileiras fails "
        "on a padded load without bounds checks, so the emulator does not run it either",
        hint="check_bounds=False declares every lane in bounds: drop the padding_mode")


def check_array(array: Any, op: str) -> Array:
    if not isinstance(array, Array):
        raise kernel_error(f"ct.{op} expects an array as its first argument, got "
                           f"{type(array).__name__}")
    return array


def _tile_index(index: Any, ndim: int) -> tuple[int, ...]:
    if type(index) is tuple and ndim == 1 == len(index):  # the common 1-d case, first
        i = index[0]
        if type(i) is int:
            return index
        if type(i) is Tile and i._dtype in _INDEX_DTYPES and not i._a.ndim:
            return (int(i._a),)
    idx = index if isinstance(index, (tuple, list)) else (index,)
    if len(idx) != ndim:
        raise kernel_error(f"index {tuple(idx)} has {len(idx)} components but the array has "
                           f"{ndim} dimensions")
    try:
        return tuple(i if type(i) is int else i.__index__() for i in idx)
    except (TypeError, AttributeError):
        raise kernel_error(f"index components must be ints or 0-d integer tiles, got "
                           f"{tuple(type(i).__name__ for i in idx)}") from None


def _order(order: Any, ndim: int) -> tuple[int, ...] | None:
    """Axis permutation, or None for the identity."""
    if order == "C":
        return None
    if order == "F":
        return tuple(range(ndim - 1, -1, -1)) if ndim > 1 else None
    perm = tuple(const_int(o, "order") for o in order)
    if sorted(perm) != list(range(ndim)):
        raise kernel_error(f"order {perm} is not a permutation of the array's {ndim} axes")
    return None if perm == tuple(range(ndim)) else perm


_PAD = {
    ct.PaddingMode.UNDETERMINED: 0, ct.PaddingMode.ZERO: 0, ct.PaddingMode.NEG_ZERO: -0.0,
    ct.PaddingMode.NAN: float("nan"), ct.PaddingMode.POS_INF: float("inf"),
    ct.PaddingMode.NEG_INF: float("-inf"),
}


def pad_value(mode: Any, arr: Array) -> Any:
    try:
        value = _PAD[mode]
    except KeyError:
        raise kernel_error(f"padding_mode must be a ct.PaddingMode, got {mode!r}") from None
    if not dtypes.is_float(arr._dtype) and value != 0:
        raise kernel_error(f"padding mode {mode.name} needs a float array; {arr.name} is "
                           f"{arr._dtype}")
    return value


# ---- boxes -------------------------------------------------------------------------------

def _clip(dshape, start, shape):
    """Slices of the array and of the tile for the in-bounds part (None if empty)."""
    arr_sl, tile_sl = [], []
    for st, sz, n in zip(start, shape, dshape):
        lo, hi = max(st, 0), min(st + sz, n)
        if lo >= hi:
            return None, None
        arr_sl.append(slice(lo, hi))
        tile_sl.append(slice(lo - st, hi - st))
    return tuple(arr_sl), tuple(tile_sl)


def _read_box(arr: Array, data: np.ndarray, start, shape, padding_mode,
              tile_shape, op: str, tma: Callable[[], bool] | None = None) -> Tile:
    """The box as a tile of ``tile_shape``; lanes padded under ``UNDETERMINED`` hold what the
    launch's padding policy says (``poison.fill_value``) and are tainted either way."""
    inside = True
    for st, sz, n in zip(start, shape, data.shape):
        if st < 0 or st + sz > n:
            inside = False
            break
    if inside:
        values = data[tuple([slice(st, st + sz) for st, sz in zip(start, shape)])].copy()
        return Tile(values.reshape(tile_shape), arr._dtype)
    undetermined = padding_mode is _UNDETERMINED
    fill = poison.fill_value(arr._dtype, tma) if undetermined else pad_value(padding_mode, arr)
    out = np.full(shape, fill, dtype=data.dtype)
    sl, src = _clip(data.shape, start, shape)
    if sl is not None:
        out[src] = data[sl]
    else:
        note_outside_tile(op, arr.name, tuple(st // max(sz, 1) for st, sz in zip(start, shape)))
    if not undetermined:
        return Tile(out.reshape(tile_shape), arr._dtype)
    padded = np.ones(shape, dtype=bool)
    if sl is not None:
        padded[src] = False
    return poison.padded(out.reshape(tile_shape), padded.reshape(tile_shape), arr._dtype,
                         arr.name, op)


def _write_box(arr: Array, data: np.ndarray, start, shape, values: np.ndarray) -> None:
    for st, sz, n in zip(start, shape, data.shape):
        if st < 0 or st + sz > n:
            break
    else:  # entirely inside: one slice assignment
        data[tuple([slice(st, st + sz) for st, sz in zip(start, shape)])] = values
        return
    sl, src = _clip(data.shape, start, shape)
    if sl is not None:
        data[sl] = values[src]
    else:
        note_outside_tile("store", arr.name,
                          tuple(st // max(sz, 1) for st, sz in zip(start, shape)))


def _store_values(tile: Any, arr: Array, shape: tuple[int, ...], what: str) -> np.ndarray:
    """The stored tile as array-dtype values of exactly ``shape`` (implicit cast)."""
    if isinstance(tile, Tile):
        values, dt = tile._a, tile._dtype
    elif is_loose(tile):
        values, dt = np.asarray(tile), None
    else:
        raise kernel_error(f"{what} must be a tile or a scalar, got {type(tile).__name__}")
    if dt is not arr._dtype:
        implicit_cast_check(tile, dt, arr, what)
        values = dtypes.cast(values, arr._dtype)
    values = np.asarray(values)
    if values.shape != shape:
        try:
            values = np.broadcast_to(values, shape)
        except ValueError:
            raise kernel_error(f"{what} of shape {values.shape} does not fit the tile shape "
                               f"{shape} of {arr.name}") from None
    return values


def implicit_cast_check(value: Any, value_dtype: object | None, arr: Array, what: str) -> None:
    """cuTile only casts implicitly when it widens (see dtypes.check_implicit_cast)."""
    try:
        dtypes.check_implicit_cast(value, value_dtype, arr._dtype)
    except dtypes.PromotionError as exc:
        raise kernel_error(f"{what} does not fit {arr.name} ({arr._dtype}): {exc}") from None


# ---- tile-space load / store ----------------------------------------------------------------

def _inside_slices(array: Any, index: Any, shape: Any) -> tuple[slice, ...] | None:
    """The common case of a tile access, decided with as little Python as possible: an
    Array, an already-validated tile shape of its rank, an index of ints / 0-d int tiles,
    and a box entirely inside the array. None means "take the general path"."""
    if type(array) is not Array or type(index) is not tuple:
        return None
    try:
        tshape = VALID_SHAPES.get(shape)
    except TypeError:  # a shape holding a tile: unhashable
        return None
    dshape = array._data.shape
    if tshape is None or len(tshape) != len(dshape) or len(index) != len(dshape):
        return None
    if len(dshape) == 1:  # 1-d, unrolled
        i = index[0]
        if type(i) is not int:
            if type(i) is not Tile or i._dtype not in _INDEX_DTYPES or i._a.ndim:
                return None
            i = int(i._a)
        s = tshape[0]
        st = i * s
        return (slice(st, st + s),) if st >= 0 and st + s <= dshape[0] else None
    out = []
    for i, s, n in zip(index, tshape, dshape):
        if type(i) is not int:
            if type(i) is not Tile or i._dtype not in _INDEX_DTYPES or i._a.ndim:
                return None
            i = int(i._a)
        st = i * s
        if st < 0 or st + s > n:
            return None
        out.append(slice(st, st + s))
    return tuple(out)


@emulates(ct.load)
def load(array, /, index, shape, *, order="C", padding_mode=_UNDETERMINED, check_bounds=True,
         latency=None, allow_tma=None, memory_order=_WEAK, memory_scope=_NOSCOPE) -> Tile:
    if check_bounds is False and padding_mode is not _UNDETERMINED:
        raise _padding_without_bounds("ct.load", padding_mode)
    if order == "C":
        box = _inside_slices(array, index, shape)
        if box is not None and (not _RECORDING[0] or current().recorder is None):
            return Tile(array._data[box].copy(), array._dtype)
    arr = array if type(array) is Array else check_array(array, "load")
    tshape = const_shape(shape, "shape")
    nd = arr._data.ndim
    box = tshape if tshape else (1,) * nd
    if len(box) != nd:
        raise kernel_error(f"tile shape {tshape} must have the rank of {arr.name} ({nd})")
    idx = _tile_index(index, nd)
    perm = None if order == "C" else _order(order, nd)
    data = arr._data if perm is None else arr._data.transpose(perm)
    start = [i * s for i, s in zip(idx, box)]
    # TMA reads the array in its own layout (an order= transposes on chip), so that is the
    # layout its preconditions are checked on
    in_memory = box if perm is None else tuple(box[perm.index(k)] for k in range(nd))
    tile = _read_box(arr, data, start, box, padding_mode, tshape, "load",
                     lambda: poison.tma_eligible(arr._data, in_memory, allow_tma))
    _record_box("load", "load", arr, idx, box, start, perm, padding_mode, not check_bounds)
    return tile


@emulates(ct.store)
def store(array, /, index, tile, *, order="C", check_bounds=True, latency=None,
          allow_tma=None, memory_order=_WEAK, memory_scope=_NOSCOPE) -> None:
    if type(tile) is Tile and tile._dtype is getattr(array, "_dtype", None) \
            and order == "C" and (not _RECORDING[0] or current().recorder is None):
        box = _inside_slices(array, index, tile._a.shape)
        if box is not None:  # fast path: same dtype, inside, untainted, not recorded
            array._data[box] = tile._a
            return
    arr = array if type(array) is Array else check_array(array, "store")
    nd = arr._data.ndim
    tshape = tile._a.shape if isinstance(tile, Tile) else ()
    if tshape and len(tshape) != nd:
        raise kernel_error(f"tile of shape {tshape} must have the rank of {arr.name} ({nd}), "
                           "or be a scalar")
    box = tshape if tshape else (1,) * nd
    idx = _tile_index(index, nd)
    perm = None if order == "C" else _order(order, nd)
    data = arr._data if perm is None else arr._data.transpose(perm)
    start = [i * s for i, s in zip(idx, box)]
    _write_box(arr, data, start, box, _store_values(tile, arr, box, "tile"))
    if type(tile) is poison.Poisoned:
        poison.sink_box(tile, arr, start, box, perm, "store")
    _record_box("store", "store", arr, idx, box, start, perm, None, not check_bounds)


@emulates(ct.num_tiles)
def num_tiles(array, /, axis, shape, order="C") -> Tile:
    arr = check_array(array, "num_tiles")
    tshape = const_shape(shape, "shape") or (1,) * arr.ndim  # cuTile: () is all ones
    axis = const_int(axis, "axis")
    perm = _order(order, arr.ndim) or tuple(range(arr.ndim))
    n = arr._data.shape[perm[axis]]
    return int32(-(-n // tshape[axis]))
