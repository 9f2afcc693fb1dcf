"""Tile-space geometry of an array, as plain frozen data: element boxes, tile grids,
coverage heatmaps (how many distinct blocks touched each element) and tile visits (which block
touched which tile, in what order).

:class:`~tile_lab.tracing.index.IndexedTrace` computes them from a trace; the diagrams
(``render/diagram*.py``) draw them. Nothing here draws.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import DiagramError
from .trace import Block

__all__ = ["CELL_CAP", "Box", "Heatmap", "TileGrid", "TileVisit", "tuple_text"]

CELL_CAP = 4096  # most cells (elements, heatmap cells, runs) drawn per array slice


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
        return f"{tuple_text(self.start)}–{tuple_text(last)}"


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


def tuple_text(t: Sequence[int]) -> str:
    """``(3, 4)``, ``(5,)``: a tuple of ints as Python writes it."""
    return "(" + ", ".join(str(int(v)) for v in t) + ("," if len(t) == 1 else "") + ")"
