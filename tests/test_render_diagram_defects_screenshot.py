"""Diagram defects that showed in Chromium, checked there at 1500 and 1000 px, light and
dark: ragged-edge tile labels over the padding hatch and under the selected footprint, a
diagram beside a chart in a widget row clipped at the right edge, the legend cut mid-word,
and the TMA verdict in the legend. Screenshots: test-artifacts/render/."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from browser_probe import Job, run
from fixture_files import fixture_text
from test_render_diagram import make_trace, ragged_copy

from tile_lab.compile.artifacts import Inspection
from tile_lab.render.diagram import diagram
from tile_lab.render.tma import tma_report

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).parent / "fixtures"

_LABELS = """(() => {
  const svg = document.querySelector('svg.tile-lab-diagram');
  const texts = [...svg.querySelectorAll('g.tl-lbl text')].filter(t => t.textContent[0] === '(');
  const after = t => { // is the label painted after (above) every footprint group?
    const fps = [...svg.querySelectorAll('g.tl-fp')];
    return fps.every(f => f.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING); };
  const out = {};
  for (const t of texts) {
    const r = t.getBoundingClientRect();
    out[t.textContent] = {box: [r.left, r.top, r.right, r.bottom], above: after(t)};
  }
  return out;
})()"""


def test_ragged_edge_labels_sit_on_their_elements_above_the_hatch(tmp_path):
    # notebook 2: a 10×14 array in 4×4 tiles, block (2, 3) storing the corner tile
    t = ragged_copy(shape=(10, 14), tile=(4, 4))
    d = diagram(t, arg="c", block=(2, 3))
    jobs = [Job(f"ragged_{w}_{'dark' if dk else 'light'}", d._repr_html_(), width=w,
                dark=dk, evaluate=_LABELS) for w in (1500, 1000) for dk in (False, True)]
    lay = d.layouts[0]
    array_right = lay.x + 14 * lay.sx + 8  # page margin 8
    array_bottom = lay.y + 10 * lay.sy + 8
    for res in run(jobs, tmp_path):
        labels = res["value"]
        assert len(labels) == 12 and all(v["above"] for v in labels.values())
        for name in ("(0,3)", "(1,3)", "(2,0)", "(2,1)", "(2,2)", "(2,3)"):
            left, top, right, bottom = labels[name]["box"]
            # inside the array, not on the padded lanes past its edge
            assert right <= array_right + 1 and bottom <= array_bottom + 1, name
        # the selected block's tile label is drawn in ink over its hatched footprint
        left, top, right, bottom = labels["(2,3)"]["box"]
        patch = res["png"][int(top) + 2:int(bottom) - 1, int(left):int(right)]
        ink = np.array([0x22] * 3 if "light" in res["name"] else [0xDD] * 3) / 255
        assert (np.abs(patch - ink).max(axis=2) < 0.25).sum() >= 8


_FIT = """(() => {
  const svg = document.querySelector('.row svg.tile-lab-diagram');
  const row = document.querySelector('.row').getBoundingClientRect();
  const r = svg.getBoundingClientRect();
  return {right: r.right, rowRight: row.right, width: r.width,
          natural: Number(svg.getAttribute('width'))};
})()"""


def _widget_row(chart_px: int, diagram_html: str, wrap: bool) -> str:
    """The explorer's output row as ipywidgets 8 lays it out: a flex box with overflow auto
    holding two HTML widgets (inline flex boxes whose content grows and shrinks)."""
    cell = ("<div style='display:flex;align-items:baseline;margin:2px'><div style="
            "'align-self:stretch;flex:1 1 auto;position:relative'>{}</div></div>")
    chart = f"<svg width='{chart_px}' height='300' style='background:#999'></svg>"
    flow = "row wrap" if wrap else "row"
    return (f"<div class='row' style='display:flex;flex-flow:{flow};overflow:auto;"
            f"width:calc(100% - 60px)'>" + cell.format(chart) + cell.format(diagram_html)
            + "</div>")


def test_gemm_diagram_beside_a_chart_is_not_clipped(tmp_path):
    t = make_trace("gemm", (2, 1), [("a", (8, 16)), ("b", (16, 4)), ("c", (8, 4))], lambda b: [
        ("load", "a", 7, k, (b[0], k), (4, 8)) for k in range(2)] + [
        ("load", "b", 8, k, (k, b[1]), (8, 4)) for k in range(2)] + [
        ("store", "c", 10, 0, (b[0], b[1]), (4, 4))])
    html = diagram(t, view="gemm")._repr_html_()
    jobs = [Job(f"explorer_row_{w}_{'wrap' if wrap else 'nowrap'}", _widget_row(620, html, wrap),
                width=w, dark=(w == 1000), evaluate=_FIT)
            for w in (1500, 1000) for wrap in (False, True)]
    for res in run(jobs, tmp_path):
        v = res["value"]
        assert v["right"] <= v["rowRight"] + 0.5, v  # nothing past the row's right edge
    wrapped_narrow = run([jobs[3]], tmp_path)[0]["value"]
    assert wrapped_narrow["width"] == wrapped_narrow["natural"]  # wrapped: full size


def test_legend_ellipsizes_long_lines_and_shows_the_tma_verdict(tmp_path):
    from kernels_inspect import gemm  # its lines 34/35/37 are the fixture's

    import tile_lab

    a = np.ones((64, 96), np.float16)
    b = np.ones((96, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    tr = tile_lab.trace(gemm, (1, 1, 1), (a, b, c, 64, 64, 32))
    report = tma_report(Inspection.from_json(
        fixture_text("tma_gemm_k1004_sm_90.json")))
    d = diagram(tr, tma=report)
    verdicts = {e.line: e.tma for e in d.geometry.legend}
    assert verdicts == {34: False, 35: True, 37: True}
    evaluate = """(() => {
      const svg = document.querySelector('svg.tile-lab-diagram').getBoundingClientRect();
      const badges = [...document.querySelectorAll('g.tl-tma')].map(g => {
        const r = g.getBoundingClientRect();
        return [g.querySelector('text').textContent, r.right <= svg.right + 0.5]; });
      return badges;
    })()"""
    jobs = [Job(f"legend_tma_{w}_{'dark' if dk else 'light'}", d._repr_html_(), width=w,
                dark=dk, evaluate=evaluate) for w in (1500, 1000) for dk in (False, True)]
    for res in run(jobs, tmp_path):
        assert [t for t, _ in res["value"]] == ["no TMA", "TMA", "TMA"]
        assert all(inside for _, inside in res["value"])
