"""Comparing a GPU's output arrays with the emulator's, tile by tile (pure NumPy).

The tiles are the ones the emulator's :class:`~tile_lab.tracing.trace.Trace` says the kernel
wrote: one per distinct (argument, writing line, op, element box); a scatter or atomic's tile
is the set of elements it wrote. Each differing element is classified (see
:mod:`tile_lab.crosschecking.result`): inside a box of undetermined lanes the trace recorded →
``undetermined``; inside a tile that several blocks wrote with plain (non-atomic) stores and no
lock → ``undetermined`` too (a race: which block's value lands last is not determined; the
sanitizer reports it); else within the error budget of the kernel's by-design sites →
``design``; else ``mismatch``.

The by-design budget is per element (:mod:`tile_lab.crosschecking.budget`): one ULP of the output
dtype at the element (the output's own rounding) plus, relative to the output's largest finite
magnitude, the error each by-design site may add (a sum of ``n`` terms in its accumulator's
precision, approximate math by its documented error, a fusable multiply-add, a rounding mode).
Integer outputs have no budget: integer arithmetic is exact in any order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..tracing.trace import MemoryAccess, Trace
from .budget import Budget, ErrorModel, error_model, is_float_name, within
from .result import Hazard, OutputComparison, TileComparison
from .sites import DesignSite, describe_sites


@dataclass
class _Tile:
    arg: str
    line: int
    op: str
    start: tuple[int, ...]
    stop: tuple[int, ...]
    flat: np.ndarray | None  # element indices for scatters/atomics; None for a box
    blocks: list[tuple[int, int, int]]


def write_tiles(trace: Trace, arg: str, shape: tuple[int, ...]) -> list[_Tile]:
    """The tiles of ``arg`` the kernel wrote, in the order first written."""
    groups: dict[tuple, _Tile] = {}
    for a in trace.accesses:
        if a.arg != arg or not a.is_write:
            continue
        tile = _tile_of(a, shape)
        if tile is None:
            continue
        key = (tile.line, tile.op, tile.start, tile.stop,
               None if tile.flat is None else tile.flat.tobytes())
        seen = groups.get(key)
        if seen is None:
            groups[key] = tile
        elif a.block not in seen.blocks:
            seen.blocks.append(a.block)
    return list(groups.values())


def _tile_of(a: MemoryAccess, shape: tuple[int, ...]) -> _Tile | None:
    if a.is_box:
        start, stop = a.clipped_box(shape)
        if any(s >= e for s, e in zip(start, stop)):
            return None  # wholly outside the array: discarded
        return _Tile(a.arg, a.line, a.op, start, stop, None, [a.block])
    if a.flat_indices is None or a.flat_indices.size == 0:
        return None
    flat = np.unique(a.flat_indices)
    idx = np.unravel_index(flat, shape)
    start = tuple(int(i.min()) for i in idx)
    stop = tuple(int(i.max()) + 1 for i in idx)
    return _Tile(a.arg, a.line, a.op, start, stop, flat, [a.block])


def hazards_of(trace: Trace) -> tuple[Hazard, ...]:
    """The trace's undetermined writes, one :class:`Hazard` per (argument, store, load, mix)."""
    groups: dict[tuple, list] = {}
    for w in trace.undetermined:
        key = (w.arg, w.line, w.load_line, w.load_arg, w.mix_line, w.mix_op)
        groups.setdefault(key, []).append(w)
    return tuple(Hazard(arg, line, load_line, load_arg, mix_line, mix_op,
                        sum(w.elements for w in ws), len({w.block for w in ws}))
                 for (arg, line, load_line, load_arg, mix_line, mix_op), ws in groups.items())


def undetermined_mask(trace: Trace, arg: str, shape: tuple[int, ...]) -> np.ndarray:
    """True on the elements of ``arg`` inside a box of undetermined lanes the trace recorded."""
    mask = np.zeros(shape, bool)
    for w in trace.undetermined:
        if w.arg == arg:
            mask[tuple(slice(a, b) for a, b in zip(w.box_start, w.box_stop))] = True
    return mask


def ordered_ints(x: np.ndarray) -> np.ndarray:
    """Float bits mapped to integers that count representable values (so the difference of
    two is their distance in ULPs); -0.0 and +0.0 map to 0."""
    size = x.dtype.itemsize
    v = x.view({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[size]).astype(np.int64)
    if size == 8:
        v = np.where(v < 0, -(v & 0x7FFFFFFFFFFFFFFF), v)
    else:
        v = np.where(v < 0, -(v & ((1 << (8 * size - 1)) - 1)), v)
    return v


def compare_output(arg: str, gpu: np.ndarray, emu: np.ndarray, trace: Trace,
                   sites: Sequence[DesignSite], budget: Budget,
                   dtypes: Mapping[tuple[int, str], str] | None = None) -> OutputComparison:
    """Tile-by-tile comparison of one output array (``dtypes``: the dtype each site computes
    in, where known: :func:`tile_lab.crosschecking.flow.site_dtypes`)."""
    shape = tuple(emu.shape)
    hazard_list = [h for h in hazards_of(trace) if h.arg == arg]
    finite_emu = emu[np.isfinite(emu)] if is_float_dtype(emu.dtype) else emu
    scale = float(np.abs(finite_emu.astype(np.float64)).max()) if finite_emu.size else 0.0
    model = error_model(trace, sites, budget, dtypes)
    # flush_to_zero, and approximate math (the device may use its .ftz instruction forms)
    flush = any(s.kind in ("ftz", "approx") for s in sites)
    locked = takes_a_lock(trace)
    undet = undetermined_mask(trace, arg, shape)
    is_float = is_float_dtype(emu.dtype)
    same = _bitwise_equal(gpu, emu, is_float)
    written = np.zeros(shape, bool)
    tiles = []
    for t in write_tiles(trace, arg, shape):
        sel: tuple | np.ndarray
        if t.flat is None:
            sel = tuple(slice(a, b) for a, b in zip(t.start, t.stop))
            written[sel] = True
        else:
            sel = np.unravel_index(t.flat, shape)
            written[sel] = True
        tiles.append(_compare_tile(t, sel, gpu, emu, same, undet, is_float, sites,
                                   _Allowance(model, scale, locked, flush), hazard_list))
    stray = int(np.count_nonzero(~same & ~written))
    return OutputComparison(arg, shape, emu.dtype.name, tuple(tiles), stray)


def is_float_dtype(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or is_float_name(dtype.name)


@dataclass(frozen=True)
class _Allowance:
    model: ErrorModel
    scale: float  # the largest finite magnitude in the whole output
    locked: bool = False  # the kernel takes a lock (see _is_race)
    flush: bool = False  # the kernel may flush subnormals somewhere


def _is_race(t: _Tile, locked: bool) -> bool:
    """Several blocks wrote this tile with a plain store or scatter (no atomic), in a kernel
    that takes no lock (``locked``: an atomic_cas / atomic_xchg in the trace; blocks that
    take turns under a lock change only the order of a sum, which the budget covers)."""
    return len(t.blocks) > 1 and not t.op.startswith("atomic") and not locked


def takes_a_lock(trace: Trace) -> bool:
    return any(a.op in ("atomic_cas", "atomic_xchg") for a in trace.accesses)


def _bitwise_equal(gpu: np.ndarray, emu: np.ndarray, is_float: bool) -> np.ndarray:
    if not is_float:
        return np.asarray(gpu == emu)
    g, e = gpu.astype(np.float64), emu.astype(np.float64)
    size = emu.dtype.itemsize
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size]
    return (gpu.view(bits) == emu.view(bits)) | (np.isnan(g) & np.isnan(e))


def _compare_tile(t: _Tile, sel, gpu, emu, same, undet, is_float, sites, allowance,
                  hazards) -> TileComparison:
    g, e, eq, un = gpu[sel], emu[sel], same[sel], undet[sel]
    race = _is_race(t, allowance.locked)
    if race:
        un = np.ones(np.shape(e), bool)
    blocks = tuple(t.blocks[:8])
    base = dict(arg=t.arg, box_start=t.start, box_stop=t.stop, line=t.line, op=t.op,
                blocks=blocks, n_blocks=len(t.blocks), elements=int(np.size(e)))
    if is_float:
        gf, ef = g.astype(np.float64), e.astype(np.float64)
        nan_g, nan_e = np.isnan(gf), np.isnan(ef)
        inf_g, inf_e = np.isinf(gf), np.isinf(ef)
        base.update(nan_gpu=int(nan_g.sum()), nan_emulator=int(nan_e.sum()))
    if eq.all():
        return TileComparison(**base)
    diff = ~eq
    if is_float:
        finite = np.isfinite(gf) & np.isfinite(ef) & diff
        max_abs = float(np.abs(gf - ef)[finite].max()) if finite.any() else None
        ulp = np.abs(ordered_ints(np.ascontiguousarray(g)) - ordered_ints(
            np.ascontiguousarray(e)))
        max_ulp = int(ulp[finite].max()) if finite.any() else None
        nan_mis = int((nan_g != nan_e).sum())
        inf_mis = int(((inf_g != inf_e) & ~nan_g & ~nan_e).sum())
        design = within(gf, ef, finite, e.dtype.name, allowance.model, allowance.scale,
                        allowance.flush) if sites else np.zeros_like(finite)
    else:
        gi, ei = g.astype(np.int64), e.astype(np.int64)
        max_abs = float(np.abs(gi - ei)[diff].max())
        max_ulp, nan_mis, inf_mis = int(max_abs), 0, 0
        design = np.zeros(np.shape(e), bool)
    c_undet = diff & un
    c_design = diff & ~un & design
    c_mis = diff & ~un & ~design
    classes = {"undetermined": int(c_undet.sum()), "design": int(c_design.sum()),
               "mismatch": int(c_mis.sum())}
    verdict = ("mismatch" if classes["mismatch"] else
               "design" if classes["design"] else "undetermined")
    where = c_mis if verdict == "mismatch" else (c_design if verdict == "design" else c_undet)
    example = _example(t, sel, where, g, e)
    non_finite = is_float and bool((c_mis & ~finite).any())
    reason = _reason(verdict, t, is_float, sites, hazards, non_finite, race)
    if is_float and sites and verdict in ("design", "mismatch") and not non_finite:
        reason += "; budget per element: " + allowance.model.describe(e.dtype.name,
                                                                       allowance.scale)
    return TileComparison(**base, differing=int(diff.sum()), max_abs=max_abs,
                          max_ulp=max_ulp, nan_mismatch=nan_mis, inf_mismatch=inf_mis,
                          classes=classes, verdict=verdict, reason=reason, example=example)


def _example(t: _Tile, sel, where: np.ndarray, g: np.ndarray, e: np.ndarray
             ) -> tuple[tuple[int, ...], str, str] | None:
    hits = np.argwhere(where)
    if hits.size == 0:
        return None
    local = tuple(int(i) for i in hits[0])
    if t.flat is None:
        index = tuple(s + i for s, i in zip(t.start, local))
    else:
        index = tuple(int(ax[local[0]]) for ax in sel)
    return index, repr(g[local].item()), repr(e[local].item())


def _reason(verdict: str, t: _Tile, is_float: bool, sites: Sequence[DesignSite],
            hazards: list[Hazard], non_finite: bool, race: bool) -> str:
    if verdict == "undetermined" and race:
        return (f"written by {len(t.blocks)} blocks with a plain {t.op} at line {t.line} (a "
                "race: which block's value lands last is not determined; the sanitizer "
                "reports it); expected to differ")
    if verdict == "undetermined":
        mine = [h for h in hazards if h.store_line == t.line] or hazards
        found = "; ".join(dict.fromkeys(h.describe() for h in mine))
        return (f"lanes the emulator marks undetermined: {found}; a GPU may hold anything "
                "there (expected to differ)")
    if verdict == "design":
        return f"within the error allowed by {describe_sites(sites)} (expected to differ)"
    if non_finite:
        return ("emulator bug: NaN/Inf on one side only, outside any lane the emulator marks "
                "undetermined")
    if not is_float:
        return "emulator bug: integer results differ (integer arithmetic is exact)"
    if not sites:
        return ("emulator bug: the kernel has no approximate math, rounding modes or "
                "reordered sums, so the GPU and the emulator must agree bit for bit")
    return f"emulator bug: values differ beyond the error allowed by {describe_sites(sites)}"


def compare_outputs(names: Sequence[str], gpu: Mapping[str, np.ndarray],
                    emu: Mapping[str, np.ndarray], trace: Trace,
                    sites: Sequence[DesignSite], budget: Budget,
                    dtypes: Mapping[tuple[int, str], str] | None = None
                    ) -> tuple[OutputComparison, ...]:
    return tuple(compare_output(n, np.asarray(gpu[n]), np.asarray(emu[n]), trace, sites,
                                budget, dtypes) for n in names)
