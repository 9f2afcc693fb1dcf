"""The crosscheck heatmap: true geometry, deterministic text, the data module never imports
the renderer, and a look in headless Chromium at 1000 px (test-artifacts/render/)."""

from __future__ import annotations

import ast
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from corpus import correct
from crosscheck_fakes import ScriptedGpu
from svg_items import flatten

import tile_lab
from tile_lab.examples.decode import decode_attention, decode_inputs, decode_launch
from tile_lab.render.crosscheck import COLORS, crosscheck_html, heatmap_scene, tile_rects
from tile_lab.render.svg import Group, Rect, Text, text_width

ROOT = Path(__file__).resolve().parent.parent
CASES = {c.name: c for c in correct.CASES}


def gemm_with_a_design_tile_and_a_bug():
    case = CASES["gemm_fp16_fp32acc"]

    def edit(a):
        c = a[2]
        c[:32, :32] = np.nextafter(c[:32, :32], np.float32(np.inf))
        c[70, 90] += 1.0

    return tile_lab.crosscheck(case.kernel, *case.build(), gpu=ScriptedGpu(edit))


def decode_with_nans():
    grid, args = decode_launch(*decode_inputs(misaligned=True))

    def edit(a):
        a[3][0, 1, 3, 5] = np.nan

    return tile_lab.crosscheck(decode_attention, grid, args, gpu=ScriptedGpu(edit))


def _overlap(a: Rect, b: Rect) -> bool:
    return a.x < b.x + b.w - 1e-6 and b.x < a.x + a.w - 1e-6 and \
        a.y < b.y + b.h - 1e-6 and b.y < a.y + a.h - 1e-6


def test_tiles_sit_where_they_are_without_overlap_and_coloured_by_class():
    cc = gemm_with_a_design_tile_and_a_bug()
    scene = heatmap_scene(cc.outputs[0], cc)
    groups = [it for it in scene.items if isinstance(it, Group)]
    assert len(groups) == 9
    rects = [r for g in groups for r in g.items if isinstance(r, Rect)]
    assert all(r.w > 0 and r.h > 0 for r in rects)
    assert all(r.x + r.w <= scene.width + 1e-6 and r.y + r.h <= scene.height + 1e-6
               for r in flatten(scene.items) if isinstance(r, Rect))
    assert not any(_overlap(a, b) for i, a in enumerate(rects) for b in rects[i + 1:])
    fills = [g.items[0].style.fill for g in groups]
    assert fills.count(COLORS["mismatch"]) == 1 and fills.count(COLORS["design"]) == 1
    # the mismatching tile is the bottom-right one (rows 64..79, cols 64..95 of 80x96)
    bad = next(g for g in groups if g.items[0].style.fill == COLORS["mismatch"])
    assert bad.title.startswith("C[64:80, 64:96] written by block (2, 2, 0), line ")
    assert "ct.store(C, (bm, bn), acc)" in bad.title and "emulator bug" in bad.title


def test_legend_texts_do_not_overlap():
    cc = decode_with_nans()
    scene = heatmap_scene(cc.outputs[0], cc)
    texts = [t for t in flatten(scene.items) if isinstance(t, Text) and t.y == 35]
    spans = sorted((t.x, t.x + text_width(t.text, t.size)) for t in texts)
    assert len(spans) == 4 and all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert max(b for _, b in spans) <= scene.width


def test_four_dimensional_boxes_become_runs_of_rows():
    # Out[1, 4, 15, 32]: a (1, 1, 8, 32) tile of head 2, rows 8..14 (clipped): rows 38..44
    assert tile_rects((1, 4, 15, 32), (0, 2, 8, 0), (1, 3, 15, 32)) == [(38, 0, 7, 32)]
    assert tile_rects((2, 3, 4), (0, 1, 0), (2, 2, 4)) == [(1, 0, 1, 4), (4, 0, 1, 4)]
    assert tile_rects((10,), (4,), (8,)) == [(0, 4, 1, 4)]


def test_html_is_deterministic_and_says_agreement_in_words():
    a = crosscheck_html(decode_with_nans())
    b = crosscheck_html(decode_with_nans())
    assert a == b
    assert "8 differ in lanes the emulator marks undetermined" in a
    assert a.count("<svg") == 1 and "written by block (0, 0, 0)" in a


def test_display_hook_gives_text_and_html():
    cc = decode_with_nans()
    bundle = cc._repr_mimebundle_()
    assert bundle["text/plain"].startswith("decode_attention on scripted GPU vs the emulator")
    assert "<svg" in bundle["text/html"]


def test_a_recorded_result_says_it_is_a_recording_first():
    # notebook 18 showed "decode_attention on NVIDIA H100 … vs the emulator" on a CPU-only
    # box with nothing saying it was a recording
    live = decode_with_nans()
    assert "recording" not in crosscheck_html(live).lower()
    where = "run on NVIDIA H100 80GB HBM3 on 2026-11-25, read from notebooks/data/x.json"
    again = tile_lab.CrossCheck.from_json(json.loads(live.dumps()), recording=where)
    page = crosscheck_html(again)
    assert page.index("A recording, not run here:") < page.index(again.summary())
    assert where in page and str(again).startswith(f"A recording, not run here: {where}\n")
    # the recording travels with the saved result
    assert tile_lab.CrossCheck.from_json(json.loads(again.dumps())).recording == where


def test_the_data_modules_never_import_the_renderer():
    for path in (ROOT / "tile_lab" / "parity").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "render" not in (node.module or ""), path.name


_GEOMETRY = """(() => {
  const svgs = [...document.querySelectorAll('svg')];
  const out = [];
  for (const svg of svgs) {
    const frame = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')].map(t => t.getBoundingClientRect())
      .map(r => [r.left, r.top, r.right, r.bottom]);
    const tiles = [...svg.querySelectorAll('g.tl-xc rect')].map(r => r.getBoundingClientRect())
      .map(r => [r.left, r.top, r.width, r.height]);
    out.push({frame: [frame.left, frame.top, frame.right, frame.bottom], texts, tiles});
  }
  return {svgs: out, page: document.documentElement.scrollWidth, width: window.innerWidth};
})()"""


@pytest.mark.slow
def test_in_chromium_at_1000px_nothing_is_clipped_or_overlapping(tmp_path):
    from browser_probe import Job, run

    body = crosscheck_html(decode_with_nans()) + crosscheck_html(
        gemm_with_a_design_tile_and_a_bug())
    (res,) = run([Job("crosscheck_1000", body, width=1000, height=1400,
                      evaluate=_GEOMETRY)], tmp_path)
    v = res["value"]
    assert v["page"] <= v["width"]  # no horizontal scroll at 1000 px
    for svg in v["svgs"]:
        left, top, right, bottom = svg["frame"]
        for x0, y0, x1, y1 in svg["texts"]:
            assert left - 0.5 <= x0 and x1 <= right + 0.5 and top - 0.5 <= y0 and y1 <= bottom + 0.5
        texts = svg["texts"]
        for i, a in enumerate(texts):  # no text over another text
            for b in texts[i + 1:]:
                assert a[2] <= b[0] + 0.5 or b[2] <= a[0] + 0.5 or a[3] <= b[1] + 0.5 \
                    or b[3] <= a[1] + 0.5, (a, b)
        assert all(w > 0 and h > 0 for _, _, w, h in svg["tiles"])
    # the red tile is really red on the screen
    png = res["png"]
    assert png.shape[1] == 1000


def test_gpu_nans_are_labelled_inside_their_tile():
    cc = decode_with_nans()  # one NaN, at Out[0, 1, 3, 5]: block (0, 1)'s tile
    scene = heatmap_scene(cc.outputs[0], cc)
    labelled = [g for g in scene.items if isinstance(g, Group)
                and any(isinstance(i, Text) for i in g.items)]
    assert len(labelled) == 1 and "block (0, 1, 0)" in labelled[0].title
    rect = labelled[0].items[0]
    (text,) = [i for i in labelled[0].items if isinstance(i, Text)]
    assert isinstance(labelled[0].items[-2], Rect)  # a light patch behind the label
    assert text.text == "GPU NaN ×1"
    assert rect.x <= text.x and text.x + text_width(text.text, text.size) <= rect.x + rect.w
    assert rect.y <= text.y - text.size and text.y <= rect.y + rect.h
