"""Reductions and scans.

Built-in reductions keep the input dtype (bool sums become int32), as cuTile does.
``ct.reduce``/``ct.scan`` with a user ``func`` run as a tree over whole sub-tiles
(log2(n) calls of ``func``), so they stay vectorised: ``func`` is elementwise by contract.
"""

from __future__ import annotations

import cuda.tile as ct
import numpy as np

from . import dtypes, poison
from .operands import const_axes
from .registry import emulates
from .state import kernel_error
from .tile import Tile, as_tile, finish


def _accumulating(t: Tile) -> tuple[object, np.ndarray]:
    """Result dtype and values to reduce (bool counts as int32; narrow floats in f32)."""
    dt = ct.int32 if t.dtype is ct.bool_ else t.dtype
    return dt, np.asarray(t._a).astype(dtypes.compute_dtype(dt), copy=False)


def _reduce(ufunc, x, axis, keepdims) -> Tile:
    t = as_tile(x)
    dt, a = _accumulating(t)
    ax = const_axes(axis, t.ndim)
    r = ufunc.reduce(a, axis=ax, keepdims=bool(keepdims), dtype=a.dtype) \
        if ufunc in (np.add, np.multiply) else ufunc.reduce(a, axis=ax, keepdims=bool(keepdims))
    return finish(r, dt)


@emulates(ct.sum, taint=poison.REDUCTION)
def sum(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _reduce(np.add, x, axis, keepdims)


@emulates(ct.prod, taint=poison.REDUCTION)
def prod(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _reduce(np.multiply, x, axis, keepdims)


@emulates(ct.max, taint=poison.REDUCTION)
def max(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False) -> Tile:
    return _reduce(np.maximum if propagate_nan else np.fmax, x, axis, keepdims)


@emulates(ct.min, taint=poison.REDUCTION)
def min(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False) -> Tile:
    return _reduce(np.minimum if propagate_nan else np.fmin, x, axis, keepdims)


def _arg(fn, x, axis, keepdims, propagate_nan, fill) -> Tile:
    t = as_tile(x)
    _, a = _accumulating(t)
    if a.dtype.kind == "f" and not propagate_nan:
        a = np.where(np.isnan(a), fill, a)  # NaN lanes are ignored
    ax = const_axes(axis, t.ndim, allow_tuple=False)
    r = fn(a, axis=ax, keepdims=bool(keepdims))
    return Tile(np.asarray(r, dtype=np.int32), ct.int32)


@emulates(ct.argmax, taint=poison.REDUCTION)
def argmax(x, /, axis=None, *, keepdims=False, propagate_nan=False) -> Tile:
    return _arg(np.argmax, x, axis, keepdims, propagate_nan, -np.inf)


@emulates(ct.argmin, taint=poison.REDUCTION)
def argmin(x, /, axis=None, *, keepdims=False, propagate_nan=False) -> Tile:
    return _arg(np.argmin, x, axis, keepdims, propagate_nan, np.inf)


def _tiles(x) -> tuple[tuple[Tile, ...], bool]:
    if isinstance(x, (tuple, list)):
        tiles = tuple(as_tile(t) for t in x)
        shape = np.broadcast_shapes(*(t.shape for t in tiles))
        return tuple(Tile(np.broadcast_to(t._a, shape), t.dtype) for t in tiles), True
    return (as_tile(x),), False


def _call(func, left: tuple[Tile, ...], right: tuple[Tile, ...], many: bool):
    """``func`` on two groups of values; results take the inputs' dtypes (implicitly cast,
    so widening only), as cuTile does."""
    out = func(*left, *right)
    out = tuple(out) if many and isinstance(out, (tuple, list)) else (out,)
    if len(out) != len(left):
        raise kernel_error(f"the combining function must return {len(left)} value(s), "
                           f"got {len(out)}")
    results = []
    for o, x in zip(out, left):
        t = as_tile(o, "the combining function's result")
        if t.dtype is not x.dtype:
            try:
                dtypes.check_implicit_cast(o, o.dtype if isinstance(o, Tile) else None, x.dtype)
            except dtypes.PromotionError as exc:
                raise kernel_error(f"the combining function returned {t.dtype} for a {x.dtype} "
                                   f"input: {exc}") from None
            t = Tile(dtypes.cast(t._a, x.dtype), x.dtype)
        results.append(t)
    return tuple(results)


def _take(tiles: tuple[Tile, ...], axis: int, sl: slice) -> tuple[Tile, ...]:
    index = (slice(None),) * axis + (sl,)
    return tuple(Tile(t._a[index], t.dtype) for t in tiles)


@emulates(ct.reduce, taint=poison.REDUCE)
def reduce(x, /, axis, func, identity, *, keepdims=False):
    tiles, many = _tiles(x)
    ax = const_axes(axis, tiles[0].ndim, allow_tuple=False)
    n = tiles[0].shape[ax]
    while n > 1:  # pairwise tree: combine the two halves elementwise
        half = n // 2
        tiles = _call(func, _take(tiles, ax, slice(0, half)), _take(tiles, ax, slice(half, n)),
                      many)
        n = half
    out = tuple(t if keepdims else Tile(np.squeeze(t._a, axis=ax), t.dtype) for t in tiles)
    return out if many else out[0]


@emulates(ct.scan, taint=poison.SCAN)
def scan(x, /, axis, func, identity, *, reverse=False):
    tiles, many = _tiles(x)
    ax = const_axes(axis, tiles[0].ndim, allow_tuple=False)
    idents = identity if many else (identity,)
    if reverse:
        tiles = tuple(Tile(np.flip(t._a, ax), t.dtype) for t in tiles)
    n, d = tiles[0].shape[ax], 1
    while d < n:  # Hillis-Steele inclusive scan; the identity fills the first d lanes
        shifted = []
        for t, ident in zip(tiles, idents):
            pad_shape = list(t.shape)
            pad_shape[ax] = d
            pad = np.full(pad_shape, dtypes.cast(np.asarray(ident), t.dtype),
                          dtype=np.asarray(t._a).dtype)
            body = np.take(t._a, np.arange(n - d), axis=ax)
            shifted.append(Tile(np.concatenate((pad, body), axis=ax), t.dtype))
        tiles = _call(func, tuple(shifted), tiles, many)
        d *= 2
    if reverse:
        tiles = tuple(Tile(np.flip(t._a, ax), t.dtype) for t in tiles)
    return tiles if many else tiles[0]


def _cumulative(ufunc, x, axis, reverse) -> Tile:
    t = as_tile(x)
    dt, a = _accumulating(t)
    ax = const_axes(axis, t.ndim, allow_tuple=False)
    if reverse:
        a = np.flip(a, ax)
    r = ufunc.accumulate(a, axis=ax, dtype=a.dtype)
    if reverse:
        r = np.flip(r, ax)
    return finish(r, dt)


@emulates(ct.cumsum, taint=poison.SCAN)
def cumsum(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _cumulative(np.add, x, axis, reverse)


@emulates(ct.cumprod, taint=poison.SCAN)
def cumprod(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _cumulative(np.multiply, x, axis, reverse)
