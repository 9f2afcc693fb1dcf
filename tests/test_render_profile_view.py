"""The profile views, from the recorded H100 profiles in notebooks/data and the kernels
compiled here for sm_90 (same toolchain: every instruction joins)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import tile_lab
from tile_lab.render.html import view_class
from tile_lab.render.profile_view import (
    heat_level,
    profile_comparison_html,
    profile_summary_html,
    profile_view_html,
)

ROOT = Path(__file__).parent.parent
DATA = ROOT / "notebooks" / "data"
SIG = "f16[4096,4096], f16[4096,4096], f16[4096,4096], 128, 128, 64"


@pytest.fixture(scope="module")
def gemm():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from gemm_kernels import gemm_naive
    finally:
        sys.path.remove(str(ROOT / "bench"))
    insp = tile_lab.inspect(gemm_naive, SIG, arch="sm_90", show="source,tileir,sass")
    return insp, tile_lab.load_profile(DATA / "profile_gemm_best.json")


def _heat_rules(page: str, vclass: str) -> dict[int, int]:
    return {int(n): int(h) for n, h in re.findall(
        rf"\.{vclass} \.tl-l(\d+)>\.tl-g\{{background:var\(--tl-h(\d)\)\}}", page)}


def test_heat_on_the_mma_and_load_lines(gemm):
    insp, prof = gemm
    page = profile_view_html(insp, prof)
    heat = _heat_rules(page, view_class(insp))
    src = dict(insp.source_lines)
    mma = next(n for n, t in src.items() if "ct.mma" in t)
    load_a = next(n for n, t in src.items() if "ct.load(A" in t)
    assert heat[mma] == 5  # the hottest line
    assert heat[load_a] >= 1
    assert all(level <= heat[mma] for level in heat.values())
    # the same rule colours that line in every pane: rows of all three carry tl-l<mma>
    for pane in ("source", "tileir", "sass"):
        body = page.split(f'tl-pane-{pane}"', 1)[1].split("</section>", 1)[0]
        assert f"tl-l{mma}" in body
    # per-instruction heat in the SASS pane, and the hover panel for the mma line
    assert re.search(r"\.tl-pane-sass \.tl-code>:nth-child\(\d+\)>\.tl-g\{background:var"
                     r"\(--tl-h5\)\}", page)
    assert f".tl-prof:has(.tl-l{mma}:hover) .tl-stall-{mma}{{display:block}}" in page
    assert f'class="tl-stall tl-stall-{mma}"' in page


def test_sass_heat_rows_are_the_hottest_instruction(gemm):
    insp, prof = gemm
    page = profile_view_html(insp, prof)
    rows = [int(n) for n in re.findall(
        r"\.tl-pane-sass \.tl-code>:nth-child\((\d+)\)>\.tl-g\{background:var\(--tl-h5\)\}",
        page)]
    hottest = prof.hot_instructions(1)[0]
    text_lines = insp.stages["sass"].text.splitlines()
    assert any(f"/*{hottest.offset:04x}*/" in text_lines[r - 1] for r in rows)


def test_hot_table_and_determinism(gemm):
    insp, prof = gemm
    page = profile_view_html(insp, prof)
    assert page == profile_view_html(insp, prof)
    assert "/tmp/" not in page and "ipykernel" not in page
    table = page.split('<table class="tl-hot"', 1)[1].split("</table>", 1)[0]
    first = table.split("<tr", 2)[2]  # the first data row
    assert "acc = ct.mma(a, b, acc)" in first and "long_sb" in first
    assert "(instructions with no source line)" in table
    assert "NVIDIA H100 80GB HBM3" in page and "source counters" in page


def test_summary_and_comparison_show_the_cliff():
    best = tile_lab.load_profile(DATA / "profile_gemm_best.json")
    cliff = tile_lab.load_profile(DATA / "profile_gemm_cliff.json")
    assert "spills" not in profile_summary_html(best)
    assert "986 STL + 1,103 LDL, 3,736 B stack/thread" in profile_summary_html(cliff)
    page = profile_comparison_html([("best", best), ("cliff", cliff)])
    assert page == profile_comparison_html([("best", best), ("cliff", cliff)])
    assert "spill instructions (LDL/STL, any line)" in page
    assert page.count("<tr>") == 1 + len({lp.line for p in (best, cliff)
                                          for lp in p.by_line()}) + 2
    bundle = tile_lab.compare_profiles({"best": best, "cliff": cliff})._repr_mimebundle_()
    assert bundle["text/html"] == page and "cliff: gemm_naive" in bundle["text/plain"]


def test_profile_shifts_to_the_same_source_elsewhere(gemm):
    insp, prof = gemm
    moved = prof.shifted_to(prof.first_line + 3)
    assert _heat_rules(profile_view_html(insp, moved), view_class(insp)) == \
        _heat_rules(profile_view_html(insp, prof), view_class(insp))


def test_heat_levels():
    assert heat_level(0, 100) == 0 and heat_level(100, 0) == 0
    assert heat_level(0, 1000) == 0 and heat_level(9, 1000) == 0  # under 1%: no heat
    assert heat_level(10, 1000) == 1 and heat_level(1000, 1000) == 5
    assert heat_level(601, 1000) == 4


def test_overlay_json_matches_the_html(gemm):
    import json

    from tile_lab.render.profile_view import PROFILE_MIME_TYPE, profile_overlay_json

    insp, prof = gemm
    overlay = profile_overlay_json(insp, prof)
    assert json.loads(json.dumps(overlay)) == overlay  # plain JSON
    heat = _heat_rules(profile_view_html(insp, prof), view_class(insp))
    assert {int(k): v for k, v in overlay["line_heat"].items() if v} == heat
    assert overlay["hot_lines"][0]["text"] == "acc = ct.mma(a, b, acc)"
    assert overlay["inspection"]["schema"] == "tile-lab.inspection"
    rows = insp.stages["sass"].text.splitlines()
    hottest = prof.hot_instructions(1)[0]
    hot_rows = [int(r) for r, level in overlay["sass_row_heat"].items() if level == 5]
    assert any(f"/*{hottest.offset:04x}*/" in rows[r] for r in hot_rows)
    bundle = prof.view(insp)._repr_mimebundle_()
    assert bundle[PROFILE_MIME_TYPE] == overlay
