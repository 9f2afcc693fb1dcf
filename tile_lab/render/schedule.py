"""Scheduling pictures: blocks on SMs over time (waves, tail), and the L2 reuse of a GEMM's
output-tile order (naive row-major vs grouped); the models are :mod:`tile_lab.analysis.schedule`'s.

Both are models, stated in the picture: every block (output tile) takes the same time, and
the hardware hands blocks to SMs in linear block-id order, each SM running
``blocks_per_sm`` at once. That is what makes the wave count and the tail visible; real
block durations vary, so a measured timeline is ragged where this one is square.

``sm_timeline(300, gpu="H100 SXM")`` → 3 waves on 132 SMs, the last one 27 % full.
``l2_order(16, 16, group_m=4, num_sms=32)`` → per wave, how many A row panels and B column
panels the wave's output tiles need, in row-major and in grouped order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..analysis.schedule import L2Order, SmTimeline, order_waves
from ..gpu.peaks import sm_count
from .picture import Picture, key_class, make_picture
from .svg import INK, Group, Rect, Scene, Style, Text, text_width

__all__ = ["l2_order", "sm_timeline"]

WAVE_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
PAD = 10


# ---- SM timeline ---------------------------------------------------------------------------

def sm_timeline(blocks: int | Sequence[int], gpu: str | int = "H100 SXM",
                blocks_per_sm: int = 1) -> Picture:
    """Blocks on SMs over time: one row per SM, one column per wave, each block a cell
    labelled with its linear id; idle slots of the tail wave hatched.

    Args:
        blocks: the number of blocks, or the launch grid (its product is taken).
        gpu: a GPU name from ``tile_lab.gpu.peaks.GPU_SM_COUNTS`` or an SM count.
        blocks_per_sm: blocks resident on one SM at once (occupancy).

    Hovering a block outlines every block of its wave. ``.data`` is the :class:`SmTimeline`.
    """
    if not isinstance(blocks, int):
        blocks = math.prod(int(g) for g in blocks)
    if blocks < 1 or blocks_per_sm < 1:
        raise ValueError(f"blocks={blocks}, blocks_per_sm={blocks_per_sm}: both must be ≥ 1")
    tl = SmTimeline(blocks, sm_count(gpu), blocks_per_sm)
    rows = tl.num_sms  # every SM: the tail's shape is the point (thin rows when there are many)
    cell_w = max(22.0, min(64.0, 560 / (tl.waves * tl.blocks_per_sm)))
    cell_h = 18.0 if rows <= 24 else max(3.0, min(14.0, 600 / rows))
    label_every = 1 if cell_h >= 10 else 10
    x0, y0 = PAD + 54, PAD + 50  # the wave labels sit clear below the subtitle
    items: list = [Text(PAD, PAD + 13, tl.summary(), size=12, bold=True),
                   Text(PAD, PAD + 30, "model: equal-length blocks, handed out in linear id order;"
                        " hover a block for its wave", size=10, opacity=0.75)]
    for w in range(tl.waves):
        xw = x0 + w * tl.blocks_per_sm * cell_w
        items.append(Text(xw + tl.blocks_per_sm * cell_w / 2, y0 - 2, f"wave {w}", size=9,
                          anchor="middle", opacity=0.8))
    for sm in range(rows):
        y = y0 + 4 + sm * cell_h
        if sm % label_every == 0:
            items.append(Text(x0 - 4, y + min(cell_h, 10) - 1, f"SM {sm}", size=9, anchor="end",
                              opacity=0.7))
        gap = 1 if cell_h >= 6 else 0.25
        for w in range(tl.waves):
            for lane in range(tl.blocks_per_sm):
                b = w * tl.slots + lane * tl.num_sms + sm
                x = x0 + (w * tl.blocks_per_sm + lane) * cell_w
                if b >= tl.blocks:
                    items.append(Group((Rect(x + 1, y + gap, cell_w - 2, cell_h - 2 * gap, Style(
                        stroke=INK, stroke_opacity=0.4, dash="2 2", hatch="diag",
                        hatch_color="#999999")),), title=f"SM {sm}: idle in wave {w} (tail)"))
                    continue
                color = WAVE_COLORS[w % len(WAVE_COLORS)]
                parts: list = [Rect(x + 1, y + gap, cell_w - 2, cell_h - 2 * gap,
                                    Style(fill=color, fill_opacity=0.55,
                                          stroke=color if cell_h >= 6 else "none"))]
                label = str(b)
                fs = min(9.0, (cell_w - 4) / (0.62 * len(label)))
                if fs >= 6 and cell_h >= 10:
                    parts.append(Text(x + cell_w / 2, y + cell_h / 2 + fs * 0.35, label,
                                      size=fs, anchor="middle"))
                items.append(Group(tuple(parts), title=f"block {b} → SM {sm}, wave {w}",
                                   css_class=f"tl-hk {key_class(f'w{w}')}"))
    bottom = y0 + 4 + rows * cell_h + 8
    if tl.tail_blocks:
        bottom += 14
        idle = tl.slots - tl.tail_blocks
        items.append(Text(x0, bottom, f"tail: {idle} of {tl.slots} slots idle in wave "
                          f"{tl.waves - 1} (hatched), yet that wave takes as long as a full one; "
                          f"a grid of a multiple of {tl.slots} blocks has no tail", size=10))
    width = max(x0 + tl.waves * tl.blocks_per_sm * cell_w,
                *(it.x + text_width(it.text, it.size) for it in items if isinstance(it, Text)))
    scene = Scene(math.ceil(width + PAD), math.ceil(bottom + PAD), tuple(items),
                  label=tl.summary())
    return make_picture(tl, scene, (f"w{w}" for w in range(tl.waves)))


# ---- grouped order and L2 reuse --------------------------------------------------------------

def l2_order(num_m: int, num_n: int, group_m: int = 8, num_sms: int | str = 132,
             *, wave: int = 0) -> Picture:
    """The output tiles of one wave in row-major and in grouped order, side by side, with
    the A row panels (left strip) and B column panels (top strip) that wave must read.

    Every C tile (m, n) reads A's row panel m and B's column panel n, all K. Tiles running
    in the same wave share the panels they have in common through L2; the picture counts
    the distinct panels per wave — the smaller, the more reuse. ``.data`` is the pair
    ``(row_major, grouped)`` of :class:`L2Order`. Hovering a tile outlines its wave.
    """
    sms = sm_count(num_sms)
    if min(num_m, num_n, group_m) < 1:
        raise ValueError("num_m, num_n and group_m must be ≥ 1")
    pair = (order_waves(num_m, num_n, 1, sms), order_waves(num_m, num_n, group_m, sms))
    if not 0 <= wave < len(pair[0].waves):
        raise ValueError(f"wave={wave}: this grid has waves 0–{len(pair[0].waves) - 1}")
    cell = max(6.0, min(22.0, 300 / max(num_m, num_n)))
    strip = 10.0
    items: list = []
    n_w = len(pair[0].waves)
    head = (f"{num_m}×{num_n} output tiles, {sms} SMs → {n_w} wave{'s' if n_w > 1 else ''}; "
            f"wave {wave} highlighted")
    items.append(Text(PAD, PAD + 13, head, size=12, bold=True))
    x = PAD
    top = PAD + 24
    for o in pair:
        items.extend(_order_panel(o, wave, x, top, cell, strip))
        x += strip + 6 + num_n * cell + 40
    w_row, w_grp = pair[0].waves[wave], pair[1].waves[wave]
    y = top + 48 + strip + 6 + num_m * cell + 16
    items.append(Text(PAD, y, f"wave {wave} reads {w_row.panels} panels in row-major order, "
                      f"{w_grp.panels} in groups of {group_m} rows "
                      f"(mean over waves: {pair[0].panels_per_wave:.1f} vs "
                      f"{pair[1].panels_per_wave:.1f})", size=11))
    items.append(Text(PAD, y + 15, "each panel is a full K-strip of A or B; fewer distinct "
                      "panels per wave = more tiles served from L2 instead of DRAM", size=10,
                      opacity=0.75))
    width = max(x - 40, *(it.x + text_width(it.text, it.size) for it in items
                          if isinstance(it, Text)))
    scene = Scene(math.ceil(width + PAD), math.ceil(y + 15 + PAD), tuple(items), label=head)
    return make_picture(pair, scene, (f"w{w}" for w in range(n_w)))


def _order_panel(o: L2Order, wave: int, x: float, top: float, cell: float,
                 strip: float) -> list:
    sel = o.waves[wave]
    title = ("row-major order" if o.group_m == 1 else f"grouped order (group_m={o.group_m})")
    out: list = [Text(x, top + 12, title, size=11, bold=True),
                 Text(x, top + 26, f"wave {wave}: {len(sel.a_panels)} A + {len(sel.b_panels)}"
                      f" B panels = {sel.panels}", size=10)]
    gx, gy = x + strip + 6, top + 40 + strip + 6
    out.append(Text(gx, top + 38, "B column panels", size=8, opacity=0.7))
    out.append(Text(x, top + 38, "A", size=8, opacity=0.7))
    for n in range(o.num_n):  # B panels across the top
        on = n in sel.b_panels
        out.append(Rect(gx + n * cell, gy - strip - 4, cell - 1, strip, Style(
            fill="#E69F00" if on else INK, fill_opacity=0.8 if on else 0.08)))
    for m in range(o.num_m):  # A panels down the left
        on = m in sel.a_panels
        out.append(Rect(x, gy + m * cell, strip, cell - 1, Style(
            fill="#0072B2" if on else INK, fill_opacity=0.8 if on else 0.08)))
    rank = {t: (w.wave, i) for w in o.waves for i, t in enumerate(w.tiles)}
    for m in range(o.num_m):
        for n in range(o.num_n):
            w, i = rank[(m, n)]
            color = WAVE_COLORS[w % len(WAVE_COLORS)]
            parts: list = [Rect(gx + n * cell, gy + m * cell, cell - 1, cell - 1, Style(
                fill=color, fill_opacity=0.75 if w == wave else 0.18,
                stroke=INK if w == wave else "none", stroke_width=0.6, stroke_opacity=0.6))]
            if cell >= 16:
                parts.append(Text(gx + n * cell + cell / 2, gy + m * cell + cell / 2 + 3,
                                  str(w), size=8, anchor="middle", opacity=0.8))
            out.append(Group(tuple(parts), title=f"C tile ({m}, {n}): wave {w}, "
                             f"position {i} in it; reads A panel {m}, B panel {n}",
                             css_class=f"tl-hk {key_class(f'w{w}')}"))
    return out
