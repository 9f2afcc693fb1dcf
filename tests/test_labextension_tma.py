"""The JupyterLab extension draws the TMA verdict from the view's MIME JSON (its ``tma``
field): a notebook holding notebook 11's kernel that loses TMA, compiled here for sm_90 and
stored as its output, and the same %%tile cell run live in JupyterLab's kernel. In headless
Chromium the extension (not the HTML fallback) puts a badge at the end of exactly the source
rows the verdict lists, with its verdict ("no TMA" / "TMA UTMASTG"), its reason as the
tooltip and the HTML view's colours, after the code, inside the row; the summary lists the
three lines; the SASS pane boxes the UTMASTG opcodes; hovering a badge links its line; no
page or console error. Screenshots (light, dark) land in test-artifacts/.

Skips (saying why) without Node, playwright-core, Chromium or the built extension, as
tests/test_labextension.py does.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import browser_env
import pytest
from browser_env import node_module
from test_labextension import (  # noqa: F401  (lab_server is a fixture)
    ARTIFACTS,
    ROOT,
    _code_cell,
    _notebook,
    _run,
    lab_server,
)

from tile_lab.compile.artifacts import MIME_TYPE

pytestmark = pytest.mark.slow

SIG = "f16[1024,1020], f16[1020,1024], f16[1024,1024], 64, 64, 32"
GREEN = "rgb(0, 158, 115)"  # #009E73, the HTML view's TMA colour
VERMILLION = "rgb(213, 94, 0)"  # #D55E00, its no-TMA colour


def _notebook11_cell() -> str:
    """The %%tile cell of notebook 11 whose kernel loses TMA, as the notebook has it."""
    src = (ROOT / "notebooks" / "src" / "11_views_and_tma.py").read_text()
    cells = re.split(r"\n# %%.*\n", src)
    (cell,) = [c for c in cells if c.startswith("%%tile") and "def gemm_no_tma_for_b(" in c]
    return cell.strip() + "\n"


def _stored_output() -> tuple[dict, dict]:
    """notebook 11's kernel compiled here for sm_90 (the same kernel, in tests/
    kernels_inspect.py), as ``Inspection._repr_mimebundle_`` emits it; and its tma field."""
    import kernels_inspect as K

    import tile_lab

    insp = tile_lab.inspect(K.gemm_no_tma_for_b, SIG, arch="sm_90",
                            show="source,tileir,sass")
    bundle = insp._repr_mimebundle_()
    return ({"output_type": "display_data", "metadata": {},
             "data": {k: bundle[k] for k in (MIME_TYPE, "text/html", "text/plain")}},
            bundle[MIME_TYPE]["tma"])


def _driver(url: str, notebook: str, views: int, run: bool, shot: Path) -> dict:
    node = browser_env.node()
    node_module("playwright-core")
    env = dict(os.environ, TILE_LAB_URL=url, TILE_LAB_NOTEBOOK=notebook,
               TILE_LAB_VIEWS=str(views), TILE_LAB_RUN="1" if run else "0",
               TILE_LAB_SCREENSHOT=str(shot), TILE_LAB_CHROMIUM=browser_env.chromium("ui"))
    proc = _run([node, "ui-test/tma.mjs"], timeout=420 if run else 240, env=env)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print("UI result:", json.dumps(result)[:6000])  # shown by pytest when an assertion fails
    return result


def _check_drawing(view: dict) -> None:
    """Colours and geometry of every badge: the HTML view's colours; on its own row, in
    sight inside the source pane (not scrolled out of it); after the code where the code
    fits the pane, else held at the pane's right edge."""
    for b in view["badges"]:
        colour = GREEN if b["className"].endswith("tl-tma-yes") else VERMILLION
        assert b["border"] == colour, b
        assert b["background"] not in ("rgba(0, 0, 0, 0)", "transparent"), b
        box, row, pane = b["badge"], b["row"], b["pane"]
        assert box["width"] > 10 and box["height"] > 5, b
        assert row["top"] - 1 <= box["top"] and box["bottom"] <= row["bottom"] + 1, b
        assert pane["left"] <= box["left"] and box["right"] <= pane["right"], b  # in sight
        if b["codeRight"] + box["width"] < pane["right"] - 20:
            assert box["left"] >= b["codeRight"] - 0.5, b  # after the code, not over it
        else:
            assert box["right"] >= pane["right"] - 20, b  # held at the pane's edge
    for op in view["sassOps"]:
        assert op["outline"] == GREEN, op


def _by_code(view: dict) -> dict[str, tuple[str, str]]:
    """Badge text and tooltip by the load/store each badge's row holds."""
    out = {}
    for b in view["badges"]:
        key = ("A load" if "ct.load(A" in b["code"] else "B load" if "ct.load(B" in b["code"]
               else "C store" if "ct.store(C" in b["code"] else b["code"])
        out[key] = (b["text"], b["title"])
    return out


def test_ui_tma_badges_from_the_schema_field(lab_server) -> None:  # noqa: F811
    url, root = lab_server
    output, tma = _stored_output()
    setup = "import cuda.tile as ct\n%load_ext tile_lab"
    nb = _notebook([_code_cell("stored", "# notebook 11's gemm_no_tma_for_b, sm_90", [output]),
                    _code_cell("setup", setup), _code_cell("nb11", _notebook11_cell())])
    (root / "tma.ipynb").write_text(json.dumps(nb))
    shot = ARTIFACTS / "labextension-tma.png"
    result = _driver(url, "tma.ipynb", 2, run=True, shot=shot)
    assert result["pageErrors"] == []
    assert result["consoleErrors"] == []
    stored, live = result["views"]
    for view in (stored, live):
        assert view["extension"] is True  # the extension's view, not the HTML fallback
        assert view["kernel"] == "gemm_no_tma_for_b"
        assert view["summary"] == "1 of 3 tile loads/stores became TMA copies (sm_90)"
        assert view["summaryOpen"] is True
        assert view["badgesElsewhere"] == 0
        assert [op["text"] for op in view["sassOps"]] and \
            {op["text"] for op in view["sassOps"]} == {"UTMASTG"}
        _check_drawing(view)
        verdicts = _by_code(view)
        assert set(verdicts) == {"A load", "B load", "C store"}, verdicts
        assert verdicts["A load"][0] == "no TMA"
        assert verdicts["A load"][1].startswith("compiler: stride not 16-byte aligned; ")
        assert verdicts["B load"] == ("no TMA", "allow_tma=False on this load/store")
        assert verdicts["C store"] == ("TMA UTMASTG", "bulk tensor copy: UTMASTG")
        # hovering A's badge lights its line in every pane and its summary row
        a_line = next(b["line"] for b in view["badges"] if "ct.load(A" in b["code"])
        assert view["hover"]["source"] == [a_line]
        assert view["hover"]["summary"] == [a_line]
        assert view["hover"]["tileirRows"] >= 1 and view["hover"]["sassRows"] >= 1
        assert {op["row"] for op in view["sassOps"]} == {
            next(b["line"] for b in view["badges"] if "ct.store(C" in b["code"])}
    # the stored view: exactly the lines, verdicts and reasons of the Python-written field
    assert [(int(b["line"]), b["text"], b["title"]) for b in stored["badges"]] == [
        (t["line"], "TMA UTMASTG" if t["tma"] else "no TMA", t["reason"]) for t in tma["lines"]]
    assert [int(line) for line, _ in stored["rows"]] == [t["line"] for t in tma["lines"]]
    assert [b["code"].split("# <-- ")[-1] for b in stored["badges"]] == \
        ["tma a", "tma b", "tma c"]
    for shot_file in ("labextension-tma-view0.png", "labextension-tma-view1.png",
                      "labextension-tma-dark.png"):
        assert (ARTIFACTS / shot_file).stat().st_size > 10_000
