"""Complete kernels run in the emulator against NumPy references (and, marked ``gpu``,
against the device): vector add (tile and gather forms, ragged tail), K-loop GEMM
fp16→fp32, persistent GEMM, row softmax, LayerNorm forward and backward (with an
atomic_cas lock), transpose, a 2-D stencil with halo gathers, and a cross-block
atomic_add reduction."""

from __future__ import annotations

import cuda.tile as ct
import numpy as np
import pytest
from test_emulator_harness import Case

import tile_lab
from tile_lab.errors import EmulationError

ZERO = ct.PaddingMode.ZERO


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    x = ct.load(a, (i,), (TILE,))
    y = ct.load(b, (i,), (TILE,))
    ct.store(c, (i,), x + y)


@ct.kernel
def vector_add_gather(a, b, c, TILE: ct.Constant[int]):
    idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    ct.scatter(c, idx, ct.gather(a, idx) + ct.gather(b, idx))


@ct.kernel
def gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc)


@ct.kernel
def persistent_gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int],
                    TK: ct.Constant[int]):
    tiles_m = ct.num_tiles(C, 0, (TM, TN))
    tiles_n = ct.num_tiles(C, 1, (TM, TN))
    for tile in range(ct.bid(0), tiles_m * tiles_n, ct.num_blocks(0)):
        bm, bn = tile // tiles_n, tile % tiles_n
        acc = ct.zeros((TM, TN), dtype=ct.float32)
        for k in range(ct.num_tiles(A, 1, (TM, TK))):
            a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
            b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(a, b, acc)
        ct.store(C, (bm, bn), acc.astype(C.dtype))


@ct.kernel
def softmax(x, y, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
    t = t - ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t)
    ct.store(y, (row, 0), e / ct.sum(e, axis=1, keepdims=True))


@ct.function
def row_stats(t, n):
    mean = ct.sum(t, axis=1, keepdims=True) / n
    centered = ct.where(ct.arange(t.shape[1], dtype=ct.int32)[None, :] < n, t - mean, 0.0)
    var = ct.sum(centered * centered, axis=1, keepdims=True) / n
    return mean, centered, ct.rsqrt(var + 1e-5)


@ct.kernel
def layernorm_fwd(X, W, B, Y, Mean, Rstd, N: ct.Constant[int], TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    x = ct.load(X, (row, 0), (1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
    mean, centered, rstd = row_stats(x, N)
    w = ct.load(W, (0,), (TILE_N,), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(B, (0,), (TILE_N,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(Y, (row, 0), centered * rstd * w[None, :] + b[None, :])
    ct.store(Mean, (row,), mean.reshape((1,)))
    ct.store(Rstd, (row,), rstd.reshape((1,)))


@ct.kernel
def layernorm_bwd(X, W, DY, Mean, Rstd, DX, DW, DB, Locks, N: ct.Constant[int],
                  GROUPS: ct.Constant[int], TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    group = row % GROUPS
    x = ct.load(X, (row, 0), (1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
    dy = ct.load(DY, (row, 0), (1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
    w = ct.load(W, (0,), (TILE_N,), padding_mode=ct.PaddingMode.ZERO)[None, :]
    mean = ct.load(Mean, (row,), (1,)).reshape((1, 1))
    rstd = ct.load(Rstd, (row,), (1,)).reshape((1, 1))
    valid = ct.arange(TILE_N, dtype=ct.int32)[None, :] < N
    xhat = ct.where(valid, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = ct.sum(xhat * wdy, axis=1, keepdims=True) / N
    c2 = ct.sum(wdy, axis=1, keepdims=True) / N
    ct.store(DX, (row, 0), (wdy - (xhat * c1 + c2)) * rstd)
    # accumulate this row's dW/dB into its group's partial sums under a spin lock
    while ct.atomic_cas(Locks, group, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
        pass
    dw = ct.load(DW, (group, 0), (1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
    db = ct.load(DB, (group, 0), (1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
    ct.store(DW, (group, 0), dw + dy * xhat)
    ct.store(DB, (group, 0), db + dy)
    ct.atomic_xchg(Locks, group, 0, memory_order=ct.MemoryOrder.RELEASE)


@ct.kernel
def transpose(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    t = ct.load(x, (bm, bn), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (bn, bm), ct.transpose(t))


@ct.kernel
def stencil(u, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    rows = ct.bid(0) * TM + ct.arange(TM, dtype=ct.int32)[:, None]
    cols = ct.bid(1) * TN + ct.arange(TN, dtype=ct.int32)[None, :]
    center = ct.gather(u, (rows, cols))
    halo = (ct.gather(u, (rows - 1, cols)) + ct.gather(u, (rows + 1, cols))
            + ct.gather(u, (rows, cols - 1)) + ct.gather(u, (rows, cols + 1)))
    ct.scatter(out, (rows, cols), 4.0 * center - halo)


@ct.kernel
def total(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.atomic_add(out, 0, ct.sum(t))


# ---- references -----------------------------------------------------------------------------

def _layernorm_ref(x, w, b):
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(x.var(axis=1) + 1e-5)
    return (x - mean[:, None]) * rstd[:, None] * w + b, mean, rstd


def _ln_bwd_args(rng):
    m, n, groups = 12, 100, 4
    x = rng.normal(size=(m, n)).astype(np.float32)
    w = rng.normal(size=n).astype(np.float32)
    dy = rng.normal(size=(m, n)).astype(np.float32)
    _, mean, rstd = _layernorm_ref(x.astype(np.float64), w, 0)
    return (x, w, dy, mean.astype(np.float32), rstd.astype(np.float32),
            np.zeros((m, n), np.float32), np.zeros((groups, n), np.float32),
            np.zeros((groups, n), np.float32), np.zeros(groups, np.int32), n, groups, 128)


def _ln_bwd_ref(a):
    x, w, dy, mean, rstd = (v.astype(np.float64) for v in a[:5])
    groups = a[10]
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    c1 = (xhat * wdy).mean(axis=1, keepdims=True)
    c2 = wdy.mean(axis=1, keepdims=True)
    dx = (wdy - (xhat * c1 + c2)) * rstd[:, None]
    dw = np.stack([(dy * xhat)[g::groups].sum(axis=0) for g in range(groups)])
    db = np.stack([dy[g::groups].sum(axis=0) for g in range(groups)])
    return {5: dx, 6: dw, 7: db, 8: np.zeros(groups, np.int32)}


def _stencil_ref(a):
    u = np.pad(a[0].astype(np.float64), 1)
    return {1: 4 * u[1:-1, 1:-1] - u[:-2, 1:-1] - u[2:, 1:-1] - u[1:-1, :-2] - u[1:-1, 2:]}


def _f32(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)


def _f16(rng, *shape):
    return rng.normal(size=shape).astype(np.float16)


def _mm(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


KERNELS = [
    Case("vector-add-tile", vector_add, (8,),
         lambda rng: (_f32(rng, 1000), _f32(rng, 1000), np.zeros(1000, np.float32), 128),
         lambda a: {2: a[0] + a[1]}),
    Case("vector-add-gather", vector_add_gather, (8,),
         lambda rng: (_f32(rng, 1000), _f32(rng, 1000), np.zeros(1000, np.float32), 128),
         lambda a: {2: a[0] + a[1]}),
    Case("gemm-fp16-fp32", gemm, (4, 3),
         lambda rng: (_f16(rng, 100, 70), _f16(rng, 70, 90), np.zeros((100, 90), np.float32),
                      32, 32, 16),
         lambda a: {2: _mm(a[0], a[1])}, rtol=1e-4, atol=1e-4, gpu_rtol=1e-3, gpu_atol=1e-3),
    Case("persistent-gemm", persistent_gemm, (3,),
         lambda rng: (_f16(rng, 128, 96), _f16(rng, 96, 64), np.zeros((128, 64), np.float16),
                      32, 32, 32),
         lambda a: {2: _mm(a[0], a[1])}, rtol=2e-3, atol=2e-2),
    Case("row-softmax", softmax, (16,),
         lambda rng: (_f32(rng, 16, 100), np.zeros((16, 100), np.float32), 128),
         lambda a: {1: np.exp(a[0] - a[0].max(1, keepdims=True))
                    / np.exp(a[0] - a[0].max(1, keepdims=True)).sum(1, keepdims=True)},
         rtol=1e-5, atol=1e-6),
    Case("layernorm-fwd", layernorm_fwd, (8,),
         lambda rng: (_f32(rng, 8, 100), _f32(rng, 100), _f32(rng, 100),
                      np.zeros((8, 100), np.float32), np.zeros(8, np.float32),
                      np.zeros(8, np.float32), 100, 128),
         lambda a: dict(zip((3, 4, 5), _layernorm_ref(a[0].astype(np.float64), a[1], a[2]))),
         rtol=1e-4, atol=1e-4),
    Case("layernorm-bwd-lock", layernorm_bwd, (12,), _ln_bwd_args, _ln_bwd_ref, rtol=1e-4,
         atol=1e-4),
    Case("transpose", transpose, (3, 2),
         lambda rng: (_f32(rng, 40, 64), np.zeros((64, 40), np.float32), 16, 32),
         lambda a: {1: a[0].T}),
    Case("stencil-halo", stencil, (2, 3),
         lambda rng: (_f32(rng, 16, 24), np.zeros((16, 24), np.float32), 8, 8),
         _stencil_ref, rtol=1e-5, atol=1e-5),
    Case("atomic-add-reduction", total, (8,),
         lambda rng: (_f32(rng, 1000), np.zeros(1, np.float32), 128),
         lambda a: {1: np.array([a[0].astype(np.float64).sum()])}, rtol=1e-5, atol=1e-4,
         gpu_rtol=1e-4, gpu_atol=1e-3),  # the device adds block sums in another order
]


@pytest.mark.parametrize("case", KERNELS, ids=str)
def test_kernel_matches(case, check_case):
    check_case(case)


def test_a_lock_never_released_is_reported_not_hung():
    rng = np.random.default_rng(0)
    args = list(_ln_bwd_args(rng))
    args[8][:] = 1  # every lock already held: no block can ever acquire one
    with pytest.raises(EmulationError, match="can never") as info:
        tile_lab.emulate(layernorm_bwd, (12,), args)
    assert "atomic_cas" in info.value.location.text
