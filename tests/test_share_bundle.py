"""``tile_lab.export``: one self-contained page from the objects' own renderers, with a strict
CSP, no network reference, tile_lab's own script only, and every string of data as text."""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import tile_lab
from tile_lab.compile.artifacts import Inspection, Remark, StageText
from tile_lab.errors import TileLabError
from tile_lab.render.export import known_scripts, script_hashes
from tile_lab.render.html import inspection_html

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "notebooks" / "data"
SIG = "f16[4096,4096], f16[4096,4096], f16[4096,4096], 128, 128, 64"
HOSTILE = ('</script><script>window.__pwned=1</script><img src="http://evil.example/x.png" '
           'onerror="window.__pwned=2"><link rel="stylesheet" href="http://evil.example/s.css">')


@pytest.fixture(scope="module")
def gemm():
    """The recorded H100 profile's kernel, compiled here for sm_90 (every instruction joins),
    its trace at 256², a sanitizer report and recorded measurements."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from gemm_kernels import gemm_naive
    finally:
        sys.path.remove(str(ROOT / "bench"))
    insp = tile_lab.inspect(gemm_naive, SIG, arch="sm_90", show="source,tileir,sass,remarks")
    prof = tile_lab.load_profile(DATA / "profile_gemm_best.json.gz")
    n = 256
    args = (np.ones((n, n), np.float16), np.ones((n, n), np.float16),
            np.zeros((n, n), np.float16), 128, 128, 64)
    trace = tile_lab.trace(gemm_naive, (n // 128, n // 128), args)
    measurements = tile_lab.load_measurements(DATA / "gpu_gemm.json.gz")[:2]
    return insp, prof, trace, tile_lab.check_trace(trace), measurements


def gemm_page(gemm, path: Path) -> Path:
    insp, prof, trace, report, ms = gemm
    return tile_lab.export([insp, (insp, prof), tile_lab.diagram(trace, block=(1, 0),
                                                                 view="gemm"),
                            tile_lab.partition((8, 8), (4, 4)), report, *ms], path)


def test_the_page_holds_every_view_and_where_it_was_measured(gemm, tmp_path):
    page = gemm_page(gemm, tmp_path / "gemm.html").read_text()
    insp, _prof, trace, _report, ms = gemm
    assert page.startswith("<!doctype html>") and page.count("<html") == 1
    # the inspect view and the profile view are the renderers' own output, verbatim
    assert inspection_html(insp) in page
    assert page.count('class="tl-view ') == 2 and 'class="tl-hot"' in page  # hot lines
    assert re.search(r"\.tl-l\d+>\.tl-g\{background:var\(--tl-h5\)\}", page)  # heat gutter
    assert "TMA UTMALDG" in page  # the TMA badges
    assert tile_lab.diagram(trace, block=(1, 0), view="gemm").svg in page
    assert "no problems found" in page  # the sanitizer report
    # measurements and the profile carry device, clocks and versions
    assert "NVIDIA H100 80GB HBM3" in page and "580.159.04" in page and "1980" in page
    for m in ms:
        assert m.provenance.gpu in page and f"{m.mean_s * 1e6:.2f}" in page
    assert "cuda-tile 1.7.0" in page and "13.4.92" in page


def test_offline_and_strict(gemm, tmp_path):
    page = gemm_page(gemm, tmp_path / "gemm.html").read_text()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    csp = csp.replace("&#x27;", "'")
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp
    hashes = re.findall(r"'(sha256-[^']+)'", csp)
    assert hashes and hashes == script_hashes(page)  # exactly the scripts on the page
    # nothing the browser would fetch: no src/href to anywhere but the page's own anchors
    assert not re.search(r'\s(?:src|href)="(?!#)', page)
    assert not re.search(r"url\((?!#)", page)
    assert not re.search(r"@import", page)
    # deterministic: the same objects give the same bytes
    assert gemm_page(gemm, tmp_path / "again.html").read_text() == page


def hostile_inspection() -> Inspection:
    return Inspection(
        kernel_name=f"k{HOSTILE}", filename=f"{HOSTILE}.py", first_line=1,
        source=f"def k(x):\n    # {HOSTILE}\n    pass\n", arch="sm_90",
        signature=HOSTILE, hints={"num_ctas": HOSTILE}, versions={"cuda.tile": HOSTILE},
        stages={"tileir": StageText("tileir", f"entry @k\n  // {HOSTILE}\n", (1, 2)),
                "sass": StageText("sass", f"/*0000*/ NOP ; // {HOSTILE}\n", (2,))},
        remarks=(Remark("missed", HOSTILE, HOSTILE, 2, None, HOSTILE),),
        show=("source", "tileir", "sass", "remarks"))


def test_hostile_strings_stay_text(tmp_path):
    page = tile_lab.export([hostile_inspection(), HOSTILE], tmp_path / "h.html").read_text()
    assert "window.__pwned" in page  # it is there, as text...
    tags = _Tags()
    tags.feed(page)
    assert not {"img", "link", "iframe", "object"} & tags.names, tags.names
    assert not [a for a in tags.attrs if a.startswith("on")]  # no event handler attribute
    assert not [v for v in tags.values if "evil.example" in v]
    scripts = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    clean = re.findall(r"<script>(.*?)</script>", inspection_html(hostile_inspection()),
                       re.DOTALL)
    assert scripts == clean and len(scripts) == 1  # ...and the only script is the view's own


class _Tags(HTMLParser):
    """Every element and attribute the browser would build from a page."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.attrs: set[str] = set()
        self.values: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.names.add(tag)
        for k, v in attrs:
            self.attrs.add(k)
            self.values.append(v or "")


def test_a_script_that_is_not_tile_labs_is_removed():
    from tile_lab.render.export import page_html

    page = page_html("t", [("x", "<p>a</p><script>alert(1)</script>")])
    assert "alert(1)" not in page and "script-src 'none'" in page.replace("&#x27;", "'")
    assert known_scripts()  # the inspect view's own script is recognised


def test_bad_objects_are_refused_with_what_is_accepted(tmp_path):
    with pytest.raises(TileLabError, match="cannot show a dict") as info:
        tile_lab.export([{"a": 1}], tmp_path / "x.html")
    assert "Inspection" in info.value.render()
    with pytest.raises(TileLabError, match="nothing to export"):
        tile_lab.export([], tmp_path / "y.html")
    assert not (tmp_path / "x.html").exists()
