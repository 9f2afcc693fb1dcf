"""The trace index (tile_lab.tracing.index): accesses grouped by block and by array, and the
coverage heatmaps and tile visit orders computed from them, checked access by access against
the trace itself."""

from __future__ import annotations

import numpy as np
import pytest
from test_render_diagram import make_trace

from tile_lab.tracing.index import IndexedTrace, group_visits
from tile_lab.tracing.tile_geometry import CELL_CAP
from tile_lab.tracing.trace import Trace


@pytest.mark.parametrize("seed", range(4))
def test_index_is_exact_for_interleaved_blocks_and_mixed_kinds(seed):
    """The index records each array's accesses per run of one block and dedups (kind, box)
    keys; a trace whose blocks interleave and that mixes loads, stores, atomics and
    scatters must give the coverage, visit order, kinds and groupings computed access by
    access."""
    rng = np.random.default_rng(seed)
    shape = (9, 11)

    def body(b):
        for i in range(int(rng.integers(1, 5))):
            tile = ((2, 3), (3, 2))[int(rng.integers(0, 2))]
            idx = tuple(int(rng.integers(0, -(-n // t) + 1)) for n, t in zip(shape, tile))
            kind = ("store", "load", "store")[i % 3]
            yield (kind, "x", 3 + i % 3, i // 2, idx, tile)
        if b[0] == 1 and seed % 2:  # element-wise accesses: the per-element path
            yield ("atomic", "x", 7, 0, rng.choice(99, 4, replace=False))
        if b[1] == 1:  # an array only some blocks touch, tiles only: the box path
            yield ("store", "y", 8, 0, (b[0] % 2, 1), (2, 2))

    base = make_trace("mix", (3, 2), [("x", shape), ("y", (3, 4))], body)
    order = rng.permutation(len(base.accesses))  # blocks interleave; seq keeps the old order
    t = Trace(kernel="mix", grid=base.grid, arrays=base.arrays,
              accesses=tuple(base.accesses[i] for i in order))
    index = IndexedTrace(t)
    for blk in t.blocks:
        assert index.by_block.get(blk, []) == [a for a in t.accesses if a.block == blk]
    for name, arr_shape in (("x", shape), ("y", (3, 4))):
        assert index.by_arg[name] == [a for a in t.accesses if a.arg == name]
        for kind in ("read", "write", "load", "store", "atomic", "scatter", "gather"):
            want_any = any(a.kind in ({"load", "gather", "atomic"} if kind == "read" else
                                      {"store", "scatter", "atomic"} if kind == "write" else
                                      {kind}) for a in t.accesses if a.arg == name)
            assert index.has_kind(name, kind) == want_any
        for kind in ("read", "write"):
            want = t.coverage(name, kind)
            hm = index.heatmap(name, kind)
            if not want.any():
                assert hm is None
                continue
            got = np.array([[hm.count((r, c)) for c in range(arr_shape[1])]
                            for r in range(arr_shape[0])])
            np.testing.assert_array_equal(got, want)
    tile = index.tile_grids("x")[0].tile
    whole = [a for a in t.accesses if a.arg == "x" and a.is_box and a.is_write
             and tuple(e - s for s, e in zip(a.box_start, a.box_stop)) == tile]
    want_visits = sorted((a.iteration, a.block[0] + 3 * a.block[1], a.seq,
                          tuple(s // n for s, n in zip(a.box_start, tile)), a.block)
                         for a in whole)
    got_visits = [(v.iteration, v.linear_block, v.seq, v.tile_index, v.block)
                  for v in index.visits("x")]
    assert got_visits == want_visits
    assert [v.rank for v in index.visits("x")] == list(range(len(want_visits)))


def test_coverage_of_gathers_mixed_with_tiles_equals_per_element_coverage():
    rng = np.random.default_rng(3)
    shape = (12, 10)

    def body(b):
        yield ("scatter", "x", 3, 0, rng.choice(120, 15, replace=False))
        yield ("scatter", "x", 3, 1, rng.choice(120, 15, replace=False))  # same block again
        yield ("store", "x", 4, 0, (b[0], 1), (4, 4))

    t = make_trace("mixed", (3, 2), [("x", shape)], body)
    hm = IndexedTrace(t).heatmap("x", "write")
    want = t.coverage("x", "write")
    assert hm.exact
    got = np.array([[hm.count((r, c)) for c in range(shape[1])] for r in range(shape[0])])
    np.testing.assert_array_equal(got, want)


def test_merged_heatmap_cells_bound_the_true_counts():
    rng = np.random.default_rng(7)
    shape = (150, 300)  # 1×3 tiles: 150×100 cells, more than the drawing cap

    def body(b):
        for _ in range(3):
            yield ("store", "x", 3, 0, (int(rng.integers(0, 150)), int(rng.integers(0, 100))),
                   (1, 3))

    t = make_trace("sparse", (50, 20), [("x", shape)], body)
    want = t.coverage("x", "write")
    hm = IndexedTrace(t).heatmap("x", "write")
    assert not hm.exact and len(hm.counts_min) <= CELL_CAP
    for box, lo, hi in hm.cells():
        block = want[box.start[0]:box.stop[0], box.start[1]:box.stop[1]]
        assert lo == block.min() and hi == block.max()
    assert hm.uncovered == int((want == 0).sum()) and hm.overlapped == int((want > 1).sum())


def test_visits_are_grouped_by_tile_and_by_block_in_rank_order():
    # a persistent loop: block b stores output tiles b, b + 3, b + 6, ... (rank = time order)
    from test_render_diagram import persistent_trace

    index = IndexedTrace(persistent_trace())
    visits = index.visits("c")
    by_tile, by_block = group_visits(visits[::-1])  # any input order: grouped by rank
    assert index.visit_summary("c") == (by_tile, by_block)
    assert sorted(by_tile) == [(r, c) for r in range(4) for c in range(4)]
    assert all(len(v) == 1 for v in by_tile.values())  # each tile stored once
    mine = by_block[(1, 0, 0)]
    assert [v.tile_index for v in mine] == [(0, 1), (1, 0), (1, 3), (2, 2), (3, 1)]
    assert [v.rank for v in mine] == sorted(v.rank for v in mine)
    assert sum(map(len, by_block.values())) == len(visits) == 16
