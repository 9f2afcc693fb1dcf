"""TMA verdicts drawn in the inspect view, from real sm_90 compiles (fixtures: cuda-tile
1.7.0, tileiras 13.4); the verdicts themselves are tested in test_analysis_tma.py."""

from __future__ import annotations

import html
from pathlib import Path

from fixture_files import inspection_fixture

from tile_lab.compile.artifacts import Inspection
from tile_lab.render.html import inspection_html, inspection_json
from tile_lab.render.tma import tma_badge_text, tma_field, tma_report

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> Inspection:
    return inspection_fixture(name)


def test_badges_in_the_inspect_view_only_when_sass_and_tileir_are_shown():
    insp = load("tma_gemm_k1004_sm_90")
    view = inspection_html(insp)
    assert view.count('class="tl-tma tl-tma-no"') == 2  # source line 34 and its summary row
    assert view.count('class="tl-tma tl-tma-yes"') == 4
    assert "2 of 3 tile loads/stores became TMA copies" in view
    sass = view[view.index("tl-pane-sass"):]
    assert sass.count("tl-tma-op") == 3  # B's UTMALDG and C's two UTMASTG, boxed
    plain = inspection_html(insp.with_show(("source", "tileir")))
    assert "tl-tma" not in plain
    assert "tma" not in inspection_json(insp.with_show(("source", "tileir")))
    assert tma_field(insp.with_show(("source", "sass"))) is None
    assert inspection_html(insp) == view  # deterministic


def test_the_json_field_is_the_report_and_the_html_draws_it():
    """The inspect MIME JSON carries the verdict (``tma``); the HTML view draws exactly that
    data: each listed source line ends with its badge, nothing else has one."""
    insp = load("tma_gemm_k1004_sm_90")
    field = inspection_json(insp)["tma"]
    r = tma_report(insp)
    assert field == {"arch": "sm_90", "summary": r.summary(),
                     "lines": [{"line": t.line, "kind": t.kind, "tma": t.tma,
                                "sass_ops": list(t.sass_ops), "reason": t.reason}
                               for t in r.lines]}
    assert [tma_badge_text(t) for t in field["lines"]] == ["no TMA", "TMA UTMALDG",
                                                           "TMA UTMASTG"]
    view = inspection_html(insp)
    source = view[view.index('<section class="tl-pane tl-pane-source"'):
                  view.index('<section class="tl-pane tl-pane-tileir"')]
    rows = [r for r in source.split("\n</span>") if "tl-tma" in r]
    assert len(rows) == 3
    for row, t in zip(rows, field["lines"]):
        assert f'data-line="{t["line"]}"' in row
        assert row.endswith(f"{tma_badge_text(t)}</span>")  # the badge ends the line
        assert html.escape(t["reason"], quote=True) in row  # the reason is its title
