"""tile_lab.triton.interpret: Triton's interpreter on NumPy arrays, and Triton as it was after."""

from __future__ import annotations

import numpy as np
import pytest
from triton_cases import needs_triton

from tile_lab.errors import EmulationError

pytestmark = needs_triton


def test_runs_on_numpy_arrays_and_writes_them():
    from triton_cases import scale

    from tile_lab.triton import run_triton_cpu

    x = np.arange(300, dtype=np.float32)
    out = np.full(300, -1.0, np.float32)
    run_triton_cpu(scale, (3,), (x, out, 250, 2.0, 128))
    assert np.array_equal(out[:250], 2 * x[:250])
    assert (out[250:] == -1).all()  # masked lanes are not written


def test_triton_language_and_the_kernel_globals_are_restored():
    import triton.language as tl
    from triton_cases import scale, uses_helper

    from tile_lab.triton import inspect_triton, run_triton_cpu

    before_tl = dict(vars(tl))
    before_globals = set(scale.fn.__globals__)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    run_triton_cpu(uses_helper, (1,), (x, out, 64))  # tl.max: a @triton.jit helper
    assert np.array_equal(out, x - x.max())
    assert set(scale.fn.__globals__) == before_globals
    assert {k: v for k, v in vars(tl).items()} == before_tl
    # the compiler works after the interpreter ran (it fails on a patched triton.language)
    insp = inspect_triton(scale, "*fp32, *fp32, i32, fp32, 64")
    assert "sass" in insp.stages


def test_errors_name_the_kernel():
    from triton_cases import scale

    from tile_lab.triton import run_triton_cpu

    x = np.zeros(8, np.float32)
    with pytest.raises(EmulationError, match=r"scale takes 5 arguments"):
        run_triton_cpu(scale, (1,), (x, x, 8))
    with pytest.raises(EmulationError, match="Triton's interpreter failed running scale"):
        run_triton_cpu(scale, (1,), (x, x, 8, 1.0, 6))  # arange needs a power of two


def test_a_helper_kernel_runs_again_after_the_restore():
    from triton_cases import uses_helper

    from tile_lab.triton import run_triton_cpu

    x = np.arange(32, dtype=np.float32)
    for _ in range(2):  # the second run once met tl.max's stale rewrite (NameError)
        out = np.zeros(32, np.float32)
        run_triton_cpu(uses_helper, (1,), (x, out, 32))
        assert np.array_equal(out, x - 31)
