"""tile_lab.tracing.tile_geometry: element boxes, tile grids and heatmaps, element by element."""

from __future__ import annotations

import itertools

import pytest

from tile_lab.errors import DiagramError
from tile_lab.tracing.tile_geometry import Box, Heatmap, TileGrid, tuple_text


def test_box_minus_leaves_exactly_the_other_elements_in_disjoint_boxes():
    outer = Box((0, 0), (6, 5))
    for inner in (Box((2, 1), (4, 3)), Box((0, 0), (6, 2)), Box((5, 4), (9, 9)),
                  Box((7, 7), (9, 9)), None):
        parts = outer.minus(inner)
        cut = set() if inner is None else outer.elements() & inner.elements()
        got = [p.elements() for p in parts]
        assert set().union(*got) == outer.elements() - cut
        assert sum(map(len, got)) == len(outer.elements() - cut)  # no element twice
    assert Box((1, 1), (3, 4)).intersect(Box((3, 0), (5, 5))) is None  # half-open: touching
    assert Box((0,), (4,)).describe() == "(0,)–(3,)"


def test_tile_grid_of_a_ragged_array_pads_its_last_tiles():
    g = TileGrid.of((10, 7), (4, 4))
    assert g.grid == (3, 2) and g.padded_shape == (12, 8)
    assert g.tile_box((2, 1)) == Box((8, 4), (12, 8))
    assert len(list(g.tiles())) == 6
    padding = set().union(*(b.elements() for b in g.padding_area((10, 7))))
    everything = set(itertools.product(range(12), range(8)))
    assert padding == everything - set(itertools.product(range(10), range(7)))


def test_heatmap_counts_per_element_and_refuses_when_merged():
    # 2 x 3 cells over a 4 x 6 array: counts 0 1 2 / 1 1 0
    hm = Heatmap("write", ((0, 2, 4), (0, 2, 4, 6)), (0, 1, 2, 1, 1, 0), (0, 1, 2, 1, 1, 0),
                 uncovered=8, overlapped=4, exact=True)
    assert hm.cell_shape == (2, 3)
    assert hm.count((0, 0)) == 0 and hm.count((1, 5)) == 2 and hm.count((3, 3)) == 1
    assert hm.overlapped_elements() == set(itertools.product(range(2), range(4, 6)))
    assert len(hm.uncovered_elements()) == hm.uncovered
    merged = Heatmap("write", ((0, 4),), (0,), (2,), uncovered=1, overlapped=1, exact=False)
    with pytest.raises(DiagramError, match="merged cells"):
        merged.count((0,))


def test_tuple_text_writes_tuples_as_python_does():
    assert tuple_text((3,)) == "(3,)" and tuple_text((1, 2)) == "(1, 2)" and tuple_text(()) == "()"
