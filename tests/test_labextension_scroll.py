"""Big panes and tables of the JupyterLab extension scroll as far as the wheel turns.

Panes of more than 2,000 rows and profile tables of more than 200 draw only the rows in view
(labextension/src/view.ts, PaneRows) and redraw rows and spacers on every scroll. With the
browser's scroll anchoring on, each redraw answered with a further jump: a few turns of the
wheel ran a real 6,096-row SASS pane (notebook 11's GEMM at 128x128x64) to its end, some
steps showing a blank pane. Here each turn of 120 px must move the box by 120 px and show
rows. Needs the extension built (tile_lab/labextension), Node and Chromium.
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
    _code_cell,
    _notebook,
    _run,
    fixture_payload,
    lab_server,
    profile_fixture,
)

from tile_lab.compile.artifacts import MIME_TYPE

pytestmark = pytest.mark.slow

PROFILE_MIME = "application/vnd.tile-lab.profile.v1+json"
SASS_ROW = "        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;"
STEPS, DY = 20, 120


def _big_sass(rows: int) -> dict:
    d = fixture_payload()
    d["stages"]["sass"] = {"text": (SASS_ROW + "\n") * rows,
                           "line_map": [2 + i % 6 for i in range(rows)]}
    d["show"] = ["source", "sass"]
    return d


def _comparison(lines: int) -> dict:
    d = profile_fixture()
    entry = copy.deepcopy(d["comparison"][0])
    entry["line_samples"] = {str(i): 1 + i % 97 for i in range(1, lines + 1)}
    entry["line_stalls"] = {str(i): {"long_sb": 1 + i % 97} for i in range(1, lines + 1)}
    d["comparison"] = [dict(entry, label=f"config {k}") for k in range(2)]
    return d


def _wheel(url: str, notebook: str) -> dict:
    node = browser_env.node()
    node_module("playwright-core")
    env = dict(os.environ, TILE_LAB_URL=url, TILE_LAB_NOTEBOOK=notebook,
               TILE_LAB_CHROMIUM=browser_env.chromium("ui"), TILE_LAB_STEPS=str(STEPS),
               TILE_LAB_DY=str(DY),
               TILE_LAB_SCREENSHOT=str(ARTIFACTS / "labextension-scroll.png"))
    proc = _run([node, "ui-test/wheel.mjs"], timeout=240, env=env)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print("wheel result:", json.dumps(result))
    return result


def test_big_pane_and_table_scroll_by_the_wheel_turn(lab_server) -> None:  # noqa: F811
    url, root = lab_server
    outputs = [{"output_type": "display_data", "metadata": {},
                "data": {mime: payload, "text/plain": ["tile_lab scroll case"]}}
               for mime, payload in ((MIME_TYPE, _big_sass(6_000)),
                                     (PROFILE_MIME, _comparison(600)))]
    nb = _notebook([_code_cell(f"c{k}", "x", [out]) for k, out in enumerate(outputs)])
    (Path(root) / "scroll.ipynb").write_text(json.dumps(nb))
    result = _wheel(url, "scroll.ipynb")
    assert result["pageErrors"] == []
    kinds = sorted(b["box"] for b in result["boxes"])
    # the 6,000-row SASS pane and the 600-line comparison table (a virtual table)
    assert any("tl-pane-body" in k for k in kinds) and any("tl-vscroll" in k for k in kinds), kinds
    for box in result["boxes"]:
        assert box["tops"] == [DY * (i + 1) for i in range(STEPS)], box
        assert min(box["shown"]) >= 10, box  # never a blank box
    # a big (virtual) pane's rows are as high as a small pane's: it looks the same, only drawn
    # in parts; and its spacers add up (the last row ends at the bottom once scrolled there)
    virtual = [p for p in result["panes"] if p["virtual"]]
    # plain panes drawn on screen (a collapsed pane's rows measure 0); their usual row height
    plain = [h for p in result["panes"] if not p["virtual"] for h in p["heights"] if h > 0]
    assert virtual and plain, result["panes"]
    usual = max(set(plain), key=plain.count)
    for pane in virtual:
        assert pane["heights"] and all(abs(h - usual) < 0.5 for h in pane["heights"]), pane
    for pane in virtual:
        assert abs(pane["gapAtEnd"]) < 2, pane
