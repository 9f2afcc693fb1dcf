"""Tile-space diagrams: which block touches which elements of each array, from which line.

``diagram(trace, ...)`` draws an emulator :class:`~tile_lab.tracing.trace.Trace`; ``partition(shape,
tile)`` draws a bare tile partition for teaching (the CUDA guide's Figure 19 is
``partition((10, 16), (2, 4), highlight=(1, 2))``).

Two steps, kept apart so tests can check numbers instead of SVG text:

1. *geometry* (``Diagram.geometry``, types in ``render/diagram_geometry.py``): plain frozen
   dataclasses — tile grids, footprints (in-bounds boxes, padded / discarded lanes), coverage
   heatmaps, tile visit orders — computed here from the trace indexed once
   (``tile_lab/tracing/index.py``).
2. *drawing* (``render/diagram_layout.py``): the geometry is laid out as a scene of
   primitives (``render/svg.py``) and written as deterministic SVG, or painted by
   matplotlib for ``to_png``.

Large arrays are drawn at tile granularity: no more than ``CELL_CAP`` cells per drawn
slice; element detail appears inside a ``zoom=(r0, r1, c0, c1)`` window.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentTypeError, DiagramError
from ..tracing.index import IndexedTrace
from ..tracing.trace import ArrayInfo, Block, MemoryAccess, Trace
from .diagram_args import check_args, check_block, check_lines, int_tuple
from .diagram_geometry import (
    CELL_CAP,
    MAX_SLICES,
    VIEWS,
    Box,
    Diagram,
    Footprint,
    Geometry,
    Heatmap,
    LegendEntry,
    Panel,
    TileGrid,
    TileVisit,
)
from .diagram_layout import draw
from .palette import line_css_colors
from .tma import TmaReport

__all__ = ["Box", "Diagram", "Footprint", "Geometry", "Heatmap", "Panel",
           "TileGrid", "TileVisit", "diagram", "partition"]


# ============================================================================================
# public entry points
# ============================================================================================

def diagram(trace: Trace | IndexedTrace, *, arg: str | Sequence[str] | None = None,
            block: int | Sequence[int] | None = None, iteration: int | None = None,
            line: int | Sequence[int] | None = None, view: str = "block",
            zoom: Sequence[int] | None = None, tma: TmaReport | None = None) -> Diagram:
    """Draw a trace's memory accesses in tile space.

    ``view="block"``: for one block (default the first) every array with its tile grids and
    the block's footprints, coloured by source line (loads filled, stores hatched outlines,
    padded load lanes dotted, discarded store lanes cross-hatched); a kernel with an ``mma``
    is laid out as the A / B / C trio. ``view="gemm"`` forces the trio. ``view="coverage"``:
    per array, how many blocks wrote / read each element (never-written and multiply-written
    elements called out). ``view="order"``: which block visits each tile, in what order.

    ``arg``/``line``/``iteration`` filter what is drawn; ``zoom=(r0, r1, c0, c1)`` (or
    ``(c0, c1)`` for 1-D, six numbers for 3-D) limits the drawn region of every array.
    ``tma=tile_lab.analysis.tma.tma_report(inspection)`` (an inspection of the same kernel
    source) marks each legend line "TMA" or "no TMA" with the reason.
    """
    if not isinstance(trace, (Trace, IndexedTrace)):
        raise ArgumentTypeError(
            f"tile_lab.diagram: argument 1 (trace) must be a tile_lab.Trace, got "
            f"{type(trace).__name__}", hint="t = tile_lab.trace(kernel, grid, args); "
                                            "tile_lab.diagram(t)")
    index = trace if isinstance(trace, IndexedTrace) else IndexedTrace(trace)
    t = index.trace
    if view not in VIEWS:
        raise DiagramError(f"view={view!r} is not a diagram view; choose one of {VIEWS}")
    args = check_args(t, arg)
    blk = check_block(t, block)
    if iteration is not None and (not isinstance(iteration, (int, np.integer)) or iteration < 0):
        raise DiagramError(f"iteration={iteration!r} must be a non-negative int (or None for all)")
    lines = check_lines(index, line)
    ask = _Ask(index, tuple(args), arg is not None, blk, iteration, lines, zoom)
    geometry = _VIEW_GEOMETRY[view](ask, view)
    if tma is not None and geometry.legend:
        geometry = dataclasses.replace(
            geometry, legend=tuple(_with_tma(e, tma, t) for e in geometry.legend))
    return _draw(geometry, index)


# ---- one geometry builder per view kind ----------------------------------------------------

_Windows = tuple[tuple[int, ...], tuple[int, ...]]  # IndexedTrace.window_steps: starts, steps

@dataclass(frozen=True)
class _Ask:
    """What ``diagram`` was asked to draw, checked: the indexed trace, the arrays, the block,
    the loop iteration, the source lines and the zoom window."""

    index: IndexedTrace
    args: tuple[str, ...]
    named: bool  # the caller named the arrays (arg=...)
    block: Block | None
    iteration: int | None
    lines: set[int] | None
    zoom: Sequence[int] | None


def _block_geometry(ask: _Ask, view: str) -> Geometry:
    """``view="block"`` / ``"gemm"``: one block's footprints in every array, coloured by
    line; a kernel with an ``mma`` (or ``view="gemm"``) laid out as the A / B / C trio."""
    index, t, args, notes = ask.index, ask.index.trace, list(ask.args), []
    layout, roles = "flow", {}
    if view == "gemm" or (not ask.named and index.uses_mma()):
        trio = index.gemm_roles()
        if trio is None and view == "gemm":
            names = ", ".join(f"{a.name}{list(a.shape)}" for a in t.arrays)
            raise DiagramError("view='gemm' needs a kernel that loads A[M, K] and B[K, N] and "
                               f"stores C[M, N]; this trace's arrays are: {names}")
        if trio is not None:
            layout = "gemm"
            roles = dict(zip(trio, "ABC"))
            args = list(trio) + [a for a in args if a not in trio]
    blk = t.blocks[0] if ask.block is None else ask.block
    held = _held_before_loop(index, blk, ask.iteration, notes)
    panels = []
    for name in args:
        found = _tile_grids(index, name, notes)
        if found is None:
            continue
        info, grids, windows = found
        accs = [a for a in index.by_block.get(blk, ()) if a.arg == name
                and (ask.iteration is None or a.iteration == ask.iteration or id(a) in held)
                and (ask.lines is None or a.line in ask.lines)]
        fps = tuple(_footprint(a, info.shape) for a in accs)
        panels.append(_panel(name, info.shape, info.dtype, grids, ask.zoom, footprints=fps,
                             role=roles.get(name),
                             poisoned=_poisoned(t, name, blk, ask.lines),
                             title=_array_title(name, info.shape, info.dtype, grids,
                                                roles.get(name)) + _windows_text(windows)))
    colors = line_css_colors(index.lines)
    legend = tuple(LegendEntry(ln, colors[ln], index.line_text(ln))
                   for ln in sorted({f.line for p in panels for f in p.footprints}))
    return _geometry(ask, view, panels, notes, block=blk, layout=layout, legend=legend)


def _coverage_geometry(ask: _Ask, view: str) -> Geometry:
    """``view="coverage"``: per array and kind (write, read), how many blocks touched each
    element; never-written and multiply-written elements called out."""
    index, panels, notes = ask.index, [], []
    for name in ask.args:
        found = _tile_grids(index, name, notes)
        if found is None:
            continue
        info, grids, _ = found
        for kind in ("write", "read"):
            if not index.has_kind(name, kind):
                continue
            p = _panel(name, info.shape, info.dtype, grids, ask.zoom, kind=kind, title="")
            hm = index.heatmap(name, kind, p.window)
            if hm is not None:
                panels.append(dataclasses.replace(
                    p, heatmap=hm, title=_coverage_title(name, kind, hm)))
    return _geometry(ask, view, panels, notes, block=None)


def _order_geometry(ask: _Ask, view: str) -> Geometry:
    """``view="order"``: which block visits each tile, in what order."""
    index, args, panels, notes = ask.index, list(ask.args), [], []
    if not ask.named:
        # the visit order matters for the tiles blocks produce; read-only inputs (a GEMM's
        # A and B, each tile read by many blocks) only when asked for or nothing is written
        args = [a for a in args if index.has_kind(a, "write")] or args
    for name in args:
        found = _tile_grids(index, name, notes)
        if found is None:
            continue
        info, grids, windows = found
        visits = index.visits(name) if windows is None else ()
        panels.append(_panel(name, info.shape, info.dtype, grids, ask.zoom, visits=visits,
                             title=_array_title(name, info.shape, info.dtype, grids, None)
                             + _windows_text(windows)))
    return _geometry(ask, view, panels, notes, block=ask.block)


_VIEW_GEOMETRY = {"block": _block_geometry, "gemm": _block_geometry,
                  "coverage": _coverage_geometry, "order": _order_geometry}
assert set(_VIEW_GEOMETRY) == set(VIEWS)


def _tile_grids(index: IndexedTrace, name: str, notes: list[str]
                ) -> tuple[ArrayInfo, tuple[TileGrid, ...], _Windows | None] | None:
    """The array ``name``'s info, tile grids and overlapping windows (None, noting why, for
    arrays not drawn)."""
    info = index.trace.array(name)
    if not 1 <= len(info.shape) <= 3:
        notes.append(f"{name}: {len(info.shape)}-D arrays are not drawn")
        return None
    grids = index.tile_grids(name)
    windows = index.window_steps(name)
    if windows is not None:  # a tile grid drawn over overlapping/offset windows would lie
        grids = ()
        notes.append(f"{name}: its boxes overlap or are offset (a tiled_view with "
                     "traversal_steps, or a slice): no tile grid drawn; "
                     f"tile_lab.render.views.windows_from_trace(trace, {name!r}) draws "
                     "them all")
    return info, grids, windows


def _geometry(ask: _Ask, view: str, panels: list[Panel], notes: list[str], *,
              block: Block | None, layout: str = "flow",
              legend: tuple[LegendEntry, ...] = ()) -> Geometry:
    if any(not p.element_detail for p in panels) and ask.zoom is None:
        notes.append("large arrays drawn at tile granularity: pass zoom=(r0, r1, c0, c1) "
                     "for element detail")
    t = ask.index.trace
    return Geometry(view=view, kernel=t.kernel, grid=t.grid, block=block,
                    iteration=ask.iteration,
                    lines=None if ask.lines is None else tuple(sorted(ask.lines)),
                    layout=layout, panels=tuple(panels), legend=legend, notes=tuple(notes))


def _held_before_loop(index: IndexedTrace, blk: Block | None, iteration: int | None,
                      notes: list[str]) -> set[int]:
    """With ``iteration=N``: the loads this block made once, before its loop reached
    iteration N (a Q tile held for the whole loop), so the picture shows what the block holds
    at that step, not only what it loads then. Ids of those accesses."""
    if iteration is None or blk is None:
        return set()
    accs = index.by_block.get(blk, ())
    loop_lines = {a.line for a in accs if a.iteration > 0}
    first = next((i for i, a in enumerate(accs)
                  if a.iteration == iteration and a.line in loop_lines), None)
    if first is None:
        return set()
    held = [a for a in accs[:first] if a.line not in loop_lines and not a.is_write]
    if held:
        what = ", ".join(sorted({f"{a.arg} (line {a.line})" for a in held}))
        notes.append(f"also drawn: {what}, loaded before the loop and held through "
                     f"iteration {iteration}")
    return {id(a) for a in held}


def _with_tma(entry: LegendEntry, tma: TmaReport | None, trace: Trace) -> LegendEntry:
    verdict = next((t for t in tma.lines if t.line == entry.line), None) if tma else None
    if verdict is None:
        return entry
    note = verdict.reason
    if not verdict.tma and "stride" in note:
        # the verdict may come from compiling another signature than the one traced (a
        # source comment may quote either): say what the traced array's stride is
        note += "".join(f"; traced {fact}" for fact in _row_strides(trace, entry.line))
    return dataclasses.replace(entry, tma=verdict.tma, tma_note=note)


def _row_strides(trace: Trace, line: int) -> list[str]:
    """``A: float16[256, 252], row stride 504 B`` for each array of ``line`` with more than
    one axis (a C-order array's row: the trace records shapes, not strides)."""
    names = sorted({a.arg for a in trace.accesses if a.line == line})
    out = []
    for info in (a for a in trace.arrays if a.name in names and len(a.shape) > 1):
        try:
            size = np.dtype(info.dtype).itemsize
        except TypeError:  # a dtype NumPy does not name (without ml_dtypes loaded)
            continue
        row = int(np.prod(info.shape[1:])) * size
        out.append(f"{info.name}: {info.dtype}[{', '.join(map(str, info.shape))}], "
                   f"row stride {row} B if C-ordered")
    return out


def partition(shape: Sequence[int], tile: Sequence[int],
              highlight: Sequence[int] | Sequence[Sequence[int]] | None = None, *,
              zoom: Sequence[int] | None = None) -> Diagram:
    """A bare tile partition for teaching: ``shape`` cut into ``tile``-shaped tiles, each
    labelled with its tile-space index, ``highlight`` (one tile index or a list) filled.

    ``partition((10, 16), (2, 4), highlight=(1, 2))`` is the CUDA guide's Figure 19.
    """
    shp = int_tuple(shape, "shape")
    til = int_tuple(tile, "tile")
    if not 1 <= len(shp) <= 3:
        raise DiagramError(f"shape={tuple(shape)!r}: partition draws 1-D to 3-D arrays")
    if len(til) != len(shp):
        raise DiagramError(f"tile={tuple(tile)!r} has {len(til)} dims but shape={shp} has "
                           f"{len(shp)}")
    grid = TileGrid.of(shp, til)
    tiles: list[tuple[int, ...]] = []
    if highlight is not None:
        items = ([highlight] if all(isinstance(v, (int, np.integer)) for v in highlight)
                 else list(highlight))
        for h in items:
            idx = int_tuple(h, "highlight", allow_zero=True)
            if len(idx) != len(shp) or any(not 0 <= i < g for i, g in zip(idx, grid.grid)):
                raise DiagramError(f"highlight={tuple(h)!r} is not a tile of the {_dims(grid.grid)}"
                                   f" tile grid (indices run from 0 to grid - 1 on each axis)")
            tiles.append(idx)
    title = (f"{_dims(shp)} array in {_dims(til)} tiles → {_dims(grid.grid)} tile grid")
    panel = _panel("array", shp, "", (grid,), zoom, title=title, highlight=tuple(tiles))
    geometry = Geometry(view="partition", kernel="", grid=(1, 1, 1), block=None, iteration=None,
                        lines=None, layout="flow", panels=(panel,))
    return _draw(geometry, None)


# ============================================================================================
# geometry helpers
# ============================================================================================

def _panel(name: str, shape: tuple[int, ...], dtype: str, grids: tuple[TileGrid, ...],
           zoom: Sequence[int] | None, **kw) -> Panel:
    nd = len(shape)
    # the drawn region: the array, the padded tile extents, and any box reaching further
    lo = [0] * nd
    hi = list(shape)
    for g in grids:
        hi = [max(h, p) for h, p in zip(hi, g.padded_shape)]
    for f in kw.get("footprints", ()):
        for b in f.inside + f.outside:
            lo = [max(min(v, s), -n) for v, s, n in zip(lo, b.start, shape)]
            hi = [min(max(v, e), 2 * n) for v, e, n in zip(hi, b.stop, shape)]
    window = Box(tuple(lo), tuple(hi))
    if zoom is not None:
        window = _apply_zoom(window, zoom, name)
    z_range = range(window.start[0], window.stop[0]) if nd == 3 else range(0, 1)
    fps = kw.get("footprints", ())
    # a 3-D array is drawn as up to MAX_SLICES 2-D slices: those the footprints touch
    # first, then the others in order
    touched = sorted({z for f in fps for b in f.inside + f.outside
                      for z in range(b.start[0], b.stop[0]) if z in z_range}) if nd == 3 else []
    rest = [z for z in z_range if z not in touched]
    slices = tuple(sorted((touched + rest)[:MAX_SLICES]))
    rows = window.stop[-2] - window.start[-2] if nd >= 2 else 1
    cols = window.stop[-1] - window.start[-1]
    return Panel(arg=name, shape=shape, dtype=dtype, window=window,
                 element_detail=rows * cols <= CELL_CAP, slices=slices, tile_grids=grids, **kw)


def _apply_zoom(window: Box, zoom: Sequence[int], name: str) -> Box:
    z = int_tuple(zoom, "zoom", allow_zero=True, allow_negative=True)
    nd = len(window.start)
    want = 2 * min(nd, 2) if len(z) != 2 * nd else 2 * nd
    if len(z) != want or any(z[i] >= z[i + 1] for i in range(0, len(z), 2)):
        raise DiagramError(f"zoom={tuple(zoom)!r}: give (r0, r1, c0, c1) for 2-D/3-D arrays, "
                           f"(c0, c1) for 1-D, or (z0, z1, r0, r1, c0, c1) for 3-D, each lo < hi")
    pairs = [(z[i], z[i + 1]) for i in range(0, len(z), 2)]
    pairs = [(a, b) for a, b in zip(window.start, window.stop)][: nd - len(pairs)] + pairs
    zoomed = window.intersect(Box(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)))
    if zoomed is None:
        raise DiagramError(f"zoom={tuple(zoom)!r} lies outside {name!r} "
                           f"(drawn region {window.describe()})")
    return zoomed


def _footprint(a: MemoryAccess, shape: tuple[int, ...]) -> Footprint:
    approx = False
    if a.is_box:
        full = Box(tuple(a.box_start), tuple(a.box_stop))  # type: ignore[arg-type]
        inside_box = full.intersect(Box(tuple(0 for _ in shape), shape))
        inside = (inside_box,) if inside_box else ()
        outside = full.minus(inside_box)
    else:
        inside, approx = _runs(a.flat_indices, shape)
        outside = ()
    return Footprint(seq=a.seq, block=a.block, kind=a.kind, op=a.op, line=a.line,
                     iteration=a.iteration, tile_index=a.tile_index, tile_shape=a.tile_shape,
                     inside=inside, outside=outside,
                     out_of_bounds=0 if a.is_box else a.out_of_bounds, approximate=approx,
                     undetermined=a.kind == "load" and a.padding == "UNDETERMINED"
                     and bool(outside))


def _poisoned(t: Trace, name: str, block: Block | None, lines: set[int] | None
              ) -> tuple[tuple[Box, str], ...]:
    """Boxes of ``name`` that ``block`` wrote undetermined values to (Trace.undetermined)."""
    out = []
    for u in t.undetermined:
        if u.arg != name or u.block != block or (lines is not None and u.line not in lines):
            continue
        mixed = f", mixed in by ct.{u.mix_op} at line {u.mix_line}" if u.mix_line else ""
        out.append((Box(tuple(u.box_start), tuple(u.box_stop)),
                    f"{u.elements} element{'s' if u.elements != 1 else ''} written with "
                    f"undetermined values by line {u.line}: padding of the {u.load_op} of "
                    f"{u.load_arg} at line {u.load_line}{mixed}"))
    return tuple(out)


def _runs(flat: np.ndarray | None, shape: tuple[int, ...]) -> tuple[tuple[Box, ...], bool]:
    """Gathered elements as boxes: runs of consecutive elements along the last axis,
    or coarse cells when there would be more than CELL_CAP runs."""
    if flat is None or flat.size == 0:
        return (), False
    flat = np.unique(flat.astype(np.int64))
    n_last = shape[-1]
    breaks = np.flatnonzero((np.diff(flat) != 1) | (flat[1:] % n_last == 0)) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [flat.size]))
    if starts.size <= CELL_CAP:
        out = []
        for s, e in zip(starts, stops):
            first = np.unravel_index(int(flat[s]), shape)
            last = int(flat[e - 1]) % n_last
            begin = tuple(int(v) for v in first)
            out.append(Box(begin, (*(v + 1 for v in begin[:-1]), last + 1)))
        return tuple(out), False
    cell = [max(1, -(-n // 64)) for n in shape]
    coords = np.stack(np.unravel_index(flat, shape), axis=1) // np.array(cell)
    boxes = []
    for c in np.unique(coords, axis=0):
        start = tuple(int(v * k) for v, k in zip(c, cell))
        boxes.append(Box(start, tuple(min(s + k, n) for s, k, n in zip(start, cell, shape))))
    return tuple(boxes), True




def _coverage_title(name: str, kind: str, hm: Heatmap) -> str:
    if kind == "read":
        return f"{name}: blocks reading each element"
    if hm.uncovered == 0 and hm.overlapped == 0:
        return f"{name}: blocks writing each element — every element exactly once ✓"
    parts = []
    if hm.uncovered:
        parts.append(f"{hm.uncovered} never written")
    if hm.overlapped:
        parts.append(f"{hm.overlapped} written by 2+ blocks")
    return f"{name}: blocks writing each element — " + ", ".join(parts)


def _array_title(name: str, shape: tuple[int, ...], dtype: str, grids: tuple[TileGrid, ...],
                 role: str | None) -> str:
    head = f"{role} = " if role else ""
    head += f"{name}: {dtype}[{', '.join(map(str, shape))}]"
    if grids:
        g = grids[0]
        head += f", tiles {_dims(g.tile)} → grid {_dims(g.grid)}"
        if len(grids) > 1:
            head += f" (+{len(grids) - 1} more tile shape{'s' if len(grids) > 2 else ''})"
    return head


def _windows_text(windows: tuple[tuple[int, ...], tuple[int, ...]] | None) -> str:
    if windows is None:
        return ""
    tile, steps = windows
    kind = " (overlapping)" if any(s < t for s, t in zip(steps, tile)) else ""
    return f", {_dims(tile)} windows every {_dims(steps)}{kind}"


def _dims(t: Sequence[int]) -> str:
    return "×".join(str(int(v)) for v in t)


def _draw(geometry: Geometry, index: IndexedTrace | None) -> Diagram:
    return draw(geometry, index)
