"""The diagram browser, driven headlessly: move the controls, check what is drawn."""

from __future__ import annotations

import pytest
from fixture_files import fixture_text
from test_render_diagram import gemm_trace, persistent_trace, ragged_copy

from tile_lab.errors import TileLabError
from tile_lab.render.diagram import diagram
from tile_lab.widgets.diagram_browser import DiagramBrowser, browse


def test_block_sliders_redraw_to_the_new_blocks_footprint():
    t = gemm_trace()
    b = browse(t)
    assert set(b.block_sliders) == {"x", "y"}  # the grid is (2, 3, 1)
    assert all(s.continuous_update is False for s in b.block_sliders.values())
    before = b.output.value
    assert "by block (0, 0)" in before
    b.block_sliders["x"].value = 1
    b.block_sliders["y"].value = 2
    after = b.output.value
    assert after != before
    assert "by block (1, 2)" in after and "by block (0, 0)" not in after
    assert b.diagram.svg == diagram(t, block=(1, 2)).svg  # same picture as the function
    a = b.diagram.geometry.panel("a")
    assert {f.tile_index for f in a.footprints} == {(1, 0), (1, 1)}


def test_iteration_slider_and_line_filter():
    b = DiagramBrowser(gemm_trace())
    assert b.iteration.options[0] == ("all", -1) and len(b.iteration.options) == 3
    b.iteration.value = 1
    a = b.diagram.geometry.panel("a")
    assert [(f.iteration, f.tile_index) for f in a.footprints] == [(1, (0, 1))]
    assert "iteration 1" in b.output.value
    b.iteration.value = -1  # all
    b.lines.value = (8,)  # only B's load line
    g = b.diagram.geometry
    assert g.lines == (8,)
    assert g.panel("a").footprints == () and len(g.panel("b").footprints) == 2
    b.lines.value = tuple(b.index.lines)  # everything selected again means no filter
    assert b.diagram.geometry.lines is None


def test_view_and_array_selectors():
    b = DiagramBrowser(ragged_copy())
    assert list(b.view.options) == ["block", "coverage", "order"]  # no GEMM trio here
    b.view.value = "coverage"
    assert "blocks writing each element" in b.output.value
    assert all(s.disabled for s in b.block_sliders.values())
    b.array.value = "c"
    assert [(p.arg, p.kind) for p in b.diagram.geometry.panels] == [("c", "write")]
    b.view.value = "block"
    assert [p.arg for p in b.diagram.geometry.panels] == ["c"]
    assert not any(s.disabled for s in b.block_sliders.values())


def test_order_view_follows_the_selected_block():
    b = DiagramBrowser(persistent_trace(), view="order")
    b.block_sliders["x"].value = 2
    assert "block (2,): 5 tiles in this order" in b.output.value


def test_gemm_view_offered_for_a_gemm_trace():
    b = DiagramBrowser(gemm_trace(), view="gemm")
    assert "gemm" in b.view.options
    assert b.diagram.geometry.layout == "gemm"


def test_unknown_view_is_refused_up_front():
    with pytest.raises(TileLabError, match=r"view='gemm'.*views"):
        DiagramBrowser(ragged_copy(), view="gemm")


def test_redraw_errors_are_shown_not_swallowed(monkeypatch):
    b = DiagramBrowser(ragged_copy())

    def boom(*args, **kwargs):
        raise TileLabError("something went wrong", hint="a hint")

    monkeypatch.setattr("tile_lab.widgets.diagram_browser.diagram", boom)
    b.block_sliders["x"].value = 1
    assert isinstance(b.error, TileLabError)
    assert "something went wrong" in b.status.value and "a hint" in b.status.value


def test_browser_marks_tma_verdicts_and_ellipsizes_long_lines():

    import numpy as np
    from kernels_inspect import gemm

    import tile_lab
    from tile_lab.compile.artifacts import Inspection
    from tile_lab.render.tma import tma_report
    from tile_lab.widgets.diagram_browser import DiagramBrowser

    a, b = np.ones((64, 96), np.float16), np.ones((96, 64), np.float16)
    tr = tile_lab.trace(gemm, (1, 1, 1), (a, b, np.zeros((64, 64), np.float32), 64, 64, 32))
    fixture = "tma_gemm_k1004_sm_90.json"
    report = tma_report(Inspection.from_json(fixture_text(fixture)))
    br = DiagramBrowser(tr, tma=report)
    assert {e.line: e.tma for e in br.diagram.geometry.legend} == {34: False, 35: True, 37: True}
    labels = [label for label, _ in br.lines.options]
    assert all(len(label) < 80 for label in labels)
    assert not any(label.endswith(("(", ",")) for label in labels)


def test_nbconvert_html_shows_the_picture_the_controls_were_set_to():
    # the widget view alone made an empty Out[1] in nbconvert's HTML (no kernel, no state)
    import nbformat
    from nbconvert import HTMLExporter

    b = browse(gemm_trace())
    b.block_sliders["x"].value = 1
    data = b._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data  # still a widget in Jupyter
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("tile_lab.browse(tr)", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=1)]
    nb.cells = [cell]
    page, _ = HTMLExporter().from_notebook_node(nb)
    assert 'class="tile-lab-diagram"' in page and "by block (1, 0)" in page
    assert "tile_lab.browse: view block, block (1, 0); the sliders need a running kernel" \
        in page
