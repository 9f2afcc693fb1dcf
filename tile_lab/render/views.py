"""Pictures of the array views that are not plain tile grids: ``Array.tiled_view`` with
``traversal_steps`` (overlapping windows for stencils and convolutions, or gaps),
``Array.slice``, and ``order=`` (transposed) loads.

``view_windows((8, 8), (3, 3), steps=(1, 1))`` draws a 3×3 stencil window sliding by one
element: every element is labelled with how many windows cover it, a few windows are
outlined in colour and listed beside the array (hovering a window or its list entry
outlines both). ``slice=(0, 2, 6)`` draws ``a.slice(axis=0, start=2, stop=6).tiled_view(...)``
in the parent array's coordinates. ``windows_from_trace(trace, "x")`` draws the boxes an
emulated kernel really loaded. ``transposed_load((6, 8), (4, 2), (0, 1), order=(1, 0))``
shows which array element lands in which tile position.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import DiagramError
from ..tracing.trace import Trace
from . import palette
from .diagram import Box
from .diagram_args import int_tuple
from .picture import Picture, key_class, make_picture
from .svg import INK, Group, Path, Rect, Scene, Style, Text, text_width

__all__ = ["ViewWindows", "Window", "transposed_load", "view_windows", "windows_from_trace"]

PAD = 10
GRID_PX = 420  # the longer axis of a 2-D array takes at most this many pixels
ROW_PX = 840  # a 1-D array's row: fits a notebook's output area at 1000 px
LANE = 16  # px per outlined window's lane under a 1-D array
MAX_OUTLINED = 8


@dataclass(frozen=True)
class Window:
    """One tile of a view: its index in the view's tile space and the element box it covers
    in the (parent) array's coordinates (may reach past the array: padded lanes)."""

    index: tuple[int, ...]
    box: Box
    label: str = ""  # extra text for the list (e.g. the block that loaded it)


@dataclass(frozen=True)
class ViewWindows:
    """A view's windows over a 1-D or 2-D array, and how many cover each element."""

    shape: tuple[int, ...]
    tile: tuple[int, ...]
    steps: tuple[int, ...]
    num_tiles: tuple[int, ...]
    region: Box  # the viewed region: the whole array, or the slice
    windows: tuple[Window, ...]  # every window of the view
    outlined: tuple[tuple[int, ...], ...]  # the windows drawn in colour
    coverage: tuple[tuple[int, ...], ...]  # per element (2-D, rows × cols): windows covering it
    title: str

    @property
    def max_overlap(self) -> int:
        return max((max(r) for r in self.coverage), default=0)


def view_windows(shape: Sequence[int], tile: Sequence[int], steps: Sequence[int] | None = None,
                 *, slice: tuple[int, int, int] | None = None,
                 highlight: Sequence[Sequence[int]] | None = None) -> Picture:
    """``Array.tiled_view(tile, traversal_steps=steps)`` over an array of ``shape``.

    Args:
        shape: the array's shape (1-D or 2-D).
        tile: the view's tile shape.
        steps: elements between consecutive tile origins per axis (default: ``tile``, a
            plain partition); smaller than ``tile`` overlaps, larger leaves gaps.
        slice: ``(axis, start, stop)``: the view is taken of ``array.slice(axis, start,
            stop)``; windows are drawn in the parent array's coordinates.
        highlight: view tile indices outlined in colour (default: the first two along each
            axis, which shows the overlap).

    ``.data`` is a :class:`ViewWindows` (window boxes, per-element coverage counts).
    """
    shp = int_tuple(shape, "shape")
    til = int_tuple(tile, "tile")
    stp = til if steps is None else int_tuple(steps, "steps")
    if not 1 <= len(shp) <= 2 or len(til) != len(shp) or len(stp) != len(shp):
        raise DiagramError(f"shape={shp}, tile={til}, steps={stp}: give 1-D or 2-D shapes of "
                           "one rank")
    region = Box((0,) * len(shp), shp)
    if slice is not None:
        axis, start, stop = (int(v) for v in slice)
        axis %= len(shp)
        if not 0 <= start <= stop <= shp[axis]:
            raise DiagramError(f"slice={slice!r}: need 0 <= start <= stop <= {shp[axis]}")
        lo, hi = list(region.start), list(region.stop)
        lo[axis], hi[axis] = start, stop
        region = Box(tuple(lo), tuple(hi))
    sub = tuple(b - a for a, b in zip(region.start, region.stop))
    # origins 0, s, 2s, ... while the tile still starts inside the (sliced) array — as
    # TiledView.num_tiles counts them
    counts = tuple(max(-(-max(n - t, 0) // s) + 1, 0) if n > 0 else 0
                   for n, t, s in zip(sub, til, stp))
    windows = []
    for idx in np.ndindex(*counts):
        start = tuple(o + i * s for o, i, s in zip(region.start, idx, stp))
        windows.append(Window(tuple(int(i) for i in idx),
                              Box(start, tuple(a + t for a, t in zip(start, til)))))
    default = [w.index for w in windows if sum(w.index) <= 1][:3]
    outlined = default if highlight is None else [tuple(h) for h in highlight]
    known = {w.index for w in windows}
    for h in outlined:
        if tuple(h) not in known:
            raise DiagramError(f"highlight={tuple(h)!r} is not a tile of this view "
                               f"(num_tiles {counts})")
    kind = ("overlapping" if any(s < t for s, t in zip(stp, til)) else
            "with gaps" if any(s > t for s, t in zip(stp, til)) else "non-overlapping")
    head = f"tiled_view({_tup(til)}, traversal_steps={_tup(stp)})"
    if slice is not None:
        head = f"slice(axis={slice[0]}, start={slice[1]}, stop={slice[2]}).{head}"
    noun = "-element array" if len(shp) == 1 else " array"
    title = f"{_dims(shp)}{noun} · {head}: {_dims(counts)} {kind} tiles"
    data = ViewWindows(shp, til, stp, counts, region, tuple(windows),
                       tuple(tuple(h) for h in outlined), _coverage(shp, windows), title)
    return _draw(data)


def windows_from_trace(trace: Trace, arg: str, *, line: int | None = None,
                       highlight: int = 3) -> Picture:
    """The element boxes an emulated kernel loaded/stored on ``arg`` (tile-space ops only),
    one window per distinct box, labelled with the first block that touched it; element
    labels count how many distinct boxes cover each element. ``line`` keeps one source line.
    ``highlight``: how many windows (in first-touch order) are outlined in colour."""
    info = trace.array(arg)
    shp = tuple(info.shape)
    if not 1 <= len(shp) <= 2:
        raise DiagramError(f"{arg}: windows_from_trace draws 1-D and 2-D arrays")
    seen: dict[tuple, Window] = {}
    for a in trace.accesses:
        if a.arg != arg or a.box_start is None or (line is not None and a.line != line):
            continue
        key = (a.box_start, a.box_stop)
        if key not in seen:
            used = max([i + 1 for i, g in enumerate(trace.grid) if g > 1] or [1])
            label = f"block {_tup(a.block[:used])}, line {a.line}"
            seen[key] = Window(tuple(a.tile_index or ()), Box(a.box_start, a.box_stop),
                               label)
    if not seen:
        raise DiagramError(f"no tile-space access of {arg!r}"
                           + (f" on line {line}" if line is not None else ""))
    windows = tuple(seen.values())
    sizes = {tuple(b - a for a, b in zip(w.box.start, w.box.stop)) for w in windows}
    til = next(iter(sizes))
    title = (f"{trace.kernel}: {len(windows)} distinct boxes of {arg} "
             f"({', '.join(_dims(s) for s in sorted(sizes))})"
             + (f", line {line}" if line is not None else ""))
    data = ViewWindows(shp, til, til, (len(windows),), Box((0,) * len(shp), shp), windows,
                       tuple(w.index for w in windows[:highlight]), _coverage(shp, windows),
                       title)
    return _draw(data, by_position=True)


def _coverage(shape: tuple[int, ...], windows: Sequence[Window]) -> tuple[tuple[int, ...], ...]:
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape
    grid = np.zeros((rows, cols), dtype=np.int64)
    for w in windows:
        (r0, r1), (c0, c1) = _rc(w.box)
        grid[max(r0, 0):min(r1, rows), max(c0, 0):min(c1, cols)] += 1
    return tuple(tuple(int(v) for v in row) for row in grid)


def _rc(box: Box) -> tuple[tuple[int, int], tuple[int, int]]:
    if len(box.start) == 1:
        return (0, 1), (box.start[0], box.stop[0])
    return (box.start[0], box.stop[0]), (box.start[1], box.stop[1])


def _draw(data: ViewWindows, by_position: bool = False) -> Picture:
    """2-D: outlined windows nested inside the array. 1-D: the array is one row of cells
    labelled with their coverage, and each outlined window is a bar in its own lane below
    (overlapping windows side by side, never drawn over each other); the list follows."""
    one_d = len(data.shape) == 1
    rows, cols = (1, data.shape[0]) if one_d else data.shape
    # room for windows reaching past the array (padded lanes)
    far_r = max([rows] + [_rc(w.box)[0][1] for w in data.windows])
    far_c = max([cols] + [_rc(w.box)[1][1] for w in data.windows])
    sliced = data.region != Box((0,) * len(data.shape), data.shape)
    if one_d:  # a row as wide as the page allows, tall enough for its count labels
        cell = max(8.0, min(28.0, (ROW_PX - (70 if sliced else 0)) / far_c))
        cell_h = max(cell, 20.0)
    else:
        cell = cell_h = max(6.0, min(28.0, GRID_PX / max(far_r, far_c)))
    x0, y0 = PAD + 28, PAD + 50
    X = lambda c: x0 + c * cell  # noqa: E731
    Y = lambda r: y0 + r * cell_h  # noqa: E731
    label_counts = cell >= 9 and cell_h >= 12
    note = ("number in each element = windows covering it" if label_counts else
            "shade of each element = windows covering it (hover for the count)")
    items: list = [Text(PAD, PAD + 13, data.title, size=12, bold=True),
                   Text(PAD, PAD + 28, f"{note}; hover a window or its list entry", size=10,
                        opacity=0.75)]
    top = data.max_overlap or 1
    for r in range(rows):  # elements: tinted by coverage, labelled with the count
        for c in range(cols):
            n = data.coverage[r][c]
            inside = _in(data.region, r, c, len(data.shape))
            style = Style(fill=INK, fill_opacity=0.04 + 0.3 * n / top if inside else 0.02,
                          stroke=INK, stroke_width=0.5, stroke_opacity=0.25)
            parts: list = [Rect(X(c), Y(r), cell, cell_h, style)]
            if label_counts:
                size = min(10.0, cell * 0.7, cell_h * 0.45)
                parts.append(Text(X(c) + cell / 2, Y(r) + cell_h / 2 + size * 0.35, str(n),
                                  size=size, anchor="middle", opacity=0.9 if n else 0.35))
            items.append(Group(tuple(parts), title=f"element {_elem(r, c, data.shape)}: "
                               f"covered by {n} window{'s' if n != 1 else ''}"))
    items.append(Rect(X(0), Y(0), cols * cell, rows * cell_h,
                      Style(stroke=INK, stroke_width=1.5)))
    if sliced:
        (r0, r1), (c0, c1) = _rc(data.region)
        items.append(Group((Rect(X(c0) - 2, Y(r0) - 2, (c1 - c0) * cell + 4,
                                 (r1 - r0) * cell_h + 4,
                                 Style(stroke=INK, stroke_width=2, dash="6 3")),),
                           title=f"the slice: elements {data.region.describe()}"))
        items.append(Text(X(far_c) + 6, Y(r1) - 4, "← slice", size=10, bold=True))
    # column numbers well above the row, clear of the slice's dashed outline
    step = max(1, math.ceil(22 / cell))
    for c in range(0, cols, step):
        items.append(Text(X(c) + cell / 2, y0 - 8, str(c), size=8, anchor="middle",
                          opacity=0.6))
    if not one_d:
        for r in range(0, rows, max(1, math.ceil(12 / cell_h))):
            items.append(Text(x0 - 4, Y(r) + cell_h / 2 + 3, str(r), size=8, anchor="end",
                              opacity=0.6))
    colors = [palette.css_var(i) for i in range(len(palette.PALETTE_LIGHT))]
    shown = [w for w in data.windows if w.index in data.outlined][:MAX_OUTLINED]
    lane_y = Y(far_r) + 8
    if one_d:
        list_x, list_y = x0, lane_y + LANE * len(shown) + 18
    else:
        list_x, list_y = X(far_c) + (70 if sliced else 24), y0 + 10
    for k, w in enumerate(shown):
        color = colors[k % len(colors)]
        (r0, r1), (c0, c1) = _rc(w.box)
        name = f"tile {_tup(w.index)}" if w.index else f"box {k}"
        desc = f"{name} → elements {w.box.describe()}" + (f" ({w.label})" if w.label else "")
        cls = f"tl-hk {key_class(f'v{k}')}"
        win_style = Style(fill=color, fill_opacity=0.18, stroke=color, stroke_width=2.2)
        if one_d:  # its own lane under the elements it covers
            shape = Rect(X(c0), lane_y + LANE * k, (c1 - c0) * cell, LANE - 4, win_style)
        else:  # nested outlines stay distinguishable where windows overlap
            inset = min(1.5 + 2 * (k % 3), cell / 4)
            shape = Rect(X(c0) + inset, Y(r0) + inset, (c1 - c0) * cell - 2 * inset,
                         (r1 - r0) * cell_h - 2 * inset, win_style)
        items.append(Group((shape,), title=desc, css_class=cls))
        # the entry's first rect is its hover target: the whole line, invisible until hovered
        items.append(Group((Rect(list_x - 3, list_y + 18 * k - 13, text_width(desc, 10) + 26,
                                 17, Style(fill=INK, fill_opacity=0, stroke="none")),
                            Rect(list_x, list_y + 18 * k - 10, 14, 12,
                                 Style(fill=color, fill_opacity=0.5, stroke=color)),
                            Text(list_x + 20, list_y + 18 * k, desc, size=10)),
                           title=desc, css_class=cls))
    bottom = max(lane_y + LANE * len(shown), list_y + 18 * len(shown)) + 4
    if any(_rc(w.box)[0][1] > rows or _rc(w.box)[1][1] > cols for w in data.windows):
        items.append(Path((((X(cols), Y(0)), (X(cols), Y(far_r))),
                           ((X(0), Y(rows)), (X(far_c), Y(rows)))),
                          Style(stroke=INK, stroke_opacity=0.3, dash="2 2")))
        items.append(Text(PAD, bottom + 10, "windows reaching past the array edge read padding "
                          "there (dashed: the array's end)", size=10, opacity=0.75))
        bottom += 14
    width = max(X(far_c) + (60 if sliced else 0),
                *(t.x + text_width(t.text, t.size) for t in _texts(items)))
    scene = Scene(math.ceil(width + PAD), math.ceil(bottom + PAD), tuple(items),
                  label=data.title)
    return make_picture(data, scene, (f"v{k}" for k in range(len(shown))))


def _texts(items: Sequence) -> list[Text]:
    out: list[Text] = []
    for it in items:
        if isinstance(it, Text):
            out.append(it)
        elif isinstance(it, Group):
            out.extend(_texts(it.items))
    return out


def transposed_load(shape: Sequence[int], tile: Sequence[int], index: Sequence[int],
                    order: Sequence[int] | str = (1, 0)) -> Picture:
    """``ct.load(array, index, shape=tile, order=order)`` on a 2-D array: the array box it
    reads (left) and the tile it returns (right), every tile element labelled with the
    array element it came from; hovering either outlines both.

    Tile axis k runs along array axis ``order[k]``: with ``order=(1, 0)`` the tile is the
    transpose of the box, so ``tile[i, j] = array[r0 + j, c0 + i]``.
    """
    shp = int_tuple(shape, "shape")
    til = int_tuple(tile, "tile")
    idx = int_tuple(index, "index", allow_zero=True)
    perm = (1, 0) if order == "F" else (0, 1) if order == "C" else tuple(int(v) for v in order)
    if len(shp) != 2 or len(til) != 2 or len(idx) != 2 or sorted(perm) != [0, 1]:
        raise DiagramError("transposed_load draws 2-D loads: shape, tile, index of length 2 "
                           "and order a permutation of (0, 1)")
    start = [0, 0]
    size = [0, 0]
    for k, ax in enumerate(perm):
        start[ax], size[ax] = idx[k] * til[k], til[k]
    box = Box(tuple(start), tuple(s + n for s, n in zip(start, size)))
    cell = max(10.0, min(30.0, 360 / max(*shp, *til)))
    x0, y0 = PAD + 28, PAD + 58
    items: list = [
        Text(PAD, PAD + 13, f"ct.load(a, index={_tup(idx)}, shape={_tup(til)}, "
             f"order={_tup(perm)}) on a {_dims(shp)} array", size=12, bold=True),
        Text(PAD, PAD + 28, f"tile axis k runs along array axis order[k]: tile[i, j] = "
             f"a[{_axis_expr(perm, 0, start)}, {_axis_expr(perm, 1, start)}]", size=10),
        Text(x0, y0 - 16, "array a (box read)", size=10, bold=True)]
    label_ok = cell >= 22
    for r in range(shp[0]):
        for c in range(shp[1]):
            inb = box.start[0] <= r < box.stop[0] and box.start[1] <= c < box.stop[1]
            parts: list = [Rect(x0 + c * cell, y0 + r * cell, cell, cell, Style(
                fill="#0072B2" if inb else INK, fill_opacity=0.35 if inb else 0.04,
                stroke=INK, stroke_width=0.5, stroke_opacity=0.3))]
            if label_ok and inb:
                parts.append(Text(x0 + (c + 0.5) * cell, y0 + (r + 0.5) * cell + 3,
                                  f"{r},{c}", size=8, anchor="middle"))
            items.append(Group(tuple(parts), title=f"a[{r}, {c}]",
                               css_class=f"tl-hk {key_class(f'e{r}-{c}')}" if inb else None))
    tx = x0 + shp[1] * cell + 60
    items.append(Text(tx, y0 - 16, f"tile {_dims(til)} (returned)", size=10, bold=True))
    inv = [perm.index(ax) for ax in (0, 1)]  # tile axis of each array axis
    for i in range(til[0]):
        for j in range(til[1]):
            t = (i, j)
            r, c = start[0] + t[inv[0]], start[1] + t[inv[1]]
            parts = [Rect(tx + j * cell, y0 + i * cell, cell, cell, Style(
                fill="#E69F00", fill_opacity=0.35, stroke=INK, stroke_width=0.5,
                stroke_opacity=0.4))]
            if label_ok:
                parts.append(Text(tx + (j + 0.5) * cell, y0 + (i + 0.5) * cell + 3, f"{r},{c}",
                                  size=8, anchor="middle"))
            items.append(Group(tuple(parts), title=f"tile[{i}, {j}] = a[{r}, {c}]",
                               css_class=f"tl-hk {key_class(f'e{r}-{c}')}"))
    bottom = y0 + max(shp[0], til[0]) * cell + 18
    items.append(Text(PAD, bottom, "labels: the array element (row, col) each position holds;"
                      " hover one to find it on the other side", size=10, opacity=0.75))
    width = max(tx + til[1] * cell, *(t.x + text_width(t.text, t.size) for t in items
                                      if isinstance(t, Text)))
    keys = [f"e{r}-{c}" for r in range(box.start[0], box.stop[0])
            for c in range(box.start[1], box.stop[1])]
    scene = Scene(math.ceil(width + PAD), math.ceil(bottom + PAD), tuple(items),
                  label=items[0].text)
    return make_picture(box, scene, keys)


def _axis_expr(perm: tuple[int, ...], ax: int, start: Sequence[int]) -> str:
    sym = "ij"[perm.index(ax)]
    return f"{start[ax]} + {sym}" if start[ax] else sym


def _in(region: Box, r: int, c: int, nd: int) -> bool:
    (r0, r1), (c0, c1) = _rc(region)
    return r0 <= r < r1 and c0 <= c < c1 if nd == 2 else c0 <= c < c1


def _elem(r: int, c: int, shape: tuple[int, ...]) -> str:
    return f"({c})" if len(shape) == 1 else f"({r}, {c})"


def _tup(t: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, t)) + ("," if len(t) == 1 else "") + ")"


def _dims(t: Sequence[int]) -> str:
    return "×".join(map(str, t))
