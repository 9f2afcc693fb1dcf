"""``tile-lab export notebook.ipynb``: the tile_lab payloads of a notebook, validated against
their schemas and drawn by the renderers; its other outputs never copied; a truncated,
oversized, non-notebook or schema-breaking file refused before anything is written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_files import inspection_fixture
from test_share_bundle import HOSTILE, _Tags, hostile_inspection

from tile_lab.compile.artifacts import Inspection
from tile_lab.errors import FileFormatError
from tile_lab.profiling import load_profile
from tile_lab.profiling.data import ProfileView
from tile_lab.render.html import inspection_html
from tile_lab.share.notebook import export_notebook

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"


def _cell(*bundles: dict, count: int = 1) -> dict:
    return {"cell_type": "code", "execution_count": count, "metadata": {}, "source": "",
            "outputs": [{"output_type": "display_data", "metadata": {},
                         "data": json.loads(json.dumps(b))} for b in bundles]}


def _notebook(path: Path, cells: list[dict]) -> Path:
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                "cells": cells}))
    return path


def _vadd() -> Inspection:
    return inspection_fixture("inspect_vadd_sm_90")


def test_every_tile_lab_view_of_a_notebook(tmp_path):
    vadd = _vadd()
    prof = load_profile(ROOT / "notebooks" / "data" / "profile_vector_add.json.gz")
    html_only = {"text/html": "<script>window.__pwned=3</script><b>hi</b>",
                 "image/svg+xml": "<svg onload='window.__pwned=4'></svg>"}
    nb = _notebook(tmp_path / "nb.ipynb", [
        _cell(vadd._repr_mimebundle_(), count=3),
        _cell(ProfileView(vadd, prof)._repr_mimebundle_(), count=4),
        _cell(html_only, count=5),
        {"cell_type": "markdown", "metadata": {}, "source": "text"}])
    result = export_notebook(nb)
    assert result.path == tmp_path / "nb.html" and result.views == 2
    assert result.skipped_outputs == 1
    page = result.path.read_text()
    # the view from the payload is the renderer's own view of the same inspection (the
    # payload holds only the panes it shows, so compare with those)
    shown = Inspection(**{**vars(vadd), "stages": {k: v for k, v in vadd.stages.items()
                                                    if k in vadd.show}, "cubin": b""})
    assert "cell 1 (In[3]): vector_add (sm_90)" in page
    unclassed = re.sub(r"tl-v-[0-9a-f]{12}", "tl-v-*", page)
    assert re.sub(r"tl-v-[0-9a-f]{12}", "tl-v-*", inspection_html(shown)) in unclassed
    assert "cell 2 (In[4]): vector_add, profiled on NVIDIA H100 80GB HBM3" in page
    assert "1 other output (the notebook&#x27;s own HTML" in page and "__pwned" not in page


def test_hostile_payload_text_stays_text(tmp_path):
    nb = _notebook(tmp_path / "h.ipynb", [_cell(hostile_inspection()._repr_mimebundle_())])
    page = export_notebook(nb, tmp_path / "h.html").path.read_text()
    tags = _Tags()
    tags.feed(page)
    assert not {"img", "link", "iframe"} & tags.names
    assert not [a for a in tags.attrs if a.startswith("on")]
    assert len(re.findall(r"<script>", page)) == 1 and HOSTILE not in page


@pytest.mark.parametrize("change, where", [
    (lambda d: d.update(evil="x"), "(top)"),  # a field the schema does not know
    (lambda d: d.update(version=3), "version"),  # a newer payload
    (lambda d: d["stages"]["tileir"].update(line_map=["<b>"]), "stages/tileir/line_map/0"),
    (lambda d: d.update(show=["x\"><script>"]), "show/0"),
])
def test_a_payload_that_breaks_its_schema_is_refused(tmp_path, change, where):
    bundle = json.loads(json.dumps(_vadd()._repr_mimebundle_()))
    change(bundle["application/vnd.tile-lab.v1+json"])
    nb = _notebook(tmp_path / "bad.ipynb", [_cell({}), _cell(bundle, count=7)])
    with pytest.raises(FileFormatError, match=re.escape("cell 2 (In[7])")) as info:
        export_notebook(nb, tmp_path / "bad.html")
    assert f"schema at {where}" in info.value.message
    assert not (tmp_path / "bad.html").exists()


def test_an_old_notebooks_version_1_view_still_exports(tmp_path):
    """Notebooks saved before the TMA field hold version-1 views: they export as before (the
    page's TMA badges come from the stages, as for a version-2 view)."""
    bundle = json.loads(json.dumps(_vadd()._repr_mimebundle_()))
    payload = bundle["application/vnd.tile-lab.v1+json"]
    new_page = export_notebook(_notebook(tmp_path / "new.ipynb", [_cell(bundle)]),
                               tmp_path / "new.html").path.read_text()
    payload.pop("tma")
    payload["version"] = 1
    old_page = export_notebook(_notebook(tmp_path / "old.ipynb", [_cell(bundle)]),
                               tmp_path / "old.html").path.read_text()
    assert old_page.replace("old.ipynb", "new.ipynb") == new_page
    assert "tl-tma-no" in old_page


def test_truncated_oversized_and_not_a_notebook(tmp_path):
    good = _notebook(tmp_path / "g.ipynb", [_cell(_vadd()._repr_mimebundle_())])
    cut = tmp_path / "cut.ipynb"
    cut.write_bytes(good.read_bytes()[:1000])
    with pytest.raises(FileFormatError, match=r"not a notebook .*truncated"):
        export_notebook(cut)
    with pytest.raises(FileFormatError, match="over the 100-byte limit"):
        export_notebook(good, max_bytes=100)
    other = tmp_path / "o.ipynb"
    other.write_text(json.dumps({"cells": "nope"}))
    with pytest.raises(FileFormatError, match="not a version-4 Jupyter notebook"):
        export_notebook(other)
    assert not list(tmp_path.glob("*.html"))


def test_a_notebook_without_views_is_refused_saying_why(tmp_path):
    # an unexecuted notebook exited 0 and wrote a page with no views
    blank = _notebook(tmp_path / "blank.ipynb", [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "source": "x = 1",
         "outputs": []}])
    with pytest.raises(FileFormatError, match="has no tile_lab views to export: none of its "
                                              "cells has an output: it was saved without "
                                              "running") as e:
        export_notebook(blank)
    assert "run the notebook in Jupyter (Run All), save it, then export" in e.value.render()
    printed = _notebook(tmp_path / "printed.ipynb", [
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "print(1)",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n"}]},
        _cell({"text/html": "<b>mine</b>"}, count=2)])
    with pytest.raises(FileFormatError, match=r"its outputs \(2: 1 printed text, 1 other\) "
                                              r"hold no tile_lab view"):
        export_notebook(printed)
    assert not list(tmp_path.glob("*.html"))
    done = subprocess.run([sys.executable, "-m", "tile_lab", "export", str(blank)],
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)},
                          timeout=300)
    assert done.returncode == 1 and "saved without running" in done.stderr
    assert "Run All" in done.stderr and not list(tmp_path.glob("*.html"))


def _displayed(*objects: object) -> list[dict]:
    """Cells holding what Jupyter saves for ``objects`` (IPython's own display formatter)."""
    from IPython.core.formatters import DisplayFormatter

    fmt = DisplayFormatter()
    return [_cell(fmt.format(o)[0], count=n) for n, o in enumerate(objects, 1)]


def test_views_saved_as_markup_are_exported(tmp_path):
    # a notebook's diagrams, checker and sanitizer reports were "other outputs left out"
    from test_render_check_view import _map, _result
    from test_render_safe_markup import _report

    from tile_lab.render.diagram import partition

    picture = partition((64, 64), (16, 16))
    failed = _result(tile_map=_map())
    forged = {"text/html": '<div class="tl-check"><script>window.__pwned=1</script>'
                           '<b onclick="window.__pwned=2">forged</b></div>'}
    nb = _notebook(tmp_path / "m.ipynb", [*_displayed(picture, failed, _report()),
                                          _cell(forged, count=4),
                                          _cell({"text/html": "<b>mine</b>"}, count=5)])
    result = export_notebook(nb)
    assert (result.views, result.skipped_outputs) == (4, 1)
    assert result.summary().endswith("4 tile_lab views; 1 other output left out (not "
                                     "tile_lab views)")
    page = result.path.read_text()
    assert "cell 1 (In[1]): diagram: " in page and picture.svg in page
    assert "cell 2 (In[2]): check: ✗ k:" in page and failed.diagram_svg in page
    assert "cell 3 (In[3]): sanitizer report: sanitizer: k grid=(2,): 8 memory ops" in page
    assert "4 elements written by 2 blocks" in page
    assert "cell 4 (In[4]): check" in page and "<b>forged</b>" in page
    assert "__pwned" not in page and "<b>mine</b>" not in page


@pytest.mark.slow
def test_executed_notebook_01_exports_its_diagram_and_checks(tmp_path, monkeypatch):
    # issue 32: notebook 01, run, exported 1 view and left its diagram and checks out
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("TILE_LAB_EMULATE", "1")  # the same on a GPU machine
    nb = nbformat.read(ROOT / "notebooks" / "01_first_tile_kernel.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    saved = tmp_path / "01.ipynb"
    nbformat.write(nb, saved)
    result = export_notebook(saved)
    assert (result.views, result.skipped_outputs) == (4, 0), result.summary()
    page = result.path.read_text()
    heads = re.findall(r"<h2>(.*?)</h2>", page)
    assert [re.sub(r" \(In\[\d+\]\)", "", h).split(":")[:2] for h in heads] == [
        ["cell 4", " vector_add (sm_90)"], ["cell 12", " diagram"], ["cell 15", " check"],
        ["cell 17", " check"]]
    assert "vector_add · grid (16,) · block (3,)" in heads[1]
    assert "✓ axpb: y matches the reference" in heads[2]
    assert "✗ axpb: 64 of 1024 elements of y are wrong" in heads[3]
    assert page.count('class="tile-lab-diagram"') == 2  # block 3's picture, the check's map
    assert "64 elements were never written by any block" in page


def test_the_command_line(tmp_path):
    nb = _notebook(tmp_path / "c.ipynb", [_cell(_vadd()._repr_mimebundle_())])
    out = tmp_path / "out.html"
    env_path = {"PYTHONPATH": str(ROOT)}
    ok = subprocess.run([sys.executable, "-m", "tile_lab", "export", str(nb), "-o", str(out)],
                        capture_output=True, text=True, env=env_path, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert f"wrote {out}: 1 tile_lab view" in ok.stdout and out.exists()
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{")
    refused = subprocess.run([sys.executable, "-m", "tile_lab", "export", str(bad)],
                             capture_output=True, text=True, env=env_path, timeout=300)
    assert refused.returncode == 1 and "is not a notebook" in refused.stderr
    assert "Traceback" not in refused.stderr
