"""Issue 28: views of big payloads show what they can and say what they cut. Payloads just
over the schema's size limits (a 512 k-line source over the 250 k rows a pane shows, 12 k
remarks over 10 k, an 8-profile comparison of 3 k lines over 2 k, SASS of 200 k rows mapped
to one source line) open in JupyterLab with the built extension: each draws rows, says it
cut the data exactly where it is over a limit, and nothing throws; hovering the line that
200 k rows map to links them and the status line counts them; scrolling that pane draws rows
where it lands. The HTML fallback of a 12 k-row SASS, as a plain page (no Jupyter) and as
``tile_lab.export`` writes it (one offline page under a strict CSP), is cut to its static
limit with a notice, and clicking a row pins its line.

How fast the worst cases open (a 5.2 M-line source, an 8 x 100 k-line comparison, ...)
beside controls, in main-thread CPU time, is a benchmark: bench/labextension_size.py, which
.ci/run runs after the test suite. The cases are tests/size_cases.py's, shared by both.

Numbers go to test-artifacts/size.json. Skips (saying why) without Node, playwright-core,
Chromium or the built extension, as tests/test_labextension.py does.
"""

from __future__ import annotations

import json
import subprocess

import browser_env
import pytest
from size_cases import (
    PROFILE_MIME,
    NotebookCase,
    comparison,
    page_names,
    plan,
    remarks,
    run_driver,
    sass,
    source,
)
from test_labextension import ARTIFACTS, lab_server  # noqa: F401  (a fixture)

from tile_lab.compile.artifacts import MIME_TYPE

pytestmark = pytest.mark.slow

# each just over a limit of tile_lab/render/mime_schema.json / profile_schema.json, but one
OVER_LIMITS = {
    "source 512 k lines": NotebookCase(MIME_TYPE, lambda: source(524_288), True),
    "remarks 12 k": NotebookCase(MIME_TYPE, lambda: remarks(12_000), True),
    "comparison 8 x 3 k lines": NotebookCase(PROFILE_MIME, lambda: comparison(8, 3_000), True),
    # under the 250 k rows of a pane: shown whole, and every row linked to line 5
    "SASS 200 k rows on one line": NotebookCase(MIME_TYPE, lambda: sass(200_000, True), False, 5),
}
PAGE_ROWS = 12_000  # the static HTML view shows at most 10,000


def test_views_over_the_limits_show_rows_and_say_what_they_cut(lab_server) -> None:  # noqa: F811
    url, root = lab_server
    # (the driver's bound under the test's 600 s: a driver out of time reports its log)
    out = run_driver(url, plan(root, OVER_LIMITS, PAGE_ROWS, controls=False), timeout=540)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "size.json").write_text(json.dumps(out, indent=1))
    res = out["results"]
    assert out["pageErrors"] == [] and out["consoleErrors"] == [], out
    for name, case in OVER_LIMITS.items():
        got = res[name]
        assert got["rows"] > 0, (name, got)
        assert (got["notice"] >= 1) == case.cut, (name, got)
        if case.hover:
            assert got["linkedShown"] > 0, (name, got)
            assert got["status"].startswith(
                f"Line {case.hover}: Source 1 · Tile IR 1 · SASS 200,000"), got["status"]
            # jumps across the 200 k-row pane and wheel steps: rows drawn where it is
            assert 0 < got["scroll"]["drawnAfter"] <= 200, got["scroll"]
    for page in page_names(PAGE_ROWS):
        got = res[page]
        assert got["notice"] == 1 and got["pinned"] >= 2, (page, got)
        assert 0 < got["rows"] <= 10_100, (page, got)


MERGE_SCRIPT = """
import { interactionOver, mergeOpenings } from %s;
const first = { longest: 900, cpu: 800, tracedWall: 950, hover: [1], hoverCpu: 9,
  scroll: { cpu: 109, drawnAfter: 90 }, linkedShown: 80, status: 'Line 5' };
const second = { longest: 700, cpu: 850, tracedWall: 990, hover: [2], hoverCpu: 12,
  scroll: { cpu: 25, drawnAfter: 91 }, linkedShown: 80, status: 'Line 5' };
const plain = { longest: 650, cpu: 600, tracedWall: 700 };
const one = mergeOpenings(undefined, first);
const two = mergeOpenings(one, second);
const three = mergeOpenings(two, plain);
process.stdout.write(JSON.stringify({ one, two, three,
  over: [interactionOver(one, 50, 100), interactionOver(two, 50, 100),
         interactionOver({ hoverCpu: 50, scroll: { cpu: 1 } }, 50, 100)] }));
"""


def test_the_driver_counts_the_quickest_of_each_measurement(tmp_path) -> None:
    """size.mjs opens a case again while its hover or scroll is over the benchmark's bound
    (one scroll of the 200 k-row pane once took a 109 ms task, 24-26 ms in other runs): the
    quickest of each measurement counts, every run is kept, an opening without hovering
    keeps the earlier hover and scroll."""
    from test_labextension import EXT

    node = browser_env.node()
    module = (EXT / "ui-test" / "size_results.mjs").as_uri()
    script = tmp_path / "merge.mjs"
    script.write_text(MERGE_SCRIPT % json.dumps(module))
    got = json.loads(subprocess.run([node, str(script)], capture_output=True, text=True,
                                    check=True, timeout=60).stdout)
    assert got["over"] == [True, False, True]
    two, three = got["two"], got["three"]
    assert (two["longest"], two["cpu"], two["tracedWall"]) == (700, 800, 950)
    assert two["runs"] == [900, 700] and two["cpuRuns"] == [800, 850]
    # hover: the first (9 < 12); scroll: the second (25 < 109); both runs kept
    assert two["hoverCpu"] == 9 and two["hover"] == [1]
    assert two["scroll"] == {"cpu": 25, "drawnAfter": 91}
    assert two["hoverCpuRuns"] == [9, 12] and two["scrollCpuRuns"] == [109, 25]
    assert three["hoverCpu"] == 9 and three["scroll"]["cpu"] == 25
    assert three["hoverCpuRuns"] == [9, 12] and three["scrollCpuRuns"] == [109, 25]
    assert three["runs"] == [900, 700, 650] and three["cpu"] == 600
    assert three["linkedShown"] == 80 and three["status"] == "Line 5"
