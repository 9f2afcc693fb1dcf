"""TMA verdicts drawn in the inspect view, from real sm_90 compiles (fixtures: cuda-tile
1.7.0, tileiras 13.4); the verdicts themselves are tested in test_tma.py."""

from __future__ import annotations

from pathlib import Path

from tile_lab.artifacts import Inspection
from tile_lab.render.html import inspection_html
from tile_lab.render.tma import annotate_inspection_html

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> Inspection:
    return Inspection.from_json((FIXTURES / f"{name}.json").read_text())


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
    assert annotate_inspection_html(insp, "<div>no panes</div>") == "<div>no panes</div>"
    assert inspection_html(insp) == view  # deterministic
