"""Gather/scatter and advanced indexing: element-wise memory access by index tiles.

Indices broadcast together (and with ``mask``); lanes out of bounds or masked off are
skipped on stores and give ``padding_value`` on loads. Negative indices are out of bounds
(no Python wrap-around). With ``check_bounds=False`` an out-of-bounds lane is undefined
behaviour on the GPU: the emulator skips it and records the access as ``unchecked``.
"""

from __future__ import annotations

from typing import Any

import cuda.tile as ct
import numpy as np

from . import dtypes, poison
from .ops_memory import (
    Array,
    Slice,
    check_array,
    implicit_cast_check,
    pad_value,
)
from .recording import record_points
from .registry import emulates
from .state import kernel_error
from .tile import Tile, as_tile

_UNDETERMINED = ct.PaddingMode.UNDETERMINED


# ---- gather / scatter ------------------------------------------------------------------------

def index_lanes(arr: Array, indices: Any, mask: Any, check_bounds: bool, op: str):
    """Broadcast index arrays, the lanes to touch, and counts of out-of-bounds/masked lanes."""
    idx = indices if isinstance(indices, tuple) else (indices,)
    nd = arr._data.ndim
    if len(idx) != nd:
        raise kernel_error(f"ct.{op}: {len(idx)} index tiles for a {nd}-d array {arr.name}")
    parts = []
    for i in idx:
        t = as_tile(i, "an index")
        if not dtypes.is_integer(t._dtype):
            raise kernel_error(f"ct.{op}: indices must be integer tiles, got {t._dtype}")
        parts.append(np.asarray(t._a))
    m = None if mask is None else np.asarray(as_tile(mask, "mask")._a, dtype=bool)
    try:
        shape = np.broadcast_shapes(*(p.shape for p in parts), *(() if m is None else (m.shape,)))
    except ValueError:
        raise kernel_error(f"ct.{op}: index/mask shapes {[p.shape for p in parts]} do not "
                           "broadcast") from None
    parts = [np.broadcast_to(p, shape) for p in parts]
    inb = None
    for p, n in zip(parts, arr._data.shape):
        ok = (p >= 0) & (p < n)
        inb = ok if inb is None else inb & ok
    if inb is None:
        inb = np.ones(shape, dtype=bool)
    if m is None:
        live, masked, oob = inb, 0, int(np.count_nonzero(~inb))
    else:
        mb = np.broadcast_to(m, shape)
        live, masked, oob = inb & mb, int(np.count_nonzero(~mb)), int(np.count_nonzero(~inb & mb))
    return parts, shape, live, oob, masked


def values_for(value: Any, arr: Array, shape, what: str) -> np.ndarray:
    t = as_tile(value, what)
    if t._dtype is not arr._dtype:
        implicit_cast_check(value, value.dtype if isinstance(value, Tile) else None, arr, what)
    vals = t._a if t._dtype is arr._dtype else dtypes.cast(t._a, arr._dtype)
    try:
        return np.broadcast_to(np.asarray(vals), shape)
    except ValueError:
        raise kernel_error(f"{what} of shape {t.shape} does not broadcast to the index shape "
                           f"{shape}") from None


@emulates(ct.gather, taint=poison.GATHER)
def gather(array, indices, /, *, mask=None, padding_value=0, check_bounds=True,
           latency=None) -> Tile:
    arr = check_array(array, "gather")
    parts, shape, live, oob, masked = index_lanes(arr, indices, mask, check_bounds, "gather")
    data = arr._data
    if oob == 0 and masked == 0:
        sel = tuple(parts)
        out = data[sel]
    else:
        out = np.array(values_for(padding_value, arr, shape, "padding_value"))
        sel = tuple(p[live] for p in parts)
        out[live] = data[sel]
    record_points("gather", "gather", arr, sel, oob, masked, not check_bounds)
    return Tile(np.asarray(out), arr._dtype)


@emulates(ct.scatter)
def scatter(array, indices, value, /, *, mask=None, check_bounds=True, latency=None):
    arr = check_array(array, "scatter")
    parts, shape, live, oob, masked = index_lanes(arr, indices, mask, check_bounds, "scatter")
    vals = values_for(value, arr, shape, "value")
    if oob == 0 and masked == 0:
        sel = tuple(parts)
        arr._data[sel] = vals
    else:
        sel = tuple(p[live] for p in parts)
        arr._data[sel] = vals[live]
    if type(value) is poison.Poisoned:
        poison.sink_points(value, arr, tuple(parts), live, shape, "scatter")
    record_points("scatter", "scatter", arr, sel, oob, masked, not check_bounds)


# ---- advanced indexing ---------------------------------------------------------------------

def _advanced(arr: Array, indices: Any, op: str):
    nd = arr._data.ndim
    if not isinstance(indices, tuple) or len(indices) != nd:
        raise kernel_error(f"ct.{op}: indices must be a tuple of {nd} entries")
    parts, sparse = [], 0
    for k, item in enumerate(indices):
        shape = [1] * nd
        if isinstance(item, Slice):
            shape[k] = item.length
            parts.append(Tile(np.arange(item.start, item.start + item.length).reshape(shape),
                              ct.int64))
        else:
            t = as_tile(item, "an index")
            if t.ndim != 1 or not dtypes.is_integer(t._dtype):
                raise kernel_error(f"ct.{op}: entry {k} must be a ct.Slice or a 1-d int tile")
            sparse += 1
            shape[k] = t.shape[0]
            parts.append(Tile(np.asarray(t._a).reshape(shape), t.dtype))
    if sparse != 1:
        raise kernel_error(f"ct.{op}: exactly one entry must be a 1-d index tile, got {sparse}")
    return tuple(parts)


@emulates(ct.load_advanced_indexing)
def load_advanced_indexing(array, indices, /, *, padding_mode=_UNDETERMINED, latency=None,
                           allow_tma=None) -> Tile:
    arr = check_array(array, "load_advanced_indexing")
    parts = _advanced(arr, indices, "load_advanced_indexing")
    bparts, shape, live, oob, _ = index_lanes(arr, parts, None, True, "load_advanced_indexing")
    out = np.full(shape, pad_value(padding_mode, arr), dtype=arr._data.dtype)
    sel = tuple(p[live] for p in bparts)
    out[live] = arr._data[sel]
    record_points("gather", "load_advanced_indexing", arr, sel, oob, 0, False)
    if padding_mode is _UNDETERMINED and oob:
        return poison.padded(out, ~live, arr._dtype, arr.name, "load_advanced_indexing",
                             filled=False)
    return Tile(out, arr._dtype)


@emulates(ct.store_advanced_indexing)
def store_advanced_indexing(array, indices, tile, /, *, latency=None, allow_tma=None) -> None:
    arr = check_array(array, "store_advanced_indexing")
    parts = _advanced(arr, indices, "store_advanced_indexing")
    bparts, shape, live, oob, _ = index_lanes(arr, parts, None, True, "store_advanced_indexing")
    vals = values_for(tile, arr, shape, "tile")
    sel = tuple(p[live] for p in bparts)
    arr._data[sel] = vals[live]
    if type(tile) is poison.Poisoned:
        poison.sink_points(tile, arr, tuple(bparts), live, shape, "store_advanced_indexing")
    record_points("scatter", "store_advanced_indexing", arr, sel, oob, 0, False)
