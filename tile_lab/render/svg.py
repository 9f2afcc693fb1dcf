"""Low-level drawing for diagrams: a scene of primitives, written as SVG or painted by matplotlib.

A diagram is first laid out as a flat list of primitives (rectangles, paths, text) in pixel
coordinates; the same list is then serialised to SVG text or painted onto a matplotlib
figure for PNG export, so both outputs show exactly the same geometry.

SVG output is deterministic: numbers are printed with a fixed precision, pattern ids are
derived from a hash of the scene's content (no counters shared between diagrams, no
random ids), and text and grid lines use ``currentColor`` so the drawing follows the light
or dark theme of the page it is embedded in.
"""

from __future__ import annotations

import functools
import hashlib
import html
import pathlib
from dataclasses import dataclass, field

INK = "currentColor"  # theme-following colour for text and lines
PNG_INK = "#222222"  # what currentColor means on the white background of a PNG
FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"
HATCHES = ("diag", "cross", "dots")


@dataclass(frozen=True)
class Style:
    """How a shape is filled and stroked. ``hatch`` overlays a pattern in ``hatch_color``."""

    fill: str = "none"
    fill_opacity: float = 1.0
    stroke: str = "none"
    stroke_width: float = 1.0
    stroke_opacity: float = 1.0
    dash: str | None = None  # SVG dash array, e.g. "4 2"
    hatch: str | None = None  # one of HATCHES
    hatch_color: str = INK


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    style: Style = Style()


@dataclass(frozen=True)
class Path:
    """Straight segments: each entry of ``segments`` is a polyline (a sequence of points)."""

    segments: tuple[tuple[tuple[float, float], ...], ...]
    style: Style = Style(stroke=INK)
    arrow: bool = False  # draw an arrow head at the end of each polyline


@dataclass(frozen=True)
class Text:
    x: float
    y: float  # baseline
    text: str
    size: float = 11.0
    anchor: str = "start"  # "start" | "middle" | "end"
    color: str = INK
    opacity: float = 1.0
    bold: bool = False


@dataclass(frozen=True)
class Group:
    """Primitives sharing a hover tooltip (SVG ``<title>``) and a CSS class."""

    items: tuple[Rect | Path | Text | Group, ...]
    title: str | None = None
    css_class: str | None = None


Item = Rect | Path | Text | Group


@dataclass(frozen=True)
class Scene:
    width: float
    height: float
    items: tuple[Item, ...] = field(default_factory=tuple)
    label: str = ""  # aria-label of the whole drawing


# ---- SVG ----------------------------------------------------------------------------------

def num(x: float) -> str:
    """A number as SVG text: two decimals at most, no trailing zeros, never "-0"."""
    # whole numbers (most coordinates) skip the formatting: same text, a diagram of
    # thousands of cells writes tens of thousands of numbers per redraw
    if type(x) is int:
        return str(x)
    if type(x) is float and x.is_integer():
        return str(int(x))  # int(-0.0) == 0: never "-0"
    s = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


@functools.lru_cache(maxsize=4096)  # styles repeat across cells and redraws
def _style_attrs(style: Style) -> str:
    # A style attribute (not presentation attributes) so colours may be CSS var() expressions
    # that switch with the page theme.
    parts = [f"fill:{style.fill}"]
    if style.fill != "none" and style.fill_opacity != 1.0:
        parts.append(f"fill-opacity:{num(style.fill_opacity)}")
    parts.append(f"stroke:{style.stroke}")
    if style.stroke != "none":
        parts.append(f"stroke-width:{num(style.stroke_width)}")
        if style.stroke_opacity != 1.0:
            parts.append(f"stroke-opacity:{num(style.stroke_opacity)}")
        if style.dash:
            parts.append(f"stroke-dasharray:{style.dash}")
    return f'style="{_esc(";".join(parts))}"'


class _SvgWriter:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.patterns: dict[tuple[str, str], str] = {}  # (hatch, colour) -> id

    def pattern_id(self, hatch: str, color: str) -> str:
        key = (hatch, color)
        if key not in self.patterns:
            self.patterns[key] = f"{self.prefix}-{hatch}{len(self.patterns)}"
        return self.patterns[key]

    def item(self, it: Item, out: list[str]) -> None:
        if isinstance(it, Rect):
            geo = f'x="{num(it.x)}" y="{num(it.y)}" width="{num(it.w)}" height="{num(it.h)}"'
            out.append(f"<rect {geo} {_style_attrs(it.style)}/>")
            if it.style.hatch:
                pid = self.pattern_id(it.style.hatch, it.style.hatch_color)
                out.append(f'<rect {geo} style="fill:url(#{pid});stroke:none"/>')
        elif isinstance(it, Path):
            d = " ".join("M" + " L".join(f"{num(x)} {num(y)}" for x, y in seg)
                         for seg in it.segments if seg)
            out.append(f'<path d="{d}" {_style_attrs(it.style)}/>')
            if it.arrow:
                for seg in it.segments:
                    if len(seg) >= 2:
                        out.append(_arrow_head(seg[-2], seg[-1], it.style))
        elif isinstance(it, Text):
            attrs = [f'x="{num(it.x)}" y="{num(it.y)}"', f'font-size="{num(it.size)}"',
                     f'style="fill:{_esc(it.color)}"']
            if it.anchor != "start":
                attrs.append(f'text-anchor="{it.anchor}"')
            if it.opacity != 1.0:
                attrs.append(f'fill-opacity="{num(it.opacity)}"')
            if it.bold:
                attrs.append('font-weight="bold"')
            out.append(f"<text {' '.join(attrs)}>{_esc(it.text)}</text>")
        elif isinstance(it, Group):
            cls = f' class="{_esc(it.css_class)}"' if it.css_class else ""
            out.append(f"<g{cls}>")
            if it.title:
                out.append(f"<title>{_esc(it.title)}</title>")
            for sub in it.items:
                self.item(sub, out)
            out.append("</g>")
        else:  # pragma: no cover - the Item union is closed
            raise TypeError(f"not a scene item: {it!r}")

    def defs(self) -> str:
        if not self.patterns:
            return ""
        out = ["<defs>"]
        for (hatch, color), pid in self.patterns.items():
            c = _esc(color)
            if hatch == "diag":
                body = (f'<path d="M-1 1 L1 -1 M0 6 L6 0 M5 7 L7 5" '
                        f'style="stroke:{c};stroke-width:1.2"/>')
            elif hatch == "cross":
                body = f'<path d="M0 0 L6 6 M6 0 L0 6" style="stroke:{c};stroke-width:1"/>'
            else:  # dots
                body = f'<circle cx="3" cy="3" r="1.1" style="fill:{c}"/>'
            out.append(f'<pattern id="{pid}" width="6" height="6" '
                       f'patternUnits="userSpaceOnUse">{body}</pattern>')
        out.append("</defs>")
        return "".join(out)


def _arrow_head(p0: tuple[float, float], p1: tuple[float, float], style: Style) -> str:
    import math

    dx, dy = p1[0] - p0[0], p1[1] - p0[1]
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    size = 3.0 + 1.5 * style.stroke_width
    left = (p1[0] - size * ux + 0.5 * size * uy, p1[1] - size * uy - 0.5 * size * ux)
    right = (p1[0] - size * ux - 0.5 * size * uy, p1[1] - size * uy + 0.5 * size * ux)
    pts = " ".join(f"{num(x)},{num(y)}" for x, y in (p1, left, right))
    op = f";fill-opacity:{num(style.stroke_opacity)}" if style.stroke_opacity != 1.0 else ""
    return f'<polygon points="{pts}" style="fill:{_esc(style.stroke)}{op}"/>'


# Tile labels get a halo in the page's background colour (JupyterLab / VS Code variables;
# none on a page without them) so they stay readable over hatches and footprint fills.
_CSS = (".tile-lab-diagram .tl-fp:hover>rect{stroke-width:3px!important}"  # beats style=""
        ".tile-lab-diagram text{pointer-events:none}"
        ".tile-lab-diagram .tl-lbl text{paint-order:stroke;stroke-linejoin:round;"
        "stroke-width:3px;stroke:var(--jp-layout-color0,var(--vscode-editor-background,"
        "transparent))}")


_PLACEHOLDER = "tl@@pattern@@"


def to_svg(scene: Scene, css: str = "") -> str:
    """The scene as a standalone SVG document (also valid inline in HTML)."""
    # Pattern ids must be unique per drawing (several diagrams share one HTML page) yet
    # deterministic: write with a placeholder prefix, then substitute a hash of the content.
    writer = _SvgWriter(_PLACEHOLDER)
    body: list[str] = []
    for it in scene.items:
        writer.item(it, body)
    w, h = num(scene.width), num(scene.height)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="tile-lab-diagram" '
            f'width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT}" '
            # narrower containers (a widget row beside a chart) scale the drawing down
            # instead of clipping it; a wider page shows it at its own size
            'style="max-width:100%;height:auto" '
            f'role="img" aria-label="{_esc(scene.label)}">')
    text = (head + f"<style>{_esc_css(_CSS + css)}</style>" + writer.defs() + "".join(body)
            + "</svg>")
    prefix = "tl" + hashlib.sha1(text.encode()).hexdigest()[:10]
    return text.replace(_PLACEHOLDER, prefix)


def _esc_css(css: str) -> str:
    # Inside SVG <style> (XML), "<" and "&" would break parsing; selectors here use ">" only.
    return css.replace("&", "&amp;").replace("<", "&lt;")


# ---- matplotlib (PNG export) ----------------------------------------------------------------

_MPL_HATCH = {"diag": "////", "cross": "xxxx", "dots": "...."}


def _mpl_color(color: str) -> str:
    if color == INK:
        return PNG_INK
    if color.startswith("var("):  # "var(--name, #hex)": the PNG uses the light fallback
        return color[color.index(",") + 1:-1].strip()
    return color


def _dash(style: Style) -> tuple[float, tuple[float, ...]] | str:
    if not style.dash:
        return "solid"
    return (0.0, tuple(float(v) for v in style.dash.split()))


def paint_png(scene: Scene, path: str | pathlib.Path, *, dpi: int = 200) -> None:
    """Paint the scene with matplotlib (Agg, no pyplot state) and save it as a PNG.

    One scene pixel is 1/100 inch, so ``dpi`` sets the output resolution.
    """
    import matplotlib.patches as mpatches
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(scene.width / 100, scene.height / 100), facecolor="white")
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, scene.width)
    ax.set_ylim(scene.height, 0)
    ax.set_axis_off()
    pt = 0.72  # points per scene pixel at 100 px per inch
    # matplotlib layers lines over patches by default; SVG paints in document order, so
    # every artist gets the next z-order to reproduce the SVG's layering exactly
    order = iter(range(1, 10**9))

    def paint(it: Item) -> None:
        if isinstance(it, Rect):
            s = it.style
            face = "none" if s.fill == "none" else _with_alpha(_mpl_color(s.fill), s.fill_opacity)
            edge = ("none" if s.stroke == "none"
                    else _with_alpha(_mpl_color(s.stroke), s.stroke_opacity))
            ax.add_patch(mpatches.Rectangle(
                (it.x, it.y), it.w, it.h, facecolor=face, edgecolor=edge,
                linewidth=s.stroke_width * pt if s.stroke != "none" else 0, linestyle=_dash(s),
                zorder=next(order)))
            if s.hatch:
                ax.add_patch(mpatches.Rectangle(
                    (it.x, it.y), it.w, it.h, facecolor="none", linewidth=0,
                    edgecolor=_mpl_color(s.hatch_color), hatch=_MPL_HATCH[s.hatch],
                    zorder=next(order)))
        elif isinstance(it, Path):
            s = it.style
            color = _with_alpha(_mpl_color(s.stroke), s.stroke_opacity)
            for seg in it.segments:
                if len(seg) < 2:
                    continue
                xs, ys = zip(*seg)
                ax.plot(xs, ys, color=color, linewidth=s.stroke_width * pt, linestyle=_dash(s),
                        solid_capstyle="butt", zorder=next(order))
                if it.arrow:
                    ax.annotate("", xy=seg[-1], xytext=seg[-2],
                                arrowprops={"arrowstyle": "-|>", "color": color,
                                            "lw": s.stroke_width * pt}, zorder=next(order))
        elif isinstance(it, Text):
            ha = {"start": "left", "middle": "center", "end": "right"}[it.anchor]
            ax.text(it.x, it.y, it.text, fontsize=it.size * pt, ha=ha, va="baseline",
                    color=_with_alpha(_mpl_color(it.color), it.opacity), family="monospace",
                    fontweight="bold" if it.bold else "normal", zorder=next(order))
        elif isinstance(it, Group):
            for sub in it.items:
                paint(sub)

    for it in scene.items:
        paint(it)
    fig.savefig(str(path), dpi=dpi, facecolor="white")


def _with_alpha(color: str, alpha: float) -> tuple[float, float, float, float]:
    from matplotlib.colors import to_rgba

    r, g, b, a = to_rgba(color)
    return (r, g, b, a * alpha)


def text_width(text: str, size: float) -> float:
    """Approximate rendered width of monospace text (for layout)."""
    return 0.62 * size * len(text)
