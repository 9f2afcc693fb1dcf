"""Tile-space diagrams: geometry (the numbers the SVG is drawn from), SVG properties, PNG.

Traces are built by hand here so every expected element set is exact and known; tests on
traces from the real emulator are at the end (skipped while the emulator cannot run them).
"""

from __future__ import annotations

import itertools
import json
import re
import xml.etree.ElementTree as ET

import cuda.tile as ct
import numpy as np
import pytest
from fixture_files import fixture_text

import tile_lab
from tile_lab.errors import DiagramError, TileLabError
from tile_lab.render.diagram import CELL_CAP, Box, diagram, partition
from tile_lab.tracing.index import IndexedTrace
from tile_lab.tracing.trace import ArrayInfo, MemoryAccess, Trace

SVG_NS = "{http://www.w3.org/2000/svg}"


# ---- building traces by hand ----------------------------------------------------------------

def make_trace(kernel, grid, arrays, body, source=""):
    """``body(block)`` yields (kind, arg, line, iteration, tile_index, tile_shape) or
    (kind, arg, line, iteration, flat_indices) per memory op of that block."""
    grid3 = tuple(grid) + (1,) * (3 - len(grid))
    accesses = []
    for z, y, x in itertools.product(*(range(g) for g in reversed(grid3))):
        block = (x, y, z)
        for op in body(block):
            kind, arg, line, it = op[:4]
            common = dict(seq=len(accesses), block=block, kind=kind, op=kind, arg=arg,
                          line=line, iteration=it)
            if len(op) == 6:
                tidx, tshape = op[4], op[5]
                start = tuple(i * t for i, t in zip(tidx, tshape))
                accesses.append(MemoryAccess(
                    **common, tile_index=tidx, tile_shape=tshape, box_start=start,
                    box_stop=tuple(s + t for s, t in zip(start, tshape))))
            else:
                accesses.append(MemoryAccess(**common,
                                             flat_indices=np.asarray(op[4], dtype=np.int64)))
    return Trace(kernel=kernel, grid=grid3,
                 arrays=tuple(ArrayInfo(n, s, "float32") for n, s in arrays),
                 accesses=tuple(accesses), source=source, first_line=1)


def elems(rows, cols):
    return set(itertools.product(rows, cols))


COPY_SRC = """@ct.kernel
def copy(a, c):
    bx = ct.bid(0)
    by = ct.bid(1)
    t = ct.load(a, index=(bx, by), shape=(4, 4))
    ct.store(c, index=(bx, by), tile=t)
"""


def ragged_copy(shape=(10, 7), tile=(4, 4)):
    grid = tuple(-(-n // t) for n, t in zip(shape, tile))
    return make_trace("copy", grid, [("a", shape), ("c", shape)], lambda b: [
        ("load", "a", 5, 0, b[:2], tile), ("store", "c", 6, 0, b[:2], tile)], COPY_SRC)


GEMM_SRC = """@ct.kernel
def gemm(a, b, c):
    bx = ct.bid(0)
    by = ct.bid(1)
    acc = ct.full((4, 4), 0, dtype=ct.float32)
    for k in range(2):
        ta = ct.load(a, index=(bx, k), shape=(4, 8))
        tb = ct.load(b, index=(k, by), shape=(8, 4))
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bx, by), tile=acc)
"""


def gemm_trace():
    # C[8, 12] = A[8, 16] @ B[16, 12] in 4×4 output tiles, K in steps of 8: grid (2, 3)
    def body(b):
        bx, by = b[0], b[1]
        for k in range(2):
            yield ("load", "a", 7, k, (bx, k), (4, 8))
            yield ("load", "b", 8, k, (k, by), (8, 4))
        yield ("store", "c", 10, 0, (bx, by), (4, 4))

    return make_trace("gemm", (2, 3), [("a", (8, 16)), ("b", (16, 12)), ("c", (8, 12))],
                      body, GEMM_SRC)


def persistent_trace(n_blocks=3, tiles=(4, 4), tile=(4, 4)):
    """A persistent loop: block b stores output tiles t = b, b + G, b + 2G, ..."""
    n_tiles = tiles[0] * tiles[1]

    def body(b):
        for i, t in enumerate(range(b[0], n_tiles, n_blocks)):
            yield ("store", "c", 9, i, (t // tiles[1], t % tiles[1]), tile)

    shape = (tiles[0] * tile[0], tiles[1] * tile[1])
    return make_trace("persistent", (n_blocks,), [("c", shape)], body, "")


def svg_root(d):
    return ET.fromstring(d.svg)


# ---- Figure 19 --------------------------------------------------------------------------------

def test_partition_reproduces_figure_19():
    d = partition((10, 16), (2, 4), highlight=(1, 2))
    p = d.geometry.panels[0]
    (g,) = p.tile_grids
    assert g.grid == (5, 4)
    assert p.highlight == ((1, 2),)
    (box,) = p.highlight_boxes()
    assert box == Box((2, 8), (4, 12))
    assert box.elements() == elems(range(2, 4), range(8, 12))
    assert p.padding_area() == ()  # 10×16 divides evenly
    # every tile labelled with its tile-space index, the highlight described in elements
    texts = [t.text for t in svg_root(d).iter(f"{SVG_NS}text")]
    for i, j in itertools.product(range(5), range(4)):
        assert f"({i},{j})" in texts
    assert "tile (1, 2) covers elements (2, 8)–(3, 11)" in texts


def test_partition_is_exported_and_validates_arguments():
    assert tile_lab.partition is partition and tile_lab.diagram is diagram
    with pytest.raises(DiagramError, match=r"highlight=\(5, 0\).*5×4"):
        partition((10, 16), (2, 4), highlight=(5, 0))
    with pytest.raises(DiagramError, match=r"tile=.*1 dims"):
        partition((10, 16), (2,))
    with pytest.raises(DiagramError, match="shape="):
        partition((10, 0), (2, 4))
    assert issubclass(DiagramError, TileLabError)


def test_partition_ragged_and_multiple_highlights():
    d = partition((10, 7), (4, 4), highlight=[(0, 0), (2, 1)])
    p = d.geometry.panels[0]
    assert p.tile_grids[0].grid == (3, 2)
    assert p.tile_grids[0].padded_shape == (12, 8)
    padded = set().union(*(b.elements() for b in p.padding_area()))
    assert padded == elems(range(12), range(8)) - elems(range(10), range(7))
    assert [b.elements() for b in p.highlight_boxes()][1] == elems(range(8, 12), range(4, 8))


# ---- block view: footprints, padding, discarded lanes ------------------------------------------

def test_ragged_block_padding_and_discarded_lanes_are_exact():
    t = ragged_copy()
    d = diagram(t, block=(2, 1))
    a, c = d.geometry.panel("a"), d.geometry.panel("c")
    assert a.tile_grids[0].grid == (3, 2)
    outside = elems(range(8, 12), range(4, 8)) - elems(range(10), range(7))
    assert outside == elems(range(10, 12), range(4, 8)) | elems(range(8, 10), [7])
    assert a.padded_elements() == outside
    assert a.discarded_elements() == set()
    assert c.discarded_elements() == outside
    assert c.padded_elements() == set()
    assert a.touched_elements() == elems(range(8, 10), range(4, 7))
    assert c.touched_elements("write") == elems(range(8, 10), range(4, 7))
    # an interior block has no padded or discarded lanes
    inner = diagram(t, block=(0, 0)).geometry.panel("a")
    assert inner.padded_elements() == set()
    assert inner.touched_elements() == elems(range(4), range(4))


def test_footprints_colour_by_line_and_tooltips_name_line_op_block_iteration():
    d = diagram(ragged_copy(), block=(1, 0))
    titles = [t.text for t in svg_root(d).iter(f"{SVG_NS}title")]
    load_tip = next(t for t in titles if t.startswith("line 5"))
    assert "t = ct.load(a, index=(bx, by), shape=(4, 4))" in load_tip
    assert "load (load) of a by block (1, 0), iteration 0" in load_tip
    assert "16 elements in bounds: (4, 0)–(7, 3)" in load_tip
    store_tip = next(t for t in titles if t.startswith("line 6"))
    assert "store (store) of c" in store_tip
    # loads are filled, stores hatched: different styles, each in its line's colour
    legend = {e.line: e.color for e in d.geometry.legend}
    assert set(legend) == {5, 6} and legend[5] != legend[6]
    fp_groups = [g for g in svg_root(d).iter(f"{SVG_NS}g") if g.get("class") == "tl-fp"]
    assert len(fp_groups) == 2
    styles = [[r.get("style") for r in g.iter(f"{SVG_NS}rect")] for g in fp_groups]
    assert legend[5] in styles[0][0] and "url(#" not in "".join(styles[0])
    assert legend[6] in styles[1][0] and any("url(#" in s for s in styles[1])


def test_an_iteration_also_shows_the_tile_held_since_before_the_loop():
    # flash attention's shape: Q loaded once (line 3), K and V tile j at iteration j (lines
    # 5, 6), O stored after the loop (line 8)
    def body(b):
        yield ("load", "Q", 3, 0, (b[0], 0), (2, 4))
        for j in range(3):
            yield ("load", "K", 5, j, (j, 0), (2, 4))
            yield ("load", "V", 6, j, (j, 0), (2, 4))
        yield ("store", "O", 8, 0, (b[0], 0), (2, 4))

    t = make_trace("attn", (2,), [("Q", (4, 4)), ("K", (6, 4)), ("V", (6, 4)),
                                  ("O", (4, 4))], body)
    d = diagram(t, block=(1,), iteration=2)
    assert [f.tile_index for f in d.geometry.panel("Q").footprints] == [(1, 0)]
    assert [f.tile_index for f in d.geometry.panel("K").footprints] == [(2, 0)]
    assert d.geometry.panel("O").footprints == ()  # stored after the loop: not yet
    assert any("Q (line 3), loaded before the loop and held through iteration 2" in n
               for n in d.geometry.notes)


def test_block_filters_iteration_and_line():
    t = gemm_trace()
    d = diagram(t, block=(1, 2), iteration=1, view="gemm")
    a = d.geometry.panel("a")
    assert [f.tile_index for f in a.footprints] == [(1, 1)]
    assert d.geometry.panel("c").footprints == ()  # the store is iteration 0 of line 10
    d = diagram(t, block=(1, 2), line=8)
    assert d.geometry.panel("a").footprints == ()
    assert [f.tile_index for f in d.geometry.panel("b").footprints] == [(0, 2), (1, 2)]
    assert d.geometry.lines == (8,)


def test_bad_arguments_raise_clear_errors():
    t = ragged_copy()
    with pytest.raises(DiagramError, match=r"block=\(3, 0\) is outside the launch grid "
                                           r"\(3, 2, 1\)"):
        diagram(t, block=(3, 0))
    with pytest.raises(DiagramError, match=r"arg='x' is not an array argument of copy.*a, c"):
        diagram(t, arg="x")
    with pytest.raises(DiagramError, match=r"line=99.*lines with memory operations: 5, 6"):
        diagram(t, line=99)
    with pytest.raises(DiagramError, match="view='heat'"):
        diagram(t, view="heat")
    with pytest.raises(DiagramError, match="view='gemm' needs"):
        diagram(t, view="gemm")
    with pytest.raises(DiagramError, match="iteration=-1"):
        diagram(t, iteration=-1)
    with pytest.raises(DiagramError, match="zoom="):
        diagram(t, zoom=(5, 2, 0, 3))


# ---- GEMM trio --------------------------------------------------------------------------------

@pytest.mark.parametrize("block", [(0, 0), (1, 2), (0, 1)])
def test_gemm_block_reads_a_row_panel_and_b_column_panel_for_every_k(block):
    bx, by = block
    d = diagram(gemm_trace(), block=block)  # mma in the source: the trio automatically
    g = d.geometry
    assert g.layout == "gemm"
    roles = {p.role: p for p in g.panels}
    a, b, c = roles["A"], roles["B"], roles["C"]
    assert (a.arg, b.arg, c.arg) == ("a", "b", "c")
    assert sorted((f.iteration, f.tile_index) for f in a.footprints) == [(0, (bx, 0)),
                                                                         (1, (bx, 1))]
    assert sorted((f.iteration, f.tile_index) for f in b.footprints) == [(0, (0, by)),
                                                                         (1, (1, by))]
    assert a.touched_elements() == elems(range(4 * bx, 4 * bx + 4), range(16))  # row panel
    assert b.touched_elements() == elems(range(16), range(4 * by, 4 * by + 4))  # column panel
    assert c.touched_elements("write") == elems(range(4 * bx, 4 * bx + 4),
                                                 range(4 * by, 4 * by + 4))
    # the panels line up: C's rows with A's rows, C's columns with B's columns
    assert d.element_xy("c", (5, 0))[1] == d.element_xy("a", (5, 0))[1]
    assert d.element_xy("c", (0, 7))[0] == d.element_xy("b", (0, 7))[0]


def test_gemm_view_not_forced_when_one_array_is_asked_for():
    d = diagram(gemm_trace(), block=(0, 0), arg="a")
    assert d.geometry.layout == "flow"
    assert [p.arg for p in d.geometry.panels] == ["a"]


# ---- all-blocks views ---------------------------------------------------------------------------

def test_coverage_exactly_once_for_a_correct_kernel():
    d = diagram(ragged_copy(), view="coverage")
    hm = d.geometry.panel("c", "write").heatmap
    assert hm.exact and hm.uncovered == 0 and hm.overlapped == 0
    assert all(hm.count((r, c)) == 1 for r in range(10) for c in range(7))
    assert "every element exactly once" in d.geometry.panel("c", "write").title
    assert d.geometry.panel("a", "read").heatmap.count((9, 6)) == 1


def test_coverage_legend_names_the_dotted_band_past_a_ragged_edge():
    # the dotted area outside the array (notebook 02) was drawn but not in the legend
    ragged = diagram(ragged_copy(), view="coverage")
    assert ragged.geometry.panel("c", "write").padding_area()
    assert ">tile extent beyond the array</text>" in ragged.svg
    assert ">tile extent beyond the array</text>" in diagram(ragged_copy(), view="order").svg

    def body(b):
        yield ("store", "c", 6, 0, b[:1], (4,))

    even = diagram(make_trace("even", (2,), [("c", (8,))], body), view="coverage")
    assert "tile extent beyond the array" not in even.svg


def test_coverage_calls_out_double_writes_and_uncovered_elements():
    # seeded bugs: block (1, 0) also stores block (0, 0)'s tile; the grid misses column tile 1
    def body(b):
        yield ("store", "c", 6, 0, b[:2], (4, 4))
        if b[:2] == (1, 0):
            yield ("store", "c", 7, 0, (0, 0), (4, 4))

    t = make_trace("buggy", (2, 1), [("c", (8, 8))], body, COPY_SRC)
    d = diagram(t, view="coverage")
    p = d.geometry.panel("c", "write")
    hm = p.heatmap
    assert hm.overlapped_elements() == elems(range(4), range(4))
    assert hm.uncovered_elements() == elems(range(8), range(4, 8))
    assert (hm.uncovered, hm.overlapped) == (32, 16)
    assert hm.count((0, 0)) == 2 and hm.count((5, 1)) == 1 and hm.count((2, 6)) == 0
    assert p.title == "c: blocks writing each element — 32 never written, 16 written by 2+ blocks"
    titles = [x.text for x in svg_root(d).iter(f"{SVG_NS}title")]
    assert "elements (0, 0)–(3, 3): written by 2 blocks" in titles
    assert "elements (0, 4)–(7, 7): written by 0 blocks" in titles  # merged into one box
    assert "elements (4, 0)–(7, 3): written by 1 block" in titles


def test_coverage_count_labels_sit_inside_tiles_never_on_a_boundary():
    # four blocks each write the whole 32-element array in 8-element tiles: one merged cell
    # of count 4 across four tiles, labelled once per tile at the tile's centre
    def body(b):
        for j in range(4):
            yield ("store", "out", 5, j, (j,), (8,))

    d = diagram(make_trace("sums", (4,), [("out", (32,))], body), view="coverage")
    root = svg_root(d)
    grid_x = set()
    for g in root.iter(f"{SVG_NS}g"):
        title = g.find(f"{SVG_NS}title")
        if title is not None and title.text.startswith("tile boundaries"):
            d_attr = g.find(f"{SVG_NS}path").get("d")
            grid_x |= {round(float(x), 1) for x in re.findall(r"M([\d.]+) ", d_attr)}
    assert len(grid_x) >= 5  # the tile boundaries at 0, 8, 16, 24, 32
    fours = [t for t in root.iter(f"{SVG_NS}text") if t.text == "4"]
    assert len(fours) == 4
    xs = sorted(round(float(t.get("x")), 1) for t in fours)
    assert not set(xs) & grid_x  # no label on a tile boundary
    assert all(b - a > 1 for a, b in itertools.pairwise(xs))


def test_coverage_counts_distinct_blocks_not_repeated_writes():
    def body(b):  # one block writing the same tile in two iterations is one writer
        yield ("store", "c", 6, 0, (b[0],), (4,))
        yield ("store", "c", 6, 1, (b[0],), (4,))

    hm = diagram(make_trace("twice", (2,), [("c", (8,))], body), view="coverage").geometry \
        .panel("c").heatmap
    assert hm.overlapped == 0 and hm.uncovered == 0


def test_order_view_shows_persistent_visit_order():
    t = persistent_trace()
    d = diagram(t, view="order", block=(1,))
    p = d.geometry.panel("c")
    vm = p.visit_map()
    assert len(vm) == 16
    for tile_id in range(16):
        tidx = (tile_id // 4, tile_id % 4)
        assert vm[tidx] == [((tile_id % 3, 0, 0), tile_id // 3)]
    # ranks follow waves: every block's iteration 0 before any iteration 1
    first_wave = sorted((v.rank, v.tile_index) for v in p.visits if v.iteration == 0)
    assert [ti for _, ti in first_wave] == [(0, 0), (0, 1), (0, 2)]
    # the selected block's path: tiles 1, 4, 7, 10, 13 in order
    paths = [g for g in svg_root(d).iter(f"{SVG_NS}g")
             if (g.findtext(f"{SVG_NS}title") or "").startswith("block (1,): 5 tiles")]
    assert len(paths) == 1
    labels = {x.text for x in svg_root(d).iter(f"{SVG_NS}text")}
    assert {"b0·0", "b1·1", "b2·1"} <= labels


def test_order_view_of_a_swizzled_mapping():
    # grouped order: block id n covers tile (n % 2 + 2 * (n // 8), (n // 2) % 4)
    def body(b):
        n = b[0]
        yield ("store", "c", 5, 0, (n % 2 + 2 * (n // 8), (n // 2) % 4), (2, 2))

    p = diagram(make_trace("swz", (16,), [("c", (8, 8))], body), view="order") \
        .geometry.panel("c")
    vm = p.visit_map()
    assert vm[(1, 0)] == [((1, 0, 0), 0)]
    assert vm[(0, 1)] == [((2, 0, 0), 0)]
    assert vm[(2, 0)] == [((8, 0, 0), 0)]


# ---- scale: 1-D, 3-D, large arrays, gathers, zoom ---------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_compressed_coverage_equals_per_element_coverage(seed):
    """Coordinate-compressed heatmaps (and the merged rectangles drawn from them) agree
    with Trace.coverage element by element, for ragged tiles, boxes partly outside the
    array, mixed tile shapes, and blocks touching the same elements twice."""
    from tile_lab.render.diagram_cells import _merged_cells

    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(5, 20)), int(rng.integers(5, 20)))
    tiles = [(int(rng.integers(1, 6)), int(rng.integers(1, 6))) for _ in range(2)]

    def body(b):
        for i in range(int(rng.integers(1, 4))):
            tile = tiles[int(rng.integers(0, 2))]
            idx = tuple(int(rng.integers(0, -(-n // t) + 1)) for n, t in zip(shape, tile))
            yield ("store" if i % 2 == 0 else "load", "x", 3 + i % 2, i, idx, tile)

    t = make_trace("fuzz", (4, 3), [("x", shape)], body)
    for kind in ("write", "read"):
        want = t.coverage("x", kind)
        if not want.any():
            continue
        hm = IndexedTrace(t).heatmap("x", kind)
        assert hm.exact
        got = np.array([[hm.count((r, c)) for c in range(shape[1])] for r in range(shape[0])])
        np.testing.assert_array_equal(got, want)
        assert hm.uncovered == int((want == 0).sum()) and hm.overlapped == int((want > 1).sum())
        drawn = np.full(shape, -1)
        for box, lo, hi in _merged_cells(hm):
            assert lo == hi
            region = drawn[box.start[0]:box.stop[0], box.start[1]:box.stop[1]]
            assert (region == -1).all()  # merged rectangles never overlap
            region[...] = lo
        np.testing.assert_array_equal(drawn, want)  # ... and tile the array exactly


def test_one_d_array():
    t = make_trace("vadd", (3,), [("x", (10,)), ("y", (10,))], lambda b: [
        ("load", "x", 3, 0, (b[0],), (4,)), ("store", "y", 4, 0, (b[0],), (4,))])
    p = diagram(t, block=(2,)).geometry.panel("y")
    assert p.tile_grids[0].grid == (3,)
    assert p.discarded_elements() == {(10,), (11,)}
    assert p.touched_elements() == {(8,), (9,)}
    ET.fromstring(diagram(t, block=2).svg)  # an int block id is fine for a 1-D grid


def test_three_d_array_drawn_as_slices():
    t = make_trace("batched", (2, 2, 3), [("x", (3, 4, 4))], lambda b: [
        ("load", "x", 3, 0, (b[2], b[1], b[0]), (1, 2, 2))])
    d = diagram(t, block=(1, 0, 2))
    p = d.geometry.panel("x")
    assert p.touched_elements() == {(2, r, c) for r in range(2) for c in range(2, 4)}
    assert p.slices == (0, 1, 2)  # few enough slices: all drawn
    assert {"[0]", "[1]", "[2]"} <= {x.text for x in svg_root(d).iter(f"{SVG_NS}text")}
    # many slices: the ones the block touched are always among those drawn
    t = make_trace("deep", (1, 1, 10), [("x", (10, 2, 2))], lambda b: [
        ("load", "x", 3, 0, (b[2], 0, 0), (1, 2, 2))])
    p = diagram(t, block=(0, 0, 9)).geometry.panel("x")
    assert 9 in p.slices and len(p.slices) == 4
    assert p.touched_elements() == {(9, r, c) for r in range(2) for c in range(2)}
    d_cov = diagram(t, view="coverage")
    assert d_cov.geometry.panel("x").heatmap.uncovered == 0


def test_large_array_is_drawn_at_tile_granularity():
    n, tile = 8192, 128
    g = n // tile
    t = make_trace("big_add", (g, g), [("a", (n, n)), ("c", (n, n))], lambda b: [
        ("load", "a", 5, 0, b[:2], (tile, tile)), ("store", "c", 6, 0, b[:2], (tile, tile))])
    d = diagram(t, block=(3, 5))
    assert not d.geometry.panel("a").element_detail
    assert len(re.findall("<(?:rect|text|path)", d.svg)) < CELL_CAP
    assert any("zoom=" in note for note in d.geometry.notes)
    cov = diagram(t, view="coverage")
    hm = cov.geometry.panel("c", "write").heatmap
    assert hm.uncovered == 0 and hm.overlapped == 0
    assert len(hm.counts_min) <= CELL_CAP
    assert len(re.findall("<rect", cov.svg)) < 3 * CELL_CAP
    z = diagram(t, block=(0, 0), zoom=(0, 64, 96, 160))
    p = z.geometry.panel("a")
    assert p.element_detail and p.window == Box((0, 96), (64, 160))


def test_zoomed_heatmap_is_exact_where_the_full_one_merges_cells():
    n = 200  # 200 column tiles of width 1: more cells than the cap per axis allows
    t = make_trace("cols", (n,), [("c", (4, n))], lambda b: [
        ("store", "c", 3, 0, (0, b[0]), (4, 1))] + ([("store", "c", 4, 0, (0, 7), (4, 1))]
                                                   if b[0] == 150 else []))
    full = diagram(t, view="coverage").geometry.panel("c").heatmap
    assert not full.exact and full.overlapped == 4
    with pytest.raises(DiagramError, match="merged"):
        full.overlapped_elements()
    zoomed = diagram(t, view="coverage", zoom=(0, 4, 0, 16)).geometry.panel("c").heatmap
    assert zoomed.exact
    assert zoomed.overlapped_elements() == elems(range(4), [7])


def test_gather_footprint_runs():
    flat = [0, 1, 2, 9, 10, 17]  # (0,0)-(0,2), (1,1)-(1,2), (2,1) in an 8-wide array
    t = make_trace("g", (1,), [("x", (4, 8))], lambda b: [("gather", "x", 3, 0, flat)])
    (f,) = diagram(t).geometry.panel("x").footprints
    assert f.inside == (Box((0, 0), (1, 3)), Box((1, 1), (2, 3)), Box((2, 1), (3, 2)))
    assert f.elements() == {(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 1)}


# ---- output properties ---------------------------------------------------------------------

def test_same_trace_renders_byte_identical_svg_even_after_json_round_trip():
    t = gemm_trace()
    first = diagram(t, block=(1, 1)).svg
    assert diagram(t, block=(1, 1)).svg == first
    assert diagram(Trace.from_json(t.to_json()), block=(1, 1)).svg == first
    assert diagram(IndexedTrace(t), block=(1, 1)).svg == first
    assert diagram(t, block=(0, 1)).svg != first


def test_svg_numbers_are_short_and_never_negative_zero():
    from tile_lab.render.svg import num

    assert [num(v) for v in (7, 3.0, -0.0, -0.001, 2.499, 1.005, 0.1, -2.5, 1e16)] == \
        ["7", "3", "0", "0", "2.5", "1", "0.1", "-2.5", "10000000000000000"]


def test_svg_is_theme_neutral_and_well_formed():
    for d in (diagram(gemm_trace(), block=(0, 0)), diagram(ragged_copy(), view="coverage"),
              diagram(persistent_trace(), view="order"), partition((10, 16), (2, 4), (1, 2))):
        root = ET.fromstring(d.svg)  # well-formed XML
        assert root.tag == f"{SVG_NS}svg"
        # text and lines follow the page colour: no hard-coded black or white ink
        for el in root.iter(f"{SVG_NS}text"):
            assert el.get("style") == "fill:currentColor"
        assert not re.search(r"#(000|fff)(000)?\b|\b(black|white)\b", d.svg, re.I)
        # pattern ids are content-derived and every reference resolves
        ids = {el.get("id") for el in root.iter() if el.get("id")}
        assert set(re.findall(r"url\(#([\w-]+)\)", d.svg)) <= ids
        assert "<svg" in d._repr_html_() and d._repr_svg_() == d.svg


def test_geometry_is_json_serialisable():
    g = diagram(gemm_trace(), block=(1, 1)).geometry
    data = json.loads(g.to_json())
    assert data["layout"] == "gemm" and len(data["panels"]) == 3
    assert json.loads(diagram(ragged_copy(), view="coverage").geometry.to_json())["view"] == \
        "coverage"


def highlight_on_page():
    """The highlight colour as it appears on a white page: 85 % orange over the array's
    4 % ink tint."""
    ink = 0x22 / 255
    page = 0.96 * 1.0 + 0.04 * ink
    return 0.85 * np.array([0xE6, 0x9F, 0x00]) / 255 + 0.15 * page


def test_png_export_draws_the_same_geometry(tmp_path):
    import matplotlib.image as mpimg

    d = partition((10, 16), (2, 4), highlight=(1, 2))
    out = d.to_png(tmp_path / "fig19.png", dpi=100)  # 1 scene px = 1 image px
    img = mpimg.imread(out)[..., :3]
    assert img.shape[:2] == (d.scene.height, d.scene.width)

    def px(index):  # a point inside the element away from the centred label
        x, y = d.element_xy("array", index)
        return img[int(y - 5), int(x - 5)]

    orange = highlight_on_page()
    assert np.abs(px((2, 8)) - orange).max() < 0.04  # inside highlighted tile (1, 2)
    assert np.abs(px((3, 11)) - orange).max() < 0.04
    assert np.abs(px((0, 0)) - orange).max() > 0.3  # tile (0, 0) is not highlighted
    assert np.abs(px((4, 8)) - orange).max() > 0.3  # nor tile (2, 2) just below


def test_figure19_png_artifact():
    from pathlib import Path

    out = partition((10, 16), (2, 4), highlight=(1, 2)).to_png(
        Path(__file__).resolve().parents[1] / "test-artifacts" / "figure19.png")
    assert out.stat().st_size > 10_000


# ---- real kernels through the emulator ----------------------------------------------------------

@ct.kernel
def copy_kernel(a, c):
    bx = ct.bid(0)
    by = ct.bid(1)
    t = ct.load(a, index=(bx, by), shape=(4, 4))
    ct.store(c, index=(bx, by), tile=t)


@ct.kernel
def gemm_kernel(a, b, c, tk: ct.Constant[int]):
    bx = ct.bid(0)
    by = ct.bid(1)
    acc = ct.full((4, 4), 0, dtype=ct.float32)
    for k in range(ct.cdiv(a.shape[1], tk)):
        ta = ct.load(a, index=(bx, k), shape=(4, tk))
        tb = ct.load(b, index=(k, by), shape=(tk, 4))
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bx, by), tile=acc)


@ct.kernel
def persistent_kernel(c, tiles_n: ct.Constant[int], n_tiles: ct.Constant[int]):
    for t in range(ct.bid(0), n_tiles, ct.num_blocks(0)):
        ct.store(c, index=(t // tiles_n, t % tiles_n), tile=ct.full((4, 4), 1, dtype=ct.float32))


@ct.kernel
def racy_copy_kernel(a, c):  # seeded bug: every block also writes tile 0
    bx = ct.bid(0)
    t = ct.load(a, index=(bx, 0), shape=(4, 4))
    ct.store(c, index=(bx, 0), tile=t)
    ct.store(c, index=(0, 0), tile=t)


def test_emulated_ragged_copy_matches_the_hand_built_geometry():
    a = np.arange(70, dtype=np.float32).reshape(10, 7)
    c = np.zeros_like(a)
    t = tile_lab.trace(copy_kernel, (3, 2), (a, c))
    d = diagram(t, block=(2, 1))
    hand = diagram(ragged_copy(), block=(2, 1))
    for name in ("a", "c"):
        got, want = d.geometry.panel(name), hand.geometry.panel(name)
        assert got.tile_grids == want.tile_grids
        assert got.padded_elements() == want.padded_elements()
        assert got.discarded_elements() == want.discarded_elements()
        assert got.touched_elements() == want.touched_elements()
    assert d.geometry.panel("c").discarded_elements() == (
        elems(range(10, 12), range(4, 8)) | elems(range(8, 10), [7]))
    hm = diagram(t, view="coverage").geometry.panel("c", "write").heatmap
    assert hm.uncovered == 0 and hm.overlapped == 0
    tips = [x.text for x in svg_root(d).iter(f"{SVG_NS}title")]
    assert any("t = ct.load(a, index=(bx, by), shape=(4, 4))" in tip for tip in tips)


def test_emulated_gemm_trio():
    a, b = np.ones((8, 16), np.float32), np.ones((16, 12), np.float32)
    c = np.zeros((8, 12), np.float32)
    t = tile_lab.trace(gemm_kernel, (2, 3), (a, b, c, 8))
    for bx, by in [(0, 0), (1, 2)]:
        g = diagram(t, block=(bx, by)).geometry
        assert g.layout == "gemm"
        roles = {p.role: p for p in g.panels}
        assert sorted((f.iteration, f.tile_index) for f in roles["A"].footprints) == [
            (0, (bx, 0)), (1, (bx, 1))]
        assert sorted((f.iteration, f.tile_index) for f in roles["B"].footprints) == [
            (0, (0, by)), (1, (1, by))]
        assert roles["A"].touched_elements() == elems(range(4 * bx, 4 * bx + 4), range(16))
        assert roles["B"].touched_elements() == elems(range(16), range(4 * by, 4 * by + 4))


def test_emulated_persistent_visit_order():
    c = np.zeros((16, 16), np.float32)
    t = tile_lab.trace(persistent_kernel, (3,), (c, 4, 16))
    vm = diagram(t, view="order").geometry.panel("c").visit_map()
    assert vm == {(n // 4, n % 4): [((n % 3, 0, 0), n // 3)] for n in range(16)}


def test_emulated_double_write_is_called_out():
    a = np.ones((8, 8), np.float32)
    c = np.zeros_like(a)
    t = tile_lab.trace(racy_copy_kernel, (2,), (a, c))
    hm = diagram(t, view="coverage").geometry.panel("c", "write").heatmap
    assert hm.overlapped_elements() == elems(range(4), range(4))  # tile 0: both blocks
    assert hm.uncovered_elements() == elems(range(8), range(4, 8))  # column tile 1: nobody


def test_a_tile_entirely_outside_the_array_is_reported():
    t = make_trace("outside", (1,), [("x", (8, 8))], lambda b: [("load", "x", 3, 0, (5, 5),
                                                                  (4, 4))])
    d = diagram(t)
    p = d.geometry.panel("x")
    (f,) = p.footprints
    assert f.inside == () and f.outside == (Box((20, 20), (24, 24)),)
    assert p.padded_elements() == Box((20, 20), (24, 24)).elements()
    texts = {x.text for x in svg_root(d).iter(f"{SVG_NS}text")}
    assert "line 3 load tile (5, 5) → elements (20, 20)–(23, 23): outside the drawn region" \
        in texts


def test_png_of_a_block_view_shows_the_footprint_and_every_view_paints(tmp_path):
    import matplotlib.image as mpimg

    d = diagram(ragged_copy(), block=(1, 0))
    img = mpimg.imread(d.to_png(tmp_path / "block.png", dpi=100))[..., :3]
    ink = 0x22 / 255
    load = 0.45 * np.array([0xE6, 0x9F, 0x00]) / 255 + 0.55 * (0.96 + 0.04 * ink)

    def px(index):
        x, y = d.element_xy("a", index)
        return img[int(y - 4), int(x - 4)]

    assert np.abs(px((4, 0)) - load).max() < 0.05  # block (1, 0) loaded a's tile (1, 0)
    assert np.abs(px((0, 0)) - load).max() > 0.15  # ... not tile (0, 0)
    for other in (diagram(gemm_trace(), block=(1, 1)), diagram(ragged_copy(), view="coverage"),
                  diagram(persistent_trace(), view="order", block=(0,))):
        out = other.to_png(tmp_path / f"{other.geometry.view}.png", dpi=50)
        assert mpimg.imread(out).shape[:2] == (round(other.scene.height / 2),
                                               round(other.scene.width / 2))


def test_arrays_beyond_three_dims_are_skipped_with_a_note():
    t = make_trace("four_d", (1,), [("x", (2, 2, 2, 2)), ("y", (4,))], lambda b: [
        ("load", "y", 3, 0, (0,), (4,))])
    g = diagram(t).geometry
    assert [p.arg for p in g.panels] == ["y"]
    assert g.notes == ("x: 4-D arrays are not drawn",)


def test_edge_tile_labels_sit_inside_the_array_and_above_footprints():
    from tile_lab.render.svg import Group, Text

    t = ragged_copy(shape=(10, 14), tile=(4, 4))
    d = diagram(t, arg="c", block=(2, 3))
    lay = d.layouts[0]
    groups = [it for it in d.scene.items if isinstance(it, Group)]
    labels = [g for g in groups if g.css_class == "tl-lbl"]
    assert len(labels) == 1
    texts = {it.text: it for it in labels[0].items if isinstance(it, Text)}
    right, bottom = lay.x + 14 * lay.sx, lay.y + 10 * lay.sy
    assert texts["(0,3)"].x < right and texts["(2,0)"].y < bottom
    assert texts["(2,3)"].x < right and texts["(2,3)"].y < bottom
    # labels come after the footprints: painted on top
    last_fp = max(i for i, g in enumerate(d.scene.items)
                  if isinstance(g, Group) and g.css_class == "tl-fp")
    assert d.scene.items.index(labels[0]) > last_fp


def test_legend_cuts_long_lines_at_a_word_with_an_ellipsis():
    from tile_lab.render.diagram_legend import ellipsize

    line = ("t = ct.load(x, index=(i, j), shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO)"
            "  # and a comment that makes it long")
    cut = ellipsize(line, 70)
    assert cut.endswith("…") and len(cut) <= 70
    assert cut == "t = ct.load(x, index=(i, j), shape=(TM, TN), padding_mode=…"
    assert ellipsize("short", 70) == "short"


def test_svg_scales_down_in_a_narrow_container():
    d = partition((10, 16), (2, 4))
    assert 'style="max-width:100%;height:auto"' in d.svg


def test_a_no_tma_reason_is_shown_whole_wrapped_and_ticks_are_legible():
    # notebook 11: the compiler's reason was cut at "(TMA's…"; margin labels and "i0" at
    # 8 px read as "8" / "i8"

    from kernels_inspect import gemm

    from tile_lab.compile.artifacts import Inspection
    from tile_lab.render.tma import tma_report

    fixture = "tma_gemm_k1004_sm_90.json"
    a, b = np.ones((64, 96), np.float16), np.ones((96, 64), np.float16)
    tr = tile_lab.trace(gemm, (1, 1, 1), (a, b, np.zeros((64, 64), np.float32), 64, 64, 32))
    d = diagram(tr, tma=tma_report(Inspection.from_json(fixture_text(fixture))))
    [note] = [e.tma_note for e in d.geometry.legend if e.tma is False]
    assert len(note) > 110  # long enough to have been cut
    root = ET.fromstring(d.svg)
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    start = next(i for i, t in enumerate(texts) if t.startswith("↳ "))
    lines = [texts[start][2:]] + [t[2:] for t in texts[start + 1:] if t.startswith("  ")]
    assert " ".join(lines) == " ".join(note.split()) and "…" not in "".join(lines)
    assert len(lines) > 1 and all(len(ln) <= 100 for ln in lines)
    sizes = {float(t.get("font-size")) for t in root.iter("{http://www.w3.org/2000/svg}text")
             if re.fullmatch(r"i?\d+", t.text or "")}
    assert sizes and min(sizes) >= 9


def test_a_no_tma_stride_reason_says_the_traced_arrays_row_stride():
    # notebook 11: the verdict came from compiling K = 1020 (a source comment said "stride
    # 2040 B") while the traced A is f16[256, 252]; the legend now says the traced stride

    from kernels_inspect import gemm

    from tile_lab.compile.artifacts import Inspection
    from tile_lab.render.tma import tma_report

    fixture = "tma_gemm_k1004_sm_90.json"
    report = tma_report(Inspection.from_json(fixture_text(fixture)))
    a, b = np.ones((64, 100), np.float16), np.ones((100, 64), np.float16)
    tr = tile_lab.trace(gemm, (1, 1, 1), (a, b, np.zeros((64, 64), np.float32), 64, 64, 32))
    d = diagram(tr, tma=report)
    [entry] = [e for e in d.geometry.legend if e.tma is False]
    names = {x.arg for x in tr.accesses if x.line == entry.line}
    assert len(names) == 1
    [name] = names
    assert entry.tma_note.endswith(
        f"; traced {name}: float16[64, 100], row stride 200 B if C-ordered")
    shown = " ".join(t.text or "" for t in ET.fromstring(d.svg).iter(
        "{http://www.w3.org/2000/svg}text"))  # the legend wraps the reason onto lines
    assert "row stride 200 B if C-ordered" in " ".join(shown.split())
    kept = [e for e in d.geometry.legend if e.tma]  # a TMA line's note is the opcodes only
    assert kept and all("traced" not in e.tma_note for e in kept)
