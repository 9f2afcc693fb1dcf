"""Shared pieces of the Triton tests: skip where Triton is absent, small kernels in a real file
(Triton reads a kernel's source with inspect), and one fresh compare per pair per session."""

from __future__ import annotations

import functools
import importlib.util

import pytest

HAVE_TRITON = (importlib.util.find_spec("triton") is not None
               and importlib.util.find_spec("torch") is not None)
needs_triton = pytest.mark.skipif(not HAVE_TRITON, reason="needs triton and torch "
                                  '(pip install "tile_lab[triton]")')

SIZES = {"vector_add": 1000, "softmax": 48, "gemm": 80}


@functools.cache
def compared(name: str):
    """tile_lab.compare of pair ``name`` at a small size, run (computed once)."""
    import tile_lab
    from tile_lab.examples.triton_ports import pair_inputs

    p = pair_inputs(name, SIZES[name])
    return tile_lab.compare(p["triton"], p["cutile"], args=p["args"],
                            cutile_args=p["cutile_args"], grid=p["grid"])


if HAVE_TRITON:
    import triton
    import triton.language as tl

    @triton.jit
    def bad_name(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        y = x + not_defined_anywhere  # noqa: F821
        tl.store(x_ptr + offs, y)

    @triton.jit
    def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)

    @triton.jit
    def uses_helper(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, x - tl.max(x, axis=0))
