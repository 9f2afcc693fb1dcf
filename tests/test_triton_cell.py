"""``%%tile --lang triton`` through IPython: the view, the errors at the cell line."""

from __future__ import annotations

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from triton_cases import needs_triton

from tile_lab.compile.artifacts import MIME_TYPE
from tile_lab.errors import ArgumentTypeError, CompileError, OptionError

pytestmark = needs_triton

ADD = """import triton
import triton.language as tl

@triton.jit
def cell_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)
"""
SIG = '--lang triton --sig "*fp32, *fp32, *fp32, i32, 256"'


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "tile_lab")
    return sh


@pytest.fixture
def shown(shell, monkeypatch):
    bundles: list[dict] = []
    monkeypatch.setattr(shell.display_pub, "publish",
                        lambda data, metadata=None, **kw: bundles.append(data))
    return bundles


def run_failing(shell, capsys, cell: str):
    capsys.readouterr()
    result = shell.run_cell(cell)
    assert not result.success
    return result.error_in_exec, capsys.readouterr().out


def test_a_triton_cell_shows_its_stages(shell, shown):
    shell.run_cell_magic("tile", SIG + " --show source,ttgir,sass", ADD)
    (b,) = shown
    data = b[MIME_TYPE]
    assert data["kernel_name"] == "cell_add" and data["arch"] == "sm_90"
    assert set(data["stages"]) == {"ttgir", "sass"}
    # the store is on cell line 8 (the %%tile line is line 1); the SASS maps rows to it
    assert 8 in data["stages"]["sass"]["line_map"]
    assert "TritonGPU IR" in b["text/html"]


def test_emulate_runs_in_the_interpreter(shell, shown, capsys):
    ns = shell.user_ns
    ns["tx"], ns["ty"] = np.arange(300, dtype=np.float32), np.ones(300, np.float32)
    ns["tout"] = np.zeros(300, np.float32)
    shell.run_cell_magic("tile", '--lang triton --emulate --grid "(2,)" --args '
                                 '"tx, ty, tout, 300, 256"', ADD)
    assert np.array_equal(ns["tout"], ns["tx"] + 1)
    assert "Triton's interpreter" in capsys.readouterr().out


def test_compile_error_at_the_cell_line(shell, capsys):
    cell = "%%tile " + SIG + "\n" + ADD.replace("mask = offs < n", "mask = offs < nn")
    err, out = run_failing(shell, capsys, cell)
    assert isinstance(err, CompileError)
    assert err.location.filename.startswith("Cell In[") and err.location.line == 8
    line = next(t for t in out.splitlines() if t.lstrip().startswith("8 |"))
    caret = out.splitlines()[out.splitlines().index(line) + 1]
    assert caret.index("^") == line.index("nn")


def test_not_a_triton_kernel(shell, capsys):
    cell = ("%%tile " + SIG + "\nimport cuda.tile as ct\n\n@ct.kernel\n"
            "def ct_only(a, TILE: ct.Constant[int]):\n    pass\n")
    err, _out = run_failing(shell, capsys, cell)
    assert isinstance(err, CompileError)
    assert "the cell defines no @triton.jit kernel" in err.message
    assert "ct_only is a cuTile kernel" in err.hint and err.location.line == 1


@pytest.mark.parametrize("extra, words", [("--hints occupancy=2", "--hints is for cuTile"),
                                          ("--trace", "Triton's interpreter (--emulate)"),
                                          ("--show source,partition", "partition diagram")])
def test_refused_options(shell, capsys, extra, words):
    err, _ = run_failing(shell, capsys, f"%%tile {SIG} {extra}\n{ADD}")
    assert isinstance(err, (OptionError, UsageError)) and words in str(err)


def test_bad_sig_item_is_pointed_at(shell, capsys):
    err, _out = run_failing(shell, capsys, '%%tile --lang triton --sig "*fp32, *fp32, *f32, '
                                          'i32, 256"\n' + ADD)
    assert "spec item 3" in err.message and err.location.line == 1


def test_compare_with_a_kernel_from_a_cell(shell, shown):
    import tile_lab
    from tile_lab.examples.triton_ports import vector_add

    shell.run_cell_magic("tile", SIG, ADD)
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(100, np.float32)
    cmp = tile_lab.compare(shell.user_ns["cell_add"], vector_add, args=(x, x, out, 100, 64),
                           cutile_args=(x, x, out, 64), grid=(2,))
    assert cmp.outputs.agreement == "identical"
    with pytest.raises(ArgumentTypeError):
        tile_lab.compare(vector_add, shell.user_ns["cell_add"], args=(), cutile_args=())
