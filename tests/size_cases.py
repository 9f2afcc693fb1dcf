"""Big payloads for the JupyterLab extension, shared by the size test
(tests/test_labextension_size.py: what the views show and say they cut) and the size
benchmark (bench/labextension_size.py: how fast the worst cases open, beside controls).

A case is a notebook of one output holding a tile_lab payload; its control, where the
benchmark wants one, is the same notebook with the payload under a MIME type nothing
renders (JupyterLab's own handling of the notebook, which the case pays too). Plain-page
cases ("kind": "html") are the HTML fallback of a big inspection and the same inspection
as ``tile_lab.export`` writes it; their control is the page without its scripts.
``plan(...)`` writes the files into a JupyterLab server's root and returns what
labextension/ui-test/size.mjs reads; ``run_driver(...)`` runs it.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import browser_env
from browser_env import node_module
from test_labextension import (
    _code_cell,
    _notebook,
    _run,
    fixture_payload,
    profile_fixture,
    sample_inspection,
)

from tile_lab.compile.artifacts import MIME_TYPE, StageText

CONTROL_MIME = "application/vnd.tile-lab-size-control+json"
PROFILE_MIME = "application/vnd.tile-lab.profile.v1+json"
SASS_ROW = "        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;"

# The bound of a case's longest main-thread task over its control's (the benchmark's; the
# driver applies the same rule to decide whether to open a pair again): 200 ms ...
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


# Hovering into and out of the line that 200 k rows map to, and scrolling that pane: the
# longest main-thread task of each (CPU time) at most this (no control: the view alone works).
# Usually 7-10 ms and 24-26 ms on the 2-core box; the driver measures them again, at the next
# opening, while the quickest so far is over (one scroll took a 109 ms task once).
HOVER_BOUND_MS = 50
SCROLL_BOUND_MS = 100


def allowance(control_cpu_ms: float) -> float:
    """What a case's longest task may take over its control's (the driver applies the same)."""
    return max(OVER_CONTROL_MS, OVER_CONTROL_FRACTION * control_cpu_ms)


def source(lines: int) -> dict:
    d = fixture_payload()
    d["source"] = "x\n" * lines  # 5.2 M lines: 10.5 MB of source
    return d


def sass(rows: int, one_line: bool) -> dict:
    d = fixture_payload()
    d["stages"]["sass"] = {"text": (SASS_ROW + "\n") * rows,
                           "line_map": [5] * rows if one_line else
                           [2 + i % 6 for i in range(rows)]}
    return d


def remarks(n: int) -> dict:
    d = fixture_payload()
    r = d["remarks"][0]
    d["remarks"] = [dict(r, line=2 + i % 6, message=f"remark {i}") for i in range(n)]
    return d


def comparison(profiles: int, lines: int) -> dict:
    d = profile_fixture()
    entry = copy.deepcopy(d["comparison"][0])
    entry["line_samples"] = {str(i): 1 + i % 97 for i in range(1, lines + 1)}
    entry["line_stalls"] = {str(i): {"long_sb": 1 + i % 97} for i in range(1, lines + 1)}
    d["comparison"] = [dict(entry, label=f"config {k}") for k in range(profiles)]
    return d


@dataclass(frozen=True)
class NotebookCase:
    """One output under ``mime``, made by ``make``; ``cut``: the view must say it cut the
    data (it is over the schema's limits); ``hover``: the source line every SASS row maps
    to, hovered (and the SASS pane scrolled) after the first opening."""

    mime: str
    make: Callable[[], dict]
    cut: bool
    hover: int | None = None


# The worst cases measured on main for issue 28 (the benchmark's): a 5.2 M-line source, an
# 8 x 100 k-line profile comparison, a 512 k-line source, 198 k SASS rows, 100 k remarks,
# 200 k SASS rows mapped to one source line
WORST = {
    "source 5.2 M lines": NotebookCase(MIME_TYPE, lambda: source(5_242_880), True),
    "comparison 8 x 100 k lines": NotebookCase(PROFILE_MIME, lambda: comparison(8, 100_000), True),
    "source 512 k lines": NotebookCase(MIME_TYPE, lambda: source(524_288), True),
    "SASS 198 k rows": NotebookCase(MIME_TYPE, lambda: sass(198_000, False), False),
    "remarks 100 k": NotebookCase(MIME_TYPE, lambda: remarks(100_000), True),
    "SASS 200 k rows on one line": NotebookCase(MIME_TYPE, lambda: sass(200_000, True), False, 5),
}
# the HTML pages: rows of SASS in the inspection (the static page shows at most 10,000)
WORST_PAGE_ROWS = 198_000


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


def _big_inspection(rows: int):
    """The sample inspection with a SASS of ``rows`` rows."""
    insp = sample_inspection()
    sass_stage = StageText("sass", "\n".join([SASS_ROW] * rows),
                           tuple(2 + i % 6 for i in range(rows)))
    return replace(insp, stages={**insp.stages, "sass": sass_stage})


def _html_page(root: Path, insp) -> str:
    """The HTML fallback of the inspection, as a plain page."""
    from tile_lab.render.html import inspection_html

    (root / "html_fallback.html").write_text(
        f"<!doctype html><meta charset=utf-8><body>{inspection_html(insp)}</body>")
    return "html_fallback.html"


def _without_scripts(root: Path, page: str) -> str:
    """The control of an HTML page: the same file without its ``<script>`` elements (the
    view's code), so the same rows are parsed and laid out and nothing else runs."""
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


def page_names(rows: int) -> tuple[str, str]:
    """The names of the two plain-page cases for an inspection of ``rows`` SASS rows."""
    k = f"{rows // 1000} k"
    return f"HTML fallback, SASS {k} rows", f"exported page, SASS {k} rows"


def plan(root: Path, cases: dict[str, NotebookCase], page_rows: int, controls: bool
         ) -> list[dict]:
    """Write every case (and, with ``controls``, its control) into ``root``: what
    size.mjs reads as TILE_LAB_CASES."""
    out = []
    for name, case in cases.items():
        payload = json.dumps(case.make())
        out.append({"name": name, "path": _write(root, name, payload, case.mime),
                    **({"control": _write(root, f"{name} control", payload, CONTROL_MIME)}
                       if controls else {}),
                    **({"hover": case.hover} if case.hover else {})})
        del payload
    insp = _big_inspection(page_rows)
    for name, page in zip(page_names(page_rows),
                          (_html_page(root, insp), _exported_page(root, insp)), strict=True):
        out.append({"name": name, "path": page, "kind": "html",
                    **({"control": _without_scripts(root, page)} if controls else {})})
    return out


def run_driver(url: str, cases: list[dict], timeout: float) -> dict:
    """Run labextension/ui-test/size.mjs on ``cases`` (from :func:`plan`) against the
    JupyterLab server at ``url``; its JSON: {results, pageErrors, consoleErrors}. Skips
    (saying why) without Node, playwright-core or Chromium."""
    node = browser_env.node()
    node_module("playwright-core")
    chromium = browser_env.chromium("ui")
    env = dict(os.environ, TILE_LAB_URL=url, TILE_LAB_CHROMIUM=chromium,
               TILE_LAB_CASES=json.dumps(cases),
               TILE_LAB_OVER_CONTROL_MS=str(OVER_CONTROL_MS),
               TILE_LAB_OVER_CONTROL_FRACTION=str(OVER_CONTROL_FRACTION),
               TILE_LAB_HOVER_BOUND_MS=str(HOVER_BOUND_MS),
               TILE_LAB_SCROLL_BOUND_MS=str(SCROLL_BOUND_MS))
    proc = _run([node, "ui-test/size.mjs"], timeout=timeout, env=env)
    return json.loads(proc.stdout.strip().splitlines()[-1])
