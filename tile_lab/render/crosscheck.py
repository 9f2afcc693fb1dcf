"""A crosscheck drawn: per output array, a heatmap of its tiles coloured by class.

Each tile the kernel's stores wrote is one rectangle at its place in the array (arrays of
more than two dimensions are drawn as rows of their last axis, leading axes flattened):
grey where the GPU and the emulator agree bit for bit, amber and hatched where they differ
in lanes the emulator marks undetermined, blue where they differ by design (darker: more
ULPs), red where they mismatch (an emulator bug). Hovering a tile shows the block that wrote
it, the source line (with its text), the errors and the reason. Deterministic: same result,
same SVG text.
"""

from __future__ import annotations

import html
import math
from typing import Any

from ..crosschecking.result import CrossCheck, OutputComparison, TileComparison
from ..display import renders
from .svg import Group, Rect, Scene, Style, Text, text_width, to_svg

__all__ = ["COLORS", "crosscheck_html", "heatmap_scene", "tile_rects"]

COLORS = {"agree": "#c8ccd2", "undetermined": "#e8a33d", "design": "#3b78c2",
          "mismatch": "#d23a3a"}
LABELS = {"agree": "identical", "undetermined": "undetermined lanes (expected)",
          "design": "by design (expected)", "mismatch": "mismatch: emulator bug"}
WIDTH = 900.0  # drawing width (px) of the widest heatmap
MAX_CELL = 24.0  # at most this many px per element
MAX_ROWS_PX = 320.0
TOP = 44.0  # room for the caption and legend
PAD = 8.0


def _rows_cols(shape: tuple[int, ...]) -> tuple[int, int]:
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return 1, shape[0]
    return math.prod(shape[:-1]), shape[-1]


def tile_rects(shape: tuple[int, ...], start: tuple[int, ...], stop: tuple[int, ...]
               ) -> list[tuple[int, int, int, int]]:
    """The (row, col, n_rows, n_cols) element rectangles a box covers in the 2-D picture:
    one for 1-D/2-D arrays; for more axes one per run of consecutive flattened rows."""
    if len(shape) <= 1:
        a, b = (start[0], stop[0]) if shape else (0, 1)
        return [(0, a, 1, b - a)]
    if len(shape) == 2:
        return [(start[0], start[1], stop[0] - start[0], stop[1] - start[1])]
    lead = shape[:-1]
    rows: list[int] = []
    ranges = [range(a, b) for a, b in zip(start[:-1], stop[:-1])]

    def walk(k: int, flat: int) -> None:
        if k == len(lead):
            rows.append(flat)
            return
        for i in ranges[k]:
            walk(k + 1, flat * lead[k] + i)

    walk(0, 0)
    out: list[tuple[int, int, int, int]] = []
    for r in sorted(rows):
        if out and out[-1][0] + out[-1][2] == r:
            r0, c0, nr, nc = out[-1]
            out[-1] = (r0, c0, nr + 1, nc)
        else:
            out.append((r, start[-1], 1, stop[-1] - start[-1]))
    return out


def _fill(t: TileComparison, budget_ulps: float) -> Style:
    color = COLORS[t.verdict]
    if t.verdict == "design":
        ulp = t.max_ulp or 1
        opacity = 0.35 + 0.65 * min(1.0, math.log2(1 + ulp) / math.log2(1 + budget_ulps))
        return Style(fill=color, fill_opacity=round(opacity, 2), stroke="#ffffff",
                     stroke_width=0.5)
    if t.verdict == "undetermined":
        return Style(fill=color, fill_opacity=0.55, stroke="#ffffff", stroke_width=0.5,
                     hatch="diag", hatch_color="#8a5a10")
    return Style(fill=color, stroke="#ffffff", stroke_width=0.5)


def _title(t: TileComparison, cc: CrossCheck) -> str:
    lines = cc.source.splitlines()
    k = t.line - cc.first_line
    text = lines[k].strip() if 0 <= k < len(lines) else ""
    more = f" (+{t.n_blocks - 1} more)" if t.n_blocks > 1 else ""
    box = ", ".join(f"{a}:{b}" for a, b in zip(t.box_start, t.box_stop))
    out = [f"{t.arg}[{box}] written by block {t.block}{more}, line {t.line}: {text}",
           f"{LABELS[t.verdict]}: {t.differing} of {t.elements} elements differ"]
    if t.differing:
        errs = []
        if t.max_abs is not None:
            errs.append(f"max |err| {t.max_abs:.3g}")
        if t.max_ulp is not None:
            errs.append(f"max {t.max_ulp} ULP")
        errs.append(f"NaN GPU {t.nan_gpu} / emulator {t.nan_emulator}")
        out.append("; ".join(errs))
        if t.example is not None:
            idx, g, e = t.example
            out.append(f"e.g. at {list(idx)}: GPU {g}, emulator {e}")
        out.append(t.reason)
    return "\n".join(out)


def heatmap_scene(out: OutputComparison, cc: CrossCheck, budget_ulps: float = 8.0) -> Scene:
    """One output's tiles as a scene (coordinates in px)."""
    rows, cols = _rows_cols(out.shape)
    sx = min(MAX_CELL, WIDTH / cols)
    sy = min(MAX_CELL, MAX_ROWS_PX / rows) if rows > 1 else MAX_CELL
    w, h = cols * sx, rows * sy
    counts = {v: out.count(v) for v in COLORS}
    shape = "×".join(map(str, out.shape)) or "scalar"
    how = (f"; rows: axes 0-{len(out.shape) - 2} flattened ({rows}), columns: axis "
           f"{len(out.shape) - 1}" if len(out.shape) > 2 else "")
    items: list[Any] = [Text(PAD, 16, f"{out.arg} ({shape} {out.dtype}): {len(out.tiles)} "
                        f"tiles{how}", size=12, bold=True)]
    x = PAD
    for verdict in COLORS:  # the legend, laid out by measured width
        label = f"{LABELS[verdict]} {counts[verdict]}"
        items.append(Rect(x, 26, 10, 10, _fill_for_legend(verdict)))
        items.append(Text(x + 14, 35, label, size=10))
        x += 14 + text_width(label, 10) + 16
    frame = Rect(PAD, TOP, w, h, Style(fill="none", stroke="currentColor", stroke_width=0.5,
                                       stroke_opacity=0.4))
    items.append(frame)
    for t in out.tiles:
        style = _fill(t, budget_ulps)
        rects = tuple(Rect(PAD + c * sx, TOP + r * sy, nc * sx, nr * sy, style)
                      for r, c, nr, nc in tile_rects(out.shape, t.box_start, t.box_stop))
        label = _nan_label(t, rects[0])
        items.append(Group(rects + label, title=_title(t, cc),
                           css_class=f"tl-xc tl-xc-{t.verdict}"))
    width = max(PAD * 2 + w, x + PAD, PAD * 2 + text_width(items[0].text, 12))
    return Scene(width, TOP + h + PAD, tuple(items),
                 label=f"crosscheck of {out.arg}: tiles coloured by agreement")


def _nan_label(t: TileComparison, rect: Rect) -> tuple[Text, ...]:
    """"NaN ×n" in the tile where the GPU gave NaN the emulator did not (when it fits)."""
    extra = t.nan_gpu - min(t.nan_gpu, t.nan_emulator) if t.verdict != "undetermined" else \
        t.nan_gpu
    if extra <= 0:
        return ()
    text = f"GPU NaN ×{t.nan_gpu}"
    size = 9.0
    if rect.h < size + 3 or rect.w < text_width(text, size) + 4:
        return ()
    back = Rect(rect.x + 1, rect.y + 1, text_width(text, size) + 2, size + 2,
                Style(fill="#ffffff", fill_opacity=0.85))
    return (back, Text(rect.x + 2, rect.y + size + 1, text, size=size, color="#5a0000",
                       bold=True))


def _fill_for_legend(verdict: str) -> Style:
    if verdict == "undetermined":
        return Style(fill=COLORS[verdict], fill_opacity=0.55, hatch="diag",
                     hatch_color="#8a5a10")
    return Style(fill=COLORS[verdict])


_CSS = (".tile-lab-diagram .tl-xc:hover>rect{stroke:currentColor!important;"
        "stroke-width:2px!important}")


@renders(CrossCheck)
def crosscheck_html(cc: CrossCheck) -> str:
    """The summary in words, one line per reason, and a heatmap per output."""
    esc = html.escape
    status = "problems" if cc.agreement == "mismatch" else "ok"
    out = [f'<div class="tile-lab-crosscheck tile-lab-crosscheck-{status}">']
    if cc.recording:  # not run here: say so before the result
        out.append("<p class='tl-recording' style='margin:0 0 4px 0;padding:2px 6px;"
                   "border-left:3px solid #E69F00'><b>A recording, not run here:</b> "
                   f"{esc(cc.recording)}</p>")
    out.append(f"<p><b>{esc(cc.summary())}</b></p>")
    reasons = cc.explanations()
    if reasons:
        out.append("<ul>" + "".join(f"<li>{esc(r)}</li>" for r in reasons) + "</ul>")
    for note in cc.notes:
        out.append(f"<p>{esc(note)}</p>")
    for o in cc.outputs:
        out.append(to_svg(heatmap_scene(o, cc), css=_CSS))
    out.append("<p style='font-size:smaller'>Hover a tile: the block that wrote it, the "
               "source line, its errors and why it differs.</p></div>")
    return "\n".join(out)
