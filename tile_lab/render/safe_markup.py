"""tile_lab's own HTML/SVG views, as a saved notebook holds them, made safe to put in a page.

A diagram, a checker or sanitizer report, the doctor's table... are saved in a notebook only as
markup (``text/html`` / ``image/svg+xml``): there is no data to redraw them from. The markup
is static (no script, nothing fetched), so ``tile-lab export`` copies it, but only through
:func:`clean_markup`, because a notebook is a file anyone can edit. Every element and
attribute is re-written from an allow-list of the static HTML and SVG tile_lab's renderers
use; text and values are escaped again; what is not on the list is dropped: scripts, event
handlers, links, images, frames, forms, ``url(...)`` other than ``url(#id)``, CSS that is not
scoped to a tile_lab class (so a notebook cannot restyle the page around it). Unclosed
elements are closed, so a fragment cannot swallow the next section. Deterministic: the same
markup gives the same text.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

__all__ = ["TILE_LAB_VIEWS", "clean_markup", "css_is_scoped", "markup_section", "markup_title",
           "tile_lab_view"]

# the outermost class of each tile_lab renderer's markup -> what a user calls the view
TILE_LAB_VIEWS = {
    "tile-lab-diagram-wrap": "diagram", "tile-lab-diagram": "diagram",
    "tile-lab-browse-static": "diagram browser (static picture)", "tl-check": "check",
    "tile-lab-sanitizer": "sanitizer report", "tile-lab-crosscheck": "cross-check",
    "tile-lab-doctor": "doctor", "tl-compare": "Python / C++ comparison",
    "tl-port": "Triton / cuTile comparison", "tl-tune": "tuning result",
    "tile-lab-chart": "chart",
}
# after an XML declaration, doctype or comment (matplotlib's SVG starts with those)
_ROOT = re.compile(r"""^\s*(?:<\?[^>]*>\s*|<!--.*?-->\s*|<!DOCTYPE[^>]*>\s*)*"""
                   r"""<(?:div|svg)\b[^>]*?\bclass=["']([\w -]+)["']""", re.S | re.I)

_HTML = {"div", "span", "p", "pre", "code", "b", "i", "em", "strong", "small", "sub", "sup",
         "br", "hr", "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption",
         "colgroup", "col", "ul", "ol", "li", "details", "summary", "h3", "h4", "h5", "h6",
         "kbd", "abbr", "mark", "style"}
_SVG = {"svg", "g", "defs", "pattern", "rect", "circle", "ellipse", "line", "polyline",
        "polygon", "path", "text", "tspan", "title", "desc", "clippath", "marker",
        "lineargradient", "radialgradient", "stop", "use", "symbol", "mask"}
_VOID = {"br", "hr", "col"}
# dropped with everything inside them (the rest of what is not allowed keeps its text)
_DROP_WITH_CONTENT = {"script", "noscript", "iframe", "object", "embed", "template",
                      "foreignobject", "math", "textarea", "select", "option", "button",
                      "frameset", "noframes", "xmp", "plaintext", "head"}
_ATTRS = {
    "class", "id", "style", "role", "title", "colspan", "rowspan", "open", "width", "height",
    "viewbox", "xmlns", "x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r", "rx", "ry", "d",
    "points", "transform", "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width",
    "stroke-dasharray", "stroke-dashoffset", "stroke-opacity", "stroke-linecap",
    "stroke-linejoin", "stroke-miterlimit", "opacity", "font-family", "font-size",
    "font-weight", "font-style", "text-anchor", "dominant-baseline", "alignment-baseline",
    "dx", "dy", "patternunits", "patterncontentunits", "patterntransform", "clip-path",
    "clippathunits", "marker-start", "marker-mid", "marker-end", "markerwidth",
    "markerheight", "markerunits", "refx", "refy", "orient", "offset", "stop-color",
    "stop-opacity", "gradientunits", "gradienttransform", "preserveaspectratio", "version",
    "letter-spacing", "textlength", "lengthadjust", "visibility", "vector-effect",
    "paint-order", "shape-rendering", "mask", "href", "xlink:href", "xmlns:xlink",
    "text-decoration", "align", "valign"}
# html.parser lower-cases names; SVG's camel case is put back (browsers would too)
_CASE = {n.lower(): n for n in (
    "clipPath", "linearGradient", "radialGradient", "viewBox", "patternUnits",
    "patternContentUnits", "patternTransform", "clipPathUnits", "markerWidth", "markerHeight",
    "markerUnits", "refX", "refY", "gradientUnits", "gradientTransform",
    "preserveAspectRatio", "textLength", "lengthAdjust")}
# url() only to an id of the same fragment; no @import, no CSS escapes that could hide one
_BAD_CSS = re.compile(r"@import|\\|expression\s*\(|url\s*\((?!\s*['\"]?#)|javascript:", re.I)
_SCOPE = re.compile(r"\.(?:tile-lab-|tl-)(?!export)[\w-]")


def tile_lab_view(markup: str) -> str | None:
    """What a user calls the view whose markup this is ("diagram", "check"...), from the
    class of its outermost element; None for markup that is not a tile_lab view."""
    m = _ROOT.match(markup)
    if not m:
        return None
    return next((TILE_LAB_VIEWS[c] for c in m.group(1).split() if c in TILE_LAB_VIEWS), None)


def clean_markup(markup: str) -> str:
    """``markup`` re-written from the allow-list (see the module's docstring)."""
    parser = _Cleaner()
    parser.feed(markup)
    parser.close()
    return parser.result()


def markup_section(markup: str) -> str:
    """The cleaned markup in a box that clips it (``contain:paint``: not even a fixed
    position escapes it) and scrolls sideways when wider than the page."""
    return ('<div class="tl-export-markup" style="contain:paint;overflow-x:auto">'
            f"{clean_markup(markup)}</div>")


def markup_title(markup: str) -> str:
    """A view's one-line title from its markup: a picture's aria-label, else its first
    line of text."""
    label = re.search(r'aria-label="([^"]*)"', markup[:2000])
    if label:
        return html.unescape(label.group(1))
    shown = re.sub(r"<style\b.*?</style>|<[^>]*>", "\n", markup[:4000], flags=re.S)
    return html.unescape(next((t.strip() for t in shown.split("\n") if t.strip()), ""))


def css_is_scoped(css: str) -> bool:
    """Whether a ``<style>`` block only styles tile_lab's own classes: every selector names
    a ``tile-lab-…`` or ``tl-…`` class (not the export page's ``tl-export-…``), the only
    at-rules are ``@media``/``@supports`` around such rules, and nothing is fetched."""
    if _BAD_CSS.search(css):
        return False
    for m in re.finditer(r"([^{}]*)\{|\}", css):
        prelude = (m.group(1) or "").strip()
        if m.group(0) == "}" or prelude.startswith(("@media", "@supports")):
            continue
        if prelude.startswith("@") or not all(_SCOPE.search(s) for s in prelude.split(",")):
            return False
    return True


class _Cleaner(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []
        self.dropping: list[str] = []  # inside an element dropped with its content
        self.in_style = False

    def result(self) -> str:
        return "".join(self.out) + "".join(f"</{_CASE.get(t, t)}>" for t in reversed(self.open))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, closed=False)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, closed=True)

    def _start(self, tag: str, attrs: list[tuple[str, str | None]], closed: bool) -> None:
        if self.dropping or tag in _DROP_WITH_CONTENT:
            if not closed and tag not in _VOID:
                self.dropping.append(tag)
            return
        if tag not in _HTML and tag not in _SVG:
            return  # not on the list: the tag goes, its text stays
        kept = "".join(f' {_CASE.get(k, k)}="{html.escape(v, quote=True)}"'
                       for k, v in attrs if _attr_ok(k, v or ""))
        name = _CASE.get(tag, tag)
        if closed or tag in _VOID:
            self.out.append(f"<{name}{kept}/>" if tag in _SVG else f"<{name}{kept}>")
            return
        self.out.append(f"<{name}{kept}>")
        self.open.append(tag)
        self.in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if self.dropping:
            if tag == self.dropping[-1]:
                self.dropping.pop()
            return
        if tag not in self.open:
            return  # a stray end tag could close the page's own elements
        while self.open:
            top = self.open.pop()
            self.out.append(f"</{_CASE.get(top, top)}>")
            if top == tag:
                break
        self.in_style = bool(self.open) and self.open[-1] == "style"

    def handle_data(self, data: str) -> None:
        if self.dropping:
            return
        if self.in_style:  # raw CSS: kept only if it styles tile_lab's own classes
            if css_is_scoped(data) and "</" not in data:
                self.out.append(data.replace("<", ""))
            return
        self.out.append(html.escape(data, quote=False))


def _attr_ok(name: str, value: str) -> bool:
    if name not in _ATTRS and not name.startswith(("aria-", "data-")):
        return False
    if name in ("href", "xlink:href"):
        return value.startswith("#")
    if name == "style":
        return not _BAD_CSS.search(value)
    return not _BAD_CSS.search(value) if "(" in value or "\\" in value else True
