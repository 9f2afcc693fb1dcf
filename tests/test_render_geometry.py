"""The geometry check (``geometry_probe.py`` in Chromium, ``geometry_mpl.py`` in matplotlib)
fails on broken pictures and passes on the pictures the public render functions draw.

``notebooks/conftest.py`` runs the same check on every picture of the 17 tutorials."""

from __future__ import annotations

from pathlib import Path

import browser_env
import cuda.tile as ct
import geometry_mpl
import geometry_probe
import matplotlib.pyplot as plt  # headless: tests/conftest.py sets MPLBACKEND=Agg
import numpy as np
from fixture_files import fixture_text

import tile_lab
from tile_lab.compile.artifacts import Inspection
from tile_lab.render import schedule, views
from tile_lab.render.pipeline import pipeline_picture

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _measure(pictures: dict[str, str]) -> dict[str, list[str]]:
    return geometry_probe.measure(list(pictures.items()), browser_env.chromium())


def test_fails_on_notebook_11_windows_view_before_the_fix():
    # view_windows((64,), (8,), (4,), highlight=[(0,), (1,), (2,)]) as main drew it on
    # 2026-11-25: tiles (1,) and (2,) with negative heights, the array a 7 px strip
    bad = fixture_text("nb11_windows_before_fix.svg")
    problems = _measure({"nb11": bad})["nb11"]
    assert any('height="-0.44"' in p and "tile (1,)" in p for p in problems), problems
    assert any('height="-4.44"' in p and "tile (2,)" in p for p in problems), problems
    assert any(p.startswith("collapsed: 64 shapes") for p in problems), problems


def test_each_rule_fails_on_a_picture_that_breaks_it():
    svg = ("<svg xmlns='http://www.w3.org/2000/svg' width='300' height='{h}'>{body}</svg>")
    pics = {
        "overlap": svg.format(h=60, body="<text x='10' y='30' font-size='12'>wave 0 wave 1"
                                         "</text><text x='40' y='34' font-size='12'>model: "
                                         "equal</text>"),
        "outside": svg.format(h=60, body="<text x='250' y='30' font-size='12'>a long label "
                                         "past the edge</text>"),
        "crossed": svg.format(h=60, body="<text x='20' y='30' font-size='12'>4</text>"
                                         "<rect x='24' y='10' width='40' height='40' "
                                         "fill='none' stroke='black' stroke-width='2'/>"),
        "on a line": svg.format(h=60, body="<text x='20' y='30' font-size='12' "
                                            "text-anchor='middle'>4</text><path d='M20 0 "
                                            "L20 60' style='stroke:black;stroke-width:1.4'/>"),
        "nan": svg.format(h=60, body="<rect x='0' y='0' width='NaN' height='4'/>"),
        "wrap": "<div style='width:60px'>block (1, 0, 0) wrote it</div>",
        "cut": "<div style='width:80px;overflow:hidden;white-space:nowrap'>"
               "<span>a Tile IR line much longer than its pane</span></div>",
        "fine": svg.format(h=60, body="<text x='10' y='20' font-size='12'>one</text>"
                                      "<text x='10' y='40' font-size='12'>two</text>"),
    }
    got = _measure(pics)
    assert any("overlaps" in p and "model: equal" in p for p in got["overlap"]), got
    assert any("outside its picture" in p for p in got["outside"]), got
    assert any("crossed by the outline" in p for p in got["crossed"]), got
    assert any("crossed by the line" in p for p in got["on a line"]), got
    assert any("NaN" in p for p in got["nan"]), got
    assert any('"(1, 0, 0)" wraps' in p for p in got["wrap"]), got
    assert any("cut by its pane" in p for p in got["cut"]), got
    assert got["fine"] == []


@ct.kernel
def _racy_double(x, y, T: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, index=(i,), shape=(T,))
    ct.store(y, index=(0,), tile=2 * t)  # every block writes tile 0: a race, tiles 1.. unwritten


def test_public_concept_pictures_pass():
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    fixture = "pipeline_gemm_latency4_sm_90.json"
    insp = Inspection.from_json(fixture_text(fixture))
    pics = {
        "partition": tile_lab.partition((10, 16), (2, 4), highlight=(1, 2)),
        "partition 1-D": tile_lab.partition((40,), (8,), highlight=[(0,), (4,)]),
        "diagram": tile_lab.diagram(tile_lab.trace(_racy_double, (4,), (x, y, 16))),
        "coverage": tile_lab.diagram(tile_lab.trace(_racy_double, (4,), (x, y, 16)),
                                     view="coverage"),
        "check": tile_lab.check(_racy_double, spec=lambda a: 2 * a, grid=(4,),
                                shapes=[(64,), (64,)], constants=(16,), device="emulator"),
        "sanitizer": tile_lab.sanitize(_racy_double, (4,), (x, y, 16)),
        "doctor": tile_lab.doctor(),
        "pipeline": pipeline_picture(insp),
        "windows 1-D": views.view_windows((64,), (8,), (4,), highlight=[(0,), (1,), (2,)]),
        "windows slice": views.view_windows((40,), (8,), slice=(0, 2, 34)),
        "windows 2-D": views.view_windows((8, 8), (3, 3), steps=(1, 1)),
        "windows gaps": views.view_windows((10,), (2,), (4,)),
        "transposed": views.transposed_load((6, 8), (4, 2), (0, 1), order=(1, 0)),
        "sm timeline": schedule.sm_timeline(132 + 40),
        "sm timeline 2/SM": schedule.sm_timeline(300, blocks_per_sm=2),
        "l2 order": schedule.l2_order(16, 16, group_m=4, num_sms=32),
    }
    got = _measure({k: p._repr_html_() for k, p in pics.items()})
    assert got == {k: [] for k in pics}


def test_windows_view_shows_every_count_and_positive_sizes():
    p = views.view_windows((64,), (8,), (4,), highlight=[(0,), (1,), (2,)])
    counts = [t for t in views._texts(p.scene.items) if t.text in {"1", "2"}
              and t.anchor == "middle" and t.size > 8]
    assert len(counts) >= 64  # one coverage label per element (plus column numbers)
    assert "number in each element" in p.svg
    assert 'height="-' not in p.svg and 'width="-' not in p.svg
    assert p.width <= geometry_probe.PANE  # fits the output area at 1000 px


def test_matplotlib_rules():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.bar(range(8), [1.0] * 8, label="ours")
    ax.set_xticks(range(8), [f"a long tick label {i}" for i in range(8)])
    ax.legend(loc="center")
    problems = geometry_mpl.figure_problems(fig)
    assert any("overlaps text" in p for p in problems), problems
    assert any("legend" in p and "covers bar" in p for p in problems), problems
    plt.close(fig)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(4, 2))
    a1.imshow(np.zeros((4, 4)))
    a2.imshow(np.zeros((4, 4)))
    a2.set_ylabel("a label pushed over the left image", labelpad=60)
    problems = geometry_mpl.figure_problems(fig)
    assert any("lies over another plot" in p for p in problems), problems
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(loc="upper left")
    ax.set_title("fine")
    assert geometry_mpl.figure_problems(fig) == []
    plt.close(fig)
