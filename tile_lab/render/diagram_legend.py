"""The legend under a tile-space diagram: one entry per source line (its colour, the line
cut to fit, the TMA verdict and the compiler's reason when there is none) and the key of
what each fill, hatch and dash means in the diagram's view.
"""

from __future__ import annotations

import textwrap

from .diagram_cells import BAD_MULTI, BAD_ZERO, GOOD, RAMP, READ
from .diagram_geometry import Geometry
from .svg import INK, Group, Rect, Style, Text, text_width

__all__ = ["POISON", "ellipsize", "legend"]

POISON = "#B2182B"  # undetermined values: padding a GPU leaves unspecified, and what it reaches

LEGEND_CHARS = 96  # most characters of a source line shown in the legend
TMA_REASON_CHARS = 100  # a "no TMA" reason wraps onto lines of at most this many characters


def ellipsize(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word or punctuation boundary,
    with "…" when anything was cut (the full line is the entry's tooltip)."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    at = max(cut.rfind(c) for c in " ,(=")
    if at >= limit // 2:
        cut = cut[:at + 1]
    return cut.rstrip() + "…"


TMA_YES, TMA_NO = "#009E73", "#D55E00"


def _tma_legend(e, x: float, y: float, after: float) -> tuple[list, float, float]:
    """A "TMA" / "no TMA" badge after a legend line; for "no TMA", the compiler's reason
    below it, whole, wrapped at ``TMA_REASON_CHARS`` (also the tooltip)."""
    text = "TMA" if e.tma else "no TMA"
    color = TMA_YES if e.tma else TMA_NO
    bx, w = after + 10, text_width(text, 10) + 8
    items: list = [Group((Rect(bx, y - 10, w, 13, Style(fill=color, fill_opacity=0.2,
                                                         stroke=color)),
                          Text(bx + 4, y, text, size=10, color=color, bold=True)),
                         title=e.tma_note, css_class="tl-tma")]
    right = bx + w
    if not e.tma:
        for i, part in enumerate(textwrap.wrap(e.tma_note, TMA_REASON_CHARS) or [""]):
            y += 14
            text = ("↳ " if i == 0 else "  ") + part
            items.append(Group((Text(x + 12, y, text, size=10, opacity=0.85),),
                               title=e.tma_note))
            right = max(right, x + 12 + text_width(text, 10))
    return items, y, right


def legend(g: Geometry, x: float, y: float) -> tuple[list, float, float]:
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
            label = f"line {e.line}" + (f": {ellipsize(e.text, LEGEND_CHARS)}" if e.text else "")
            out.append(Group((Text(x + 38, y, label, size=11),),
                             title=f"line {e.line}: {e.text}" if e.text else None))
            width = max(width, x + 38 + text_width(label, 11))
            if e.tma is not None:
                tma_items, y, right = _tma_legend(e, x + 38, y, x + 38 + text_width(label, 11))
                out.extend(tma_items)
                width = max(width, right)
        key = [("load (fill)", Style(fill=INK, fill_opacity=0.35, stroke=INK)),
               ("store (hatched outline)", Style(stroke=INK, stroke_width=2, hatch="diag")),
               ("padded load lanes", Style(stroke=INK, dash="2 2", hatch="dots")),
               ("discarded store lanes", Style(stroke=INK, dash="2 2", hatch="cross"))]
        if any(p.poisoned or any(f.undetermined for f in p.footprints) for p in g.panels):
            key += [("undetermined padding (poison)", Style(
                         fill=POISON, fill_opacity=0.15, stroke=POISON, dash="2 2",
                         hatch="dots", hatch_color=POISON)),
                    ("written with undetermined values", Style(
                         fill=POISON, fill_opacity=0.25, stroke=POISON, stroke_width=2,
                         hatch="cross", hatch_color=POISON))]
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
    if g.view in ("coverage", "order") and any(p.padding_area() for p in g.panels):
        # the dotted band the panels draw past a ragged edge (the block views name their
        # padded and discarded lanes instead)
        key.append(("tile extent beyond the array", Style(stroke=INK, stroke_opacity=0.5,
                                                          dash="3 2", hatch="dots")))
    y += 20
    kx = x
    for label, style in key:
        out.append(Rect(kx, y - 10, 14, 12, style))
        out.append(Text(kx + 18, y, label, size=10))
        kx += 18 + text_width(label, 10) + 16
    return out, max(width, kx), y
