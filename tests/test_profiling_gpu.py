"""``tile_lab.profile`` on a real GPU with Nsight Compute (``gpu`` marker; skipped without
``ncu``). Run on the lent GPU: the vector add's hottest line is the add/store line, where
the warps wait for their loads."""

from __future__ import annotations

import shutil

import cuda.tile as ct
import pytest

import tile_lab


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ta = ct.load(a, (i,), (TILE,))
    tb = ct.load(b, (i,), (TILE,))
    ct.store(c, (i,), ta + tb)


@pytest.mark.gpu
def test_profile_vector_add_on_the_gpu():
    if shutil.which("ncu") is None and not __import__("os").environ.get("TILE_LAB_NCU"):
        pytest.skip("no ncu on this GPU machine")
    import cupy

    n = 1 << 22
    a = cupy.ones(n, cupy.float32)
    c = cupy.zeros(n, cupy.float32)
    prof = tile_lab.profile(vadd, (n // 1024,), (a, a, c, 1024))
    assert float(c.sum()) == 0.0  # the caller's arrays are not written
    assert prof.collection["plan"] == "source counters" and prof.has_executed
    assert prof.metrics.grid_size == n // 1024 and prof.metrics.duration_ns > 0
    if prof.matched_instructions:  # the line map needs tileirdisasm on this machine
        assert prof.matched_instructions == len(prof.instructions)
        assert "ct.store" in prof.hot_lines(1)[0].text
