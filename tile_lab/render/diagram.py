"""Tile-space diagrams: which block touches which elements of each array, from which line.

``diagram(trace, ...)`` draws an emulator :class:`~tile_lab.access_trace.Trace`; ``partition(shape,
tile)`` draws a bare tile partition for teaching (the CUDA guide's Figure 19 is
``partition((10, 16), (2, 4), highlight=(1, 2))``).

Two steps, kept apart so tests can check numbers instead of SVG text:

1. *geometry* (``Diagram.geometry``): plain frozen dataclasses — tile grids, footprints
   (in-bounds boxes, padded / discarded lanes), coverage heatmaps, tile visit orders.
2. *drawing* (``render/diagram_layout.py``): the geometry is laid out as a scene of
   primitives (``render/svg.py``) and written as deterministic SVG, or painted by
   matplotlib for ``to_png``.

Large arrays are drawn at tile granularity: no more than ``CELL_CAP`` cells per drawn
slice; element detail appears inside a ``zoom=(r0, r1, c0, c1)`` window.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import operator
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path as FilePath

import numpy as np

from ..access_trace import ATOMIC_KINDS, READ_KINDS, WRITE_KINDS, Block, MemoryAccess, Trace
from ..errors import ArgumentTypeError, DiagramError
from . import palette
from .svg import Scene, paint_png
from .tma import TmaReport

__all__ = ["Box", "Diagram", "Footprint", "Geometry", "Heatmap", "IndexedTrace", "Panel",
           "TileGrid", "TileVisit", "diagram", "partition"]

VIEWS = ("block", "coverage", "order", "gemm")
CELL_CAP = 4096  # most cells (elements, heatmap cells, runs) drawn per array slice
MAX_SLICES = 4  # most 2-D slices drawn of a 3-D array


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
    undetermined: bool = False  # a load whose ``outside`` lanes hold undetermined values

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
    # elements the shown block wrote undetermined values to: (box, explanation) pairs
    poisoned: tuple[tuple[Box, str], ...] = ()

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
    tma: bool | None = None  # None: no TMA verdict given (see ``diagram(..., tma=)``)
    tma_note: str = ""  # the verdict's opcodes or reason


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
        return ('<div class="tile-lab-diagram-wrap" style="overflow-x:auto;contain:paint">'
                f"{self.svg}</div>")

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
        slots = palette.line_color_index(self.lines)
        self.colors = {ln: palette.css_var(s) for ln, s in slots.items()}
        self._source = trace.source.splitlines()
        self._grids: dict[str, tuple[TileGrid, ...]] = {}
        self._heatmaps: dict[tuple[str, str], _Coverage | None] = {}
        self._visits: dict[str, tuple[TileVisit, ...]] = {}
        self._shapes: dict[str, tuple[list[_Shape], np.ndarray]] = {}
        self._kinds: dict[str, frozenset[str]] = {}
        self._columns: dict[str, _Columns] = {}
        self._visit_summary: dict[str, tuple] = {}
        self.draw_cache: dict[tuple, tuple] = {}  # drawn items that no selection changes
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

    def visit_summary(self, arg: str):
        if arg not in self._visit_summary:
            self._visit_summary[arg] = _visit_summary(self.visits(arg))
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


def _visit_summary(visits: Sequence[TileVisit]
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


# ============================================================================================
# public entry points
# ============================================================================================

def diagram(trace: Trace | IndexedTrace, *, arg: str | Sequence[str] | None = None,
            block: int | Sequence[int] | None = None, iteration: int | None = None,
            line: int | Sequence[int] | None = None, view: str = "block",
            zoom: Sequence[int] | None = None, tma: TmaReport | None = None) -> Diagram:
    """Draw a trace's memory accesses in tile space.

    ``view="block"``: for one block (default the first) every array with its tile grids and
    the block's footprints, coloured by source line (loads filled, stores hatched outlines,
    padded load lanes dotted, discarded store lanes cross-hatched); a kernel with an ``mma``
    is laid out as the A / B / C trio. ``view="gemm"`` forces the trio. ``view="coverage"``:
    per array, how many blocks wrote / read each element (never-written and multiply-written
    elements called out). ``view="order"``: which block visits each tile, in what order.

    ``arg``/``line``/``iteration`` filter what is drawn; ``zoom=(r0, r1, c0, c1)`` (or
    ``(c0, c1)`` for 1-D, six numbers for 3-D) limits the drawn region of every array.
    ``tma=tile_lab.render.tma.tma_report(inspection)`` (an inspection of the same kernel
    source) marks each legend line "TMA" or "no TMA" with the reason.
    """
    if not isinstance(trace, (Trace, IndexedTrace)):
        raise ArgumentTypeError(
            f"tile_lab.diagram: argument 1 (trace) must be a tile_lab.Trace, got "
            f"{type(trace).__name__}", hint="t = tile_lab.trace(kernel, grid, args); "
                                            "tile_lab.diagram(t)")
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
    held = _held_before_loop(index, blk, iteration, notes) if view != "order" else set()
    panels: list[Panel] = []
    for name in args:
        info = t.array(name)
        if not 1 <= len(info.shape) <= 3:
            notes.append(f"{name}: {len(info.shape)}-D arrays are not drawn")
            continue
        grids = index.tile_grids(name)
        windows = index.window_steps(name)
        if windows is not None:  # a tile grid drawn over overlapping/offset windows would lie
            grids = ()
            notes.append(f"{name}: its boxes overlap or are offset (a tiled_view with "
                         "traversal_steps, or a slice): no tile grid drawn; "
                         f"tile_lab.render.views.windows_from_trace(trace, {name!r}) draws "
                         "them all")
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
            visits = index.visits(name) if windows is None else ()
        else:
            accs = [a for a in index.by_block.get(blk, ()) if a.arg == name  # type: ignore[arg-type]
                    and (iteration is None or a.iteration == iteration or id(a) in held)
                    and (lines is None or a.line in lines)]
            fps = tuple(_footprint(a, info.shape) for a in accs)
        panels.append(_panel(name, info.shape, info.dtype, grids, zoom, footprints=fps,
                             visits=visits, role=roles.get(name),
                             poisoned=_poisoned(t, name, blk, lines) if view != "order" else (),
                             title=_array_title(name, info.shape, info.dtype, grids,
                                                roles.get(name)) + _windows_text(windows)))
    if view == "coverage":
        blk = None
    if any(not p.element_detail for p in panels) and zoom is None:
        notes.append("large arrays drawn at tile granularity: pass zoom=(r0, r1, c0, c1) "
                     "for element detail")
    shown_lines = sorted({f.line for p in panels for f in p.footprints})
    if view in ("coverage", "order"):
        shown_lines = []
    legend = tuple(_with_tma(LegendEntry(ln, index.colors[ln], index.line_text(ln)), tma)
                   for ln in shown_lines)
    geometry = Geometry(view=view, kernel=t.kernel, grid=t.grid, block=blk, iteration=iteration,
                        lines=None if lines is None else tuple(sorted(lines)), layout=layout,
                        panels=tuple(panels), legend=legend, notes=tuple(notes))
    return _draw(geometry, index)


def _held_before_loop(index: IndexedTrace, blk: Block | None, iteration: int | None,
                      notes: list[str]) -> set[int]:
    """With ``iteration=N``: the loads this block made once, before its loop reached
    iteration N (a Q tile held for the whole loop), so the picture shows what the block holds
    at that step, not only what it loads then. Ids of those accesses."""
    if iteration is None or blk is None:
        return set()
    accs = index.by_block.get(blk, ())
    loop_lines = {a.line for a in accs if a.iteration > 0}
    first = next((i for i, a in enumerate(accs)
                  if a.iteration == iteration and a.line in loop_lines), None)
    if first is None:
        return set()
    held = [a for a in accs[:first] if a.line not in loop_lines and not a.is_write]
    if held:
        what = ", ".join(sorted({f"{a.arg} (line {a.line})" for a in held}))
        notes.append(f"also drawn: {what}, loaded before the loop and held through "
                     f"iteration {iteration}")
    return {id(a) for a in held}


def _with_tma(entry: LegendEntry, tma: TmaReport | None) -> LegendEntry:
    verdict = next((t for t in tma.lines if t.line == entry.line), None) if tma else None
    if verdict is None:
        return entry
    return dataclasses.replace(entry, tma=verdict.tma, tma_note=verdict.reason)


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
                     out_of_bounds=0 if a.is_box else a.out_of_bounds, approximate=approx,
                     undetermined=a.kind == "load" and a.padding == "UNDETERMINED"
                     and bool(outside))


def _poisoned(t: Trace, name: str, block: Block | None, lines: set[int] | None
              ) -> tuple[tuple[Box, str], ...]:
    """Boxes of ``name`` that ``block`` wrote undetermined values to (Trace.undetermined)."""
    out = []
    for u in t.undetermined:
        if u.arg != name or u.block != block or (lines is not None and u.line not in lines):
            continue
        mixed = f", mixed in by ct.{u.mix_op} at line {u.mix_line}" if u.mix_line else ""
        out.append((Box(tuple(u.box_start), tuple(u.box_stop)),
                    f"{u.elements} element{'s' if u.elements != 1 else ''} written with "
                    f"undetermined values by line {u.line}: padding of the {u.load_op} of "
                    f"{u.load_arg} at line {u.load_line}{mixed}"))
    return tuple(out)


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


def _windows_text(windows: tuple[tuple[int, ...], tuple[int, ...]] | None) -> str:
    if windows is None:
        return ""
    tile, steps = windows
    kind = " (overlapping)" if any(s < t for s, t in zip(steps, tile)) else ""
    return f", {_dims(tile)} windows every {_dims(steps)}{kind}"


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
    return "(" + ", ".join(str(int(v)) for v in t) + ("," if len(t) == 1 else "") + ")"


def _dims(t: Sequence[int]) -> str:
    return "×".join(str(int(v)) for v in t)


def _draw(geometry: Geometry, index: IndexedTrace | None) -> Diagram:
    # imported here: the layout module imports this one's geometry types
    from .diagram_layout import draw

    return draw(geometry, index)
