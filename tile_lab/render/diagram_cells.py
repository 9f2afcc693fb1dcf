"""The painted cells of a tile-space diagram: coverage heatmap cells (counts per merged
cell, written once per tile) and tile visit-order cells (colour ramp from first to last
visit). Part of the drawing step, used by ``render/diagram_layout.py``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from ..tracing.index import IndexedTrace, group_visits
from ..tracing.tile_geometry import tuple_text as _tup
from ..tracing.trace import Block
from .diagram_geometry import (
    Box,
    Geometry,
    Heatmap,
    Panel,
    TileGrid,
    TileVisit,
)
from .svg import INK, Group, Path, Rect, Style, Text

# coverage colours: written once, never written, written by 2+ blocks, read
GOOD, BAD_ZERO, BAD_MULTI, READ = "#009E73", "#CC79A7", "#D55E00", "#0072B2"
RAMP = ("#440154", "#3B528B", "#21918C", "#5EC962", "#FDE725")  # dark→light visit order
_RAMP_RGB = tuple(tuple(int(c[k:k + 2], 16) for k in (1, 3, 5)) for c in RAMP)


def _trim(block: Sequence[int], grid: Sequence[int] | None = None) -> tuple[int, ...]:
    """A block id or grid shown with only the grid's used axes: (3, 0, 0) in a 1-D grid → (3,)."""
    grid = grid or block
    n = max([i + 1 for i, g in enumerate(grid) if g > 1] or [1])
    return tuple(block[:n])


def _heatmap_cells(hm: Heatmap, place, grid: TileGrid | None = None) -> list:
    """Cells coloured by count; the count is written once per tile a merged cell covers,
    at the centre of that part, so it never sits on a tile boundary."""
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
        for sub in _per_tile(box, grid):
            q = place(sub)
            if q is None:
                continue
            fs = min(10.0, q[3] * 0.6, (q[2] - 2) / (0.62 * len(count)))
            if fs >= 6:
                parts.append(Text(q[0] + q[2] / 2, q[1] + q[3] / 2 + fs * 0.35, count,
                                  size=fs, anchor="middle", opacity=0.85))
        out.append(Group(tuple(parts),
                         title=f"elements {box.describe()}: {verb} by {count} "
                               f"block{'' if count == '1' else 's'}"))
    return out


def _per_tile(box: Box, grid: TileGrid | None, cap: int = 256) -> list[Box]:
    """``box`` cut along the tile boundaries of ``grid`` (``box`` itself without a grid or
    when that would make more than ``cap`` pieces)."""
    if grid is None or len(grid.tile) != len(box.start):
        return [box]
    cuts = []
    for a, b, t in zip(box.start, box.stop, grid.tile):
        edges = sorted({a, b, *range((a // t + 1) * t, b, t)})
        cuts.append(list(itertools.pairwise(edges)))
    if math.prod(len(c) for c in cuts) > cap:
        return [box]
    return [Box(tuple(p[0] for p in parts), tuple(p[1] for p in parts))
            for parts in itertools.product(*cuts)]


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
    a, b = _RAMP_RGB[i], _RAMP_RGB[i + 1]
    return "#" + "".join(f"{round(u * (1 - f) + v * f):02X}" for u, v in zip(a, b))


def _visit_cells(panel: Panel, place, geometry: Geometry, index: IndexedTrace | None) -> list:
    g = panel.tile_grids[0]
    by_tile, by_block = (index.visit_summary(panel.arg) if index is not None
                         else group_visits(panel.visits))
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
