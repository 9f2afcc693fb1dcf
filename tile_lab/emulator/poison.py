"""Undetermined values: lanes a GPU leaves unspecified, tracked as taint.

``ct.load`` pads a partial tile with ``PaddingMode.UNDETERMINED`` by default: on a GPU those
lanes hold whatever. The emulator fills them with *poison* (NaN for floats, the byte pattern
``0xDB`` for integers, True for bools) and tags the tile as :class:`Poisoned`: a per-lane
taint mask plus where the taint came from (the load that padded) and where it first mixed
into other lanes (a reduction, scan or matrix product). Every op propagates the mask the way
its data flows (elementwise: lane by lane with broadcasting; ``where``: through the chosen
operand only; reductions/scans/``mma``: into every lane that combines a tainted one; shape
ops: moved with the lanes). Stores, scatters and atomics check it: a tainted lane written to
an in-bounds element is an :class:`UndeterminedWrite`, which plain ``emulate`` warns about
and the sanitizer reports. Tainted lanes that a store discards (outside the array), that a
``where`` masks out, or that never mix into kept lanes are never reported.

Clean tiles are plain :class:`Tile` objects, so kernels without undetermined padding pay one
flag test per op (``tile.ACTIVE``). The tainted tile itself (``tile.Poisoned``) and its
lane-by-lane propagation live with :class:`Tile` in ``tile.py``; each structural op carries
its rule from here where it is registered: ``@emulates(ct.sum, taint=poison.REDUCTION)``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cuda.tile as ct
import numpy as np

from ..errors import TileLabWarning
from ..tracing.trace import UndeterminedWrite
from . import dtypes, state
from . import tile as _tiles
from .operands import const_axes
from .tile import Origin, Poisoned, Tile


class UndeterminedValueWarning(TileLabWarning):
    """Plain ``emulate`` wrote undetermined values (padding, or values computed from it)."""


POISON_BYTE = 0xDB


def taint_of(x: Any) -> np.ndarray | None:
    return x._taint if type(x) is Poisoned else None


def origin_of(*xs: Any) -> Origin | None:
    """The origin of the first tainted operand, preferring one that has already mixed."""
    found = None
    for x in xs:
        o = origin_of(*x) if isinstance(x, (tuple, list)) else \
            (x._origin if type(x) is Poisoned else None)
        if o is not None and (found is None or (found.mix_line is None and o.mix_line)):
            found = o
    return found


def tag(tile: Any, mask: np.ndarray | None, origin: Origin | None) -> Any:
    """``tile`` tagged with ``mask`` (a plain Tile again when no lane is tainted)."""
    if not isinstance(tile, Tile):
        return tile
    if mask is None or origin is None:
        return Tile(tile._a, tile._dtype) if type(tile) is Poisoned else tile
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != tile.shape:
        mask = np.broadcast_to(mask, tile.shape)
    if not mask.any():
        return Tile(tile._a, tile._dtype) if type(tile) is Poisoned else tile
    return Poisoned(tile._a, tile._dtype, mask, origin)


def _here() -> tuple[str, int]:
    frame = state.user_frame(3)
    if frame is None:
        return "", 0
    return frame.f_code.co_filename, frame.f_lineno


_ORIGINS: dict[tuple, Origin] = {}  # one Origin object per distinct (load, mix) site


def _origin(*key) -> Origin:
    found = _ORIGINS.get(key)
    if found is None:
        if len(_ORIGINS) > 10_000:
            _ORIGINS.clear()
        found = _ORIGINS[key] = Origin(*key)
    return found


def mixed(origin: Origin, op: str) -> Origin:
    """``origin`` with its first mixing op recorded (the current user line)."""
    if origin.mix_line is not None:
        return origin
    filename, line = _here()
    return _origin(origin.load_file, origin.load_line, origin.load_arg, origin.load_op,
                   filename, line, op)


# ---- sources ----------------------------------------------------------------------------------

@functools.cache
def poison_value(dtype: object) -> Any:
    if dtypes.is_float(dtype):
        return float("nan")
    if dtype is ct.bool_:
        return True
    np_dtype = np.dtype(dtypes.to_numpy(dtype))
    return np.frombuffer(bytes([POISON_BYTE]) * np_dtype.itemsize, dtype=np_dtype)[0]


TMA_MIN_ROW_BYTES = 16  # TMA's rules (tile_lab/analysis/tma.py): 16-byte strides, base and rows


def fill_value(dtype: object, tma: Callable[[], bool] | None = None) -> Any:
    """What a load pads undetermined lanes with in the launch running now: poison (NaN /
    0xDB..) or 0 as the launch's policy says. Under ``"hardware"`` a tile-space load that can
    be a TMA copy (``tma()``, asked only then) is zero-filled as TMA fills; other loads keep
    the poison: their compiled form (LDG behind a bounds branch) leaves the lane with the
    compiler's own undefined value (a NaN constant in the sm_90 SASS we read)."""
    run = state.current()
    if run.padding == "hardware" and tma is not None and tma():
        return 0
    return poison_value(dtype) if run.poison_values else 0


def tma_eligible(data: np.ndarray, box: Any, allow_tma: Any) -> bool:
    """Whether a tile-space load of ``box`` from ``data`` meets TMA's preconditions (the
    ones ``tile_lab/analysis/tma.py`` reads off compiled code): not ``allow_tma=False``;
    innermost axis contiguous; every other stride and the base address multiples of 16 bytes;
    a tile row at least 16 bytes. Whether the compiler then really picks TMA is its own choice
    (a plain copy may stay LDG): README says what that means for the ``"hardware"`` policy."""
    if allow_tma is False or data.ndim == 0:
        return False
    item = data.itemsize
    strides = data.strides
    if data.shape[-1] > 1 and strides[-1] != item:
        return False
    if any(s % 16 for s in strides[:-1]) or data.ctypes.data % 16:
        return False
    return int(tuple(box)[-1]) * item >= TMA_MIN_ROW_BYTES


def padded(values: np.ndarray, mask: np.ndarray, dtype: object, arg: str, op: str,
           *, filled: bool = True) -> Tile:
    """A loaded tile whose ``mask`` lanes were padded with undetermined values (already
    ``fill_value`` unless ``filled`` is False)."""
    if not filled and state.current().poison_values:
        values[mask] = poison_value(dtype)
    filename, line = _here()
    return tag(Tile(values, dtype), mask, _origin(filename, line, arg, op))


# ---- sinks ------------------------------------------------------------------------------------

def report(origin: Origin, arg: str, op: str, coords: tuple[np.ndarray, ...]) -> None:
    """Record that undetermined lanes were written to the elements ``coords`` of ``arg``."""
    if not coords or coords[0].size == 0:
        return
    _record(origin, arg, op, tuple(int(c.min()) for c in coords),
            tuple(int(c.max()) + 1 for c in coords), int(coords[0].size))


def _record(origin: Origin, arg: str, op: str, start: tuple[int, ...], stop: tuple[int, ...],
            count: int) -> None:
    run = state.current()
    filename, line = _here()
    run.undetermined.append(UndeterminedWrite(
        run.bid, op, arg, line, filename, origin.load_line, origin.load_arg, origin.load_op,
        origin.mix_line, origin.mix_op, start, stop, count))


def sink_box(tile: Any, arr: Any, start, shape, perm, op: str) -> None:
    """A tile-space store of ``tile`` at ``start`` (in ``perm``-ed axes): report tainted lanes
    that land inside the array."""
    mask = taint_of(tile)
    if mask is None:
        return
    shape = tuple(shape)
    if mask.shape != shape:
        mask = mask.reshape(shape) if mask.size == int(np.prod(shape)) else \
            np.broadcast_to(mask, shape)
    dshape = arr._data.shape if perm is None else tuple(arr._data.shape[p] for p in perm)
    src, lo = [], []
    for st, sz, n in zip(start, shape, dshape):
        a, b = max(st, 0), min(st + sz, n)
        if a >= b:
            return
        src.append(slice(a - st, b - st))
        lo.append(a)
    kept = mask[tuple(src)]
    nd = kept.ndim
    if kept.all():  # the common case once padding has mixed in: every kept lane
        _record_box(tile._origin, arr, op, lo, [a + (sl.stop - sl.start)
                                                for a, sl in zip(lo, src)], kept.size, perm)
        return
    count = int(np.count_nonzero(kept))
    if not count:
        return
    box_lo, box_hi = [], []
    for k in range(nd):  # bounding box per axis, without listing every element
        along = np.flatnonzero(kept.any(axis=tuple(j for j in range(nd) if j != k))
                               if nd > 1 else kept)
        box_lo.append(int(along[0]) + lo[k])
        box_hi.append(int(along[-1]) + 1 + lo[k])
    _record_box(tile._origin, arr, op, box_lo, box_hi, count, perm)


def _record_box(origin: Origin, arr: Any, op: str, box_lo, box_hi, count: int, perm) -> None:
    if perm is not None:  # back to the array's own axes
        a_lo, a_hi = [0] * len(perm), [0] * len(perm)
        for k, ax in enumerate(perm):
            a_lo[ax], a_hi[ax] = box_lo[k], box_hi[k]
        box_lo, box_hi = a_lo, a_hi
    if getattr(arr, "_foreign", False):  # a from_foreign view's box: the argument's elements
        grids = np.meshgrid(*(np.arange(a, b) for a, b in zip(box_lo, box_hi)), indexing="ij")
        coords = _argument_coords(arr, tuple(g.ravel() for g in grids))
        if coords and coords[0].size:
            _record(origin, arr.name, op, tuple(int(c.min()) for c in coords),
                    tuple(int(c.max()) + 1 for c in coords), int(count))
        return
    at = arr._origin
    _record(origin, arr.name, op, tuple(a + o for a, o in zip(box_lo, at)),
            tuple(b + o for b, o in zip(box_hi, at)), int(count))


def _argument_coords(arr: Any, sel: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """Element indices of a from_foreign view -> the kernel argument's (elements of it only)."""
    parts, ok = arr.to_argument(sel)
    return tuple(p[ok] + o for p, o in zip(parts, arr.origin_array._origin))


def sink_points(value: Any, arr: Any, parts: tuple[np.ndarray, ...], live: np.ndarray | None,
                shape, op: str) -> None:
    """A scatter/atomic of ``value`` at the element indices ``parts`` (broadcast to ``shape``),
    lanes ``live`` only: report tainted lanes among them."""
    mask = taint_of(value)
    if mask is None:
        return
    m = np.broadcast_to(mask, shape)
    if live is not None:
        m = m & live
    coords = tuple(np.broadcast_to(np.asarray(p), shape)[m] + o
                   for p, o in zip(parts, arr._origin))
    if getattr(arr, "_foreign", False):
        coords = _argument_coords(arr, coords)
    report(value._origin, arr.name, op, coords)


# ---- propagation rules for structural ops -----------------------------------------------------

def _bool_tile(x: Any) -> Tile:
    m = taint_of(x)
    shape = np.shape(x._a) if isinstance(x, Tile) else ()
    return Tile(np.zeros(shape, bool) if m is None else np.array(m), ct.bool_)


def _count_tile(x: Any) -> Tile:
    m = taint_of(x)
    shape = np.shape(x._a) if isinstance(x, Tile) else ()
    return Tile(np.zeros(shape, np.float32) if m is None else m.astype(np.float32), ct.float32)


def _any_of(xs) -> Origin | None:
    return origin_of(*xs)


def _rule_reduce(impl, bound, out, name):
    x = bound.arguments["x"]
    xs = x if isinstance(x, (tuple, list)) else (x,)
    origin = _any_of(xs)
    if origin is None:
        return out
    axis, keepdims = bound.arguments.get("axis"), bool(bound.arguments.get("keepdims", False))
    mask = None
    for t in xs:
        m = taint_of(t)
        if m is not None:
            r = np.logical_or.reduce(m, axis=const_axes(axis, m.ndim), keepdims=keepdims)
            mask = r if mask is None else (mask | r)
    return _tag_all(out, mask, mixed(origin, name))


def _tag_all(out, mask, origin):
    """Tag every result of an op (one tile, or a tuple of them) with one mask and origin."""
    if isinstance(out, tuple):
        return tuple(tag(o, mask, origin) for o in out)
    return tag(out, mask, origin)


def _rule_scan(impl, bound, out, name):
    x = bound.arguments["x"]
    xs = x if isinstance(x, (tuple, list)) else (x,)
    origin = _any_of(xs)
    if origin is None:
        return out
    axis, reverse = bound.arguments.get("axis", 0), bound.arguments.get("reverse", False)
    mask = None
    for t in xs:
        m = taint_of(t)
        if m is not None:
            ax = const_axes(axis, m.ndim)
            r = np.flip(np.logical_or.accumulate(np.flip(m, ax), axis=ax), ax) if reverse \
                else np.logical_or.accumulate(m, axis=ax)
            mask = r if mask is None else (mask | r)
    return _tag_all(out, mask, mixed(origin, name))


def _rule_lanes(impl, bound, out, name):
    """Shape ops: the mask moves exactly as the values do."""
    x = bound.arguments["x"]
    if taint_of(x) is None:
        return out
    bound.arguments["x"] = _bool_tile(x)
    moved = impl(*bound.args, **bound.kwargs)
    return tag(out, moved._a, x._origin)


def _rule_same(impl, bound, out, name):
    """Casts: each lane's taint stays with it."""
    x = bound.arguments["x"]
    m = taint_of(x)
    if m is None or not isinstance(out, Tile):
        return out
    if out.shape == m.shape:
        return tag(out, m, x._origin)
    return tag(out, np.full(out.shape, bool(m.any())), x._origin)  # bytes repacked


def _rule_cat(impl, bound, out, name):
    tiles = bound.arguments["tiles"]
    origin = _any_of(tiles)
    if origin is None:
        return out
    masks = impl(tuple(_bool_tile(t) for t in tiles), bound.arguments["axis"])
    return tag(out, masks._a, origin)


def _rule_insert(impl, bound, out, name):
    x, value = bound.arguments["x"], bound.arguments["value"]
    origin = _any_of((x, value))
    if origin is None:
        return out
    vm = _bool_tile(value) if isinstance(value, Tile) else False
    masks = impl(_bool_tile(x), bound.arguments["index"], vm)
    return tag(out, masks._a, origin)


def _rule_where(impl, bound, out, name):
    cond, x, y = bound.arguments["cond"], bound.arguments["x"], bound.arguments["y"]
    origin = _any_of((cond, x, y))
    if origin is None:
        return out
    c = np.asarray(cond._a if isinstance(cond, Tile) else cond, dtype=bool)
    picked = np.where(c, _bool_tile(x)._a if isinstance(x, Tile) else False,
                      _bool_tile(y)._a if isinstance(y, Tile) else False)
    ct_ = taint_of(cond)
    mask = picked if ct_ is None else (picked | ct_)
    return tag(out, mask, origin)


def _rule_matmul(impl, bound, out, name):
    args = bound.arguments
    x, y = args["x"], args["y"]
    extra = [args[k] for k in ("acc", "x_scale", "y_scale") if k in args]
    origin = _any_of((x, y, *extra))
    if origin is None:
        return out
    a = _count_tile(x)._a
    b = _count_tile(y)._a
    if "x_scale" in args:  # a tainted scale taints its whole row/column block of K
        xs, ys = _count_tile(args["x_scale"])._a, _count_tile(args["y_scale"])._a
        a = a + np.repeat(xs, a.shape[-1] // max(xs.shape[-1], 1), -1)
        b = b + np.repeat(ys, b.shape[-2] // max(ys.shape[-2], 1), -2)
    from_x = np.matmul(a, np.ones(np.shape(y._a), np.float32)) > 0
    from_y = np.matmul(np.ones(np.shape(x._a), np.float32), b) > 0
    mask = from_x | from_y
    # name the operand whose padding reaches the most lanes (a padded row of x taints one
    # row; a padded row of y, every lane): that is the load a user must fix
    if taint_of(x) is not None and taint_of(y) is not None:
        origin = y._origin if from_y.sum() > from_x.sum() else x._origin
    if "acc" in args and taint_of(args["acc"]) is not None:
        mask = mask | taint_of(args["acc"])
    if mask.any() and (taint_of(x) is not None or taint_of(y) is not None):
        origin = mixed(origin, name)
    return tag(out, mask, origin)


def _rule_gather(impl, bound, out, name):
    indices, mask_arg = bound.arguments["indices"], bound.arguments.get("mask")
    idx = indices if isinstance(indices, tuple) else (indices,)
    origin = _any_of((*idx, mask_arg))
    if origin is None:
        return out
    m = np.zeros(out.shape, bool)
    for t in (*idx, mask_arg):
        tm = taint_of(t)
        if tm is not None:
            m = m | np.broadcast_to(tm, out.shape)
    if mask_arg is not None and taint_of(mask_arg) is None:
        # lanes masked off read nothing: they hold padding_value, whatever their index
        m = m & np.broadcast_to(np.asarray(getattr(mask_arg, "_a", mask_arg), bool), out.shape)
    return tag(out, m, origin)


@dataclass(frozen=True)
class Rule:
    """How undetermined lanes move through one kind of op: ``propagate(impl, bound, out,
    name)`` returns the op's result ``out`` tagged. An op registers with its rule,
    ``@emulates(ct.sum, taint=REDUCTION)`` (``registry.TaintRule``)."""

    propagate: Callable[..., Any]
    defaults: bool = False  # bind the op's default arguments (axis, keepdims, reverse) too
    reduction: bool = False  # (x, axis=..., keepdims=...): bound without inspect if it can

    def wrap(self, name: str, impl: Callable[..., Any]) -> Callable[..., Any]:
        """``impl`` with this rule applied to its result when an operand is tainted."""
        rule, defaults, reduction = self.propagate, self.defaults, self.reduction
        sig = inspect.signature(impl)

        @functools.wraps(impl)
        def with_taint(*args, **kwargs):
            out = impl(*args, **kwargs)
            if not _tiles.ACTIVE or not _any_tainted(args, kwargs):
                return out
            if reduction and len(args) <= 2:  # (x, axis=..., keepdims=...)
                return rule(impl, _Bound({"x": args[0],
                                          "axis": args[1] if len(args) > 1 else
                                          kwargs.get("axis"),
                                          "keepdims": kwargs.get("keepdims", False)}), out, name)
            bound = sig.bind(*args, **kwargs)
            if defaults:
                bound.apply_defaults()
            return rule(impl, bound, out, name)

        return with_taint


# the rules ops register with
REDUCTION = Rule(_rule_reduce, defaults=True, reduction=True)  # sum, max, argmin, ...
REDUCE = Rule(_rule_reduce, defaults=True)  # ct.reduce with a user function
SCAN = Rule(_rule_scan, defaults=True)  # cumsum, cumprod, ct.scan
LANES = Rule(_rule_lanes)  # reshape, permute, transpose, expand_dims, broadcast_to, extract
CAST = Rule(_rule_same)  # astype, bitcast, pack_to_bytes, unpack_from_bytes
CAT = Rule(_rule_cat)
INSERT = Rule(_rule_insert)
WHERE = Rule(_rule_where)
GATHER = Rule(_rule_gather)
MATMUL = Rule(_rule_matmul)  # mma, matmul, mma_scaled


class _Bound:
    """The part of inspect.BoundArguments a rule reads (built without binding)."""

    __slots__ = ("arguments",)

    def __init__(self, arguments: dict) -> None:
        self.arguments = arguments


def _any_tainted(args, kwargs) -> bool:
    for a in args:
        if type(a) is Poisoned or (type(a) in (tuple, list) and _any_tainted(a, {})):
            return True
    return any(type(v) is Poisoned for v in kwargs.values())
