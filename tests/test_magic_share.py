"""``%%tile --export FILE.html`` and ``%%tile --reproducer DIR``: thin options over
``tile_lab.export`` and ``tile_lab.reproducer``; the reproducer is written before the compile,
so a cell whose kernel tileiras rejects still leaves one that reproduces the error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from shared_kernels import vadd_cell

from tile_lab.errors import CompileError

VADD = vadd_cell("vadd_share")

REJECTED = """import cuda.tile as ct

@ct.kernel
def rejected_in_a_cell(source):
    row = ct.arange(1, dtype=ct.int32)
    m = ct.load_advanced_indexing(source, (ct.Slice(0, 1), row, ct.Slice(0, 32))).reshape((1, 32))
    s = ct.sum(m, axis=1)
    ct.store_advanced_indexing(source, (ct.Slice(0, 1), row, ct.Slice(0, 1)), s.reshape((1, 1, 1)))
"""


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "tile_lab")
    x = np.arange(1024, dtype=np.float32)
    names = {"sa": x, "sb": x, "sc": np.zeros_like(x)}
    sh.user_ns.update(names)
    yield sh
    # the shell is IPython's singleton: leave no arrays for other test modules to trip over
    for name in names:
        sh.user_ns.pop(name, None)


def test_export_writes_what_the_cell_shows(shell, tmp_path, capsys):
    out = tmp_path / "cell.html"
    shell.run_cell_magic("tile", f'--args "sa, sb, sc, 128" --grid "(8,)" --trace '
                                 f'--show source,tileir,sass,partition --export {out}', VADD)
    assert f"exported to {out}" in capsys.readouterr().out
    page = out.read_text()
    assert "vadd_share (sm_" in page and 'class="tl-view ' in page  # the inspect view
    assert "vadd_share: partition diagram" in page or "<svg" in page  # the trace's diagram
    assert "Content-Security-Policy" in page


def test_reproducer_of_a_cell_that_tileiras_rejects(shell, tmp_path, capsys):
    folder = tmp_path / "bug"
    cell = f'%%tile --sig "f32[1,4,32]" --arch sm_90 --reproducer {folder}\n' + REJECTED
    capsys.readouterr()
    result = shell.run_cell(cell)
    assert not result.success and isinstance(result.error_in_exec, CompileError)
    out = capsys.readouterr().out
    assert "reproducer for rejected_in_a_cell (sm_90; tileiras failure" in out
    assert "tileiras failed for sm_90: failed to compile Tile IR program" in out  # the cell
    record = json.loads((folder / "repro.json").read_text())
    assert record["outcome"]["returncode"] == 5 and record["grid"] is None
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "run.py", "--check"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "REPRODUCED" in proc.stdout, proc.stdout + proc.stderr


def test_reproducer_needs_arguments_and_one_kernel(shell, tmp_path):
    with pytest.raises(UsageError, match="--reproducer needs --args"):
        shell.run_cell_magic("tile", f"--show source --reproducer {tmp_path / 'r'}", VADD)
    with pytest.raises(UsageError, match="--reproducer writes cuTile Python"):
        shell.run_cell_magic("tile", f"--lang c++ --reproducer {tmp_path / 'r'}",
                             "__tile_global__ void k() {}")
