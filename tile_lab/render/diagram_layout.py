"""Drawing tile-space diagrams: a :class:`~tile_lab.render.diagram.Geometry` laid out as a
scene of primitives (``render/svg.py``), written as deterministic SVG.

The second half of ``render/diagram.py``'s two steps (that module computes the geometry
from a trace and calls :func:`draw`). Nothing here reads the trace except through the
:class:`~tile_lab.tracing.index.IndexedTrace` it is handed (source lines, source text, visit
groupings, and a cache of drawn items that no selection changes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..tracing.index import IndexedTrace
from ..tracing.tile_geometry import tuple_text as _tup
from . import palette
from .diagram_cells import (
    _heatmap_cells,
    _trim,
    _visit_cells,
)
from .diagram_geometry import (
    Box,
    Diagram,
    Footprint,
    Geometry,
    Panel,
    PanelLayout,
)
from .diagram_legend import POISON, legend
from .svg import INK, Group, Path, Rect, Scene, Style, Text, text_width, to_svg

TICK_SIZE = 9  # margin and iteration labels: at 8 px a monospace "0" reads as "8"


__all__ = ["draw"]

HIGHLIGHT = "#E69F00"  # partition(): highlighted tiles (Okabe–Ito orange)

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


def draw(geometry: Geometry, index: IndexedTrace | None) -> Diagram:
    """Lay ``geometry`` out and write it as SVG (``index``: None for partition())."""
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
    legend_items, legend_w, y = legend(geometry, PAD, y)
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
            items.extend(_heatmap_cells(panel.heatmap, place,
                                        panel.tile_grids[0] if panel.tile_grids else None))
        items.extend(_grid_lines(panel, win, gx, top))
        for t, b in zip(panel.highlight, panel.highlight_boxes()):
            if (r := place(b)) is not None:
                r = _visible(r)
                items.append(Group((Rect(*r, Style(fill=HIGHLIGHT, fill_opacity=0.85,
                                                   stroke=HIGHLIGHT, stroke_width=2)),),
                                   title=f"tile {_tup(t)}: elements {b.describe()}"))
        if panel.visits:
            items.extend(_visit_cells(panel, place, geometry, index))
        if index is not None:
            for f in panel.footprints:
                items.extend(_footprint_items(f, panel, place, geometry, index))
        for b, why in panel.poisoned:
            if (r := place(b)) is not None:
                items.append(Group((Rect(*_visible(r), Style(
                    fill=POISON, fill_opacity=0.25, stroke=POISON, stroke_width=2,
                    hatch="cross", hatch_color=POISON)),), title=why))
        # labels last: on top of padding hatches and footprints, with a halo (svg.py's CSS)
        labels = _tile_labels(panel, win, gx, top, z, first=(k == 0))
        if labels:
            items.append(Group(tuple(labels), css_class="tl-lbl"))
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
    _, arr_r, arr_c = _lift_shape(panel.shape)
    if fs >= 6.5 and len(rows) * len(cols) <= 1024:
        for i in rows:
            for j in cols:
                idx = (z // tz, i, j)[3 - len(g.grid):]
                label = "(" + ",".join(map(str, idx)) + ")"
                ra, rb = max(i * tr, r0), min((i + 1) * tr, r1)
                ca, cb = max(j * tc, c0), min((j + 1) * tc, c1)
                # centred on the part inside the array when the label fits there, so an
                # edge tile's label sits on its elements, not on the padded lanes
                ia_r, ia_c = min(rb, max(arr_r, ra + 1)), min(cb, max(arr_c, ca + 1))
                if ((ia_c - ca) * win.sx >= text_width(label, fs) + 2
                        and (ia_r - ra) * win.sy >= fs + 2):
                    rb, cb = ia_r, ia_c
                cx, cy = (X(ca) + X(cb)) / 2, (Y(ra) + Y(rb)) / 2 + fs * 0.35
                out.append(Text(cx, cy, label, size=fs, anchor="middle", opacity=0.9))
        # element indices at tile starts on the margins: read off "(2, 8)" directly
        if first:
            for j in cols:
                if j * tc >= c0:
                    out.append(Text(X(j * tc) + 1, top - 3, str(j * tc), size=TICK_SIZE,
                                    opacity=0.75))
        if len(g.grid) > 1:
            for i in rows:
                if i * tr >= r0:
                    out.append(Text(gx - 3, Y(i * tr) + TICK_SIZE, str(i * tr),
                                    size=TICK_SIZE, anchor="end", opacity=0.75))
        return out
    # too small for labels inside: tile indices on the margins, thinned to stay legible
    step_c = max(1, math.ceil(24 / max(tw, 1e-9)))
    if first:
        last_end = -math.inf
        for j in cols[::step_c]:  # the first label says these are tile indices
            text = str(j) if out else f"tile {j}"
            x = X(max(j * tc, c0)) + 1
            if x >= last_end + 4:
                out.append(Text(x, top - 3, text, size=TICK_SIZE, opacity=0.75))
                last_end = x + text_width(text, TICK_SIZE)
    if len(g.grid) > 1:
        step_r = max(1, math.ceil(12 / max(th, 1e-9)))
        for i in rows[::step_r]:
            out.append(Text(gx - 3, Y(max(i * tr, r0)) + TICK_SIZE, str(i), size=TICK_SIZE,
                            anchor="end", opacity=0.75))
    return out


def _footprint_items(f: Footprint, panel: Panel, place, geometry: Geometry,
                     index: IndexedTrace) -> list:
    color = palette.line_css_colors(index.lines).get(f.line, INK)
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
        if f.undetermined:  # poison: lanes a GPU fills with whatever
            parts.append(Rect(*r, Style(fill=POISON, fill_opacity=0.15, stroke=POISON,
                                        stroke_width=1, dash="2 2", hatch="dots",
                                        hatch_color=POISON)))
            continue
        parts.append(Rect(*r, Style(stroke=color, stroke_width=1, dash="2 2",
                                    hatch="cross" if f.is_write else "dots", hatch_color=color)))
    if not parts:
        return []
    first = parts[0]
    if geometry.iteration is None and index.max_iteration > 0 and first.w >= 18 and first.h >= 12:
        parts.append(Text(first.x + 2, first.y + TICK_SIZE + 1, f"i{f.iteration}",
                          size=TICK_SIZE))
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
        if f.undetermined:
            what = ("padded with undetermined values (PaddingMode.UNDETERMINED, the default): "
                    "poison unless masked")
        lines.append(f"{lanes} lane{'s' if lanes != 1 else ''} {what}")
    return "\n".join(lines)
