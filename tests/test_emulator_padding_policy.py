"""The padding policies for undetermined lanes (``tile_lab.emulator.poison``): ``poison`` (NaN),
``zero``, and ``hardware`` (zero where the tile-space load meets TMA's preconditions, as TMA
fills; poison where it cannot be a TMA copy). Every policy still warns, naming the load.
Program mode (``emulation()``, ``TILE_LAB_EMULATE``) defaults to ``hardware``; ``TILE_LAB_PADDING``
and ``emulation(padding=)`` choose another."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.emulator import emulate_kernel as emulate
from tile_lab.emulator.poison import UndeterminedValueWarning

ROOT = Path(__file__).resolve().parents[1]


@ct.kernel
def ragged_sum(x, out, T: ct.Constant[int]):  # 100 elements, a tile of 128: 28 padded lanes
    t = ct.load(x, index=(0,), shape=(T,))
    ct.store(out, index=(0,), tile=ct.sum(t, 0, keepdims=True))


@ct.kernel
def ragged_sum_no_tma(x, out, T: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(T,), allow_tma=False)
    ct.store(out, index=(0,), tile=ct.sum(t, 0, keepdims=True))


@ct.kernel
def ragged_sum_2d(x, out, R: ct.Constant[int], C: ct.Constant[int]):
    t = ct.load(x, index=(0, 0), shape=(R, C))
    ct.store(out, index=(0,), tile=ct.sum(ct.sum(t, 1), 0, keepdims=True))


@ct.kernel
def ragged_sum_transposed(x, out, R: ct.Constant[int], C: ct.Constant[int]):
    t = ct.load(x, index=(0, 0), shape=(R, C), order=(1, 0))  # x read as its transpose
    ct.store(out, index=(0,), tile=ct.sum(ct.sum(t, 1), 0, keepdims=True))


def _run(kernel, x, *extra, padding):
    out = np.zeros(1, dtype=np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        emulate(kernel, (1,), (x, out, *extra), padding=padding)
    warned = [w for w in caught if issubclass(w.category, UndeterminedValueWarning)]
    return float(out[0]), warned


X = np.arange(100, dtype=np.float32)


@pytest.mark.parametrize("padding, expected", [("poison", None), ("zero", 4950.0),
                                               ("hardware", 4950.0)])
def test_a_tma_shaped_load_is_zero_filled_under_hardware(padding, expected):
    got, warned = _run(ragged_sum, X, 128, padding=padding)
    assert (np.isnan(got) if expected is None else got == expected)
    assert warned, "every policy still warns that padded lanes reached an output"


def test_allow_tma_false_keeps_the_poison_under_hardware():
    got, warned = _run(ragged_sum_no_tma, X, 128, padding="hardware")
    assert np.isnan(got) and warned
    assert _run(ragged_sum_no_tma, X, 128, padding="zero")[0] == 4950.0


def _sum_f16(n: int, tile: int) -> float:
    out = np.zeros(1, dtype=np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        emulate(ragged_sum, (1,), (np.ones(n, dtype=np.float16), out, tile), padding="hardware")
    return float(out[0])


def test_rows_narrower_than_16_bytes_keep_the_poison():
    assert np.isnan(_sum_f16(3, 4))  # a row of 4 float16: 8 bytes
    assert _sum_f16(6, 8) == 6.0  # 8 float16: 16 bytes, can be TMA


def test_a_row_stride_off_16_bytes_keeps_the_poison():
    x = np.ones((3, 5), dtype=np.float32)  # rows of 20 bytes: TMA needs multiples of 16
    assert np.isnan(_run(ragged_sum_2d, x, 4, 8, padding="hardware")[0])
    x8 = np.ones((3, 8), dtype=np.float32)  # rows of 32 bytes: can be TMA
    assert _run(ragged_sum_2d, x8, 4, 8, padding="hardware")[0] == 24.0


def test_a_transposed_load_is_judged_in_the_arrays_own_layout():
    x = np.ones((4, 12), dtype=np.float32)  # read as (12, 4) tiles of (16, 4) + order=(1, 0)
    assert _run(ragged_sum_transposed, x, 16, 4, padding="hardware")[0] == 48.0
    assert np.isnan(_run(ragged_sum_transposed, x, 16, 4, padding="poison")[0])


def test_a_misaligned_base_keeps_the_poison():
    buf = np.zeros(101, dtype=np.float32)
    start = next(i for i in range(4) if (buf[i:].ctypes.data % 16) == 4)
    x = buf[start:start + 100]  # base 4 bytes past a 16-byte boundary
    x[:] = X
    assert np.isnan(_run(ragged_sum, x, 128, padding="hardware")[0])


def test_an_unknown_policy_is_refused():
    with pytest.raises(tile_lab.errors.EmulationError, match="padding must be one of"):
        emulate(ragged_sum, (1,), (X, np.zeros(1, np.float32), 128), padding="garbage")


def test_program_mode_defaults_to_hardware_and_the_variable_chooses(monkeypatch):
    out = np.zeros(1, dtype=np.float32)
    monkeypatch.delenv("TILE_LAB_PADDING", raising=False)
    with tile_lab.emulation(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ct.launch(None, (1,), ragged_sum, (X, out, 128))
    assert out[0] == 4950.0
    with tile_lab.emulation(padding="poison"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ct.launch(None, (1,), ragged_sum, (X, out, 128))
    assert np.isnan(out[0])
    monkeypatch.setenv("TILE_LAB_PADDING", "poison")
    with tile_lab.emulation(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ct.launch(None, (1,), ragged_sum, (np.arange(100, dtype=np.float32), out, 128))
    assert np.isnan(out[0])


def test_a_bad_variable_is_a_one_line_error_in_a_program(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TILE_LAB_EMULATE": "1",
           "TILE_LAB_PADDING": "nans"}
    run = subprocess.run([sys.executable, "-c", "import tile_lab; tile_lab.emulation()"
                          ".__enter__()"], env=env, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 1
    assert "TILE_LAB_PADDING='nans': expected one of poison, zero, hardware" in run.stderr
