"""Issue 28: views stay responsive at any size. The worst cases measured on main (a 5.2 M-line
source, an 8 x 100 k-line profile comparison, a 512 k-line source, 198 k SASS rows, 100 k
remarks, 200 k SASS rows mapped to one source line) open in JupyterLab with the built
extension, each beside a control: the same data under a MIME type nothing renders. The
longest main-thread task of each may exceed its control's by at most 200 ms (or a quarter
of the control's, where that is more: a long task's CPU time varies by tens of percent
between openings on a busy machine), in the main thread's CPU time (from a trace of the
opening: a machine busy with other jobs stretches a task's wall time by up to 3x, far
beyond 200 ms, for case and control alike; the pair is opened again, up to three times,
only while the case is over, the quickest of each counting); its wall time
(PerformanceObserver 'longtask') is recorded beside it. Where the view cut data to the
schema's limits it says so; hovering the line that 200 k rows map to runs no long task (every
task under 50 ms of main-thread CPU time, traced as the openings are); nothing throws. One
server (tests/lab_server.py: shared with the other UI tests), one browser and one kernel
serve every case.
Scrolling that 200 k-row pane runs no task over 100 ms (CPU time, traced). No bound here is
on wall time, which other jobs on the machine stretch.
The HTML fallback of a 198 k-row SASS is opened as a plain page too (no Jupyter): cut to
its static limit with a notice, its click-to-pin working, the main-thread CPU time of its
opening within the same bound of its control's (the same page without the view's scripts);
and so is the same inspection as ``tile_lab.export`` writes it (one offline page under a
strict CSP).

Numbers go to test-artifacts/size.json. Skips (saying why) without Node, playwright-core,
Chromium or the built extension, as tests/test_labextension.py does.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import browser_env
import pytest
from browser_env import node_module
from test_labextension import (  # noqa: F401  (lab_server is a fixture)
    ARTIFACTS,
    PROFILE_FIXTURE,
    _code_cell,
    _notebook,
    _run,
    fixture_payload,
    lab_server,
)

from tile_lab.artifacts import MIME_TYPE

pytestmark = pytest.mark.slow

CONTROL_MIME = "application/vnd.tile-lab-size-control+json"
PROFILE_MIME = "application/vnd.tile-lab.profile.v1+json"
# the budget over the control, and the hover budget (a long task is one over 50 ms)
# (The 7.7 MB comparison's longest task, ~4.5 s on a 2-core machine, is JupyterLab's own
# handling of the notebook, which the control pays too: OutputModel.data deep-copies the whole
# bundle on every read, ~250 ms a copy, 7 of them in the output placeholder, and the Y.js
# model takes it in. tile_lab's renderer reads it without a copy and checks and draws it in
# tasks of their own: TILE_LAB_CPU_PROFILES=dir and ui-test/cpuprofile_tasks.mjs show it.)
OVER_CONTROL_MS = 200
# ... or a quarter of the control's longest task, where that is more: the main-thread CPU time
# of one task varies between openings of the same page on a busy 2-core machine by far more
# than 200 ms once the task is long (measured in full runs of the suite: the HTML fallback's
# control page 987, 1803 and 1009 ms in one run; JupyterLab's task of the 7.7 MB comparison
# 9,294 ms for the control against 6,967 for the case in one run, 7,400 against 7,830 in
# another). A view that drew what it should cut (198 k rows, not 10 k) would be many times over.
OVER_CONTROL_FRACTION = 0.25


def allowance(control_cpu_ms: float) -> float:
    """What a case's longest task may take over its control's (the driver applies the same)."""
    return max(OVER_CONTROL_MS, OVER_CONTROL_FRACTION * control_cpu_ms)


SASS_ROW = "        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;"


def _source(lines: int) -> dict:
    d = fixture_payload()
    d["source"] = "x\n" * lines  # 5.2 M lines: 10.5 MB of source
    return d


def _sass(rows: int, one_line: bool) -> dict:
    d = fixture_payload()
    d["stages"]["sass"] = {"text": (SASS_ROW + "\n") * rows,
                           "line_map": [5] * rows if one_line else
                           [2 + i % 6 for i in range(rows)]}
    return d


def _remarks(n: int) -> dict:
    d = fixture_payload()
    r = d["remarks"][0]
    d["remarks"] = [dict(r, line=2 + i % 6, message=f"remark {i}") for i in range(n)]
    return d


def _comparison(profiles: int, lines: int) -> dict:
    d = json.loads(PROFILE_FIXTURE.read_text())
    entry = copy.deepcopy(d["comparison"][0])
    entry["line_samples"] = {str(i): 1 + i % 97 for i in range(1, lines + 1)}
    entry["line_stalls"] = {str(i): {"long_sb": 1 + i % 97} for i in range(1, lines + 1)}
    d["comparison"] = [dict(entry, label=f"config {k}") for k in range(profiles)]
    return d


# name -> (mime type, payload maker, view cuts it (a notice is due), hover line)
CASES = {
    "source 5.2 M lines": (MIME_TYPE, lambda: _source(5_242_880), True, None),
    "comparison 8 x 100 k lines": (PROFILE_MIME, lambda: _comparison(8, 100_000), True, None),
    "source 512 k lines": (MIME_TYPE, lambda: _source(524_288), True, None),
    "SASS 198 k rows": (MIME_TYPE, lambda: _sass(198_000, False), False, None),
    "remarks 100 k": (MIME_TYPE, lambda: _remarks(100_000), True, None),
    "SASS 200 k rows on one line": (MIME_TYPE, lambda: _sass(200_000, True), False, 5),
}


def _write(root: Path, name: str, payload: str, mime: str) -> str:
    """A notebook of one output: ``payload`` (JSON text) under ``mime``."""
    path = f"{name.replace(' ', '_').replace('.', '')}.ipynb"
    # text/plain in both: the control draws that line of text, the case the tile_lab view
    # (ranked ahead of text/plain)
    out = {"output_type": "display_data", "metadata": {},
           "data": {mime: "@PAYLOAD@", "text/plain": ["tile_lab size case"]}}
    nb = json.dumps(_notebook([_code_cell("c1", "x", [out])]))
    # (the payload serialised once for the case and its control: the 7.7 MB one took seconds)
    (root / path).write_text(nb.replace('"@PAYLOAD@"', payload, 1))
    return path


def _big_inspection():
    """The sample inspection with a 198 k-row SASS."""
    from dataclasses import replace

    from test_labextension import sample_inspection

    from tile_lab.artifacts import StageText

    insp = sample_inspection()
    n = 198_000
    sass = StageText("sass", "\n".join([SASS_ROW] * n), tuple(2 + i % 6 for i in range(n)))
    return replace(insp, stages={**insp.stages, "sass": sass})


def _html_page(root: Path, insp) -> str:
    """The HTML fallback of a 198 k-row SASS inspection, as a plain page."""
    from tile_lab.render.html import inspection_html

    (root / "html_fallback.html").write_text(
        f"<!doctype html><meta charset=utf-8><body>{inspection_html(insp)}</body>")
    return "html_fallback.html"


def _without_scripts(root: Path, page: str) -> str:
    """The control of an HTML page: the same file without its ``<script>`` elements (the
    view's code), so the same rows are parsed and laid out and nothing else runs."""
    import re

    html = (root / page).read_text()
    control, count = re.subn(r"<script\b[^>]*>.*?</script>", "", html, flags=re.S | re.I)
    assert count >= 1, page  # a page with no script would make a control equal to itself
    name = page.replace(".html", "_control.html")
    (root / name).write_text(control)
    return name


def _exported_page(root: Path, insp) -> str:
    """The same inspection as ``tile_lab.export`` writes it (one offline page, strict CSP)."""
    import tile_lab

    tile_lab.export(insp, root / "export_big.html")
    return "export_big.html"


# 14 to 38 openings of up to 10 MB notebooks in one browser (14: every case within its bound
# at the first pair): 13 min on a 2-core machine running ~8 other jobs
@pytest.mark.timeout(1800)
def test_worst_cases_open_quickly_and_say_what_they_cut(lab_server) -> None:  # noqa: F811
    url, root = lab_server
    node = browser_env.node()
    node_module("playwright-core")
    chromium = browser_env.chromium("ui")
    plan = []
    for name, (mime, make, _cut, hover) in CASES.items():
        payload = json.dumps(make())
        # each case after its control, the pair again (up to three times) only while the
        # case is over the bound: the quickest opening of each counts (size.mjs says why)
        plan.append({"name": name, "path": _write(root, name, payload, mime),
                     "control": _write(root, f"{name} control", payload, CONTROL_MIME),
                     **({"hover": hover} if hover else {})})
        del payload
    insp = _big_inspection()
    for name, page in (("HTML fallback, SASS 198 k rows", _html_page(root, insp)),
                       ("exported page, SASS 198 k rows", _exported_page(root, insp))):
        plan.append({"name": name, "path": page, "control": _without_scripts(root, page),
                     "kind": "html"})
    del insp
    env = dict(os.environ, TILE_LAB_URL=url, TILE_LAB_CHROMIUM=chromium,
               TILE_LAB_CASES=json.dumps(plan),
               TILE_LAB_OVER_CONTROL_MS=str(OVER_CONTROL_MS),
               TILE_LAB_OVER_CONTROL_FRACTION=str(OVER_CONTROL_FRACTION))
    # (under the test's own 1800 s: a driver that runs out of time reports its log)
    proc = _run([node, "ui-test/size.mjs"], timeout=1700, env=env)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "size.json").write_text(json.dumps(out, indent=1))
    res = out["results"]
    print("size (cpu, wall, notices):",
          json.dumps({k: (v.get("cpu"), v["longest"], v["notice"]) for k, v in res.items()}))
    assert out["pageErrors"] == [] and out["consoleErrors"] == [], out
    for name, (_mime, _make, cut, hover) in CASES.items():
        case, control = res[name], res[f"{name} (control)"]
        assert case["cpu"] <= control["cpu"] + allowance(control["cpu"]), (name, case, control)
        assert case["rows"] > 0, (name, case)
        assert (case["notice"] >= 1) == cut, (name, case)
        if hover:
            # every pointer move into or out of the line: no task of 50 ms or more (in
            # main-thread CPU time; the wall times, case["hover"], are recorded beside it)
            assert case["hoverCpu"] < 50, (name, case["hoverCpu"], case["hover"])
            assert case["linkedShown"] > 0
            # scrolling the 200 k-row pane: no task over 100 ms (CPU time, as above), and
            # rows drawn where it is
            assert case["scroll"]["cpu"] <= 100, case["scroll"]
            assert 0 < case["scroll"]["drawnAfter"] <= 200, case["scroll"]
            assert case["status"].startswith(f"Line {hover}: Source 1 · Tile IR 1 · SASS 200,000")
    for page in ("HTML fallback, SASS 198 k rows", "exported page, SASS 198 k rows"):
        html, control = res[page], res[f"{page} (control)"]
        assert html["notice"] == 1 and html["pinned"] >= 2, (page, html)
        assert html["rows"] <= 10_100, (page, html)
        # the same static HTML without the view's scripts draws the same rows, and nothing pins
        assert control["rows"] == html["rows"] and control.get("pinned", 0) == 0, control
        # static HTML of 10,000 rows: the view's scripts add little to the page's own
        # main-thread work: its whole CPU time in the opening beside its control's (not the
        # longest task, which the HTML parser cuts by wall-clock budget: 596 and 1,488 ms for
        # the same control page in one run; an absolute 1500 ms on that failed at 1,603 ms
        # on an idle machine). Wall times, html["longest"], are recorded: a busy machine
        # stretches them, 2267 ms once.
        assert html["totalCpu"] <= control["totalCpu"] + allowance(control["totalCpu"]), (
            page, html, control)
