"""bench/notebook_memory.py: a notebook's kernel peak memory, read from inside the kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")  # the GPU image lacks it

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import notebook_memory  # noqa: E402 (after the path and the skip)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_a_notebook_holding_300_mb_measures_at_least_that(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import numpy as np\nbig = np.ones(300_000_000 // 8)  # 300 MB, touched")]
    path = tmp_path / "99_big.ipynb"
    nbformat.write(nb, path)
    small = tmp_path / "98_small.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), small)
    rows = [notebook_memory.measure(path, no_torch=True), notebook_memory.measure(small)]
    assert rows[0]["kernel"] >= 300e6 > rows[1]["kernel"]  # the control: a bare kernel
    table = notebook_memory.table(rows)
    assert table.splitlines()[2].startswith("| 99_big.ipynb | ")
    assert "largest kernel: 99_big.ipynb" in table


def test_binder_installs_what_every_notebook_imports():
    """A notebook that imports Triton (19) runs on Binder only if postBuild installs it."""
    root = Path(__file__).resolve().parent.parent
    post_build = (root / "binder" / "postBuild").read_text()
    needs_triton = [p.name for p in sorted((root / "notebooks" / "src").glob("*.py"))
                    if "import triton" in p.read_text()]
    assert needs_triton, "no notebook imports triton: this test guards nothing"
    assert '.[triton]' in post_build, f"{needs_triton} import triton; binder/postBuild lacks it"
