"""The front-end gate: kernels cuTile's compiler rejects fail under the emulator too, with
cuTile's message at the kernel line; each (kernel, signature) is typed once."""

from __future__ import annotations

import inspect
import textwrap

import cuda.tile as ct
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

import tile_lab
from tile_lab import _cutile_compat as compat
from tile_lab.emulator import gate
from tile_lab.errors import CompileError


@ct.kernel
def negative_step(x, y):
    t = ct.load(x, index=(0,), shape=(8,))
    for _ in range(4, 0, -1):
        t = t + 1
    ct.store(y, index=(0,), tile=t)


@ct.kernel
def dtype_by_path(x, y, flag: int):
    if flag > 0:  # noqa: SIM108 (the if/else statement is what cuTile rejects)
        t = ct.load(x, index=(0,), shape=(8,))
    else:
        t = ct.zeros((8,), ct.int32)
    ct.store(y, index=(0,), tile=t)


@ct.kernel
def list_of_tiles(x, y):
    ts = [ct.load(x, index=(0,), shape=(8,)), ct.zeros((8,), ct.float32)]
    ct.store(y, index=(0,), tile=ts[0])


@ct.kernel
def fine(x, y):
    ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(8,)) + 1)


def _line(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel._pyfunc)
    return next(first + i for i, t in enumerate(lines) if text in t)


REJECTED = [
    (negative_step, (), "Step must be positive", "range(4, 0, -1)"),
    (dtype_by_path, (1,), "Type of `t` depends on path taken", "t = ct.zeros"),
    (list_of_tiles, (), "Unsupported syntax", "ts = ["),
]


@pytest.mark.parametrize("kernel, extra, message, at", REJECTED,
                         ids=["negative_step", "dtype_by_path", "list_of_tiles"])
def test_rejected_kernels_fail_with_cuTiles_message_at_the_line(kernel, extra, message, at):
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(CompileError, match=message) as info:
        tile_lab.emulate(kernel, (1,), (x, y, *extra))
    assert info.value.location.line == _line(kernel, at)
    assert "compiler rejects this kernel" in info.value.hint
    assert (y == 0).all()  # nothing ran
    with gate.disabled():  # the emulator alone would have run it
        tile_lab.emulate(kernel, (1,), (x, y, *extra))
    assert (y != 0).any()


def test_each_signature_is_typed_once(monkeypatch):
    monkeypatch.setenv("TILE_LAB_FRONTEND_CACHE", "off")  # this process's memory alone
    calls = []
    real = compat.check_frontend
    monkeypatch.setattr(compat, "check_frontend", lambda k, s: (calls.append(k), real(k, s)))
    gate.clear_cache()
    x = np.ones(8, np.float32)
    for _ in range(3):
        tile_lab.emulate(fine, (1,), (x, np.zeros(8, np.float32)))
    assert len(calls) == 1
    tile_lab.emulate(fine, (1,), (np.ones(8, np.float16), np.zeros(8, np.float16)))
    assert len(calls) == 2  # a new dtype is a new signature


def test_plain_functions_are_not_gated(monkeypatch):
    monkeypatch.setattr(compat, "check_frontend", lambda k, s: pytest.fail("gated"))
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    tile_lab.emulate(fine._pyfunc, (1,), (x, y))
    assert (y == 2).all()


def test_emulate_cell_fails_at_the_cell_line(capsys):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tile_lab")
    shell.user_ns["gx"], shell.user_ns["gy"] = np.ones(8, np.float32), np.zeros(8, np.float32)
    cell = textwrap.dedent('''\
        %%tile --emulate --grid 1 --args "gx, gy"
        import cuda.tile as ct

        @ct.kernel
        def down(x, y):
            t = ct.load(x, index=(0,), shape=(8,))
            for _ in range(4, 0, -1):
                t = t + 1
            ct.store(y, index=(0,), tile=t)
        ''')
    capsys.readouterr()
    result = shell.run_cell(cell)
    out = capsys.readouterr().out
    assert not result.success and isinstance(result.error_in_exec, CompileError)
    err = result.error_in_exec
    assert err.location.filename.startswith("Cell In[") and err.location.line == 7
    assert "Step must be positive" in out and "for _ in range(4, 0, -1):" in out
    assert (shell.user_ns["gy"] == 0).all()


def test_torch_cpu_tensors_are_gated_too():
    torch = pytest.importorskip("torch")
    x, y = torch.ones(8), torch.zeros(8)
    with pytest.raises(CompileError, match="Step must be positive"):
        tile_lab.emulate(negative_step, (1,), (x, y))
    assert (y == 0).all()
