"""Every primitive of an SVG scene, groups expanded (to count and read what a picture holds)."""

from __future__ import annotations

from collections.abc import Sequence

from tile_lab.render.svg import Group, Item, Path, Rect, Text


def flatten(items: Sequence[Item]) -> list[Rect | Path | Text]:
    out: list[Rect | Path | Text] = []
    for it in items:
        if isinstance(it, Group):
            out.extend(flatten(it.items))
        else:
            out.append(it)
    return out
