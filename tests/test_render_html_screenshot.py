"""The inspect view in headless Chromium at 1500 and 1000 px, light and dark: TMA badges
where the SASS has bulk tensor copies, the argument prologue as its own hover group, and
panes that give the source its width. Screenshots: test-artifacts/render/."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from browser_probe import Job, run
from fixture_files import inspection_fixture

from tile_lab.compile.artifacts import Inspection
from tile_lab.render.html import inspection_html

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).parent / "fixtures"

_BADGES = """(() => {
  const box = e => { const r = e.getBoundingClientRect();
                     return [r.left, r.top, r.right, r.bottom]; };
  const src = document.querySelector('.tl-pane-source');
  const pane = src.querySelector('pre').getBoundingClientRect();
  return {
    // every badge inside its pane's visible box (issue 25: past the right edge at 1000 px)
    outside: [...src.querySelectorAll('.tl-tma')].filter(b => {
      const r = b.getBoundingClientRect();
      return r.left < pane.left || r.right > pane.right || r.top < pane.top
        || r.bottom > pane.bottom; }).length,
    source: [...src.querySelectorAll('.tl-tma')].map(b =>
      [b.closest('[data-line]').getAttribute('data-line'), b.textContent]),
    rows: [...document.querySelectorAll('details[open] .tl-tma-row')].map(r =>
      [r.getAttribute('data-line'), box(r.querySelector('.tl-tma'))]),
    viewport: [window.innerWidth, window.innerHeight],
  };
})()"""

_LIT = """(() => {
  const lit = p => [...document.querySelectorAll(`.tl-pane-${p} .tl-ln`)].filter(r => {
    const c = getComputedStyle(r).backgroundColor;
    return c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent'; }).length;
  return {tileir: lit('tileir'), prologue: document.querySelectorAll('.tl-pro').length};
})()"""

_PANES = """(() => {
  const pre = document.querySelector('.tl-pane-source pre');
  const panes = [...document.querySelectorAll('.tl-pane')].map(p => p.getBoundingClientRect());
  const row = document.querySelector('.tl-panes').getBoundingClientRect();
  return {sourceCut: pre.scrollWidth - pre.clientWidth,
          used: panes[panes.length - 1].right - panes[0].left, row: row.width};
})()"""


def load(name: str) -> Inspection:
    return inspection_fixture(name)


def test_tma_badges_name_the_load_that_lost_tma(tmp_path):
    """sm_90, f16 GEMM with K = 1004: A's rows are 2008 bytes (not a multiple of 16), so its
    load stays LDG while B's load and C's store are TMA (UTMALDG / UTMASTG)."""
    view = inspection_html(load("tma_gemm_k1004_sm_90"))
    jobs = [Job(f"inspect_tma_{w}_{'dark' if d else 'light'}", view, width=w, dark=d,
                evaluate=_BADGES) for w in (1500, 1000) for d in (False, True)]
    for res in run(jobs, tmp_path):
        v = res["value"]
        assert v["source"] == [["34", "no TMA"], ["35", "TMA UTMALDG"], ["37", "TMA UTMASTG"]]
        assert v["outside"] == 0, res["name"]
        assert [r[0] for r in v["rows"]] == ["34", "35", "37"]
        # the summary's badges are on the page, and the "no TMA" one is drawn in vermillion
        for _, (left, _top, right, bottom) in v["rows"]:
            assert left >= 0 and right <= v["viewport"][0] and bottom <= v["viewport"][1]
        left, top, right, bottom = v["rows"][0][1]
        border = res["png"][int(top), int((left + right) / 2)]
        assert np.abs(border - np.array([0xD5, 0x5E, 0x00]) / 255).max() < 0.25


def test_hovering_the_def_line_skips_the_argument_prologue(tmp_path):
    view = inspection_html(load("inspect_vadd_sm_90"))
    jobs = [Job("inspect_def_hover", view, hover=".tl-pane-source .tl-l12", evaluate=_LIT),
            Job("inspect_prologue_hover_dark", view, dark=True,
                hover=".tl-pane-tileir .tl-pro", evaluate=_LIT)]
    def_hover, pro_hover = run(jobs, tmp_path)
    # 21 of vadd's 30 Tile IR lines map to the def line; 19 are the prologue
    assert pro_hover["value"]["prologue"] == 19
    assert def_hover["value"]["tileir"] == 2  # the entry line and the closing brace
    assert pro_hover["value"]["tileir"] == 19


def test_panes_give_the_source_its_width(tmp_path):
    view = inspection_html(load("inspect_vadd_sm_90"))
    jobs = [Job(f"inspect_panes_{w}", view, width=w, evaluate=_PANES) for w in (1500, 1000)]
    wide, narrow = run(jobs, tmp_path)
    assert wide["value"]["sourceCut"] <= 1  # the def line and comments are not cut
    for res in (wide, narrow):  # no unused space right of the panes
        assert res["value"]["used"] >= 0.98 * res["value"]["row"]
