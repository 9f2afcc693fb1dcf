"""The geometry of a tile-space diagram: plain frozen dataclasses (footprints, panels, the
legend) and the drawn :class:`Diagram`. Tile grids, boxes, coverage heatmaps and tile visit
orders are the trace index's (``tile_lab/tracing/tile_geometry.py``), re-exported here.

``render/diagram.py`` computes them from a trace; ``render/diagram_layout.py`` draws them.
"""


from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path as FilePath

from ..tracing.tile_geometry import CELL_CAP, Box, Heatmap, TileGrid, TileVisit
from ..tracing.trace import Block
from .svg import Scene, paint_png

__all__ = ["CELL_CAP", "MAX_SLICES", "VIEWS", "Box", "Diagram", "Footprint", "Geometry",
           "Heatmap", "LegendEntry", "Panel", "PanelLayout", "TileGrid", "TileVisit"]

VIEWS = ("block", "coverage", "order", "gemm")
MAX_SLICES = 4  # most 2-D slices drawn of a 3-D array


# ============================================================================================
# geometry
# ============================================================================================

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


def _lift_index(index: Sequence[int]) -> tuple[int, int, int]:
    idx = tuple(int(v) for v in index)
    return (0, 0, *idx)[-3:] if len(idx) < 3 else idx  # type: ignore[return-value]
