"""The picture of a failed ``tile_lab.check``: the output's tiles, each marked right, wrong or
never written, labelled with the block that wrote it — or, for a tile no block wrote, the
block that should have (when the kernel's other stores show block ``b`` writes tile ``b``);
and the check result's rich display (the verdict above the picture).

The checker computes a :class:`~tile_lab.checker.CheckMap` (plain data); this module only
draws it.
"""

from __future__ import annotations

import html
import math

from ..checker import CheckMap, CheckResult, TileVerdict
from ..display import renders
from .picture import Picture, make_picture
from .svg import INK, Group, Rect, Scene, Style, Text, text_width

__all__ = ["check_picture", "check_result_html", "check_svg"]

PAD = 10
ROW_PX = 820
OK, WRONG, MISSING = "#009E73", "#D55E00", "#E69F00"


def _tup(t: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, t)) + ("," if len(t) == 1 else "") + ")"


def _tile(index: tuple[int, ...]) -> str:
    """``tile 15`` in a 1-D output (as its elements ``960–1023`` are written), ``tile (1, 2)``
    in 2-D."""
    return f"tile {index[0]}" if len(index) == 1 else f"tile {_tup(index)}"


def describe(v: TileVerdict, grid: tuple[int, ...]) -> str:
    """One line: what is wrong with tile ``v`` and whose tile it is."""
    if v.unwritten and v.writer is None:
        what = f"{_tile(v.index)} (elements {v.elements}): never written"
        if v.owner is not None:
            what += (f"; block {_tup(v.owner)} would write it" if v.owner_in_grid else
                     f"; block {_tup(v.owner)} would write it, but grid {_tup(grid)} has "
                     "no such block")
            if v.owner_assumed:
                what += " (if block b writes tile b)"
        return what
    bits = []
    if v.wrong:
        bits.append(f"{v.wrong} wrong")
    if v.unwritten:
        bits.append(f"{v.unwritten} never written")
    return (f"{_tile(v.index)} (elements {v.elements}): {', '.join(bits)}; written by "
            f"block {_tup(v.writer) if v.writer is not None else '?'}")


def check_picture(m: CheckMap) -> Picture:
    """The output's tile grid: green tiles right, vermillion wrong, amber hatched never
    written; each tile labelled with its writer block (or the block that should write it)."""
    nd = len(m.shape)
    counts = tuple(math.ceil(s / t) for s, t in zip(m.shape, m.tile))
    rows, cols = (1, counts[0]) if nd == 1 else (math.prod(counts[:-1]), counts[-1])
    cw = max(18.0, min(64.0, ROW_PX / max(cols, 1)))
    ch = 26.0 if nd == 1 else max(18.0, min(40.0, 360 / max(rows, 1)))
    bad = [v for v in m.tiles if v.wrong or v.unwritten]
    head = (f"{m.output}: {len(bad)} of {len(m.tiles)} tiles ({_tup(m.tile)} elements each) "
            f"wrong or never written · grid {_tup(m.grid)}")
    items: list = [Text(PAD, PAD + 13, head, size=12, bold=True),
                   Text(PAD, PAD + 28, "each tile: the block that wrote it; ✗ wrong values, "
                        "∅ never written (with the block that should have)", size=10,
                        opacity=0.75)]
    x0, y0 = PAD, PAD + 40
    for k, v in enumerate(m.tiles):
        r, c = divmod(k, cols)
        x, y = x0 + c * cw, y0 + r * ch
        if v.unwritten and v.writer is None:
            style = Style(fill=MISSING, fill_opacity=0.25, stroke=MISSING, stroke_width=2,
                          hatch="diag", hatch_color=MISSING)
            who = v.owner
            label = "∅" + (_short(who) if who is not None else "")
        elif v.wrong or v.unwritten:
            style = Style(fill=WRONG, fill_opacity=0.45, stroke=WRONG, stroke_width=2)
            who = v.writer
            label = "✗" + (_short(who) if who is not None else "")
        else:
            style = Style(fill=OK, fill_opacity=0.18, stroke=INK, stroke_width=0.5,
                          stroke_opacity=0.4)
            who = v.writer
            label = _short(who) if who is not None else ""
        parts: list = [Rect(x + 1, y + 1, cw - 2, ch - 2, style)]
        size = min(10.0, (cw - 6) / max(0.62 * len(label), 1))
        if label and size >= 6:
            parts.append(Text(x + cw / 2, y + ch / 2 + size * 0.35, label, size=size,
                              anchor="middle"))
        items.append(Group(tuple(parts), title=describe(v, m.grid) if v in bad else
                           f"{_tile(v.index)} (elements {v.elements}): right; written by "
                           f"block {_tup(v.writer) if v.writer is not None else '?'}"))
    y = y0 + rows * ch + 16
    if len(bad) > 1 and all(v.writer is None and v.owner_assumed for v in m.tiles):
        # nothing was stored at all: one line, not one per tile
        first, last = m.tiles[0], m.tiles[-1]
        items.append(Text(PAD, y, f"no block stored anything to {m.output}; blocks "
                          f"{_tup(first.owner or first.index)} … {_tup(last.owner or last.index)}"
                          " would each write their tile (if block b writes tile b)", size=10))
        bad = []
        y += 15
    for v in bad[:6]:
        items.append(Text(PAD, y, describe(v, m.grid), size=10))
        y += 15
    if len(bad) > 6:
        items.append(Text(PAD, y, f"… and {len(bad) - 6} more tiles", size=10))
        y += 15
    width = max(x0 + cols * cw, *(t.x + text_width(t.text, t.size) for t in items
                                  if isinstance(t, Text)))
    scene = Scene(math.ceil(width + PAD), math.ceil(y + PAD - 8), tuple(items), label=head)
    return make_picture(m, scene)


def _short(block: tuple[int, ...]) -> str:
    """A block in a tile's label: ``3`` for (3,), ``1,2`` for (1, 2)."""
    return ",".join(map(str, block))


@renders(CheckResult, "image/svg+xml")
def check_svg(result: CheckResult) -> str:
    """``result``'s tile map as SVG; "" for a passed check; a note when it cannot be drawn
    (the verdict stands without the picture)."""
    why = result.diagram_error
    if why is None and result.tile_map is not None:
        try:
            return check_picture(result.tile_map).svg
        except Exception as e:  # an aid: say why it is missing, keep the verdict
            why = str(e)
    return "" if why is None else f"<pre>diagram unavailable: {html.escape(why)}</pre>"


@renders(CheckResult)
def check_result_html(result: CheckResult) -> str:
    """The verdict (green when it passed, vermillion when not) above the tile map."""
    color = OK if result.ok else WRONG
    svg = result.diagram_svg
    pic = f"<div>{svg}</div>" if svg else ""
    return (f"<div class='tl-check'><pre style='color:{color};white-space:pre-wrap'>"
            f"{html.escape(result.verdict())}</pre>{pic}</div>")

