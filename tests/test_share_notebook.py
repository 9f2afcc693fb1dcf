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
from test_share_bundle import HOSTILE, _Tags, hostile_inspection

from tile_lab.artifacts import Inspection
from tile_lab.errors import FileFormatError
from tile_lab.profiling import load_profile
from tile_lab.render.html import inspection_html
from tile_lab.render.profile_view import ProfileView
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
    return Inspection.from_json((FIXTURES / "inspect_vadd_sm_90.json").read_text())


def test_every_tile_lab_view_of_a_notebook(tmp_path):
    vadd = _vadd()
    prof = load_profile(ROOT / "notebooks" / "data" / "profile_vector_add.json")
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
    assert "1 other outputs" in page and "__pwned" not in page


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
    from tile_lab.render.diagram import partition

    blank = _notebook(tmp_path / "blank.ipynb", [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "source": "x = 1",
         "outputs": []}])
    with pytest.raises(FileFormatError, match="has no tile_lab views to export: none of its "
                                              "cells has an output: it was saved without "
                                              "running"):
        export_notebook(blank)
    picture = partition((64, 64), (16, 16))
    pictures = _notebook(tmp_path / "pics.ipynb", [
        _cell({"image/svg+xml": picture._repr_svg_(), "text/html": picture._repr_html_()})])
    with pytest.raises(FileFormatError, match=r"its 1 outputs hold no tile_lab inspect or "
                                              r"profile view \(1 of them a tile_lab picture"):
        export_notebook(pictures)
    assert not list(tmp_path.glob("*.html"))
    mixed = _notebook(tmp_path / "mixed.ipynb", [
        _cell(_vadd()._repr_mimebundle_()),
        _cell({"image/svg+xml": picture._repr_svg_(), "text/html": picture._repr_html_()})])
    assert export_notebook(mixed).summary().endswith(
        "1 tile_lab view; 1 other outputs left out (not tile_lab data, 1 of them a tile_lab "
        "picture: tile_lab.export(...) in the running notebook exports them)")
    done = subprocess.run([sys.executable, "-m", "tile_lab", "export", str(blank)],
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)},
                          timeout=300)
    assert done.returncode == 1 and "saved without running" in done.stderr


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
