"""A drawn teaching picture: SVG text, the data it shows, PNG export.

The concept pictures (``render/views.py``, ``render/schedule.py``, ``render/pipeline.py``,
``render/tma.py``) each compute plain frozen data first and lay it out as a
:class:`~tile_lab.render.svg.Scene`; this wrapper gives them one display protocol.

Linked hover without a script: items that belong together share a CSS class
(``tl-k-<key>``); :func:`hover_css` writes one ``:has()`` rule per key, so hovering any
of them outlines all of them — the same mechanism the inspect view uses for source lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from . import palette
from .svg import Scene, paint_png, to_svg

__all__ = ["Picture", "hover_css", "key_class", "make_picture"]


@dataclass(frozen=True)
class Picture:
    """A concept picture: ``svg`` text, the ``data`` object it draws, PNG export."""

    data: Any
    svg: str
    scene: Scene = field(repr=False, compare=False)

    @property
    def width(self) -> float:
        return self.scene.width

    @property
    def height(self) -> float:
        return self.scene.height

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_html_(self) -> str:
        return ('<div class="tile-lab-diagram-wrap" style="overflow-x:auto;contain:paint">'
                f"{self.svg}</div>")

    def save_svg(self, path: str | FilePath) -> FilePath:
        out = FilePath(path)
        out.write_text(self.svg, encoding="utf-8")
        return out

    def to_png(self, path: str | FilePath, dpi: int = 200) -> FilePath:
        """Paint the same scene with matplotlib and save it as a PNG; returns the path."""
        out = FilePath(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        paint_png(self.scene, out, dpi=dpi)
        return out

    def __repr__(self) -> str:
        return f"Picture({type(self.data).__name__}, {self.scene.label!r})"


def key_class(key: str | int) -> str:
    """CSS class tying together every item of one hover group (e.g. one wave)."""
    return f"tl-k-{key}"


def hover_css(keys: Iterable[str | int]) -> str:
    """Hovering any item of group ``k`` outlines and brightens every item of group ``k``;
    the others fade. One rule per key present, as the inspect view does for lines."""
    rules = []
    for k in dict.fromkeys(keys):
        c = key_class(k)
        # !important: shapes carry their stroke in a style attribute, which beats a rule
        rules.append(f"svg.tile-lab-diagram:has(.{c}:hover) .{c}>rect"
                     "{stroke:currentColor!important;stroke-width:2px!important;"
                     "stroke-opacity:1!important}")
        rules.append(f"svg.tile-lab-diagram:has(.{c}:hover) .tl-hk:not(.{c}){{opacity:0.35}}")
    return "".join(rules)


def make_picture(data: Any, scene: Scene, hover_keys: Iterable[str | int] = ()) -> Picture:
    """Write ``scene`` as SVG with the palette variables and the linked-hover rules."""
    css = palette.palette_css(".tile-lab-diagram") + hover_css(hover_keys)
    return Picture(data=data, svg=to_svg(scene, css=css), scene=scene)
