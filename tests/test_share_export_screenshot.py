"""The exported page of a GEMM inspection with a profile and diagrams, opened from disk in
headless Chromium with the network unreachable (``export_probe.mjs``): no request leaves the
page, no CSP refusal, hovering a source line lights its Tile IR and SASS lines, the heat
gutter and stall panel work, click-to-pin (the page's one script) runs; a hostile page runs
nothing of its data. Screenshots: test-artifacts/render/export_*.png."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import browser_env
import pytest
from test_share_bundle import gemm, gemm_page, hostile_inspection  # noqa: F401 (fixture)

import tile_lab

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent
ARTIFACTS = HERE.parent / "test-artifacts" / "render"

_STATE = """(() => {
  const view = document.querySelector('#s1 .tl-view');
  const lit = p => [...view.querySelectorAll(`.tl-pane-${p} .tl-ln`)].filter(r => {
    const c = getComputedStyle(r).backgroundColor;
    return c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent'; }).length;
  const mma = [...view.querySelectorAll('.tl-pane-source .tl-ln')]
    .find(r => r.textContent.includes('ct.mma'));
  const line = mma.getAttribute('data-line');
  const prof = document.querySelector('#s2 .tl-prof');
  const gutter = prof.querySelector(`.tl-pane-source .tl-l${line} > .tl-g`);
  const stall = prof.querySelector(`.tl-stall-${line}`);
  return {line, tileir: lit('tileir'), sass: lit('sass'), source: lit('source'),
          mapped: view.querySelectorAll(`.tl-pane-sass .tl-l${line}`).length,
          pinned: view.querySelectorAll('.tl-pin').length,
          bound: view.getAttribute('data-tl-bound'),
          heat: getComputedStyle(gutter).backgroundColor,
          stallShown: stall ? getComputedStyle(stall).display : null,
          scripts: document.querySelectorAll('script').length,
          svgs: document.querySelectorAll('svg').length,
          pwned: window.__pwned === undefined ? null : window.__pwned};
})()"""


def probe(jobs: list[dict], tmp_path: Path) -> list[dict]:
    node = browser_env.node()
    browser_env.node_module("playwright-core")
    spec = tmp_path / "jobs.json"
    spec.write_text(json.dumps(jobs))
    proc = subprocess.run([node, str(HERE / "export_probe.mjs")], capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "TILE_LAB_EXT": str(browser_env.EXT),
                               "TILE_LAB_CHROMIUM": browser_env.chromium(),
                               "TILE_LAB_JOBS": str(spec)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_exported_gemm_page_works_offline(gemm, tmp_path):  # noqa: F811
    page = gemm_page(gemm, tmp_path / "gemm.html")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    mma_hover = "#s1 .tl-pane-source .tl-ln:has-text('ct.mma')"
    base = {"page": str(page), "width": 1400, "height": 1000, "evaluate": _STATE}
    jobs = [{**base, "screenshot": str(ARTIFACTS / "export_gemm.png"), "fullPage": True},
            {**base, "hover": mma_hover},
            {**base, "hover": "#s2 .tl-pane-source .tl-ln:has-text('ct.mma')"},
            {**base, "click": mma_hover, "hover": "h1"}]
    still, hover, prof_hover, pinned = probe(jobs, tmp_path)
    for res in (still, hover, prof_hover, pinned):
        assert res["requests"] == [], res["requests"]  # nothing left the page
        assert res["errors"] == [] and not any("Refused" in m for m in res["console"]), res
    v = still["value"]
    assert v["tileir"] == v["sass"] == v["source"] == 0  # nothing lit before a hover
    assert v["scripts"] == 2 and v["bound"] == "1"  # the pin script ran under the CSP
    assert v["svgs"] >= 2 and v["pwned"] is None
    assert v["heat"] not in ("rgba(0, 0, 0, 0)", "transparent")  # the mma line's heat
    h = hover["value"]
    assert h["source"] == 1 and h["tileir"] >= 1 and h["sass"] == h["mapped"] >= 1
    assert prof_hover["value"]["stallShown"] == "block"  # the hovered line's stall reasons
    assert still["value"]["stallShown"] == "none"
    assert pinned["value"]["pinned"] >= 3  # source + Tile IR + SASS rows of the mma line


def test_a_hostile_page_runs_nothing(tmp_path):
    page = tile_lab.export([hostile_inspection()], tmp_path / "hostile.html")
    # the control: a page that does reach out (no CSP) is seen doing it by the same probe
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<!doctype html><img src="http://evil.example/x.png">'
                     '<link rel="stylesheet" href="https://evil.example/s.css">')
    res, control = probe([
        {"page": str(page), "width": 1200, "height": 800,
         "evaluate": "({pwned: window.__pwned === undefined ? null : window.__pwned, "
                     "imgs: document.images.length, "
                     "scripts: document.querySelectorAll('script').length})",
         "hover": ".tl-pane-source .tl-l2",
         "screenshot": str(ARTIFACTS / "export_hostile.png")},
        {"page": str(leaky), "width": 400, "height": 300}], tmp_path)
    assert res["value"] == {"pwned": None, "imgs": 0, "scripts": 1}
    assert res["requests"] == [] and res["errors"] == []
    assert sorted(control["requests"]) == ["http://evil.example/x.png",
                                           "https://evil.example/s.css"]
