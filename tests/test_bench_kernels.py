"""The tuned benchmark kernels (bench/norm_kernels.py, bench/gemm_kernels.py) compute the right
thing on the CPU emulator, and bench/lab_harness.py's comparison order is balanced."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

import gemm_kernels as gk  # noqa: E402
import lab_harness  # noqa: E402
import norm_kernels as nk  # noqa: E402

import tile_lab  # noqa: E402

M, N, TILE = 6, 96, 128  # rows shorter than the tile: the padding must not leak into results
EPS = 1e-5


def _data():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((M, N)).astype(np.float32) * 3
    return x, rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


def _grid(kind: str, rows: int) -> tuple[int]:
    return (-(-M // rows),) if kind == "block" else (2,)


@pytest.mark.parametrize("kind", ["block", "persistent"])
@pytest.mark.parametrize("rows, lat, tma", [(1, 0, 1), (2, 4, 0), (4, 0, 0)])
def test_norm_kernels_match_numpy(kind, rows, lat, tma):
    x, w, b = _data()
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(1, keepdims=True))
    softmax = e / e.sum(1, keepdims=True)
    mean, var = xd.mean(1, keepdims=True), xd.var(1, keepdims=True)
    layernorm = (xd - mean) / np.sqrt(var + EPS) * w + b
    rmsnorm = xd / np.sqrt((xd * xd).mean(1, keepdims=True) + EPS) * w
    consts = (rows, TILE, lat, tma)
    grid = _grid(kind, rows)

    y = np.full_like(x, np.nan)
    tile_lab.emulate(getattr(nk, f"softmax_{kind}"), grid, (x, y, *consts))
    np.testing.assert_allclose(y, softmax, rtol=1e-5, atol=1e-7)
    y = np.full_like(x, np.nan)
    tile_lab.emulate(getattr(nk, f"layernorm_{kind}"), grid, (x, w, b, y, EPS, N, *consts))
    np.testing.assert_allclose(y, layernorm, rtol=1e-4, atol=1e-5)
    y = np.full_like(x, np.nan)
    tile_lab.emulate(getattr(nk, f"rmsnorm_{kind}"), grid, (x, w, y, EPS, N, *consts))
    np.testing.assert_allclose(y, rmsnorm, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kernel, grid", [(nk.vector_add_tuned, (5,)),
                                          (nk.vector_add_persistent, (2,))])
def test_vector_add_kernels(kernel, grid):
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(5 * 256).astype(np.float32) for _ in range(2))
    c = np.full_like(a, np.nan)
    tile_lab.emulate(kernel, grid, (a, b, c, 256, 4, 0))
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize("kernel, grid", [(gk.gemm_persistent_acc, (3,)),
                                          (gk.gemm_grouped_acc, (16,))])
def test_gemm_acc_kernels(kernel, grid):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 48)).astype(np.float16)
    b = rng.standard_normal((48, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float16)
    tile_lab.emulate(kernel, grid, (a, b, c, 16, 16, 16, 2, 0, 0))
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-3, atol=2e-2)


class _FakeGpu:
    """Records the order of groups and rests instead of timing anything."""

    def __init__(self):
        self.log: list[str] = []

    def wait_rested(self) -> float:
        self.log.append("rest")
        return 0.0

    def group(self, side, n, cold=True):
        self.log.append(side.name)
        side.samples_ms += [side.ms] * n
        side.states += [dict(sm_mhz=1980, power_w=100.0, reasons=0)] * 2


def _sides():
    sides = [lab_harness.Side(name, lambda: None) for name in ("ours", "torch", "copy")]
    for s, ms in zip(sides, (1.0, 1.5, 0.9)):
        s.ms = ms
    return sides


def test_compare_burst_rests_before_every_group_and_balances_positions():
    gpu = _FakeGpu()
    res = lab_harness.compare(gpu, _sides(), "burst", rounds=3, per_group=2)
    groups = [e for e in gpu.log if e != "rest"]
    assert gpu.log == [e for g in groups for e in ("rest", g)]
    assert len(groups) == 3 * 2 * 3
    halves = [groups[i:i + 3] for i in range(0, len(groups), 3)]
    for name in ("ours", "torch", "copy"):  # every side in every position equally often
        positions = [h.index(name) for h in halves]
        assert sorted(positions) == [0, 0, 1, 1, 2, 2]
    assert res["sides"]["torch"]["ratio_vs_ours"] == pytest.approx(1.5)
    assert res["sides"]["ours"]["n"] == 3 * 2 * 2
    assert not res["clock_mismatch"]


def test_compare_sustained_does_not_rest(monkeypatch):
    monkeypatch.setattr(lab_harness, "SUSTAIN_S", 0.0)
    gpu = _FakeGpu()
    gpu.torch = type("T", (), {"cuda": type("C", (), {"synchronize": staticmethod(lambda: None)})})
    lab_harness.compare(gpu, _sides(), "sustained", rounds=3, per_group=1)
    assert "rest" not in gpu.log and len(gpu.log) == 18
