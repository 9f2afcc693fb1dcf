"""bench/device_math_check.py: its CPU side (inputs, kernels, comparison) and its no-GPU exit."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tile_lab
from tile_lab.emulator import device_math

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("device_math_check",
                                              ROOT / "bench" / "device_math_check.py")
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)


def test_every_mode_names_a_device_math_function():
    for _, function, _ in check.MODES.values():
        assert callable(getattr(device_math, function))


def test_inputs_cover_all_exponents_and_are_whole_tiles():
    x = check.inputs(1, 2 ** 16)
    assert len(x) % check.TILE == 0
    exponents = np.unique((x.view(np.uint32) >> 23) & 0xFF)
    assert len(exponents) == 256
    assert not np.array_equal(check.inputs(1, 2 ** 16), check.inputs(2, 2 ** 16))


def test_compare_counts_bits_and_ulps():
    a = np.array([1.0, 2.0, np.nan, -1.0], np.float32)
    b = a.copy()
    b[1] = np.nextafter(b[1], np.float32(3))
    b[3] = np.nextafter(b[3], np.float32(0))
    a.view(np.uint32)[2] = 0x7FFFFFFF  # the GPU's NaN
    b.view(np.uint32)[2] = 0x7FC00000  # another NaN: a mismatch in bits
    assert check.compare(a, b) == {"mismatches": 3, "max_ulps": 1}


def test_the_generated_kernels_emulate_to_the_device_math(tmp_path):
    kernels = check.kernels_module(str(tmp_path))
    x = check.inputs(1, 2 ** 24)[-2048:]
    for name in ("tan", "exp2_ftz", "tanh_approx"):
        y = np.zeros_like(x)
        tile_lab.emulate(getattr(kernels, f"k_{name}"), (2,), (x, y, check.TILE))
        want = getattr(device_math, check.MODES[name][1])(x)
        assert check.compare(y, want)["mismatches"] == 0


@pytest.mark.timeout(120)
def test_without_a_gpu_it_says_so_and_exits_2():
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "device_math_check.py")],
                          capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert done.returncode == 2
    assert "needs a CUDA GPU" in done.stderr
