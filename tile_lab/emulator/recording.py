"""Recording a memory operation into the launch's trace (when tracing is on): a tile-space
box (``record_box``) or the flat element indices of gathers, scatters and atomics
(``record_points``), in the *kernel argument's* coordinates (a slice's shifted back into its
parent's, a permuted load's axes back into the array's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tracing.trace import MemoryAccess
from .state import current, record_site

__all__ = ["record_box", "record_points"]


def _site(state) -> tuple[str, int, int]:
    return record_site(state)


def record_box(kind: str, op: str, arr: Any, tile_index, shape, start, perm, padding,
                unchecked: bool) -> None:
    state = current()
    rec = state.recorder
    if rec is None:
        return
    filename, line, it = _site(state)
    stop = [s + n for s, n in zip(start, shape)]
    if perm is not None:  # logical (permuted) axes back to array axes
        nd = len(start)
        a_start, a_stop = [0] * nd, [0] * nd
        for k, ax in enumerate(perm):
            a_start[ax], a_stop[ax] = start[k], stop[k]
        start, stop = a_start, a_stop
    if getattr(arr, "_foreign", False):  # a from_foreign view: no box of the argument
        _record_foreign_box(kind, op, arr, start, stop, unchecked)
        return
    if arr._sliced:  # a slice's coordinates shifted back into the argument's
        start = [s + o for s, o in zip(start, arr._origin)]
        stop = [s + o for s, o in zip(stop, arr._origin)]
    rec.append(MemoryAccess(
        len(rec), state.bid, kind, op, arr.name, line, it, filename, tuple(tile_index),
        tuple(shape), tuple(start), tuple(stop), None, 0, 0,
        None if padding is None else padding.name, unchecked))


def _record_foreign_box(kind: str, op: str, arr: Any, start, stop, unchecked: bool) -> None:
    """A box of an ``Array.from_foreign`` view, recorded as the argument elements it covers
    (lanes outside the view, padded or discarded, count as out of bounds)."""
    dshape = arr._data.shape
    lo = [max(a, 0) for a in start]
    hi = [min(b, n) for b, n in zip(stop, dshape)]
    total = int(np.prod([b - a for a, b in zip(start, stop)]))
    if any(a >= b for a, b in zip(lo, hi)):
        sel: tuple[np.ndarray, ...] = tuple(np.zeros(0, np.int64) for _ in dshape)
    else:
        grids = np.meshgrid(*(np.arange(a, b) for a, b in zip(lo, hi)), indexing="ij")
        sel = tuple(g.ravel() for g in grids)
    record_points(kind, op, arr, sel, total - int(sel[0].size if sel else 0), 0, unchecked)


def record_points(kind: str, op: str, arr: Any, sel: tuple[np.ndarray, ...], oob: int,
                   masked: int, unchecked: bool) -> None:
    state = current()
    rec = state.recorder
    if rec is None:
        return
    if getattr(arr, "_foreign", False):  # a from_foreign view's elements -> the argument's
        parts, ok = arr.to_argument(sel)
        sel = tuple(p[ok] for p in parts)
        oob += int(np.count_nonzero(~ok))
        arr = arr.origin_array
    filename, line, it = _site(state)
    root = tuple(np.asarray(a, dtype=np.int64) + o for a, o in zip(sel, arr._origin))
    flat = np.ravel_multi_index(root, arr._root_shape).ravel() if root and root[0].size else \
        np.zeros(0, dtype=np.int64)
    rec.append(MemoryAccess(
        seq=len(rec), block=state.bid, kind=kind, op=op, arg=arr.name, line=line, iteration=it,
        filename=filename, flat_indices=np.asarray(flat, dtype=np.int64), out_of_bounds=oob,
        masked_off=masked, unchecked=unchecked))
