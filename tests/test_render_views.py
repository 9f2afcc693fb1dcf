"""View pictures: tiled_view windows (overlap, gaps, slices), boxes from a real emulated
trace, and transposed loads."""

from __future__ import annotations

import numpy as np
import pytest

from tile_lab.errors import DiagramError
from tile_lab.render.diagram import Box
from tile_lab.render.views import transposed_load, view_windows, windows_from_trace


def test_stencil_windows_overlap_and_count():
    p = view_windows((8, 8), (3, 3), steps=(1, 1))
    d = p.data
    assert d.num_tiles == (6, 6) and len(d.windows) == 36
    cov = np.array(d.coverage)
    assert cov[0, 0] == 1 and cov[0, 1] == 2 and cov[3, 3] == 9 and cov[7, 7] == 1
    assert cov.sum() == 36 * 9  # every window covers 9 elements, all inside
    assert d.windows[7].index == (1, 1) and d.windows[7].box == Box((1, 1), (4, 4))
    assert "overlapping" in d.title and p.svg == view_windows((8, 8), (3, 3), (1, 1)).svg


def test_plain_partition_and_gaps():
    plain = view_windows((8, 8), (4, 4)).data
    assert plain.num_tiles == (2, 2) and set(np.array(plain.coverage).ravel()) == {1}
    gaps = view_windows((10,), (2,), steps=(4,)).data
    assert gaps.num_tiles == (3,) and "with gaps" in gaps.title
    assert np.array(gaps.coverage).ravel().tolist() == [1, 1, 0, 0, 1, 1, 0, 0, 1, 1]


def test_num_tiles_matches_cuTile_when_the_last_window_overhangs():
    # 6 rows, tile 4, step 3: origins 0 and 3 (the second reaches row 6, past the end)
    d = view_windows((6, 10), (4, 4), steps=(3, 3)).data
    assert d.num_tiles == (2, 3)
    assert d.windows[-1].box == Box((3, 6), (7, 10))


def test_slice_windows_live_in_the_parent_coordinates():
    d = view_windows((10, 16), (2, 4), slice=(0, 2, 8)).data
    assert d.region == Box((2, 0), (8, 16)) and d.num_tiles == (3, 4)
    assert d.windows[0].box == Box((2, 0), (4, 4))
    cov = np.array(d.coverage)
    assert cov[:2].sum() == 0 and cov[8:].sum() == 0 and (cov[2:8] == 1).all()


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(DiagramError, match="1-D or 2-D"):
        view_windows((2, 2, 2), (1, 1, 1))
    with pytest.raises(DiagramError, match="not a tile of this view"):
        view_windows((8, 8), (4, 4), highlight=[(5, 5)])
    with pytest.raises(DiagramError, match="slice"):
        view_windows((8, 8), (4, 4), slice=(0, 4, 9))


def test_windows_from_a_real_trace_of_a_tiled_view_stencil():
    import linecache
    import types

    import tile_lab

    src = (
        "import cuda.tile as ct\n"
        "@ct.kernel\n"
        "def blur(x, y):\n"
        "    i = ct.bid(0)\n"
        "    w = x.tiled_view((4,), traversal_steps=(2,)).load((i,))\n"
        "    y.tiled_view((1,)).store((i,), ct.sum(w, axis=0, keepdims=True))\n")
    name = "<tile_lab-test-views>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    mod = types.ModuleType("views_kernel")
    exec(compile(src, name, "exec"), mod.__dict__)
    x = np.arange(12, dtype=np.float32)
    y = np.zeros(5, np.float32)
    tr = tile_lab.trace(mod.blur, (5, 1, 1), (x, y))
    p = windows_from_trace(tr, "x")
    boxes = [w.box for w in p.data.windows]
    assert boxes == [Box((0,), (4,)), Box((2,), (6,)), Box((4,), (8,)), Box((6,), (10,)),
                     Box((8,), (12,))]
    assert np.array(p.data.coverage).ravel().tolist() == [1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1]
    assert p.data.windows[1].label == "block (1,), line 5"
    with pytest.raises(DiagramError, match="no tile-space access"):
        windows_from_trace(tr, "x", line=99)
    # the block diagram draws no 4-element tile grid over these windows (it would
    # mislabel them) and says what they are; y's 1-element tiles keep their grid
    d = tile_lab.diagram(tr, block=(1,))
    x, y = d.geometry.panel("x"), d.geometry.panel("y")
    assert x.tile_grids == () and "4 windows every 2 (overlapping)" in x.title
    assert y.tile_grids and "windows" not in y.title
    assert any("windows_from_trace(trace, 'x')" in n for n in d.geometry.notes)
    tile_lab.diagram(tr, view="order")  # no visit grid for windows: still draws


def test_transposed_load_maps_tile_positions_to_array_elements():
    p = transposed_load((6, 8), (4, 2), (0, 1), order=(1, 0))
    assert p.data == Box((2, 0), (4, 4))
    titles = [it.title for it in p.scene.items if getattr(it, "title", None)]
    assert "tile[0, 1] = a[3, 0]" in titles and "tile[3, 0] = a[2, 3]" in titles
    same = transposed_load((6, 8), (2, 4), (1, 0), order="C").data
    assert same == Box((2, 0), (4, 4))  # the untransposed load of the same box
    with pytest.raises(DiagramError):
        transposed_load((6, 8, 2), (2, 2, 2), (0, 0, 0))
