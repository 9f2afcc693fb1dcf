"""Tile factories, shape manipulation and dtype conversion."""

from __future__ import annotations

import cuda.tile as ct
import numpy as np

from ..errors import EmulatorUnsupported
from . import dtypes, poison, rounding
from .operands import const_int, const_shape
from .registry import emulates
from .state import kernel_error
from .tile import Tile, as_tile


def _dtype_arg(dtype, what: str = "dtype") -> object:
    try:
        return dtypes.normalize(dtype)
    except TypeError:
        raise kernel_error(f"{what} must be a dtype such as ct.float32 or np.float32, got "
                           f"{dtype!r}") from None


def _fill(shape, value, dtype) -> Tile:
    shp = const_shape(shape, "shape")
    dt = _dtype_arg(dtype)
    if isinstance(value, Tile):
        if value.ndim != 0:
            raise kernel_error("fill_value must be a scalar")
        value = value._a
    return Tile(np.full(shp, dtypes.cast(np.asarray(value), dt), dtype=dtypes.to_numpy(dt)), dt)


# ---- factories --------------------------------------------------------------------------

@emulates(ct.full)
def full(shape, fill_value, dtype) -> Tile:
    return _fill(shape, fill_value, dtype)


@emulates(ct.zeros)
def zeros(shape, dtype) -> Tile:
    return _fill(shape, 0, dtype)


@emulates(ct.ones)
def ones(shape, dtype) -> Tile:
    return _fill(shape, 1, dtype)


@emulates(ct.arange)
def arange(size, /, *, dtype, start=0, step=1) -> Tile:
    (n,) = const_shape(size, "size")
    dt = _dtype_arg(dtype)
    compute = dtypes.compute_dtype(dt)
    first = np.asarray(start._a if isinstance(start, Tile) else start).astype(compute)
    stride = np.asarray(step._a if isinstance(step, Tile) else step).astype(compute)
    return Tile(dtypes.cast(first + stride * np.arange(n, dtype=compute), dt), dt)


@emulates(ct.astile)
def astile(value, /, *, dtype) -> Tile:
    dt = _dtype_arg(dtype)
    if isinstance(value, Tile):
        return astype(value, dt)
    values = np.asarray(value, dtype=np.float64 if dtypes.is_float(dt) else None)
    const_shape(values.shape, "astile shape")
    return Tile(dtypes.cast(values, dt), dt)


# ---- shape -------------------------------------------------------------------------------

@emulates(ct.reshape, taint=poison.LANES)
def reshape(x, /, shape) -> Tile:
    t = as_tile(x)
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    dims = tuple(const_int(d, "shape") for d in dims)
    try:
        out = np.reshape(t._a, dims)
    except ValueError:
        raise kernel_error(f"cannot reshape a tile of shape {t.shape} to {dims}") from None
    const_shape(out.shape, "reshape result")
    return Tile(out, t.dtype)


@emulates(ct.permute, taint=poison.LANES)
def permute(x, /, axes) -> Tile:
    t = as_tile(x)
    perm = tuple(const_int(a, "axes") for a in axes)
    if sorted(a % max(t.ndim, 1) for a in perm) != list(range(t.ndim)):
        raise kernel_error(f"axes {perm} are not a permutation of a {t.ndim}-d tile's axes")
    return Tile(np.transpose(t._a, perm), t.dtype)


@emulates(ct.transpose, taint=poison.LANES)
def transpose(x, /, axis0=None, axis1=None) -> Tile:
    t = as_tile(x)
    if axis0 is None and axis1 is None:
        if t.ndim != 2:
            raise kernel_error(f"ct.transpose of a {t.ndim}-d tile needs axis0 and axis1")
        return Tile(np.transpose(t._a), t.dtype)
    if axis0 is None or axis1 is None:
        raise kernel_error("ct.transpose needs both axis0 and axis1, or neither")
    return Tile(np.swapaxes(t._a, const_int(axis0, "axis0"), const_int(axis1, "axis1")),
                t.dtype)


@emulates(ct.expand_dims, taint=poison.LANES)
def expand_dims(x, /, axis) -> Tile:
    t = as_tile(x)
    return Tile(np.expand_dims(t._a, const_int(axis, "axis")), t.dtype)


@emulates(ct.broadcast_to, taint=poison.LANES)
def broadcast_to(x, /, shape) -> Tile:
    t = as_tile(x)
    shp = const_shape(shape, "shape")
    try:
        return Tile(np.broadcast_to(t._a, shp), t.dtype)
    except ValueError:
        raise kernel_error(f"cannot broadcast a tile of shape {t.shape} to {shp}") from None


@emulates(ct.cat, taint=poison.CAT)
def cat(tiles, /, axis) -> Tile:
    if not isinstance(tiles, (tuple, list)) or not 1 <= len(tiles) <= 2:
        raise kernel_error("ct.cat takes a tuple of one or two tiles")
    ax = const_int(axis, "axis")
    if len(tiles) == 1:  # cuTile: the tile itself
        return as_tile(tiles[0])
    a, b = as_tile(tiles[0]), as_tile(tiles[1])
    if a.ndim != b.ndim or a.dtype is not b.dtype or not -a.ndim <= ax < a.ndim or any(
            i != ax % a.ndim and m != n for i, (m, n) in enumerate(zip(a.shape, b.shape))):
        raise kernel_error(f"ct.cat needs two tiles of one dtype and rank, equal but along "
                           f"axis {ax}, got {a.dtype}{a.shape} and {b.dtype}{b.shape}")
    return Tile(np.concatenate((a._a, b._a), axis=ax), a.dtype)


def _subtile(t: Tile, index, shape) -> tuple[slice, ...]:
    idx = index if isinstance(index, (tuple, list)) else (index,)
    if len(idx) != t.ndim or len(shape) != t.ndim:
        raise kernel_error(f"index {tuple(idx)} / shape {shape} must have the tile's rank "
                           f"{t.ndim}")
    out = []
    for i, s, n in zip(idx, shape, t.shape):
        i = int(i)
        if s <= 0 or n % s:
            raise kernel_error(f"subtile shape {shape} must divide the tile shape {t.shape}")
        if not 0 <= i < n // s:
            raise kernel_error(f"subtile index {tuple(int(v) for v in idx)} is outside the "
                               f"{tuple(n // s for n, s in zip(t.shape, shape))} grid")
        out.append(slice(i * s, (i + 1) * s))
    return tuple(out)


@emulates(ct.extract, taint=poison.LANES)
def extract(x, /, index, shape) -> Tile:
    t = as_tile(x)
    shp = const_shape(shape, "shape")
    values = np.array(t._a[_subtile(t, index, shp or (1,) * t.ndim)])  # (): one element
    return Tile(values.reshape(shp), t.dtype)


@emulates(ct.insert, taint=poison.INSERT)
def insert(x, /, index, value) -> Tile:
    t = as_tile(x)
    v = as_tile(value, "value")
    vshape = v.shape or (1,) * t.ndim
    out = np.array(t._a)
    vals = v._a if v.dtype is t.dtype else dtypes.cast(v._a, t.dtype)
    out[_subtile(t, index, vshape)] = np.reshape(vals, vshape)
    return Tile(out, t.dtype)


# ---- dtype ----------------------------------------------------------------------------------

@emulates(ct.astype, taint=poison.CAST)
def astype(x, dtype, /, *, rounding_mode=None) -> Tile:
    t = as_tile(x)
    dt = _dtype_arg(dtype)
    if t.dtype is dt:
        return t
    if rounding.is_directed(rounding_mode) and dtypes.is_float(t.dtype) \
            and dtypes.is_float(dt):
        if dt is ct.tfloat32:
            return Tile(rounding.round_tf32(np.asarray(t._a, np.float32), rounding_mode), dt)
        return Tile(rounding.round_to(rounding.wide(t._a), dtypes.to_numpy(dt), rounding_mode),
                    dt)
    return Tile(dtypes.cast(t._a, dt), dt)


@emulates(ct.bitcast, taint=poison.CAST)
def bitcast(x, /, dtype) -> Tile:
    t = as_tile(x)
    dt = _dtype_arg(dtype)
    src, dst = dtypes.to_numpy(t.dtype), dtypes.to_numpy(dt)
    if t.dtype.bitwidth != dt.bitwidth or src.itemsize != dst.itemsize:
        raise kernel_error(f"ct.bitcast from {t.dtype} to {dt} needs equal bit widths")
    values = np.ascontiguousarray(t._a).view(dst)  # (makes 0-d inputs 1-d: undo that)
    return Tile(values.reshape(t.shape), dt)


@emulates(ct.pack_to_bytes, taint=poison.CAST)
def pack_to_bytes(x, /) -> Tile:
    t = as_tile(x)
    if t.dtype.bitwidth % 8:
        raise EmulatorUnsupported(f"pack_to_bytes of {t.dtype} (sub-byte) is not supported "
                                  "by the CPU emulator")
    return Tile(np.ascontiguousarray(t._a).reshape(-1).view(np.uint8), ct.uint8)


@emulates(ct.unpack_from_bytes, taint=poison.CAST)
def unpack_from_bytes(x, /, dtype) -> Tile:
    t = as_tile(x)
    dt = _dtype_arg(dtype)
    if t.dtype is not ct.uint8 or t.ndim != 1:
        raise kernel_error("ct.unpack_from_bytes needs a 1-d uint8 tile")
    if dt.bitwidth % 8:
        raise EmulatorUnsupported(f"unpack_from_bytes to {dt} (sub-byte) is not supported "
                                  "by the CPU emulator")
    return Tile(np.ascontiguousarray(t._a).view(dtypes.to_numpy(dt)), dt)
