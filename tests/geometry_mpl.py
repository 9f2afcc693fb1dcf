"""Is a matplotlib figure true to its geometry? Checked from matplotlib's own text extents.

:func:`figure_problems` draws the figure and lists: a zero, negative or NaN figure size; text
overlapping other text (tick labels, titles, axis labels, annotations, legends' entries); an
axes' text lying over another axes' plotting area; a legend covering plotted data (bars,
line points, scatter points, images). Each problem names the texts or artists involved.

Self-contained on purpose: ``notebooks/conftest.py`` sends this file's source into each
tutorial's kernel to check every figure the notebook shows (see ``install`` below).
"""

from __future__ import annotations

import math


def _texts(fig, renderer):
    """(label, bbox, owner axes or None) of every drawn, non-empty text."""
    from matplotlib.text import Text

    out = []
    axes_of = {}
    for ax in fig.axes:
        for t in ax.findobj(Text):
            axes_of.setdefault(id(t), ax)
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            span = (hi - lo) or 1.0
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - 1e-9 * span <= tick.get_loc() <= hi + 1e-9 * span:
                    # not drawn: hide it from the search below
                    axes_of[id(tick.label1)] = None
                    axes_of[id(tick.label2)] = None
    for t in fig.findobj(Text):
        if id(t) in axes_of and axes_of[id(t)] is None:
            continue
        if not t.get_visible() or not t.get_text().strip():
            continue
        if t.axes is not None and not t.axes.get_visible():
            continue
        bb = t.get_window_extent(renderer)
        if not (bb.width > 0 and bb.height > 0):
            continue
        out.append((_label(t), _quad(t, bb, renderer), bb, axes_of.get(id(t))))
    return out


def _quad(t, bb, renderer):
    """The text's ink as four corners: its box (less the line gap), turned by its rotation
    about the centre of ``bb`` (a rotated box's bounding box shares its centre)."""
    angle = t.get_rotation() % 180.0
    if angle in (0.0, 90.0):
        pad = (bb.height if angle == 0.0 else bb.width) * 0.08
        x0, x1 = bb.x0 + (pad if angle else 0), bb.x1 - (pad if angle else 0)
        y0, y1 = bb.y0 + (0 if angle else pad), bb.y1 - (0 if angle else pad)
        return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    rot = t.get_rotation()
    t.set_rotation(0)
    try:
        flat = t.get_window_extent(renderer)
    finally:
        t.set_rotation(rot)
    w, h = flat.width / 2, flat.height * 0.84 / 2
    cx, cy = (bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2
    c, s = math.cos(math.radians(rot)), math.sin(math.radians(rot))
    return [(cx + dx * c - dy * s, cy + dx * s + dy * c)
            for dx, dy in ((-w, -h), (w, -h), (w, h), (-w, h))]


def _quads_overlap(p, q) -> float:
    """Depth (px) of the overlap of two convex quads (separating axes), 0 when apart."""
    depth = math.inf
    for poly in (p, q):
        for i in range(4):
            (x0, y0), (x1, y1) = poly[i], poly[(i + 1) % 4]
            nx, ny = y0 - y1, x1 - x0
            norm = math.hypot(nx, ny) or 1.0
            nx, ny = nx / norm, ny / norm
            a = [x * nx + y * ny for x, y in p]
            b = [x * nx + y * ny for x, y in q]
            d = min(max(a), max(b)) - max(min(a), min(b))
            if d <= 0:
                return 0.0
            depth = min(depth, d)
    return depth


def _label(t) -> str:
    s = " ".join(t.get_text().split())
    return repr(s if len(s) <= 50 else s[:47] + "...")


def _overlap(a, b) -> tuple[float, float]:
    return (min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0))


def _ink(bb):
    """The ink of a text box: its middle 70% vertically (ascent and descent are padding)."""
    from matplotlib.transforms import Bbox

    pad = bb.height * 0.15
    return Bbox([[bb.x0, bb.y0 + pad], [bb.x1, bb.y1 - pad]])


def figure_problems(fig, name: str = "figure") -> list[str]:
    import numpy as np

    problems: list[str] = []
    w, h = fig.get_size_inches()
    if not (math.isfinite(w) and math.isfinite(h) and w > 0 and h > 0):
        return [f"{name}: size {w}x{h} in"]
    fig.draw_without_rendering()  # lays out text; extents below use the figure's renderer
    renderer = None
    texts = _texts(fig, renderer)
    for i, (la, qa, ba, axa) in enumerate(texts):
        ia = _ink(ba)
        for lb, qb, _, _ in texts[i + 1:]:
            depth = _quads_overlap(qa, qb)
            if depth > 1.0:
                problems.append(f"{name}: text {la} overlaps text {lb} ({depth:.0f} px deep)")
        for ax in fig.axes:
            if ax is axa or axa is None or not ax.get_visible() or not ax.axison:
                continue
            dx, dy = _overlap(ia, ax.bbox)
            if dx > 2 and dy > 2:
                problems.append(f"{name}: text {la} lies over another plot "
                                f"{_label(ax.title) if ax.get_title() else '(untitled)'}")
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None or not leg.get_visible():
            continue
        lb = leg.get_window_extent(renderer)
        covered = []
        for p in ax.patches:
            if not p.get_visible():
                continue
            pb = p.get_window_extent(renderer)
            dx, dy = _overlap(lb, pb)
            if dx > 1 and dy > 1 and dx * dy > 0.05 * max(pb.width * pb.height, 1.0):
                covered.append(f"bar {p.get_label() or ''}".strip())
        for line in ax.lines:
            if not line.get_visible():
                continue
            xy = ax.transData.transform(np.asarray(line.get_xydata(), dtype=float))
            inside = ((xy[:, 0] > lb.x0) & (xy[:, 0] < lb.x1) & (xy[:, 1] > lb.y0)
                      & (xy[:, 1] < lb.y1))
            if inside.any():
                covered.append(f"{int(inside.sum())} point(s) of line {line.get_label()!r}")
        for coll in ax.collections:
            offs = np.asarray(coll.get_offsets(), dtype=float)
            if not coll.get_visible() or offs.size == 0:
                continue
            xy = coll.get_offset_transform().transform(offs)
            inside = ((xy[:, 0] > lb.x0) & (xy[:, 0] < lb.x1) & (xy[:, 1] > lb.y0)
                      & (xy[:, 1] < lb.y1))
            if inside.any():
                covered.append(f"{int(inside.sum())} marker(s) of {coll.get_label()!r}")
        for im in ax.images:
            dx, dy = _overlap(lb, im.get_window_extent(renderer))
            if dx > 1 and dy > 1:
                covered.append("the image")
        if covered:
            title = _label(ax.title) if ax.get_title() else "(untitled axes)"
            problems.append(f"{name}: the legend of {title} covers " + ", ".join(covered[:4])
                            + (f" and {len(covered) - 4} more" if len(covered) > 4 else ""))
    return problems


def install(records: list) -> None:
    """In a notebook's kernel: check every figure IPython turns into an image, appending
    ``problems`` lists to ``records`` (the test harness collects them after each cell)."""
    from matplotlib.backend_bases import FigureCanvasBase

    original = FigureCanvasBase.print_figure
    if original.__name__ == "_tl_checked_print_figure":
        return

    def _tl_checked_print_figure(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        fig = self.figure
        suptitle = getattr(fig, "_suptitle", None)
        label = (suptitle.get_text() if suptitle is not None else "") or next(
            (ax.get_title() for ax in fig.axes if ax.get_title()), "untitled")
        try:
            records.append(figure_problems(fig, f"figure {label[:50]!r}"))
        except Exception as err:  # a check that breaks must not break the notebook
            records.append([f"figure {label[:50]!r}: the check failed: {err!r}"])
        return result

    FigureCanvasBase.print_figure = _tl_checked_print_figure
