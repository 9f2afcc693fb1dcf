"""render/safe_markup.py: tile_lab's own views pass the allow-list unchanged (so the exported
page shows what the notebook showed); anything a hostile notebook could add is dropped."""

from __future__ import annotations

import re

import pytest
from test_render_check_view import _map, _result
from test_render_plots import GEMM, VADD

from tile_lab.render.check_view import check_result_html
from tile_lab.render.diagram import partition
from tile_lab.render.plots import roofline
from tile_lab.render.safe_markup import clean_markup, css_is_scoped, tile_lab_view
from tile_lab.render.sanitizer_view import sanitizer_report_html
from tile_lab.sanitizer.report import Finding, SanitizerReport


def _quotes(text: str) -> str:  # the cleaner writes every attribute value in double quotes
    return re.sub(r"='([^'<>]*)'", r'="\1"', text)


def _report() -> SanitizerReport:
    race = Finding("race", "4 elements written by 2 blocks", "y", line=5, block=(1, 0, 0),
                   other_block=(0, 0, 0), boxes=(((0,), (4,)),), count=4, occurrences=2)
    return SanitizerReport(kernel="k", grid=(2, 1, 1), findings=(race,), accesses=8)


@pytest.mark.parametrize("name, markup, kind", [
    ("diagram", lambda: partition((10, 16), (4, 4))._repr_html_(), "diagram"),
    ("diagram SVG", lambda: partition((10, 16), (4, 4))._repr_svg_(), "diagram"),
    ("failed check", lambda: check_result_html(_result(tile_map=_map())), "check"),
    ("sanitizer", lambda: sanitizer_report_html(_report()), "sanitizer report"),
])
def test_tile_lab_views_pass_unchanged(name, markup, kind):
    text = markup()
    assert tile_lab_view(text) == kind
    assert clean_markup(text) == _quotes(text), name


def test_a_chart_keeps_its_picture_and_loses_only_its_unscoped_style():
    svg = roofline([VADD, GEMM]).svg
    assert tile_lab_view(svg) == "chart"
    clean = clean_markup(svg)
    # matplotlib's own "*{stroke-linejoin:round}" would style the whole page: dropped
    assert "stroke-linejoin: round" in svg and "stroke-linejoin: round" not in clean
    for tag in ("path", "text", "use", "clipPath"):
        assert clean.count(f"<{tag}") == svg.count(f"<{tag}") > 0, tag
    assert clean.count('clip-path="url(#') == svg.count('clip-path="url(#')


def test_markup_that_is_not_a_view_is_not_recognised():
    assert tile_lab_view("<b>hi</b>") is None
    assert tile_lab_view('<div class="mine">x</div>') is None
    assert tile_lab_view('<p class="tl-check">x</p>') is None  # a check is a div


def test_what_a_hostile_notebook_adds_is_dropped():
    forged = ('<div class="tl-check" onclick="window.__pwned=1">'
              "<script>window.__pwned=2</script>"
              '<img src="http://evil.example/x.png" onerror="window.__pwned=3">'
              '<a href="javascript:window.__pwned=4">link text</a>'
              '<a href="https://evil.example/">other</a>'
              '<iframe srcdoc="<script>window.__pwned=5</script>">inside</iframe>'
              '<svg onload="window.__pwned=6"><use href="https://evil.example/s.svg#a"/>'
              '<rect fill="url(https://evil.example/p)" width="1" style="fill:url(http://e/x)"/>'
              '<foreignObject><div>fo</div></foreignObject></svg>'
              "<style>body{display:none}</style>"
              "<style>.tl-check{background:url(http://evil.example/b.png)}</style>"
              "<style>.tl-check p{color:red}</style>"
              '<form action="http://evil.example/"><input name="q"></form>'
              "<meta http-equiv=refresh content='0;url=http://evil.example/'>"
              "&lt;script&gt;stays text&lt;/script&gt;"
              "</div></div></section><div>")  # stray end tags, an unclosed element
    clean = clean_markup(forged)
    assert "__pwned" not in clean and "evil.example" not in clean and "http" not in clean
    for gone in ("<script", "<img", "<a ", "<iframe", "<form", "<input", "<meta", "onclick",
                 "onload", "onerror", "inside", "fo<", "display:none", "javascript"):
        assert gone not in clean, gone
    assert ".tl-check p{color:red}" in clean  # scoped CSS stays
    assert "link text" in clean and "other" in clean  # the text of a dropped tag stays
    assert "&lt;script&gt;stays text&lt;/script&gt;" in clean
    # balanced: every element opened is closed, no end tag closes what it did not open
    assert "</section>" not in clean
    opened = re.findall(r"<(div|svg|rect|style|use)\b", clean)
    closed = re.findall(r"</(div|svg|rect|style|use)>|<(?:rect|use)\b[^>]*/>", clean)
    assert len(opened) == len(closed)


@pytest.mark.parametrize("css, ok", [
    (".tile-lab-diagram text{pointer-events:none}", True),
    ('body[data-jp-theme-light="false"] .tile-lab-diagram,body.vscode-dark .tl-x{--a:#fff}',
     True),
    ("@media (max-width:600px){.tl-tune td{padding:0}}", True),
    ("*{stroke-linejoin:round}", False),
    (".tl-check p, h2{color:red}", False),  # one unscoped selector spoils the rule
    (".tl-export-toc{display:none}", False),  # the page's own classes are not the view's
    ("@font-face{font-family:x}", False),
    (".tl-x{background:url(data:image/png;base64,AA)}", False),
    (".tl-x{fill:url(#p)}", True),
    ("@import 'x.css';", False),
    (".tl-x{color:\\72 ed}", False),
])
def test_only_css_scoped_to_tile_lab_classes_is_kept(css, ok):
    assert css_is_scoped(css) is ok
