"""Tile-space diagrams: which block touches which elements of each array, from which line.

``diagram(trace, ...)`` draws an emulator :class:`~tile_lab.access_trace.Trace`; ``partition(shape,
tile)`` draws a bare tile partition for teaching (the CUDA guide's Figure 19 is
``partition((10, 16), (2, 4), highlight=(1, 2))``).

Two steps, kept apart so tests can check numbers instead of SVG text:

1. *geometry* (``Diagram.geometry``): plain frozen dataclasses — tile grids, footprints
   (in-bounds boxes, padded / discarded lanes), coverage heatmaps, tile visit orders.
2. *drawing*: the geometry is laid out as a scene of primitives (``render/svg.py``) and
   written as deterministic SVG, or painted by matplotlib for ``to_png``.

Large arrays are drawn at tile granularity: no more than ``CELL_CAP`` cells per drawn
slice; element detail appears inside a ``zoom=(r0, r1, c0, c1)`` window.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path as FilePath

import numpy as np

from ..access_trace import Block, MemoryAccess, Trace
from ..errors import DiagramError
from . import palette
from .svg import INK, Group, Path, Rect, Scene, Style, Text, paint_png, text_width, to_svg

__all__ = ["Box", "Diagram", "Footprint", "Geometry", "Heatmap", "IndexedTrace", "Panel",
           "TileGrid", "TileVisit", "diagram", "partition"]

VIEWS = ("block", "coverage", "order", "gemm")
CELL_CAP = 4096  # most cells (elements, heatmap cells, runs) drawn per array slice
MAX_SLICES = 4  # most 2-D slices drawn of a 3-D array
HIGHLIGHT = "#E69F00"  # partition(): highlighted tiles (Okabe–Ito orange)
GOOD, BAD_ZERO, BAD_MULTI, READ = "#009E73", "#CC79A7", "#D55E00", "#0072B2"


# ============================================================================================
# geometry
# ============================================================================================

@dataclass(frozen=True)
class Box:
    """Half-open element box ``start <= index < stop`` (array coordinates, any ndim)."""

    start: tuple[int, ...]
    stop: tuple[int, ...]

    @property
    def size(self) -> int:
        return math.prod(max(0, b - a) for a, b in zip(self.start, self.stop))

    def elements(self) -> set[tuple[int, ...]]:
        return set(itertools.product(*(range(a, b) for a, b in zip(self.start, self.stop))))

    def intersect(self, other: Box) -> Box | None:
        start = tuple(max(a, b) for a, b in zip(self.start, other.start))
        stop = tuple(min(a, b) for a, b in zip(self.stop, other.stop))
        return Box(start, stop) if all(a < b for a, b in zip(start, stop)) else None

    def minus(self, inner: Box | None) -> tuple[Box, ...]:
        """This box without ``inner``, as at most 2·ndim disjoint boxes."""
        if inner is None or (cut := self.intersect(inner)) is None:
            return (self,) if self.size else ()
        out, lo, hi = [], list(self.start), list(self.stop)
        for ax in range(len(lo)):
            if lo[ax] < cut.start[ax]:
                out.append(Box(tuple(lo), (*hi[:ax], cut.start[ax], *hi[ax + 1:])))
            if cut.stop[ax] < hi[ax]:
                out.append(Box((*lo[:ax], cut.stop[ax], *lo[ax + 1:]), tuple(hi)))
            lo[ax], hi[ax] = cut.start[ax], cut.stop[ax]
        return tuple(out)

    def describe(self) -> str:
        last = tuple(b - 1 for b in self.stop)
        return f"{_tup(self.start)}–{_tup(last)}"


@dataclass(frozen=True)
class TileGrid:
    """An array partitioned into tiles of shape ``tile`` (array axis order): ``grid`` tiles
    per axis, the last ones possibly reaching past the array (``padded_shape``)."""

    tile: tuple[int, ...]
    grid: tuple[int, ...]

    @classmethod
    def of(cls, shape: Sequence[int], tile: Sequence[int]) -> TileGrid:
        return cls(tuple(tile), tuple(-(-n // t) for n, t in zip(shape, tile)))

    @property
    def padded_shape(self) -> tuple[int, ...]:
        return tuple(g * t for g, t in zip(self.grid, self.tile))

    def tile_box(self, index: Sequence[int]) -> Box:
        start = tuple(i * t for i, t in zip(index, self.tile))
        return Box(start, tuple(s + t for s, t in zip(start, self.tile)))

    def tiles(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(g) for g in self.grid))

    def padding_area(self, shape: Sequence[int]) -> tuple[Box, ...]:
        """Boxes of the padded tile extent that lie outside an array of ``shape``."""
        zero = tuple(0 for _ in shape)
        return Box(zero, self.padded_shape).minus(Box(zero, tuple(shape)))


@dataclass(frozen=True)
class Footprint:
    """What one memory operation of the selected block touched in one array.

    ``inside``: in-bounds elements (one box for a tile op; row runs for gather/scatter).
    ``outside``: lanes of the tile beyond the array — padded on a load, discarded on a store.
    """

    seq: int
    block: Block
    kind: str
    op: str
    line: int
    iteration: int
    tile_index: tuple[int, ...] | None
    tile_shape: tuple[int, ...] | None
    inside: tuple[Box, ...]
    outside: tuple[Box, ...]
    out_of_bounds: int = 0  # gather/scatter lanes outside the array (no coordinates)
    approximate: bool = False  # runs were merged into coarse cells (too many to draw)

    @property
    def is_write(self) -> bool:
        return self.kind in ("store", "scatter", "atomic")

    def elements(self) -> set[tuple[int, ...]]:
        return set().union(*(b.elements() for b in self.inside))


@dataclass(frozen=True)
class Heatmap:
    """Per element of an array: how many distinct blocks read or wrote it.

    Cells are the boxes between consecutive ``edges`` on every axis; within a cell the
    count lies in ``[counts_min, counts_max]`` (equal unless the cell merges several cells
    to respect the drawing cap: then ``exact`` is False). Counts are flat, row-major.
    """

    kind: str  # "read" | "write"
    edges: tuple[tuple[int, ...], ...]
    counts_min: tuple[int, ...]
    counts_max: tuple[int, ...]
    uncovered: int  # elements with count 0
    overlapped: int  # elements with count > 1
    exact: bool

    @property
    def cell_shape(self) -> tuple[int, ...]:
        return tuple(len(e) - 1 for e in self.edges)

    def cells(self) -> Iterator[tuple[Box, int, int]]:
        for flat, idx in enumerate(itertools.product(*(range(n) for n in self.cell_shape))):
            box = Box(tuple(self.edges[ax][i] for ax, i in enumerate(idx)),
                      tuple(self.edges[ax][i + 1] for ax, i in enumerate(idx)))
            yield box, self.counts_min[flat], self.counts_max[flat]

    def count(self, index: Sequence[int]) -> int:
        """The count at one element (exact heatmaps only)."""
        self._need_exact()
        cell = [int(np.searchsorted(e, i, side="right")) - 1 for e, i in zip(self.edges, index)]
        return self.counts_min[int(np.ravel_multi_index(cell, self.cell_shape))]

    def uncovered_elements(self) -> set[tuple[int, ...]]:
        self._need_exact()
        return set().union(*(b.elements() for b, lo, _ in self.cells() if lo == 0))

    def overlapped_elements(self) -> set[tuple[int, ...]]:
        self._need_exact()
        return set().union(*(b.elements() for b, lo, _ in self.cells() if lo > 1))

    def _need_exact(self) -> None:
        if not self.exact:
            raise DiagramError("this heatmap merged cells to stay under the drawing cap; "
                               "use Trace.coverage() for per-element counts")


@dataclass(frozen=True)
class TileVisit:
    """A block touching a tile: ``rank`` orders all visits of a panel by (iteration,
    linear block id) — roughly the order in time on a GPU running blocks in waves."""

    tile_index: tuple[int, ...]
    block: Block
    linear_block: int
    iteration: int
    seq: int
    rank: int


@dataclass(frozen=True)
class Panel:
    """One drawn array (or one heatmap of it)."""

    arg: str
    shape: tuple[int, ...]
    dtype: str
    title: str
    window: Box  # the drawn element region (zoom, including padded tile extents)
    element_detail: bool  # element grid drawn (window small enough)
    slices: tuple[int, ...] = (0,)  # drawn leading-axis slices of a 3-D array
    kind: str | None = None  # coverage panels: "read" | "write"
    role: str | None = None  # GEMM layout: "A" | "B" | "C"
    tile_grids: tuple[TileGrid, ...] = ()
    footprints: tuple[Footprint, ...] = ()
    heatmap: Heatmap | None = None
    visits: tuple[TileVisit, ...] = ()
    highlight: tuple[tuple[int, ...], ...] = ()  # partition(): highlighted tile indices

    def padding_area(self) -> tuple[Box, ...]:
        return self.tile_grids[0].padding_area(self.shape) if self.tile_grids else ()

    def padded_elements(self) -> set[tuple[int, ...]]:
        """Lanes the shown loads read from outside the array (filled with padding)."""
        return set().union(*(b.elements() for f in self.footprints if not f.is_write
                             for b in f.outside))

    def discarded_elements(self) -> set[tuple[int, ...]]:
        """Lanes the shown stores computed outside the array (discarded)."""
        return set().union(*(b.elements() for f in self.footprints if f.is_write
                             for b in f.outside))

    def touched_elements(self, kind: str | None = None) -> set[tuple[int, ...]]:
        """In-bounds elements of the shown footprints ("read" / "write" / None = both)."""
        return set().union(*(f.elements() for f in self.footprints
                             if kind is None or (kind == "write") == f.is_write))

    def highlight_boxes(self) -> tuple[Box, ...]:
        return tuple(self.tile_grids[0].tile_box(t) for t in self.highlight)

    def visit_map(self) -> dict[tuple[int, ...], list[tuple[Block, int]]]:
        """Tile index → [(block, iteration), ...] in visit order."""
        out: dict[tuple[int, ...], list[tuple[Block, int]]] = {}
        for v in sorted(self.visits, key=lambda v: v.rank):
            out.setdefault(v.tile_index, []).append((v.block, v.iteration))
        return out


@dataclass(frozen=True)
class LegendEntry:
    line: int
    color: str
    text: str


@dataclass(frozen=True)
class Geometry:
    """Everything a diagram shows, as data (JSON-serialisable through ``to_json``)."""

    view: str
    kernel: str
    grid: Block
    block: Block | None
    iteration: int | None
    lines: tuple[int, ...] | None  # line filter; None = every line
    layout: str  # "flow" | "gemm"
    panels: tuple[Panel, ...]
    legend: tuple[LegendEntry, ...] = ()
    notes: tuple[str, ...] = ()

    def panel(self, arg: str, kind: str | None = None) -> Panel:
        for p in self.panels:
            if p.arg == arg and (kind is None or p.kind == kind):
                return p
        have = ", ".join(p.arg + (f" ({p.kind})" if p.kind else "") for p in self.panels)
        raise KeyError(f"no panel for {arg!r}{f' ({kind})' if kind else ''}; panels: {have}")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)


@dataclass(frozen=True)
class PanelLayout:
    """Where a panel was drawn: pixel origin of element (r0, c0) of its first slice."""

    arg: str
    kind: str | None
    x: float
    y: float
    sx: float  # pixels per element along columns
    sy: float  # pixels per element along rows
    slice_stride: float  # vertical pixels between consecutive drawn slices
    window: tuple[tuple[int, int], tuple[int, int], tuple[int, int]]  # (z, r, c) ranges
    slices: tuple[int, ...]


@dataclass(frozen=True)
class Diagram:
    """A drawn diagram: ``svg`` text, the ``geometry`` it shows, PNG export."""

    geometry: Geometry
    svg: str
    layouts: tuple[PanelLayout, ...]
    scene: Scene = field(repr=False, compare=False)

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_html_(self) -> str:
        return f'<div class="tile-lab-diagram-wrap" style="overflow-x:auto">{self.svg}</div>'

    def to_png(self, path: str | FilePath, dpi: int = 200) -> FilePath:
        """Paint the same geometry with matplotlib and save it as a PNG; returns the path."""
        out = FilePath(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        paint_png(self.scene, out, dpi=dpi)
        return out

    def save_svg(self, path: str | FilePath) -> FilePath:
        out = FilePath(path)
        out.write_text(self.svg, encoding="utf-8")
        return out

    def element_xy(self, arg: str, index: Sequence[int], kind: str | None = None
                   ) -> tuple[float, float]:
        """Pixel centre of element ``index`` of ``arg`` in the SVG (for screenshot checks)."""
        for lay in self.layouts:
            if lay.arg == arg and (kind is None or lay.kind == kind):
                z, r, c = _lift_index(index)
                (_, _), (r0, _), (c0, _) = lay.window
                if z not in lay.slices:
                    raise KeyError(f"slice {z} of {arg!r} is not drawn (slices {lay.slices})")
                k = lay.slices.index(z)
                return (lay.x + (c - c0 + 0.5) * lay.sx,
                        lay.y + k * lay.slice_stride + (r - r0 + 0.5) * lay.sy)
        raise KeyError(f"no panel for {arg!r}")

    def __repr__(self) -> str:
        g = self.geometry
        return (f"Diagram(view={g.view!r}, kernel={g.kernel!r}, "
                f"panels={[p.arg for p in g.panels]}, block={g.block})")


# ============================================================================================
# the trace, indexed once
# ============================================================================================

class IndexedTrace:
    """A trace indexed by block and by array, so a redraw touches only one block's
    accesses (the diagram browser builds this once). Heatmaps are cached per array."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.by_block: dict[Block, list[MemoryAccess]] = {}
        self.by_arg: dict[str, list[MemoryAccess]] = {a.name: [] for a in trace.arrays}
        for a in trace.accesses:
            self.by_block.setdefault(a.block, []).append(a)
            self.by_arg.setdefault(a.arg, []).append(a)
        self.lines: tuple[int, ...] = tuple(sorted({a.line for a in trace.accesses}))
        self.max_iteration = max((a.iteration for a in trace.accesses), default=0)
        slots = palette.line_color_index(self.lines)
        self.colors = {ln: palette.css_var(s) for ln, s in slots.items()}
        self._source = trace.source.splitlines()
        self._grids: dict[str, tuple[TileGrid, ...]] = {}
        self._heatmaps: dict[tuple[str, str], _Coverage | None] = {}
        self._visits: dict[str, tuple[TileVisit, ...]] = {}
        self._has_kind: dict[tuple[str, str], bool] = {}
        self._visit_summary: dict[str, tuple] = {}
        self.draw_cache: dict[tuple, tuple] = {}  # drawn items that no selection changes
        self._gemm: tuple[str, str, str] | bool | None = False  # False = not computed yet

    def line_text(self, line: int) -> str:
        i = line - self.trace.first_line
        return self._source[i].strip() if 0 <= i < len(self._source) else ""

    def tile_grids(self, arg: str) -> tuple[TileGrid, ...]:
        """Distinct tile shapes used on ``arg``, in array axis order (a transposed load's
        tile is drawn as the box it covers), first use first."""
        if arg not in self._grids:
            shape = self.trace.array(arg).shape
            seen: dict[tuple[int, ...], None] = {}
            for a in self.by_arg.get(arg, ()):
                if a.is_box:
                    size = tuple(e - s for s, e in zip(a.box_start, a.box_stop))
                    if all(n > 0 for n in size):
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

    def visits(self, arg: str) -> tuple[TileVisit, ...]:
        if arg not in self._visits:
            self._visits[arg] = _visits(self, arg)
        return self._visits[arg]

    def visit_summary(self, arg: str):
        if arg not in self._visit_summary:
            self._visit_summary[arg] = _visit_summary(self.visits(arg))
        return self._visit_summary[arg]

    def has_kind(self, arg: str, kind: str) -> bool:
        """Whether any access of ``arg`` is a ``kind`` ("read" / "write" / a kind name)."""
        key = (arg, kind)
        if key not in self._has_kind:
            self._has_kind[key] = any(_kind_matches(a, kind) for a in self.by_arg.get(arg, ()))
        return self._has_kind[key]

    def gemm_roles(self) -> tuple[str, str, str] | None:
        if self._gemm is False:
            self._gemm = _find_gemm(self)
        return self._gemm  # type: ignore[return-value]

    def uses_mma(self) -> bool:
        return re.search(r"\bmma(_scaled)?\s*\(", self.trace.source) is not None


def _kind_matches(a: MemoryAccess, kind: str) -> bool:
    """"read" / "write" (atomics are both, as in Trace.coverage) or an exact kind name."""
    if kind == "read":
        return a.is_read
    if kind == "write":
        return a.is_write
    return a.kind == kind


_Coverage = tuple[np.ndarray, list[np.ndarray], int, int]


def _compressed_coverage(index: IndexedTrace, arg: str, kind: str) -> _Coverage | None:
    """(counts per cell, cell edges per axis, #elements never touched, #touched by 2+ blocks)."""
    shape = index.trace.array(arg).shape
    accesses = [a for a in index.by_arg.get(arg, ()) if _kind_matches(a, kind)]
    if not accesses or not shape or 0 in shape:
        return None
    comp = (_box_coverage(accesses, shape, index.trace.grid)
            if all(a.is_box for a in accesses) else None)
    if comp is None:  # gathers/scatters (or pathological boxes): count per element
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
    pairs = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    return np.bincount(pairs % n, minlength=n).reshape(shape).astype(np.int64)


def _box_coverage(accesses: list[MemoryAccess], shape: tuple[int, ...], grid: Block,
                  max_expanded: int = 20_000_000) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """Distinct-block counts on a coordinate-compressed grid, vectorised.

    Every axis is cut at every box edge, so coverage is constant on each resulting cell: an
    8192² array in 128² tiles needs 64² cells, not 64M elements. Each access is expanded to
    the cells it covers (usually one per access); (block, cell) pairs are de-duplicated so a
    block touching an element twice counts once. None if the expansion would be huge.
    """
    dims = np.asarray(shape, dtype=np.int64)
    starts = np.clip(np.array([a.box_start for a in accesses], dtype=np.int64), 0, dims)
    stops = np.clip(np.array([a.box_stop for a in accesses], dtype=np.int64), 0, dims)
    stops = np.maximum(stops, starts)
    blocks = np.array([a.block for a in accesses], dtype=np.int64)
    block_id = blocks[:, 0] + grid[0] * (blocks[:, 1] + grid[1] * blocks[:, 2])
    edges = [np.unique(np.concatenate(([0, n], starts[:, ax], stops[:, ax])))
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
    pairs = np.unique(block_id[ids] * n_cells + flat)
    counts = np.bincount(pairs % n_cells, minlength=n_cells).reshape(cshape).astype(np.int64)
    return counts, edges


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
        return any(_kind_matches(a, want) for a in index.by_arg.get(name, ()))

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


# ============================================================================================
# public entry points
# ============================================================================================

def diagram(trace: Trace | IndexedTrace, *, arg: str | Sequence[str] | None = None,
            block: int | Sequence[int] | None = None, iteration: int | None = None,
            line: int | Sequence[int] | None = None, view: str = "block",
            zoom: Sequence[int] | None = None) -> Diagram:
    """Draw a trace's memory accesses in tile space.

    ``view="block"``: for one block (default the first) every array with its tile grids and
    the block's footprints, coloured by source line (loads filled, stores hatched outlines,
    padded load lanes dotted, discarded store lanes cross-hatched); a kernel with an ``mma``
    is laid out as the A / B / C trio. ``view="gemm"`` forces the trio. ``view="coverage"``:
    per array, how many blocks wrote / read each element (never-written and multiply-written
    elements called out). ``view="order"``: which block visits each tile, in what order.

    ``arg``/``line``/``iteration`` filter what is drawn; ``zoom=(r0, r1, c0, c1)`` (or
    ``(c0, c1)`` for 1-D, six numbers for 3-D) limits the drawn region of every array.
    """
    index = trace if isinstance(trace, IndexedTrace) else IndexedTrace(trace)
    t = index.trace
    if view not in VIEWS:
        raise DiagramError(f"view={view!r} is not a diagram view; choose one of {VIEWS}")
    args = _check_args(t, arg)
    blk = _check_block(t, block)
    if iteration is not None and (not isinstance(iteration, (int, np.integer)) or iteration < 0):
        raise DiagramError(f"iteration={iteration!r} must be a non-negative int (or None for all)")
    lines = _check_lines(index, line)

    layout, roles, notes = "flow", {}, []
    if view == "gemm" or (view == "block" and arg is None and index.uses_mma()):
        trio = index.gemm_roles()
        if trio is None and view == "gemm":
            names = ", ".join(f"{a.name}{list(a.shape)}" for a in t.arrays)
            raise DiagramError("view='gemm' needs a kernel that loads A[M, K] and B[K, N] and "
                               f"stores C[M, N]; this trace's arrays are: {names}")
        if trio is not None:
            layout = "gemm"
            roles = dict(zip(trio, "ABC"))
            args = list(trio) + [a for a in args if a not in trio]
    if view in ("block", "gemm") and blk is None:
        blk = t.blocks[0]

    if view == "order" and arg is None:
        # the visit order matters for the tiles blocks produce; read-only inputs (a GEMM's
        # A and B, each tile read by many blocks) only when asked for or nothing is written
        written = [a for a in args if index.has_kind(a, "write")]
        args = written or args
    panels: list[Panel] = []
    for name in args:
        info = t.array(name)
        if not 1 <= len(info.shape) <= 3:
            notes.append(f"{name}: {len(info.shape)}-D arrays are not drawn")
            continue
        grids = index.tile_grids(name)
        if view == "coverage":
            for kind in ("write", "read"):
                if not index.has_kind(name, kind):
                    continue
                p = _panel(name, info.shape, info.dtype, grids, zoom, kind=kind, title="")
                hm = index.heatmap(name, kind, p.window)
                if hm is not None:
                    panels.append(dataclasses.replace(
                        p, heatmap=hm, title=_coverage_title(name, kind, hm)))
            continue
        fps: tuple[Footprint, ...] = ()
        visits: tuple[TileVisit, ...] = ()
        if view == "order":
            visits = index.visits(name)
        else:
            accs = [a for a in index.by_block.get(blk, ()) if a.arg == name  # type: ignore[arg-type]
                    and (iteration is None or a.iteration == iteration)
                    and (lines is None or a.line in lines)]
            fps = tuple(_footprint(a, info.shape) for a in accs)
        panels.append(_panel(name, info.shape, info.dtype, grids, zoom, footprints=fps,
                             visits=visits, role=roles.get(name),
                             title=_array_title(name, info.shape, info.dtype, grids,
                                                roles.get(name))))
    if view == "coverage":
        blk = None
    if any(not p.element_detail for p in panels) and zoom is None:
        notes.append("large arrays drawn at tile granularity: pass zoom=(r0, r1, c0, c1) "
                     "for element detail")
    shown_lines = sorted({f.line for p in panels for f in p.footprints})
    if view in ("coverage", "order"):
        shown_lines = []
    legend = tuple(LegendEntry(ln, index.colors[ln], index.line_text(ln)) for ln in shown_lines)
    geometry = Geometry(view=view, kernel=t.kernel, grid=t.grid, block=blk, iteration=iteration,
                        lines=None if lines is None else tuple(sorted(lines)), layout=layout,
                        panels=tuple(panels), legend=legend, notes=tuple(notes))
    return _draw(geometry, index)


def partition(shape: Sequence[int], tile: Sequence[int],
              highlight: Sequence[int] | Sequence[Sequence[int]] | None = None, *,
              zoom: Sequence[int] | None = None) -> Diagram:
    """A bare tile partition for teaching: ``shape`` cut into ``tile``-shaped tiles, each
    labelled with its tile-space index, ``highlight`` (one tile index or a list) filled.

    ``partition((10, 16), (2, 4), highlight=(1, 2))`` is the CUDA guide's Figure 19.
    """
    shp = _int_tuple(shape, "shape")
    til = _int_tuple(tile, "tile")
    if not 1 <= len(shp) <= 3:
        raise DiagramError(f"shape={tuple(shape)!r}: partition draws 1-D to 3-D arrays")
    if len(til) != len(shp):
        raise DiagramError(f"tile={tuple(tile)!r} has {len(til)} dims but shape={shp} has "
                           f"{len(shp)}")
    grid = TileGrid.of(shp, til)
    tiles: list[tuple[int, ...]] = []
    if highlight is not None:
        items = ([highlight] if all(isinstance(v, (int, np.integer)) for v in highlight)
                 else list(highlight))
        for h in items:
            idx = _int_tuple(h, "highlight", allow_zero=True)
            if len(idx) != len(shp) or any(not 0 <= i < g for i, g in zip(idx, grid.grid)):
                raise DiagramError(f"highlight={tuple(h)!r} is not a tile of the {_dims(grid.grid)}"
                                   f" tile grid (indices run from 0 to grid - 1 on each axis)")
            tiles.append(idx)
    title = (f"{_dims(shp)} array in {_dims(til)} tiles → {_dims(grid.grid)} tile grid")
    panel = _panel("array", shp, "", (grid,), zoom, title=title, highlight=tuple(tiles))
    geometry = Geometry(view="partition", kernel="", grid=(1, 1, 1), block=None, iteration=None,
                        lines=None, layout="flow", panels=(panel,))
    return _draw(geometry, None)


# ============================================================================================
# geometry helpers
# ============================================================================================

def _panel(name: str, shape: tuple[int, ...], dtype: str, grids: tuple[TileGrid, ...],
           zoom: Sequence[int] | None, **kw) -> Panel:
    nd = len(shape)
    # the drawn region: the array, the padded tile extents, and any box reaching further
    lo = [0] * nd
    hi = list(shape)
    for g in grids:
        hi = [max(h, p) for h, p in zip(hi, g.padded_shape)]
    for f in kw.get("footprints", ()):
        for b in f.inside + f.outside:
            lo = [max(min(v, s), -n) for v, s, n in zip(lo, b.start, shape)]
            hi = [min(max(v, e), 2 * n) for v, e, n in zip(hi, b.stop, shape)]
    window = Box(tuple(lo), tuple(hi))
    if zoom is not None:
        window = _apply_zoom(window, zoom, name)
    z_range = range(window.start[0], window.stop[0]) if nd == 3 else range(0, 1)
    fps = kw.get("footprints", ())
    # a 3-D array is drawn as up to MAX_SLICES 2-D slices: those the footprints touch
    # first, then the others in order
    touched = sorted({z for f in fps for b in f.inside + f.outside
                      for z in range(b.start[0], b.stop[0]) if z in z_range}) if nd == 3 else []
    rest = [z for z in z_range if z not in touched]
    slices = tuple(sorted((touched + rest)[:MAX_SLICES]))
    rows = window.stop[-2] - window.start[-2] if nd >= 2 else 1
    cols = window.stop[-1] - window.start[-1]
    return Panel(arg=name, shape=shape, dtype=dtype, window=window,
                 element_detail=rows * cols <= CELL_CAP, slices=slices, tile_grids=grids, **kw)


def _apply_zoom(window: Box, zoom: Sequence[int], name: str) -> Box:
    z = _int_tuple(zoom, "zoom", allow_zero=True, allow_negative=True)
    nd = len(window.start)
    want = 2 * min(nd, 2) if len(z) != 2 * nd else 2 * nd
    if len(z) != want or any(z[i] >= z[i + 1] for i in range(0, len(z), 2)):
        raise DiagramError(f"zoom={tuple(zoom)!r}: give (r0, r1, c0, c1) for 2-D/3-D arrays, "
                           f"(c0, c1) for 1-D, or (z0, z1, r0, r1, c0, c1) for 3-D, each lo < hi")
    pairs = [(z[i], z[i + 1]) for i in range(0, len(z), 2)]
    pairs = [(a, b) for a, b in zip(window.start, window.stop)][: nd - len(pairs)] + pairs
    zoomed = window.intersect(Box(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)))
    if zoomed is None:
        raise DiagramError(f"zoom={tuple(zoom)!r} lies outside {name!r} "
                           f"(drawn region {window.describe()})")
    return zoomed


def _footprint(a: MemoryAccess, shape: tuple[int, ...]) -> Footprint:
    approx = False
    if a.is_box:
        full = Box(tuple(a.box_start), tuple(a.box_stop))  # type: ignore[arg-type]
        inside_box = full.intersect(Box(tuple(0 for _ in shape), shape))
        inside = (inside_box,) if inside_box else ()
        outside = full.minus(inside_box)
    else:
        inside, approx = _runs(a.flat_indices, shape)
        outside = ()
    return Footprint(seq=a.seq, block=a.block, kind=a.kind, op=a.op, line=a.line,
                     iteration=a.iteration, tile_index=a.tile_index, tile_shape=a.tile_shape,
                     inside=inside, outside=outside,
                     out_of_bounds=0 if a.is_box else a.out_of_bounds, approximate=approx)


def _runs(flat: np.ndarray | None, shape: tuple[int, ...]) -> tuple[tuple[Box, ...], bool]:
    """Gathered elements as boxes: runs of consecutive elements along the last axis,
    or coarse cells when there would be more than CELL_CAP runs."""
    if flat is None or flat.size == 0:
        return (), False
    flat = np.unique(flat.astype(np.int64))
    n_last = shape[-1]
    breaks = np.flatnonzero((np.diff(flat) != 1) | (flat[1:] % n_last == 0)) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [flat.size]))
    if starts.size <= CELL_CAP:
        out = []
        for s, e in zip(starts, stops):
            first = np.unravel_index(int(flat[s]), shape)
            last = int(flat[e - 1]) % n_last
            begin = tuple(int(v) for v in first)
            out.append(Box(begin, (*(v + 1 for v in begin[:-1]), last + 1)))
        return tuple(out), False
    cell = [max(1, -(-n // 64)) for n in shape]
    coords = np.stack(np.unravel_index(flat, shape), axis=1) // np.array(cell)
    boxes = []
    for c in np.unique(coords, axis=0):
        start = tuple(int(v * k) for v, k in zip(c, cell))
        boxes.append(Box(start, tuple(min(s + k, n) for s, k, n in zip(start, cell, shape))))
    return tuple(boxes), True


def _visits(index: IndexedTrace, name: str) -> tuple[TileVisit, ...]:
    accesses = [a for a in index.by_arg.get(name, ()) if a.is_box and a.is_write]
    if not accesses:
        accesses = [a for a in index.by_arg.get(name, ()) if a.is_box]
    gx, gy, _ = index.trace.grid
    grids = index.tile_grids(name)
    if not grids:
        return ()
    tile = grids[0].tile
    raw = []
    for a in accesses:
        size = tuple(e - s for s, e in zip(a.box_start, a.box_stop))
        if size != tile:
            continue
        tidx = tuple(s // t for s, t in zip(a.box_start, tile))
        lin = a.block[0] + gx * (a.block[1] + gy * a.block[2])
        raw.append((a.iteration, lin, a.seq, tidx, a.block))
    raw.sort()
    return tuple(TileVisit(tidx, blk, lin, it, seq, rank)
                 for rank, (it, lin, seq, tidx, blk) in enumerate(raw))


def _coverage_title(name: str, kind: str, hm: Heatmap) -> str:
    if kind == "read":
        return f"{name}: blocks reading each element"
    if hm.uncovered == 0 and hm.overlapped == 0:
        return f"{name}: blocks writing each element — every element exactly once ✓"
    parts = []
    if hm.uncovered:
        parts.append(f"{hm.uncovered} never written")
    if hm.overlapped:
        parts.append(f"{hm.overlapped} written by 2+ blocks")
    return f"{name}: blocks writing each element — " + ", ".join(parts)


def _array_title(name: str, shape: tuple[int, ...], dtype: str, grids: tuple[TileGrid, ...],
                 role: str | None) -> str:
    head = f"{role} = " if role else ""
    head += f"{name}: {dtype}[{', '.join(map(str, shape))}]"
    if grids:
        g = grids[0]
        head += f", tiles {_dims(g.tile)} → grid {_dims(g.grid)}"
        if len(grids) > 1:
            head += f" (+{len(grids) - 1} more tile shape{'s' if len(grids) > 2 else ''})"
    return head


def _check_args(t: Trace, arg: str | Sequence[str] | None) -> list[str]:
    names = [a.name for a in t.arrays]
    if arg is None:
        return names
    want = [arg] if isinstance(arg, str) else list(arg)
    for w in want:
        if w not in names:
            raise DiagramError(f"arg={w!r} is not an array argument of {t.kernel}; "
                               f"its arrays are: {', '.join(names) or '(none)'}")
    return want


def _check_block(t: Trace, block: int | Sequence[int] | None) -> Block | None:
    if block is None:
        return None
    b = (block,) if isinstance(block, (int, np.integer)) else tuple(block)
    if not 1 <= len(b) <= 3 or not all(isinstance(v, (int, np.integer)) for v in b):
        raise DiagramError(f"block={block!r} must be 1 to 3 ints (a block id of the grid)")
    full = tuple(int(v) for v in b) + (0,) * (3 - len(b))
    if any(not 0 <= v < g for v, g in zip(full, t.grid)):
        raise DiagramError(f"block={block!r} is outside the launch grid {_tup(t.grid)}")
    return full  # type: ignore[return-value]


def _check_lines(index: IndexedTrace, line: int | Sequence[int] | None) -> set[int] | None:
    if line is None:
        return None
    want = {line} if isinstance(line, (int, np.integer)) else set(line)
    bad = sorted(w for w in want if w not in index.lines)
    if bad:
        raise DiagramError(f"line={line!r}: no memory operation on line "
                           f"{', '.join(map(str, bad))}; lines with memory operations: "
                           f"{', '.join(map(str, index.lines)) or '(none)'}")
    return {int(w) for w in want}


def _int_tuple(value: Iterable[int], name: str, *, allow_zero: bool = False,
               allow_negative: bool = False) -> tuple[int, ...]:
    try:
        out = tuple(value)
    except TypeError:
        raise DiagramError(f"{name}={value!r} must be a tuple of ints") from None
    if not out or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                          for v in out):
        raise DiagramError(f"{name}={value!r} must be a non-empty tuple of ints")
    if not allow_negative and any(v < 0 or (v == 0 and not allow_zero) for v in out):
        raise DiagramError(f"{name}={value!r}: every entry must be "
                           f"{'non-negative' if allow_zero else 'positive'}")
    return tuple(int(v) for v in out)


def _lift_index(index: Sequence[int]) -> tuple[int, int, int]:
    idx = tuple(int(v) for v in index)
    return (0, 0, *idx)[-3:] if len(idx) < 3 else idx  # type: ignore[return-value]


def _tup(t: Sequence[int]) -> str:
    return "(" + ", ".join(str(int(v)) for v in t) + ")"


def _dims(t: Sequence[int]) -> str:
    return "×".join(str(int(v)) for v in t)


# ============================================================================================
# drawing: geometry -> scene (-> SVG / PNG)
# ============================================================================================

PAD = 10
HEADER_H = 24
TITLE_H = 18  # panel title line
MARGIN_TOP = 14  # column labels above the grid
MARGIN_LEFT = 36  # row labels left of the grid
SLICE_GAP = 16
PANEL_GAP = 28
PANEL_MAX = 520  # most pixels a panel's grid takes along one axis
CELL_MAX_PX = 26  # largest drawn element
MIN_AXIS_PX = 40  # a thin axis (1-D arrays, 1-row windows) is stretched to this
FLOW_WIDTH = 1100  # panels wrap to a new row past this width
FOOT_LINE = 14
RAMP = ("#440154", "#3B528B", "#21918C", "#5EC962", "#FDE725")  # dark→light visit order


@dataclass(frozen=True)
class _Win:
    """A panel's window lifted to (slice, row, col) ranges, and its pixel scale."""

    z: tuple[int, int]
    r: tuple[int, int]
    c: tuple[int, int]
    sx: float
    sy: float

    @property
    def rows(self) -> int:
        return self.r[1] - self.r[0]

    @property
    def cols(self) -> int:
        return self.c[1] - self.c[0]


def _lift_box(box: Box) -> tuple[tuple[int, int], ...]:
    pairs = tuple(zip(box.start, box.stop))
    return ((0, 1),) * (3 - len(pairs)) + pairs


def _lift_shape(shape: Sequence[int]) -> tuple[int, int, int]:
    return (1, 1, *shape)[-3:] if len(shape) < 3 else tuple(shape)  # type: ignore


def _scale(rows: int, cols: int) -> tuple[float, float]:
    s = min(CELL_MAX_PX, PANEL_MAX / max(rows, cols))
    return (max(s, min(CELL_MAX_PX, MIN_AXIS_PX / cols)),
            max(s, min(CELL_MAX_PX, MIN_AXIS_PX / rows)))


def _footer(panel: Panel) -> list[str]:
    out = [f"tile {_tup(t)} covers elements {b.describe()}"
           for t, b in zip(panel.highlight[:3], panel.highlight_boxes())]
    if len(panel.shape) == 3 and len(panel.slices) < panel.window.stop[0] - panel.window.start[0]:
        out.append(f"slices {', '.join(map(str, panel.slices))} of 0–{panel.shape[0] - 1} "
                   "shown (zoom=(z0, z1, r0, r1, c0, c1) picks others)")
    for f in panel.footprints:
        boxes = f.inside + f.outside
        if boxes and all(panel.window.intersect(b) is None for b in boxes):
            where = boxes[0].describe() if len(boxes) == 1 else f"{len(boxes)} boxes"
            out.append(f"line {f.line} {f.op} tile {_tup(f.tile_index or ())} → elements "
                       f"{where}: outside the drawn region")
    if any(f.approximate for f in panel.footprints):
        out.append("gathered elements merged into coarse cells (zoom for detail)")
    if panel.heatmap is not None and not panel.heatmap.exact:
        out.append("heatmap cells merged (min–max shown); zoom for exact counts")
    return out


def _panel_size(panel: Panel, win: _Win) -> tuple[float, float]:
    n = len(panel.slices)
    grid_h = n * win.rows * win.sy + (n - 1) * SLICE_GAP
    w = max(MARGIN_LEFT + win.cols * win.sx + 8, text_width(panel.title, 12) + 4,
            *(text_width(t, 10) + MARGIN_LEFT for t in _footer(panel)))
    return w, TITLE_H + MARGIN_TOP + grid_h + 6 + FOOT_LINE * len(_footer(panel))


def _win(panel: Panel, sx: float | None = None, sy: float | None = None) -> _Win:
    z, r, c = _lift_box(panel.window)
    if sx is None or sy is None:
        # stacked slices of a 3-D array share the vertical budget
        sx, sy = _scale((r[1] - r[0]) * len(panel.slices), c[1] - c[0])
    return _Win(z, r, c, sx, sy)


def _draw(geometry: Geometry, index: IndexedTrace | None) -> Diagram:
    items: list = []
    y_top = PAD
    if geometry.view != "partition":
        items.append(Text(PAD, PAD + 13, _header(geometry), size=13, bold=True))
        y_top += HEADER_H
    wins = {id(p): _win(p) for p in geometry.panels}
    places: dict[int, tuple[float, float]] = {}
    panels = list(geometry.panels)
    right, bottom = PAD, y_top
    if geometry.layout == "gemm":
        a, b, c = panels[:3]
        wa, wb, wc = _win(a), _win(b), _win(c)
        s = min(CELL_MAX_PX, 1.3 * PANEL_MAX / (wa.cols + wc.cols),
                1.3 * PANEL_MAX / (wb.rows + wc.rows))
        for p in (a, b, c):
            wins[id(p)] = _win(p, s, s)
        (aw, ah), (bw, bh), (cw, ch) = (_panel_size(p, wins[id(p)]) for p in (a, b, c))
        col2 = PAD + aw + PANEL_GAP
        places[id(b)] = (col2, y_top)
        places[id(a)] = (PAD, y_top + bh + PANEL_GAP)
        places[id(c)] = (col2, y_top + bh + PANEL_GAP)
        right = max(col2 + max(bw, cw), PAD + aw)
        bottom = y_top + bh + PANEL_GAP + max(ah, ch)
        for i, text in enumerate(_gemm_caption(geometry, a, b, c)):  # the empty quadrant
            items.append(Text(PAD, y_top + 30 + 16 * i, text, size=11, opacity=0.85))
        rest = panels[3:]
        y_top = bottom + PANEL_GAP
    else:
        rest = panels
    x, y, row_h = PAD, y_top, 0.0
    for p in rest:
        w, h = _panel_size(p, wins[id(p)])
        if x > PAD and x + w > FLOW_WIDTH:
            x, y, row_h = PAD, y + row_h + PANEL_GAP, 0.0
        places[id(p)] = (x, y)
        x += w + PANEL_GAP
        row_h = max(row_h, h)
        right, bottom = max(right, x - PANEL_GAP), max(bottom, y + h)

    layouts = []
    for p in panels:
        px, py = places[id(p)]
        sub, lay = _draw_panel(p, wins[id(p)], px, py, geometry, index)
        items.extend(sub)
        layouts.append(lay)

    y = bottom + 12
    legend_items, legend_w, y = _legend(geometry, PAD, y)
    items.extend(legend_items)
    for note in geometry.notes:
        y += FOOT_LINE
        items.append(Text(PAD, y, note, size=10, opacity=0.75))
    width = max(right, legend_w, *(PAD + text_width(n, 10) for n in geometry.notes),
                PAD + text_width(_header(geometry), 13) if geometry.view != "partition" else 0)
    scene = Scene(width=math.ceil(width + PAD), height=math.ceil(y + PAD), items=tuple(items),
                  label=_header(geometry) if geometry.view != "partition"
                  else geometry.panels[0].title)
    svg = to_svg(scene, css=palette.palette_css(".tile-lab-diagram"))
    return Diagram(geometry=geometry, svg=svg, layouts=tuple(layouts), scene=scene)


def _gemm_caption(g: Geometry, a: Panel, b: Panel, c: Panel) -> list[str]:
    """What the selected block does, in tile indices: the row panel of A, the column
    panel of B, the tile of C."""
    if g.block is None:
        return []

    def tiles(p: Panel, write: bool) -> str:
        idx = sorted({f.tile_index for f in p.footprints
                      if f.tile_index is not None and f.is_write == write})
        if not idx:
            return "none"
        shown = ", ".join(_tup(i) for i in idx[:3])
        return shown + (f", … {_tup(idx[-1])} ({len(idx)} tiles)" if len(idx) > 3 else "")

    return [f"block {_tup(_trim(g.block, g.grid))}",
            f"reads A ({a.arg}) tiles {tiles(a, False)}",
            f"and B ({b.arg}) tiles {tiles(b, False)},",
            f"writes C ({c.arg}) tile {tiles(c, True)}"]


def _header(g: Geometry) -> str:
    grid = _tup(_trim(g.grid))
    parts = [f"{g.kernel}", f"grid {grid}"]
    if g.view in ("block", "gemm"):
        parts.append(f"block {_tup(_trim(g.block, g.grid))}")  # type: ignore[arg-type]
        parts.append("all iterations" if g.iteration is None else f"iteration {g.iteration}")
        if g.lines is not None:
            parts.append("line" + ("s " if len(g.lines) > 1 else " ") + ", ".join(
                map(str, g.lines)))
    elif g.view == "coverage":
        parts.append("coverage by distinct blocks (all blocks)")
    elif g.view == "order":
        parts.append("which block visits each tile, in order (all blocks)")
    return " · ".join(parts)


def _trim(block: Sequence[int], grid: Sequence[int] | None = None) -> tuple[int, ...]:
    """A block id or grid shown with only the grid's used axes: (3, 0, 0) in a 1-D grid → (3,)."""
    grid = grid or block
    n = max([i + 1 for i, g in enumerate(grid) if g > 1] or [1])
    return tuple(block[:n])


def _draw_panel(panel: Panel, win: _Win, x: float, y: float, geometry: Geometry,
                index: IndexedTrace | None) -> tuple[list, PanelLayout]:
    items: list = [Text(x, y + 12, panel.title, size=12, bold=True)]
    gx, gy = x + MARGIN_LEFT, y + TITLE_H + MARGIN_TOP
    stride = win.rows * win.sy + SLICE_GAP
    (r0, r1), (c0, c1) = win.r, win.c
    nd = len(panel.shape)
    lay = PanelLayout(panel.arg, panel.kind, gx, gy, win.sx, win.sy, stride,
                      (win.z, win.r, win.c), panel.slices)

    for k, z in enumerate(panel.slices):
        top = gy + k * stride

        def place(box: Box, z: int = z, top: float = top
                  ) -> tuple[float, float, float, float] | None:
            (bz0, bz1), (br0, br1), (bc0, bc1) = _lift_box(box)
            if not bz0 <= z < bz1:
                return None
            ra, rb, ca, cb = max(br0, r0), min(br1, r1), max(bc0, c0), min(bc1, c1)
            if ra >= rb or ca >= cb:
                return None
            return (gx + (ca - c0) * win.sx, top + (ra - r0) * win.sy,
                    (cb - ca) * win.sx, (rb - ra) * win.sy)

        if nd == 3:
            items.append(Text(gx - 4, top - 3, f"[{z}]", size=9, anchor="end", opacity=0.8))
        zero = tuple(0 for _ in panel.shape)
        if (r := place(Box(zero, panel.shape))) is not None:
            items.append(Group((Rect(*r, Style(fill=INK, fill_opacity=0.04, stroke=INK,
                                               stroke_width=1.2, stroke_opacity=0.9)),),
                               title=f"{panel.arg}: shape {_tup(panel.shape)}"))
        for b in panel.padding_area():
            if (r := place(b)) is not None:
                items.append(Group((Rect(*r, Style(stroke=INK, stroke_opacity=0.5, dash="3 2",
                                                   hatch="dots")),),
                                   title=f"padded tile extent beyond the array: elements "
                                         f"{b.describe()}"))
        if panel.heatmap is not None:
            items.extend(_heatmap_cells(panel.heatmap, place))
        items.extend(_grid_lines(panel, win, gx, top))
        for t, b in zip(panel.highlight, panel.highlight_boxes()):
            if (r := place(b)) is not None:
                r = _visible(r)
                items.append(Group((Rect(*r, Style(fill=HIGHLIGHT, fill_opacity=0.85,
                                                   stroke=HIGHLIGHT, stroke_width=2)),),
                                   title=f"tile {_tup(t)}: elements {b.describe()}"))
        items.extend(_tile_labels(panel, win, gx, top, z, first=(k == 0)))
        if panel.visits:
            items.extend(_visit_cells(panel, place, geometry, index))
        if index is not None:
            for f in panel.footprints:
                items.extend(_footprint_items(f, panel, place, geometry, index))
    n = len(panel.slices)
    fy = gy + n * win.rows * win.sy + (n - 1) * SLICE_GAP + 6
    for line in _footer(panel):
        fy += FOOT_LINE
        items.append(Text(gx, fy - 3, line, size=10, opacity=0.85))
    return items, lay


def _visible(r: tuple[float, float, float, float], least: float = 3.0
             ) -> tuple[float, float, float, float]:
    """A rectangle grown about its centre to at least ``least`` pixels a side, so one tile
    of a huge array still shows where it is."""
    x, y, w, h = r
    if w < least:
        x, w = x - (least - w) / 2, least
    if h < least:
        y, h = y - (least - h) / 2, least
    return x, y, w, h


def _grid_lines(panel: Panel, win: _Win, gx: float, top: float) -> list:
    out = []
    (r0, r1), (c0, c1) = win.r, win.c
    X = lambda c: gx + (c - c0) * win.sx  # noqa: E731
    Y = lambda r: top + (r - r0) * win.sy  # noqa: E731
    if panel.element_detail and min(win.sx, win.sy) >= 4:
        hi_r = min(r1, max(panel.shape[-2], 1) if len(panel.shape) > 1 else 1)
        hi_c = min(c1, panel.shape[-1])
        segs = [((X(c), Y(max(r0, 0))), (X(c), Y(hi_r))) for c in range(max(c0, 0) + 1, hi_c)]
        segs += [((X(max(c0, 0)), Y(r)), (X(hi_c), Y(r))) for r in range(max(r0, 0) + 1, hi_r)]
        if segs:
            out.append(Path(tuple(segs), Style(stroke=INK, stroke_width=0.5,
                                               stroke_opacity=0.2)))
    for gi, g in enumerate(panel.tile_grids):
        _, tr, tc = _lift_shape(g.tile)
        _, pr, pc = _lift_shape(g.padded_shape)
        cs = [c for c in range(0, pc + 1, tc) if c0 <= c <= c1]
        rs = [r for r in range(0, pr + 1, tr) if r0 <= r <= r1]
        if len(cs) > 256 or len(rs) > 256 or tc * win.sx < 2 or tr * win.sy < 2:
            continue  # too dense to read: the array outline and the labels carry it
        ya, yb = Y(max(r0, 0)), Y(min(r1, pr))
        xa, xb = X(max(c0, 0)), X(min(c1, pc))
        segs = [((X(c), ya), (X(c), yb)) for c in cs]
        segs += [((xa, Y(r)), (xb, Y(r))) for r in rs]
        dense = min(tc * win.sx, tr * win.sy) < 12  # thin lines when tiles are small
        style = (Style(stroke=INK, stroke_width=0.6 if dense else 1.4,
                       stroke_opacity=0.35 if dense else 0.8) if gi == 0 else
                 Style(stroke=INK, stroke_width=1.0, stroke_opacity=0.55, dash="5 3"))
        out.append(Group((Path(tuple(segs), style),),
                         title=f"tile boundaries of tile shape {_tup(g.tile)}"))
    return out


def _tile_labels(panel: Panel, win: _Win, gx: float, top: float, z: int, first: bool) -> list:
    if not panel.tile_grids or panel.heatmap is not None or panel.visits:
        return []
    g = panel.tile_grids[0]
    tz, tr, tc = _lift_shape(g.tile)
    _, gr, gc = _lift_shape(g.grid)
    (r0, r1), (c0, c1) = win.r, win.c
    cols = [j for j in range(max(c0, 0) // tc, gc) if j * tc < c1]
    rows = [i for i in range(max(r0, 0) // tr, gr) if i * tr < r1]
    tw, th = tc * win.sx, tr * win.sy
    sample = "(" + ",".join(str(v) for v in g.grid) + ")"
    fs = min(11.0, th * 0.5, (tw - 2) / (0.62 * len(sample)))
    out: list = []
    X = lambda c: gx + (c - c0) * win.sx  # noqa: E731
    Y = lambda r: top + (r - r0) * win.sy  # noqa: E731
    if fs >= 6.5 and len(rows) * len(cols) <= 1024:
        for i in rows:
            for j in cols:
                idx = (z // tz, i, j)[3 - len(g.grid):]
                ra, rb = max(i * tr, r0), min((i + 1) * tr, r1)
                ca, cb = max(j * tc, c0), min((j + 1) * tc, c1)
                cx, cy = (X(ca) + X(cb)) / 2, (Y(ra) + Y(rb)) / 2 + fs * 0.35
                out.append(Text(cx, cy, "(" + ",".join(map(str, idx)) + ")", size=fs,
                                anchor="middle", opacity=0.8))
        # element indices at tile starts on the margins: read off "(2, 8)" directly
        if first:
            for j in cols:
                if j * tc >= c0:
                    out.append(Text(X(j * tc) + 1, top - 3, str(j * tc), size=8, opacity=0.6))
        if len(g.grid) > 1:
            for i in rows:
                if i * tr >= r0:
                    out.append(Text(gx - 3, Y(i * tr) + 8, str(i * tr), size=8, anchor="end",
                                    opacity=0.6))
        return out
    # too small for labels inside: tile indices on the margins, thinned to stay legible
    step_c = max(1, math.ceil(24 / max(tw, 1e-9)))
    if first:
        last_end = -math.inf
        for j in cols[::step_c]:  # the first label says these are tile indices
            text = str(j) if out else f"tile {j}"
            x = X(max(j * tc, c0)) + 1
            if x >= last_end + 4:
                out.append(Text(x, top - 3, text, size=8, opacity=0.7))
                last_end = x + text_width(text, 8)
    if len(g.grid) > 1:
        step_r = max(1, math.ceil(12 / max(th, 1e-9)))
        for i in rows[::step_r]:
            out.append(Text(gx - 3, Y(max(i * tr, r0)) + 8, str(i), size=8, anchor="end",
                            opacity=0.7))
    return out


def _heatmap_cells(hm: Heatmap, place) -> list:
    out = []
    top = max(hm.counts_max, default=0) or 1
    for box, lo, hi in _merged_cells(hm):
        r = place(box)
        if r is None:
            continue
        if hm.kind == "write":
            if hi == 0:
                style = Style(fill=BAD_ZERO, fill_opacity=0.5, hatch="cross", hatch_color=BAD_ZERO)
            elif lo > 1:
                style = Style(fill=BAD_MULTI, fill_opacity=min(0.9, 0.35 + 0.15 * (hi - 1)),
                              hatch="diag", hatch_color=BAD_MULTI)
            elif lo == hi == 1:
                style = Style(fill=GOOD, fill_opacity=0.35)
            elif lo == 0:
                style = Style(fill=BAD_ZERO, fill_opacity=0.35, hatch="cross",
                              hatch_color=BAD_ZERO)
            else:
                style = Style(fill=BAD_MULTI, fill_opacity=0.35, hatch="diag",
                              hatch_color=BAD_MULTI)
            verb = "written"
        else:
            if hi == 0:
                continue
            style = Style(fill=READ, fill_opacity=0.12 + 0.4 * hi / top)
            verb = "read"
        count = str(hi) if lo == hi else f"{lo}–{hi}"
        parts: list = [Rect(*r, style)]
        fs = min(10.0, r[3] * 0.6, (r[2] - 2) / (0.62 * len(count)))
        if fs >= 6:
            parts.append(Text(r[0] + r[2] / 2, r[1] + r[3] / 2 + fs * 0.35, count, size=fs,
                              anchor="middle", opacity=0.85))
        out.append(Group(tuple(parts),
                         title=f"elements {box.describe()}: {verb} by {count} "
                               f"block{'' if count == '1' else 's'}"))
    return out


def _merged_cells(hm: Heatmap) -> list[tuple[Box, int, int]]:
    """Heatmap cells with equal counts merged into rectangles (runs along a row, then equal
    runs of consecutive rows), so a uniformly covered array is one rectangle, not 4096."""
    nd = len(hm.edges)
    edges = [(0, 1)] * (3 - nd) + [tuple(e) for e in hm.edges]
    shape = tuple(len(e) - 1 for e in edges)
    lo = np.asarray(hm.counts_min).reshape(shape)
    hi = np.asarray(hm.counts_max).reshape(shape)
    out = []
    for z in range(shape[0]):
        open_runs: dict[tuple[int, int, int, int], int] = {}  # (c0, c1, lo, hi) -> first row
        for r in range(shape[1] + 1):
            runs: set[tuple[int, int, int, int]] = set()
            if r < shape[1]:
                c = 0
                while c < shape[2]:
                    e = c
                    while e + 1 < shape[2] and lo[z, r, e + 1] == lo[z, r, c] \
                            and hi[z, r, e + 1] == hi[z, r, c]:
                        e += 1
                    runs.add((c, e + 1, int(lo[z, r, c]), int(hi[z, r, c])))
                    c = e + 1
            for key in [k for k in open_runs if k not in runs]:  # runs ending above row r
                r_start = open_runs.pop(key)
                c0, c1, vlo, vhi = key
                start = (edges[0][z], edges[1][r_start], edges[2][c0])
                stop = (edges[0][z + 1], edges[1][r], edges[2][c1])
                out.append((Box(start[3 - nd:], stop[3 - nd:]), vlo, vhi))
            for key in runs:
                open_runs.setdefault(key, r)
    out.sort(key=lambda t: (t[0].start, t[0].stop))
    return out


def _ramp(t: float) -> str:
    t = min(max(t, 0.0), 1.0) * (len(RAMP) - 1)
    i = min(int(t), len(RAMP) - 2)
    f = t - i
    a, b = RAMP[i], RAMP[i + 1]
    rgb = [round(int(a[k:k + 2], 16) * (1 - f) + int(b[k:k + 2], 16) * f) for k in (1, 3, 5)]
    return "#" + "".join(f"{v:02X}" for v in rgb)


def _visit_cells(panel: Panel, place, geometry: Geometry, index: IndexedTrace | None) -> list:
    g = panel.tile_grids[0]
    by_tile, by_block = (index.visit_summary(panel.arg) if index is not None
                         else _visit_summary(panel.visits))
    if not by_tile:
        return []
    grid = geometry.grid
    # the tile cells do not depend on the selected block: reuse them across redraws
    key = ("visits", panel.arg, panel.window, place(g.tile_box(next(iter(by_tile)))))
    cache = index.draw_cache if index is not None else {}
    if key not in cache:
        cache[key] = _visit_tiles(panel, place, grid, by_tile)
    out = list(cache[key])
    if geometry.block is not None:  # the selected block's path through its tiles
        mine = by_block.get(geometry.block, [])
        pts = []
        for v in mine:
            r = place(g.tile_box(v.tile_index))
            if r is not None:
                pts.append((r[0] + r[2] / 2, r[1] + r[3] / 2))
        if len(pts) >= 2:
            out.append(Group((Path((tuple(pts),), Style(stroke=INK, stroke_width=2,
                                                        stroke_opacity=0.6), arrow=True),),
                             title=f"block {_tup(_trim(geometry.block, grid))}: "
                                   f"{len(pts)} tiles in this order"))
        for v in mine[:1]:
            r = place(g.tile_box(v.tile_index))
            if r is not None:
                out.append(Rect(*r, Style(stroke=INK, stroke_width=2.5)))
    return out


def _visit_tiles(panel: Panel, place, grid: Block,
                 by_tile: dict[tuple[int, ...], list[TileVisit]]) -> tuple:
    """One coloured cell per visited tile: colour = rank of its first visit, label =
    linear block id · iteration (× number of visits), tooltip = the first visits."""
    g = panel.tile_grids[0]
    n_ranks = max(1, len(panel.visits) - 1)
    show_iteration = any(v.iteration for v in panel.visits)
    out = []
    for tidx, visits in by_tile.items():
        r = place(g.tile_box(tidx))
        if r is None:
            continue
        first = visits[0]
        label = f"b{first.linear_block}" + (f"·{first.iteration}" if show_iteration else "")
        if len(visits) > 1:
            label += f" ×{len(visits)}"
        parts: list = [Rect(*r, Style(fill=_ramp(first.rank / n_ranks), fill_opacity=0.75,
                                      stroke=INK, stroke_width=0.5, stroke_opacity=0.5))]
        fs = min(10.0, r[3] * 0.45, (r[2] - 2) / (0.62 * len(label)))
        if fs >= 6:
            parts.append(Text(r[0] + r[2] / 2, r[1] + r[3] / 2 + fs * 0.35, label, size=fs,
                              anchor="middle"))
        tip = [f"tile {_tup(tidx)}"] + [
            f"visit {n + 1}: block {_tup(_trim(v.block, grid))} (linear id {v.linear_block}), "
            f"iteration {v.iteration}" for n, v in enumerate(visits[:4])]
        if len(visits) > 4:
            tip.append(f"... {len(visits) - 4} more")
        out.append(Group(tuple(parts), title="\n".join(tip)))
    return tuple(out)


def _visit_summary(visits: Sequence[TileVisit]
                   ) -> tuple[dict[tuple[int, ...], list[TileVisit]], dict[Block, list[TileVisit]]]:
    """Visits grouped by tile and by block, each list in rank order."""
    by_tile: dict[tuple[int, ...], list[TileVisit]] = {}
    by_block: dict[Block, list[TileVisit]] = {}
    for v in sorted(visits, key=lambda v: v.rank):
        by_tile.setdefault(v.tile_index, []).append(v)
        by_block.setdefault(v.block, []).append(v)
    return by_tile, by_block


def _footprint_items(f: Footprint, panel: Panel, place, geometry: Geometry,
                     index: IndexedTrace) -> list:
    color = index.colors.get(f.line, INK)
    parts: list = []
    for b in f.inside:
        if (r := place(b)) is None:
            continue
        r = _visible(r)
        style = (Style(fill=color, fill_opacity=0.12, stroke=color, stroke_width=2.2,
                       hatch="diag", hatch_color=color) if f.is_write else
                 Style(fill=color, fill_opacity=0.45, stroke=color, stroke_width=1.2))
        parts.append(Rect(*r, style))
    for b in f.outside:
        if (r := place(b)) is None:
            continue
        parts.append(Rect(*r, Style(stroke=color, stroke_width=1, dash="2 2",
                                    hatch="cross" if f.is_write else "dots", hatch_color=color)))
    if not parts:
        return []
    first = parts[0]
    if geometry.iteration is None and index.max_iteration > 0 and first.w >= 16 and first.h >= 11:
        parts.append(Text(first.x + 2, first.y + 9, f"i{f.iteration}", size=8, opacity=0.9))
    return [Group(tuple(parts), title=_tooltip(f, panel, geometry, index), css_class="tl-fp")]


def _tooltip(f: Footprint, panel: Panel, geometry: Geometry, index: IndexedTrace) -> str:
    text = index.line_text(f.line)
    lines = [f"line {f.line}" + (f": {text}" if text else ""),
             f"{f.op} ({f.kind}) of {panel.arg} by block {_tup(_trim(f.block, geometry.grid))}, "
             f"iteration {f.iteration}"]
    if f.tile_index is not None:
        lines.append(f"tile {_tup(f.tile_index)} of shape {_tup(f.tile_shape or ())}")
    if f.inside:
        n = sum(b.size for b in f.inside)
        where = f.inside[0].describe() if len(f.inside) == 1 else f"{len(f.inside)} runs"
        lines.append(f"{n} element{'s' if n != 1 else ''} in bounds: {where}")
    lanes = sum(b.size for b in f.outside) + f.out_of_bounds
    if lanes:
        what = "discarded (store lanes outside the array)" if f.is_write else \
            "padded (load lanes outside the array)"
        lines.append(f"{lanes} lane{'s' if lanes != 1 else ''} {what}")
    return "\n".join(lines)


def _legend(g: Geometry, x: float, y: float) -> tuple[list, float, float]:
    out: list = []
    width = x
    if g.view in ("block", "gemm"):
        for e in g.legend:
            y += 18
            out.append(Rect(x, y - 10, 14, 12, Style(fill=e.color, fill_opacity=0.45,
                                                       stroke=e.color, stroke_width=1.2)))
            out.append(Rect(x + 18, y - 10, 14, 12, Style(fill=e.color, fill_opacity=0.12,
                                                            stroke=e.color, stroke_width=2,
                                                            hatch="diag", hatch_color=e.color)))
            label = f"line {e.line}" + (f": {e.text[:70]}" if e.text else "")
            out.append(Text(x + 38, y, label, size=11))
            width = max(width, x + 38 + text_width(label, 11))
        key = [("load (fill)", Style(fill=INK, fill_opacity=0.35, stroke=INK)),
               ("store (hatched outline)", Style(stroke=INK, stroke_width=2, hatch="diag")),
               ("padded load lanes", Style(stroke=INK, dash="2 2", hatch="dots")),
               ("discarded store lanes", Style(stroke=INK, dash="2 2", hatch="cross"))]
    elif g.view == "coverage":
        key = [("written once", Style(fill=GOOD, fill_opacity=0.35)),
               ("written by 2+ blocks", Style(fill=BAD_MULTI, fill_opacity=0.5, hatch="diag",
                                              hatch_color=BAD_MULTI)),
               ("never written", Style(fill=BAD_ZERO, fill_opacity=0.5, hatch="cross",
                                       hatch_color=BAD_ZERO)),
               ("read (darker = more blocks)", Style(fill=READ, fill_opacity=0.5))]
    elif g.view == "order":
        key = [("first visited", Style(fill=RAMP[0], fill_opacity=0.75)),
               ("last visited", Style(fill=RAMP[-1], fill_opacity=0.75)),
               ("b<id>·<iteration> ×<visits>", Style(stroke=INK, stroke_opacity=0.5))]
    else:
        return out, width, y
    y += 20
    kx = x
    for label, style in key:
        out.append(Rect(kx, y - 10, 14, 12, style))
        out.append(Text(kx + 18, y, label, size=10))
        kx += 18 + text_width(label, 10) + 16
    return out, max(width, kx), y
