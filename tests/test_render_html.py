"""The inspect view (render/html.py) and the line palette (render/palette.py).

Most tests render hand-made Inspections built from real toolchain text (tests/fixtures)
with line maps read from the text's own debug info, so they need no compiler; one test
renders a real ``tile_lab.inspect`` result end to end.
"""

from __future__ import annotations

import html as htmllib
import importlib.util
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fixture_files import fixture_text, inspection_fixture

from tile_lab.compile.artifacts import MIME_TYPE, Inspection, Remark, StageText
from tile_lab.render import palette
from tile_lab.render.html import (
    _compact_sass,
    highlight_lines,
    inspection_html,
    inspection_json,
    inspection_mimebundle,
    view_class,
)
from tile_lab.render.lexers import SassLexer, TileIRLexer

FIXTURES = Path(__file__).parent / "fixtures"
KERNELS = (FIXTURES / "kernels.py.txt").read_text()


# -- hand-made inspections from fixtures ---------------------------------------------------

def tileir_line_map(text: str) -> tuple[int | None, ...]:
    """Source line per Tile IR line, from tileirdisasm's own #loc table."""
    file_locs = {m.group(1): int(m.group(2)) for m in
                 re.finditer(r'^(#loc\d*) = loc\("[^"]*":(\d+):\d+\)', text, re.M)}
    di_locs = {m.group(1): file_locs.get(m.group(2)) for m in
               re.finditer(r"^(#loc\d+) = #cuda_tile\.di_loc<(#loc\d*) in", text, re.M)}
    locs = {**file_locs, **di_locs}
    out = []
    for line in text.splitlines():
        m = re.search(r"loc\((#loc\d*)\)\s*$", line)
        out.append(locs.get(m.group(1)) if m and not line.startswith("#") else None)
    return tuple(out)


def sass_line_map(text: str) -> tuple[int | None, ...]:
    """Source line per SASS line, from nvdisasm's ``//## File ..., line N`` comments."""
    out, current = [], None
    for line in text.splitlines():
        if m := re.search(r"//## File .*, line (\d+)", line):
            current = int(m.group(1))
        out.append(current if re.match(r"\s*/\*[0-9a-f]{4}\*/", line) else None)
    return tuple(out)


def gemm_inspection(**changes) -> Inspection:
    lines = KERNELS.splitlines(keepends=True)
    tileir = (FIXTURES / "gemm.tileir.mlir").read_text()
    sass = (FIXTURES / "gemm_sm_90_excerpt.sass").read_text()
    fields = dict(
        kernel_name="gemm", filename="/fixtures/kernels.py", first_line=10,
        source="".join(lines[9:19]), arch="sm_90",
        signature="f16[256,256], f16[256,256], f32[256,256], tm=64, tn=64, tk=32",
        hints={"num_ctas": 1},
        stages={"tileir": StageText("tileir", tileir, tileir_line_map(tileir)),
                "sass": StageText("sass", sass, sass_line_map(sass))},
        cubin=b"\x7fELF-not-really",
        remarks=(Remark("passed", "tensorcore", "MMA uses Tensor Cores", 18, 14),
                 Remark("missed", "memory", "load <not> vectorised & split", 16, None),
                 Remark("analysis", "", "no line for this one")),
        versions={"cuda.tile": "1.7.0", "tileiras": "13.4"},
    )
    fields.update(changes)
    return Inspection(**fields)


class Lines(HTMLParser):
    """Collects, per pane, the data-line of every ``tl-ln`` element in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.panes: dict[str, list[int | None]] = {}
        self.classes: dict[str, list[str]] = {}
        self.current: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        pane = next((c[len("tl-pane-"):] for c in cls if c.startswith("tl-pane-")), None)
        if tag == "section" and pane:
            self.current = pane
            self.panes[pane] = []
            self.classes[pane] = []
        elif "tl-ln" in cls and self.current:
            line = a.get("data-line")
            self.panes[self.current].append(int(line) if line is not None else None)
            self.classes[self.current].append(" ".join(cls))


def parse(html_text: str) -> Lines:
    p = Lines()
    p.feed(html_text)
    return p


# -- determinism -----------------------------------------------------------------------------

def test_same_input_byte_identical_html():
    a, b = gemm_inspection(), gemm_inspection()  # equal but distinct objects
    assert inspection_html(a) == inspection_html(b)
    # and through a JSON round trip (what a saved notebook would hold)
    assert inspection_html(Inspection.from_json(a.to_json())) == inspection_html(a)


def test_html_independent_of_filename():
    # ipykernel names cells /tmp/ipykernel_<pid>/<hash>.py: that must not reach the HTML
    a = gemm_inspection(filename="/tmp/ipykernel_111/123.py")
    b = gemm_inspection(filename="/tmp/ipykernel_222/123.py")
    assert inspection_html(a) == inspection_html(b)
    assert "ipykernel" not in inspection_html(a)


def test_html_independent_of_the_cubin_bytes():
    # a cubin compiled with line info embeds the cell's temp path: it differs per session
    # while everything the view shows is the same
    from dataclasses import replace

    a = gemm_inspection()
    b = replace(a, cubin=a.cubin + b"\0/tmp/ipykernel_999/123.py")
    assert inspection_html(a) == inspection_html(b)


def test_view_class_follows_content():
    base = gemm_inspection()
    assert re.fullmatch(r"tl-v-[0-9a-f]{12}", view_class(base))
    assert view_class(gemm_inspection(arch="sm_100")) != view_class(base)
    h = inspection_html(base)
    assert h.startswith(f'<div class="tl-view {view_class(base)}" style="contain:paint;')
    assert " id=" not in h  # no ids at all: two displays of one view cannot clash


# -- line linking ----------------------------------------------------------------------------

def test_every_ir_line_carries_its_source_line():
    insp = gemm_inspection()
    p = parse(inspection_html(insp))
    for stage in ("tileir", "sass"):
        assert p.panes[stage] == list(insp.stages[stage].line_map)
    mapped = [x for x in insp.stages["tileir"].line_map if x is not None]
    assert set(mapped) >= {12, 13, 14, 16, 17, 18, 19}  # the fixture's own loc table
    assert p.panes["source"] == list(range(10, 20))


def test_same_line_same_colour_in_every_pane_in_source_order():
    tileir = (FIXTURES / "gemm.tileir.mlir").read_text()
    insp = gemm_inspection(stages={
        "tileir": StageText("tileir", tileir, tileir_line_map(tileir))}, remarks=())
    p = parse(inspection_html(insp))
    colour_of: dict[int, set[str]] = {}
    for pane in ("source", "tileir"):
        for line, cls in zip(p.panes[pane], p.classes[pane]):
            if line is not None:
                slot = [c for c in cls.split() if re.fullmatch(r"tl-c\d", c)]
                colour_of.setdefault(line, set()).update(slot)
    mapped = sorted({x for st in insp.stages.values() for x in st.line_map if x is not None})
    for i, line in enumerate(mapped):  # first mapped line gets slot 0, then 1, ...
        assert colour_of[line] == {f"tl-c{i % len(palette.PALETTE_LIGHT)}"}
    # a source line no stage maps to (the decorator line here) gets no colour band
    assert 10 not in mapped and colour_of[10] == set()


def test_hover_rules_only_for_mapped_lines():
    insp = gemm_inspection()
    h = inspection_html(insp)
    v = view_class(insp)
    style = h[h.index("<style>"):h.index("</style>")]
    hovered = {int(n) for n in re.findall(rf"\.{v}:has\(\.tl-l(\d+):hover\) \.tl-l\1", style)}
    mapped = {x for st in insp.stages.values() for x in st.line_map if x is not None}
    assert hovered == mapped | {16, 18}  # remark lines are mapped too
    # click-to-pin script present (progressive enhancement for trusted output)
    assert "<script>" in h and "tl-pin" in h


def test_remarks_link_to_lines_and_escape():
    h = inspection_html(gemm_inspection())
    p = parse(h)
    assert p.panes["remarks"] == [18, 16]  # the remark without a line has no tl-ln
    assert ">line 18:14</a>" in h and ">line 16</a>" in h
    assert "load &lt;not&gt; vectorised &amp; split" in h
    assert "Remarks (3)" in h


# -- panes -----------------------------------------------------------------------------------

def test_panes_follow_show():
    h = inspection_html(gemm_inspection(show=("source", "sass")))
    assert set(parse(h).panes) == {"source", "sass"}
    h = inspection_html(gemm_inspection(show=("sass", "ptx", "source", "partition")))
    panes = re.findall(r'class="tl-pane tl-pane-(\w+)[ "]', h)
    assert panes == ["source", "ptx", "sass"]  # stage order; partition is not a pane here
    assert "(no PTX in this inspection)" in h


def test_ptx_pane_when_present():
    ptx = ".version 8.0\n.target sm_90\n.visible .entry k()\n{\n  ret;\n}\n"
    insp = gemm_inspection(show=("source", "ptx"), stages={
        "ptx": StageText("ptx", ptx, (None, None, 11, None, 19, None))})
    p = parse(inspection_html(insp))
    assert p.panes["ptx"] == [None, None, 11, None, 19, None]


def test_source_text_is_escaped():
    src = '@ct.kernel\ndef k(a):\n    s = "</pre><script>alert(1)</script>"\n'
    insp = gemm_inspection(source=src, first_line=3, stages={}, remarks=())
    h = inspection_html(insp)
    assert "<script>alert" not in h
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in h
    assert h.count("<script>") == 1  # only ours


# -- size ------------------------------------------------------------------------------------

def test_no_per_line_inline_styles():
    sass = (FIXTURES / "gemm_sm_90_excerpt.sass").read_text() * 20  # ~2900 lines
    insp = gemm_inspection(stages={"sass": StageText("sass", sass, sass_line_map(sass))})
    h = inspection_html(insp)
    n_lines = len(sass.splitlines())
    # inline styles only on the few containers (panes row, panes, code blocks)
    assert h.count('style="') <= 1 + 2 * 4
    assert len(h) / n_lines < 400  # bytes per SASS line, markup and highlighting included


def test_compact_sass_keeps_alignment():
    text = fixture_text("vadd_sm_90.sass")
    out = _compact_sass(StageText("sass", text, ()))
    assert len(out) < len(text)
    assert len(out.splitlines()) == len(text.splitlines())
    cols = set()
    for line in out.splitlines():
        if m := re.match(r"  /\*[0-9a-f]{4}\*/( *(@!?U?P\w+ )?)(\S)", line):
            cols.add(m.start(3))
    assert len(cols) == 1  # predicated and plain instructions' opcodes line up
    assert re.sub(r"\s+", " ", out) == re.sub(r"\s+", " ", text).replace(" /*", " /*")


def test_highlight_lines_one_fragment_per_line_lossless():
    text = (FIXTURES / "gemm.tileir.mlir").read_text()
    frags = highlight_lines(text, TileIRLexer(stripnl=False))
    assert len(frags) == len(text.splitlines())
    for frag, line in zip(frags, text.splitlines()):
        assert htmllib.unescape(re.sub(r"<[^>]+>", "", frag)) == line
    assert '<span class="tl-tnf">mmaf</span>' in "".join(frags)
    sass = "\n\n  /*0000*/   LDC R1, c[0x0][0x28] ;\n"  # leading blank lines are kept
    assert highlight_lines(sass, SassLexer(stripnl=False))[:2] == ["", ""]


# -- mime bundle -----------------------------------------------------------------------------

def test_mimebundle():
    insp = gemm_inspection()
    bundle = inspection_mimebundle(insp)
    assert set(bundle) == {"text/plain", "text/html", MIME_TYPE}
    assert bundle == insp._repr_mimebundle_()
    assert bundle["text/plain"] == repr(insp)
    data = bundle[MIME_TYPE]
    assert not any(key.startswith("cubin") for key in data)
    assert data["version"] == 2 and "schema_version" not in data and "schema" not in data
    assert data["stages"]["tileir"]["line_map"] == list(insp.stages["tileir"].line_map)
    assert data["line_colors"]["10"] == 0  # the first mapped line (SASS maps line 10)
    assert data["line_colors"]["12"] == 2
    json.dumps(data)  # plain JSON, as Jupyter will send it
    assert data == inspection_json(insp)


# -- palette ---------------------------------------------------------------------------------

def test_line_colors_first_appearance_and_cycle():
    lines = [30, 12, 30, None, 7, 12]
    assert palette.line_color_index(lines) == {30: 0, 12: 1, 7: 2}
    assert palette.line_colors(lines) == {30: palette.PALETTE_LIGHT[0],
                                          12: palette.PALETTE_LIGHT[1],
                                          7: palette.PALETTE_LIGHT[2]}
    n = len(palette.PALETTE_LIGHT)
    many = palette.line_colors(list(range(1, n + 2)))
    assert many[n + 1] == many[1]  # cycles after the palette is used up
    dark = palette.line_colors(lines, theme="dark")
    assert dark.keys() == palette.line_colors(lines).keys()
    with pytest.raises(ValueError, match="theme"):
        palette.line_colors(lines, theme="sepia")


def test_palette_is_distinct_and_okabe_ito_based():
    for pal in (palette.PALETTE_LIGHT, palette.PALETTE_DARK):
        assert len(set(pal)) == len(pal) == 7
        assert "#000000" not in pal
    assert {"#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7"} <= set(palette.PALETTE_LIGHT)


def test_palette_css_switches_on_dark_themes():
    css = palette.palette_css(".x")
    assert css.startswith(".x{--tl-c0:#E69F00;")
    assert 'body[data-jp-theme-light="false"] .x' in css
    assert palette.PALETTE_DARK[1] in css
    assert palette.css_var(8) == f"var(--tl-c1, {palette.PALETTE_LIGHT[1]})"


# -- end to end with the real compiler -------------------------------------------------------

@pytest.fixture(scope="module")
def fixture_kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("k") / "fixture_kernels.py"
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("fixture_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_real_inspection_renders(fixture_kernels):
    import tile_lab

    insp = tile_lab.inspect(fixture_kernels.vadd, "f32[1024], f32[1024], f32[1024], 128",
                            arch="sm_90", show=("source", "cutile", "tileir", "sass", "remarks"))
    h = inspection_html(insp)
    assert h == inspection_html(insp)
    p = parse(h)
    for stage in ("cutile", "tileir", "sass"):
        assert p.panes[stage] == list(insp.stages[stage].line_map)
    assert p.panes["source"] == list(range(3, 9))
    linked = {x for stage in ("tileir", "sass") for x in p.panes[stage] if x is not None}
    assert {6, 7, 8} <= linked  # both loads and the store reach the IR and SASS


def test_tileir_argument_prologue_is_its_own_group():
    """vadd on sm_90: 21 of 30 Tile IR lines map to the def line; the 19 after ``entry``
    (token, assumes, constants, tensor views) render without the def line's link."""
    from tile_lab.compile.stage_rows import prologue_rows

    insp = inspection_fixture("inspect_vadd_sm_90")
    st = insp.stages["tileir"]
    rows = prologue_rows(st.rows)
    assert sorted(rows) == list(range(1, 20))
    view = inspection_html(insp)
    tileir = view[view.index('tl-pane-tileir'):view.index('tl-pane-sass')]
    assert tileir.count('class="tl-ln tl-pro"') == 19
    assert tileir.count('data-line="12"') == 21  # the rows still say where they come from
    assert len(re.findall(r'class="tl-ln tl-l12[ "]', tileir)) == 2  # entry, closing brace
    assert prologue_rows(StageText("tileir", "no entry here", (1,)).rows) == frozenset()


def test_source_pane_takes_its_natural_width():
    insp = inspection_fixture("inspect_vadd_sm_90")
    view = inspection_html(insp)
    # panes wrap onto rows instead of shrinking; the source takes its natural width
    assert 'class="tl-panes" style="display:flex;flex-wrap:wrap;' in view
    assert 'tl-pane-source" style="flex:1 1 auto;min-width:min(30em,100%);max-width:100%"' in view
    assert 'tl-pane-tileir" style="flex:1 1 30em;min-width:min(30em,100%);max-width:100%"' in view
    assert "64em" not in view  # no cap leaving empty space beside cut lines


def test_big_panes_are_cut_with_a_notice_and_long_rows_with_a_sign():
    """A static pane (no script in untrusted output) draws at most HTML_MAX_ROWS rows and
    HTML_ROW_CHARS characters a row, and says so; below those the view is unchanged."""
    from dataclasses import replace

    from tile_lab.compile.artifacts import Remark, StageText
    from tile_lab.render.html import HTML_MAX_REMARKS, HTML_MAX_ROWS, HTML_ROW_CHARS

    insp = inspection_fixture("inspect_vadd_sm_90")
    n = HTML_MAX_ROWS + 5000
    sass = StageText("sass", "  /*0000*/ NOP ;\n" * (n - 1) + "x" * (HTML_ROW_CHARS + 7),
                     (12,) * n)
    remarks = tuple(Remark("missed", "c", "m", line=12) for _ in range(HTML_MAX_REMARKS + 3))
    big = replace(insp, stages={**insp.stages, "sass": sass}, remarks=remarks,
                  show=("source", "tileir", "sass", "remarks"))
    view = inspection_html(big)
    pane = view[view.index("tl-pane-sass"):view.index("tl-pane-remarks")]
    assert f"showing {HTML_MAX_ROWS:,} of {n:,} lines" in pane
    assert 'insp.stages[&quot;sass&quot;].text' in pane
    assert pane.count('<span class="tl-ln') == HTML_MAX_ROWS
    assert f"showing {HTML_MAX_REMARKS:,} of {HTML_MAX_REMARKS + 3:,} remarks" in view
    wide = replace(big, stages={**insp.stages, "sass": StageText(
        "sass", "y" * (HTML_ROW_CHARS + 7), (12,))})
    assert "… 7 more characters" in inspection_html(wide)
    plain = inspection_html(insp)
    assert 'class="tl-notice"' not in plain and 'class="tl-more"' not in plain


def test_the_script_binds_to_its_own_view_and_looks_lines_up_without_selectors():
    """Issue 28: the inline script bound every .tl-view on the page (the extension's too)
    and built `.tl-l` + line selectors, which threw on line numbers like 1e308."""
    from tile_lab.render.html import _SCRIPT

    assert "document.currentScript" in _SCRIPT
    assert "querySelectorAll('.tl-l'" not in _SCRIPT and "querySelector('.tl-l'" not in _SCRIPT
    assert "^[1-9][0-9]{0,8}$" in _SCRIPT


def test_the_script_leaves_other_views_alone_and_survives_hostile_line_numbers(tmp_path):
    """In a page holding a tile_lab HTML view and another .tl-view (as the extension draws
    one) whose rows say data-line="1e+308": the script binds to its own view only, clicking
    anywhere throws nothing, and clicking a row of its own view pins that line (jsdom)."""
    import json
    import subprocess

    import browser_env

    node = browser_env.node()
    browser_env.node_module("jsdom")
    insp = inspection_fixture("inspect_vadd_sm_90")
    other = ('<div class="tl-view" id="ext"><div class="tl-code">'
             '<div class="tl-row" data-line="1e+308">a</div>'
             '<div class="tl-row" data-line="1e21">b</div></div></div>')
    page = f"<!doctype html><body>{other}{inspection_html(insp)}</body>"
    (tmp_path / "page.html").write_text(page)
    script = """
const { JSDOM } = require('jsdom');
const fs = require('fs');
const errors = [];
const dom = new JSDOM(fs.readFileSync(process.argv[1], 'utf8'), { runScripts: 'dangerously' });
const w = dom.window;
w.addEventListener('error', e => errors.push(String(e.message)));
const d = w.document;
const click = e => e.dispatchEvent(new w.MouseEvent('click', { bubbles: true }));
for (const r of d.querySelectorAll('#ext [data-line]')) click(r);
const row = d.querySelector('.tl-pane-source .tl-ln[data-line="12"]');
click(row);
const view = d.querySelector('.tl-view[class*="tl-v-"]');
process.stdout.write(JSON.stringify({
  errors, extBound: d.getElementById('ext').getAttribute('data-tl-bound'),
  ownBound: view.getAttribute('data-tl-bound'), pin: view.getAttribute('data-pin'),
  pinned: view.querySelectorAll('.tl-pin').length }));
"""
    proc = subprocess.run([node, "-e", script, str(tmp_path / "page.html")],
                          cwd=browser_env.EXT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["errors"] == []
    assert out["extBound"] is None and out["ownBound"] == "1"
    assert out["pin"] == "12" and out["pinned"] >= 3  # the source row and its IR/SASS rows
