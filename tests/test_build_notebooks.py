"""tools/build_notebooks.py: jupytext sources ↔ committed notebooks."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("jupytext", reason="tools/build_notebooks.py needs jupytext (the [test] extra)")
nbformat = pytest.importorskip("nbformat", reason="tools/build_notebooks.py needs nbformat "
                               "(the [test] extra)")

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("build_notebooks",
                                               ROOT / "tools" / "build_notebooks.py")
build_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_notebooks)
SOURCES = sorted((ROOT / "notebooks" / "src").glob("*.py"))


def test_there_are_at_least_sixteen_tutorials() -> None:
    assert len(SOURCES) >= 16
    assert all((ROOT / "notebooks" / f"{s.stem}.ipynb").exists() for s in SOURCES)


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem[:2])
def test_committed_notebook_matches_its_source(src: Path) -> None:
    assert build_notebooks.differences(src) == []


def test_cells_magics_ids_and_no_jupytext_metadata(tmp_path: Path) -> None:
    src = tmp_path / "42_demo.py"
    src.write_text("# %% [markdown]\n# # Title\n#\n# text\n\n# %%\n%load_ext tile_lab\n"
                   "x = 1\n\n# %%\n%%tile --sig \"f32[8]\"\nprint(x)\n")
    nb = build_notebooks.from_source(src)
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code"]
    assert nb.cells[0].source == "# Title\n\ntext"
    assert nb.cells[1].source == "%load_ext tile_lab\nx = 1"
    assert nb.cells[2].source.startswith("%%tile --sig")
    assert [c.id for c in nb.cells] == ["42-00", "42-01", "42-02"]
    assert "jupytext" not in nb.metadata and all(not c.metadata for c in nb.cells)
    # and back: the notebook written as a source reads to the same cells
    path = tmp_path / "42_demo.ipynb"
    nbformat.write(nb, path)
    back = tmp_path / "back.py"
    build_notebooks.to_source(path, back)
    text = back.read_text()
    assert "%%tile --sig" in text and "# %%tile" not in text and "jupytext" not in text
    assert [c.source for c in build_notebooks.from_source(back).cells] == \
        [c.source for c in nb.cells]


def test_a_stale_notebook_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build_notebooks, "OUT", tmp_path)
    src = tmp_path / "43_demo.py"
    src.write_text("# %%\nx = 1\n")
    assert build_notebooks.differences(src) == ["43_demo.ipynb is missing"]
    build_notebooks.build(src)
    assert build_notebooks.differences(src) == []
    src.write_text("# %%\nx = 2\n")
    assert build_notebooks.differences(src) == [
        "43_demo.ipynb cell 0 (code) differs from the source"]


def test_notebook_metadata_beyond_the_kernel_is_reported(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Saved widget state (63 kB in notebook 09 once) is flagged, so it is not committed."""
    src = SOURCES[0]
    monkeypatch.setattr(build_notebooks, "OUT", tmp_path)
    out = build_notebooks.build(src)
    assert build_notebooks.differences(src) == []
    nb = nbformat.read(out, as_version=4)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nbformat.write(nb, out)
    assert build_notebooks.differences(src) == [
        f"{out.name} carries notebook metadata widgets (rebuild it)"]
