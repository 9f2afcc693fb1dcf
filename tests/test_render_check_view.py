"""render/check_view.py: a checked output's tile map drawn from the checker's data, and the
check result's rich display (verdict above the picture)."""

from __future__ import annotations

import re

from tile_lab.checker import CheckMap, CheckResult, TileVerdict
from tile_lab.render.check_view import check_picture, check_result_html, check_svg


def _map() -> CheckMap:
    # 4 tiles of 8 elements: tile 1 wrong (block 1 wrote it), tile 3 never written
    tiles = (TileVerdict((0,), "0–7", (0,), 0, 0),
             TileVerdict((1,), "8–15", (1,), 3, 0),
             TileVerdict((2,), "16–23", (2,), 0, 0),
             TileVerdict((3,), "24–31", None, 0, 8, owner=(3,), owner_in_grid=False))
    return CheckMap("y", (32,), (8,), (3,), tiles)


def _result(**kw) -> CheckResult:
    base = dict(kernel="k", output="y", ok=False, device="emulator", total=32, wrong=3,
                unwritten=8, max_abs_err=1.0, max_rel_err=0.5)
    return CheckResult(**{**base, **kw})


def test_each_tile_is_drawn_once_and_the_bad_ones_are_explained():
    svg = check_picture(_map()).svg
    assert svg.count("<rect") >= 4
    assert "y: 2 of 4 tiles ((8,) elements each) wrong or never written · grid (3,)" in svg
    assert "tile 1 (elements 8–15): 3 wrong; written by block (1,)" in svg
    assert ("tile 3 (elements 24–31): never written; block (3,) would write it, "
            "but grid (3,) has no such block") in svg
    assert "tile 0 (elements 0–7): right; written by block (0,)" in svg


def test_a_failed_check_shows_its_map_a_passed_one_none_and_a_failed_map_says_why():
    failed = _result(tile_map=_map())
    assert check_svg(failed) == check_picture(_map()).svg == failed.diagram_svg
    assert check_svg(_result(ok=True, wrong=0, unwritten=0)) == ""
    broken = _result(diagram_error="no <tiles> & no map")
    assert check_svg(broken) == "<pre>diagram unavailable: no &lt;tiles&gt; &amp; no map</pre>"


def test_the_rich_display_is_the_verdict_in_its_colour_above_the_picture():
    failed = _result(tile_map=_map())
    page = check_result_html(failed)
    assert failed._repr_html_() == page  # through tile_lab.display's registry
    verdict = re.search(r"<pre style='color:(#\w+);white-space:pre-wrap'>(.*?)</pre>", page,
                        re.DOTALL)
    assert verdict.group(1) == "#D55E00" and verdict.group(2).startswith("✗ k: 3 of 32")
    assert page.endswith(f"<div>{check_picture(_map()).svg}</div></div>")
    passed = check_result_html(_result(ok=True, wrong=0, unwritten=0))
    assert "color:#009E73" in passed and "<svg" not in passed
