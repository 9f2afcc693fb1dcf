"""A trace indexed once: accesses grouped by block and by array, coverage counts and tile
visit orders computed in NumPy (:class:`IndexedTrace`). The diagrams and the diagram browser
read it; it draws nothing (the types it returns are in ``tile_geometry.py``).
"""


from __future__ import annotations

import itertools
import math
import operator
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from .access import ATOMIC_KINDS, READ_KINDS, WRITE_KINDS, Block, MemoryAccess
from .tile_geometry import CELL_CAP, Box, Heatmap, TileGrid, TileVisit
from .trace import Trace

__all__ = ["IndexedTrace", "group_visits"]

# ============================================================================================
# the trace, indexed once
# ============================================================================================

# Why the odd style below: a trace holds up to ~10^5 MemoryAccess objects and a Python loop
# over them costs ~1 µs per access, so the all-blocks views (which need every access) took
# seconds. The index makes one Python pass (grouping by block and by array); the rest runs
# in C over the accesses (map/attrgetter, dict.setdefault, np.fromiter), then in NumPy over
# per-array columns built from the few distinct (kind, box) shapes an array is accessed with.
_READS = READ_KINDS | ATOMIC_KINDS  # atomics read and write, as in MemoryAccess.is_read
_WRITES = WRITE_KINDS | ATOMIC_KINDS
_Shape = tuple[str, tuple[int, ...] | None, tuple[int, ...] | None]  # (kind, start, stop)


@dataclass(frozen=True, eq=False)
class _Columns:
    """One array's accesses as NumPy columns (row i is ``IndexedTrace.by_arg[arg][i]``)."""

    kinds: tuple[str, ...]  # the distinct kinds; ``kind`` indexes into this
    kind: np.ndarray  # int64 index into ``kinds``
    box: np.ndarray  # bool: a tile-space op (box_start/box_stop set)
    start: np.ndarray  # int64 (n, ndim); zeros on rows that are not boxes
    stop: np.ndarray  # int64 (n, ndim)
    linear_block: np.ndarray  # int64: x + gx * (y + gy * z)

    @classmethod
    def of(cls, shapes: list[_Shape], shape_id: np.ndarray, ndim: int,
           linear_block: np.ndarray) -> _Columns:
        """From the distinct (kind, box) ``shapes`` and each access's index into them."""
        kinds = tuple(dict.fromkeys(k for k, _, _ in shapes))
        code = {k: i for i, k in enumerate(kinds)}
        zero = (0,) * ndim
        # one row per distinct shape, then one per access by indexing with shape_id
        kind = np.array([code[k] for k, _, _ in shapes], dtype=np.int64)
        box = np.array([s is not None for _, s, _ in shapes], dtype=bool)
        start = np.array([zero if s is None else s for _, s, _ in shapes],
                         dtype=np.int64).reshape(len(shapes), ndim)
        stop = np.array([zero if e is None else e for _, _, e in shapes],
                        dtype=np.int64).reshape(len(shapes), ndim)
        return cls(kinds, kind[shape_id], box[shape_id], start[shape_id], stop[shape_id],
                   linear_block)

    def matches(self, kind: str) -> np.ndarray:
        """Rows of ``kind``: "read" / "write" (atomics are both) or an exact kind name."""
        hit = np.array([k in _kind_set(kind) for k in self.kinds] or [False])
        return hit[self.kind]


def _kind_set(kind: str) -> frozenset[str]:
    return {"read": _READS, "write": _WRITES}.get(kind, frozenset((kind,)))


class IndexedTrace:
    """A trace indexed by block and by array, so a redraw touches only one block's
    accesses (the diagram browser builds this once). Heatmaps, tile visits and per-array
    NumPy columns are computed on first use and cached."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        accesses = trace.accesses
        self.by_block: dict[Block, list[MemoryAccess]] = {}
        by_arg: dict[str, list[MemoryAccess]] = defaultdict(list)
        for a in trace.arrays:
            by_arg[a.name] = []
        # A block's accesses are contiguous in an emulator trace: group them in runs, and
        # note how long each array's list is after each run, so the block of every access
        # of an array is known without touching the accesses again (see _linear_blocks).
        run_blocks: list[Block] = []
        run_ends: list[tuple[int, ...]] = []
        for blk, group in itertools.groupby(accesses, key=attrgetter("block")):
            run = list(group)
            self.by_block.setdefault(blk, []).extend(run)
            for a in run:
                by_arg[a.arg].append(a)
            run_blocks.append(blk)
            run_ends.append(tuple(map(len, by_arg.values())))
        self.by_arg: dict[str, list[MemoryAccess]] = dict(by_arg)
        self._runs = (run_blocks, run_ends)
        self.lines: tuple[int, ...] = tuple(sorted(set(map(attrgetter("line"), accesses))))
        self.max_iteration = max(map(attrgetter("iteration"), accesses), default=0)
        self._source = trace.source.splitlines()
        self._grids: dict[str, tuple[TileGrid, ...]] = {}
        self._heatmaps: dict[tuple[str, str], _Coverage | None] = {}
        self._visits: dict[str, tuple[TileVisit, ...]] = {}
        self._shapes: dict[str, tuple[list[_Shape], np.ndarray]] = {}
        self._kinds: dict[str, frozenset[str]] = {}
        self._columns: dict[str, _Columns] = {}
        self._visit_summary: dict[str, tuple] = {}
        # what a renderer drew from this index that no selection changes (kept by the
        # renderer, so a redraw of the same trace reuses it)
        self.draw_cache: dict[tuple, tuple] = {}
        self._gemm: tuple[str, str, str] | bool | None = False  # False = not computed yet

    def line_text(self, line: int) -> str:
        i = line - self.trace.first_line
        return self._source[i].strip() if 0 <= i < len(self._source) else ""

    def shapes(self, arg: str) -> tuple[list[_Shape], np.ndarray]:
        """The distinct (kind, box_start, box_stop) of ``arg``'s accesses, first use first,
        and for each access the index of its own: a GEMM's 10^5 loads have ~10^3."""
        if arg not in self._shapes:
            accesses = self.by_arg.get(arg, ())
            keys = map(attrgetter("kind", "box_start", "box_stop"), accesses)
            # one pass, streamed (a key tuple lives only as long as it is new): each
            # access gets the position of its key's first use ...
            first: dict[_Shape, int] = {}
            pos = np.fromiter(map(first.setdefault, keys, itertools.count()), np.int64,
                              len(accesses))
            # ... which become 0, 1, 2, ... in order of first use
            ids = np.searchsorted(np.fromiter(first.values(), np.int64, len(first)), pos)
            self._shapes[arg] = (list(first), ids)
        return self._shapes[arg]

    def columns(self, arg: str) -> _Columns:
        """``arg``'s accesses as NumPy columns (built on first use)."""
        if arg not in self._columns:
            shapes, ids = self.shapes(arg)
            self._columns[arg] = _Columns.of(shapes, ids, len(self.trace.array(arg).shape),
                                             self._linear_blocks(arg))
        return self._columns[arg]

    def _linear_blocks(self, arg: str) -> np.ndarray:
        """Linear block id of each access of ``arg``, from the runs noted when indexing."""
        run_blocks, run_ends = self._runs
        j = list(self.by_arg).index(arg)
        ends = np.array([e[j] if j < len(e) else 0 for e in run_ends], dtype=np.int64)
        gx, gy, _ = self.trace.grid
        lin = np.array([x + gx * (y + gy * z) for x, y, z in run_blocks], dtype=np.int64)
        return np.repeat(lin, np.diff(ends, prepend=0))

    def tile_grids(self, arg: str) -> tuple[TileGrid, ...]:
        """Distinct tile shapes used on ``arg``, in array axis order (a transposed load's
        tile is drawn as the box it covers), first use first."""
        if arg not in self._grids:
            shape = self.trace.array(arg).shape
            seen: dict[tuple[int, ...], None] = {}
            for _, start, stop in self.shapes(arg)[0]:
                if start is not None and stop is not None:
                    size = tuple(map(operator.sub, stop, start))
                    if all(map((0).__lt__, size)):
                        seen.setdefault(size, None)
            self._grids[arg] = tuple(TileGrid.of(shape, t) for t in seen)
        return self._grids[arg]

    def heatmap(self, arg: str, kind: str, window: Box | None = None) -> Heatmap | None:
        """Coverage of ``arg`` by ``kind`` ("read"/"write") inside ``window`` (whole array
        by default), merged into at most ~CELL_CAP cells per slice."""
        key = (arg, kind)
        if key not in self._heatmaps:
            self._heatmaps[key] = _compressed_coverage(self, arg, kind)
        comp = self._heatmaps[key]
        if comp is None:
            return None
        counts, edges, uncovered, overlapped = comp
        shape = self.trace.array(arg).shape
        full = Box(tuple(0 for _ in shape), shape)
        win = full if window is None else window.intersect(full)
        if win is None:
            return None
        # crop to the window: keep the cells overlapping it, clip the outer edges
        sl, cropped = [], []
        for e, lo, hi in zip(edges, win.start, win.stop):
            i0 = int(np.searchsorted(e, lo, side="right")) - 1
            i1 = int(np.searchsorted(e, hi, side="left"))
            sl.append(slice(i0, i1))
            cropped.append(np.clip(e[i0:i1 + 1], lo, hi))
        lo_c, hi_c, out_edges, exact = _bin_cells(counts[tuple(sl)], cropped)
        return Heatmap(kind, tuple(tuple(int(v) for v in e) for e in out_edges),
                       tuple(int(v) for v in lo_c.ravel()), tuple(int(v) for v in hi_c.ravel()),
                       uncovered, overlapped, exact)

    def window_steps(self, arg: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """``(tile, steps)`` when ``arg``'s boxes of its first tile shape do not sit on that
        shape's grid (overlapping windows of a ``tiled_view`` with ``traversal_steps``, or
        tiles of a slice, offset from the array's origin); None when they do."""
        grids = self.tile_grids(arg)
        if not grids:
            return None
        tile = grids[0].tile
        starts = {st for _, st, sp in self.shapes(arg)[0] if st is not None and sp is not None
                  and tuple(b - a for a, b in zip(st, sp)) == tile}
        if all(v % t == 0 for st in starts for v, t in zip(st, tile)):
            return None
        steps = []
        for ax, t in enumerate(tile):
            vals = sorted({st[ax] for st in starts})
            diffs = [b - a for a, b in itertools.pairwise(vals)]
            steps.append(math.gcd(*diffs) if diffs else t)
        return tile, tuple(steps)

    def visits(self, arg: str) -> tuple[TileVisit, ...]:
        if arg not in self._visits:
            self._visits[arg] = _visits(self, arg)
        return self._visits[arg]

    def visit_summary(self, arg: str) -> tuple[dict[tuple[int, ...], list[TileVisit]],
                                               dict[Block, list[TileVisit]]]:
        """``arg``'s visits grouped by tile and by block (see :func:`group_visits`)."""
        if arg not in self._visit_summary:
            self._visit_summary[arg] = group_visits(self.visits(arg))
        return self._visit_summary[arg]

    def has_kind(self, arg: str, kind: str) -> bool:
        """Whether any access of ``arg`` is a ``kind`` ("read" / "write" / a kind name)."""
        if arg not in self._kinds:
            self._kinds[arg] = frozenset(k for k, _, _ in self.shapes(arg)[0])
        return not _kind_set(kind).isdisjoint(self._kinds[arg])

    def gemm_roles(self) -> tuple[str, str, str] | None:
        if self._gemm is False:
            self._gemm = _find_gemm(self)
        return self._gemm  # type: ignore[return-value]

    def uses_mma(self) -> bool:
        return re.search(r"\bmma(_scaled)?\s*\(", self.trace.source) is not None


_Coverage = tuple[np.ndarray, list[np.ndarray], int, int]


def _compressed_coverage(index: IndexedTrace, arg: str, kind: str) -> _Coverage | None:
    """(counts per cell, cell edges per axis, #elements never touched, #touched by 2+ blocks)."""
    shape = index.trace.array(arg).shape
    cols = index.columns(arg)
    rows = cols.matches(kind)
    if not rows.any() or not shape or 0 in shape:
        return None
    comp = (_box_coverage(cols.start[rows], cols.stop[rows], cols.linear_block[rows], shape)
            if cols.box[rows].all() else None)
    if comp is None:  # gathers/scatters (or pathological boxes): count per element
        accesses = list(itertools.compress(index.by_arg[arg], rows.tolist()))
        counts = _element_coverage(accesses, shape, index.trace.grid)
        edges = [np.arange(n + 1) for n in shape]
    else:
        counts, edges = comp
    volume = np.ones(counts.shape, dtype=np.int64)
    for ax, e in enumerate(edges):
        volume = volume * np.diff(e).reshape([-1 if i == ax else 1 for i in range(len(shape))])
    return counts, edges, int(volume[counts == 0].sum()), int(volume[counts > 1].sum())


def _element_coverage(accesses: list[MemoryAccess], shape: tuple[int, ...],
                      grid: Block) -> np.ndarray:
    """Distinct-block counts per element: unique (block, element) pairs, counted."""
    n = math.prod(shape)
    parts = []
    for a in accesses:
        if a.is_box:
            start, stop = a.clipped_box(shape)
            axes = np.meshgrid(*(np.arange(s, e) for s, e in zip(start, stop)), indexing="ij")
            idx = np.ravel_multi_index(tuple(axes), shape).ravel()
        elif a.flat_indices is not None:
            idx = np.asarray(a.flat_indices, dtype=np.int64)
        else:
            continue
        bx, by, bz = a.block
        parts.append((bx + grid[0] * (by + grid[1] * bz)) * n + idx)
    pairs = _sorted_unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    return np.bincount(pairs % n, minlength=n).reshape(shape).astype(np.int64)


def _box_coverage(box_start: np.ndarray, box_stop: np.ndarray, block_id: np.ndarray,
                  shape: tuple[int, ...], max_expanded: int = 20_000_000
                  ) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """Distinct-block counts on a coordinate-compressed grid, vectorised.

    ``box_start``/``box_stop``: (n, ndim) tile boxes (unclipped), ``block_id``: the linear
    id of the block doing each access. Every axis is cut at every box edge, so coverage is
    constant on each resulting cell: an 8192² array in 128² tiles needs 64² cells, not 64M
    elements. Each access is expanded to the cells it covers (usually one per access);
    (block, cell) pairs are de-duplicated so a block touching an element twice counts once.
    None if the expansion would be huge.
    """
    dims = np.asarray(shape, dtype=np.int64)
    starts = np.clip(box_start, 0, dims)
    stops = np.maximum(np.clip(box_stop, 0, dims), starts)
    edges = [_sorted_unique(np.concatenate(([0, n], starts[:, ax], stops[:, ax])))
             for ax, n in enumerate(shape)]
    lo = np.stack([np.searchsorted(e, starts[:, ax]) for ax, e in enumerate(edges)], axis=1)
    hi = np.stack([np.searchsorted(e, stops[:, ax]) for ax, e in enumerate(edges)], axis=1)
    cshape = tuple(len(e) - 1 for e in edges)
    span = hi - lo
    keep = np.flatnonzero((span > 0).all(axis=1))
    if int(np.prod(span[keep], axis=1).sum()) > max_expanded:
        return None
    ids, flat = keep, np.zeros(keep.size, dtype=np.int64)
    for ax in range(len(shape)):  # expand each access to its cells, one axis at a time
        k = span[ids, ax]
        rep = np.repeat(ids, k)
        offset = np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)
        flat = np.repeat(flat, k) * cshape[ax] + lo[rep, ax] + offset
        ids = rep
    n_cells = math.prod(cshape)
    pairs = _sorted_unique(block_id[ids] * n_cells + flat)
    counts = np.bincount(pairs % n_cells, minlength=n_cells).reshape(cshape).astype(np.int64)
    return counts, edges


def group_visits(visits: Sequence[TileVisit]
                   ) -> tuple[dict[tuple[int, ...], list[TileVisit]], dict[Block, list[TileVisit]]]:
    """Visits grouped by tile and by block, each list in rank order."""
    by_tile: dict[tuple[int, ...], list[TileVisit]] = {}
    by_block: dict[Block, list[TileVisit]] = {}
    for v in sorted(visits, key=lambda v: v.rank):
        by_tile.setdefault(v.tile_index, []).append(v)
        by_block.setdefault(v.block, []).append(v)
    return by_tile, by_block


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` for a 1-D int array, by sorting: NumPy 2's hash-based unique is ~20×
    slower on the 10^5 (block, cell) keys of a large trace."""
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if s.size else s


def _bin_cells(counts: np.ndarray, edges: list[np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], bool]:
    """Merge cells so that at most ~CELL_CAP (per 2-D slice) remain; min/max per merged cell."""
    side = math.isqrt(CELL_CAP)
    budget = {1: [CELL_CAP], 2: [side, side], 3: [16, side, side]}[counts.ndim]
    lo, hi, exact = counts, counts, True
    out_edges = []
    for ax, e in enumerate(edges):
        if len(e) - 1 <= budget[ax]:
            out_edges.append(e)
            continue
        exact = False
        n = int(e[-1])
        bins = np.unique(np.linspace(0, n, budget[ax] + 1).round().astype(np.int64))
        fine = np.union1d(e, bins)  # refine so every bin is a whole number of fine cells
        src = np.searchsorted(e, fine[:-1], side="right") - 1
        lo, hi = np.take(lo, src, axis=ax), np.take(hi, src, axis=ax)
        starts = np.searchsorted(fine, bins[:-1])
        lo = np.minimum.reduceat(lo, starts, axis=ax)
        hi = np.maximum.reduceat(hi, starts, axis=ax)
        out_edges.append(bins)
    return lo, hi, out_edges, exact


def _find_gemm(index: IndexedTrace) -> tuple[str, str, str] | None:
    """(A, B, C) names when the trace looks like C[M,N] = A[M,K] @ B[K,N] in tiles."""
    arrays = {a.name: a.shape for a in index.trace.arrays if len(a.shape) == 2}

    def kinds(name: str, want: str) -> bool:
        return index.has_kind(name, want)

    def row_fixed(name: str, axis: int) -> bool:
        # in the first block, the tile index along ``axis`` never changes across iterations
        first = index.trace.blocks[0] if index.trace.blocks else None
        ids = {a.box_start[axis] for a in index.by_block.get(first, ())
               if a.arg == name and a.is_box}
        return len(ids) == 1

    for c, (m, n) in arrays.items():
        if not kinds(c, "write"):
            continue
        cands = [(a, b) for a, (am, ak) in arrays.items() for b, (bk, bn) in arrays.items()
                 if a != b and c not in (a, b) and am == m and bn == n and ak == bk
                 and kinds(a, "read") and kinds(b, "read")]
        if not cands:
            continue
        best = [ab for ab in cands if row_fixed(ab[0], 0) and row_fixed(ab[1], 1)]
        a, b = (best or cands)[0]
        return a, b, c
    return None


def _visits(index: IndexedTrace, name: str) -> tuple[TileVisit, ...]:
    """Every store of a whole tile of ``name``'s first tile shape (every tile access when
    nothing is stored), ranked by (iteration, linear block id, seq)."""
    grids = index.tile_grids(name)
    if not grids:
        return ()
    cols = index.columns(name)
    rows = cols.box & cols.matches("write")
    if not rows.any():
        rows = cols.box
    tile = np.asarray(grids[0].tile, dtype=np.int64)
    rows = np.flatnonzero(rows & (cols.stop - cols.start == tile).all(axis=1))
    tidx = cols.start[rows] // tile  # floor division, as for Python ints
    lin = cols.linear_block[rows]
    chosen = list(map(index.by_arg[name].__getitem__, rows.tolist()))  # few: whole tiles
    blocks = list(map(attrgetter("block"), chosen))
    it = np.fromiter(map(attrgetter("iteration"), chosen), np.int64, len(chosen))
    seq = np.fromiter(map(attrgetter("seq"), chosen), np.int64, len(chosen))
    # np.lexsort's last key is the primary one: (iteration, linear block, seq, tile index);
    # a block's linear id is unique, so the block tuple never decides
    keys = [tidx[:, ax] for ax in range(tidx.shape[1] - 1, -1, -1)]
    order = np.lexsort((*keys, seq, lin, it)).tolist()
    tiles, lins, its, seqs = tidx.tolist(), lin.tolist(), it.tolist(), seq.tolist()
    return tuple(TileVisit(tuple(tiles[i]), blocks[i], lins[i], its[i], seqs[i], rank)
                 for rank, i in enumerate(order))
