"""The concept pictures in headless Chromium: each one's key element is drawn where its data
says (pixels of the screenshot), and the linked hover lights up exactly its group (computed
styles while hovering), on a light and a dark page. Screenshots: test-artifacts/render/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from browser_probe import Job, mark_titled, run
from fixture_files import inspection_fixture

from tile_lab.render.pipeline import pipeline_picture
from tile_lab.render.schedule import l2_order, sm_timeline
from tile_lab.render.svg import Group, Rect
from tile_lab.render.views import transposed_load, view_windows

pytestmark = pytest.mark.slow  # one browser start per test (seconds)
FIXTURES = Path(__file__).parent / "fixtures"

# Per titled group: its opacity and its first rect's stroke width (as computed while the
# page is hovered), keyed by the title's first words.
_GROUP_INFO = """(prefixes) => Object.fromEntries(prefixes.map(p => {
  const g = [...document.querySelectorAll('g')].find(g =>
    g.querySelector(':scope > title')?.textContent.startsWith(p));
  if (!g) return [p, null];
  const r = g.querySelector(':scope > rect');
  return [p, {opacity: Number(getComputedStyle(g).opacity),
              stroke: r ? getComputedStyle(r).strokeWidth : null}];
}))"""


def group_info(*prefixes: str) -> str:
    return f"({_GROUP_INFO})({json.dumps(list(prefixes))})"


def rect_of(scene_items, prefix: str) -> Rect:
    """The first rect of the group whose tooltip starts with ``prefix``."""
    for it in scene_items:
        if isinstance(it, Group):
            if it.title and it.title.startswith(prefix):
                return next(r for r in it.items if isinstance(r, Rect))
            try:
                return rect_of(it.items, prefix)
            except LookupError:
                pass
    raise LookupError(prefix)


def pixel(img: np.ndarray, rect: Rect, margin: int = 8, dx: float = 0.25) -> np.ndarray:
    """A pixel inside ``rect`` (page margin ``margin``), left of any centred label."""
    return img[int(margin + rect.y + rect.h / 2), int(margin + rect.x + rect.w * dx)]


def rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255


def test_sm_timeline_tail_and_wave_hover(tmp_path):
    p = sm_timeline(300, "H100 SXM")  # 3 waves on 132 SMs, a tail of 36 blocks
    hover = mark_titled("block 0 →")
    jobs = [Job("sm_timeline_light", p._repr_html_(), prepare=hover, hover="[data-probe]",
                evaluate=group_info("block 0 →", "block 5 →", "block 140 →")),
            Job("sm_timeline_dark_1000", p._repr_html_(), width=1000, dark=True)]
    light, dark = run(jobs, tmp_path)
    info = light["value"]
    # hovering block 0 outlines every block of wave 0 and fades the other waves
    assert info["block 5 →"]["stroke"] == "2px" and info["block 5 →"]["opacity"] == 1
    assert info["block 140 →"]["opacity"] < 0.5
    for res in (light, dark):
        img = res["png"]
        # SM 100 runs block 100 in wave 0 (blue fill) but idles in wave 2 (the tail: no fill)
        busy = pixel(img, rect_of(p.scene.items, "block 100 →"))
        idle = pixel(img, rect_of(p.scene.items, "SM 100: idle in wave 2"))
        blue = rgb("#0072B2")
        assert np.abs(busy - blue).sum() < np.abs(idle - blue).sum() - 0.3
        # the last block of the tail (299, SM 35 in wave 2) is drawn, SM 36 is idle there
        rect_of(p.scene.items, "block 299 → SM 35, wave 2")
        rect_of(p.scene.items, "SM 36: idle in wave 2")


def test_l2_order_panels_and_hover(tmp_path):
    p = l2_order(16, 16, group_m=4, num_sms=32)
    row_major, grouped = p.data
    assert (row_major.waves[0].panels, grouped.waves[0].panels) == (18, 12)
    jobs = [Job("l2_order_light", p._repr_html_(), prepare=mark_titled("C tile (0, 0)"),
                hover="[data-probe]",
                evaluate=group_info("C tile (1, 0)", "C tile (15, 15)")),
            Job("l2_order_dark_1000", p._repr_html_(), width=1000, dark=True)]
    light, dark = run(jobs, tmp_path)
    # row-major: C tile (1, 0) is in wave 0 with (0, 0); (15, 15) is in the last wave
    assert light["value"]["C tile (1, 0)"]["stroke"] == "2px"
    assert light["value"]["C tile (15, 15)"]["opacity"] < 0.5
    for res in (light, dark):
        img = res["png"]
        # wave-0 tiles are filled strongly, later waves faintly
        first = pixel(img, rect_of(p.scene.items, "C tile (0, 0)"))
        later = pixel(img, rect_of(p.scene.items, "C tile (9, 9)"))
        assert np.abs(first - later).max() > 0.2


def test_view_windows_overlap_counts_and_window_hover(tmp_path):
    p = view_windows((8, 8), (3, 3), steps=(1, 1))
    assert p.data.max_overlap == 9 and p.data.num_tiles == (6, 6)
    entry = mark_titled("tile (0, 1) →", last=True)  # its entry in the list
    strokes = """(() => [...document.querySelectorAll('g.tl-k-v1')].map(
                   g => getComputedStyle(g.querySelector('rect')).strokeWidth))()"""
    jobs = [Job("view_windows_light", p._repr_html_(), prepare=entry, hover="[data-probe]",
                evaluate=strokes),
            Job("view_windows_dark", p._repr_html_(), dark=True)]
    light, dark = run(jobs, tmp_path)
    # hovering the list entry outlines it and its window
    assert light["value"] == ["2px", "2px"]
    for res in (light, dark):
        img = res["png"]
        nine = pixel(img, rect_of(p.scene.items, "element (4, 4): covered by 9"), dx=0.15)
        one = pixel(img, rect_of(p.scene.items, "element (7, 0): covered by 1"), dx=0.15)
        page = img[2, 2]
        # the more windows cover an element, the further its tint is from the page
        assert np.abs(nine - page).sum() > np.abs(one - page).sum() + 0.3


def test_transposed_load_links_tile_and_array_elements(tmp_path):
    p = transposed_load((6, 8), (4, 2), (0, 1), order=(1, 0))
    assert p.data.start == (2, 0) and p.data.stop == (4, 4)  # rows 2-3, cols 0-3 read
    jobs = [Job("transposed_load_light", p._repr_html_(), prepare=mark_titled("tile[0, 1] ="),
                hover="[data-probe]", evaluate=group_info("a[3, 0]", "a[2, 0]")),
            Job("transposed_load_dark", p._repr_html_(), dark=True)]
    light, dark = run(jobs, tmp_path)
    # tile[0, 1] = a[3, 0]: hovering it outlines that array element, fades a[2, 0]
    assert light["value"]["a[3, 0]"]["stroke"] == "2px"
    assert light["value"]["a[2, 0]"]["opacity"] < 0.5
    for res in (light, dark):
        img = res["png"]
        inside = pixel(img, rect_of(p.scene.items, "a[3, 3]"), dx=0.1)
        outside = pixel(img, rect_of(p.scene.items, "a[0, 0]"), dx=0.1)
        assert np.abs(inside - rgb("#0072B2")).sum() < np.abs(outside - rgb("#0072B2")).sum()


def test_pipeline_stages_beside_the_k_loop(tmp_path):
    insp = inspection_fixture("pipeline_gemm_latency4_sm_90")
    p = pipeline_picture(insp)
    assert p.data.stages == 4
    jobs = [Job("pipeline_light", p._repr_html_(), prepare="""(() => {
                  document.querySelector('g.tl-k-load').setAttribute('data-probe', '1'); })()""",
                hover="[data-probe]", evaluate=group_info("step 0: mma", "step 2: stage 0")),
            Job("pipeline_light_1000", p._repr_html_(), width=1000),
            Job("pipeline_dark", p._repr_html_(), dark=True)]
    hovered, light, dark = run(jobs, tmp_path)
    # hovering the load source line outlines load cells and fades the mma cells
    assert hovered["value"]["step 2: stage 0"]["stroke"] == "2px"
    assert hovered["value"]["step 0: mma"]["opacity"] < 0.5
    for res in (light, dark):
        img = res["png"]
        # the mma of step t uses stage t: an orange cell on the diagonal
        mma = pixel(img, rect_of(p.scene.items, "step 3: mma consumes iteration 3"), dx=0.1)
        assert np.abs(mma - rgb("#E69F00")).max() < 0.35
        ahead = pixel(img, rect_of(p.scene.items, "step 3: stage 1 holds"), dx=0.1)
        assert np.abs(ahead - rgb("#E69F00")).max() > 0.35
