"""Correct cuTile kernels with input builders and NumPy references.

Each kernel is run by ``tests/test_corpus_emulated.py`` in the emulator (and, marked
``gpu``, on a real GPU) and must match its reference and give no sanitizer findings.
Sizes are deliberately ragged (not multiples of the tile) so padding and discarded
store lanes are exercised: they are correct by design and must not be reported.
"""

from __future__ import annotations

import cuda.tile as ct
import numpy as np

from . import Case, cdiv

ZERO = ct.PaddingMode.ZERO


# ---- vector add, tile-space form -------------------------------------------------------

@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, (bid,), (TILE,))
    y = ct.load(b, (bid,), (TILE,))
    ct.store(c, (bid,), x + y)


def _vector_add_args(rng, n=1000):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return (a, b, np.zeros(n, np.float32), 128)


# ---- vector add, gather/scatter form ---------------------------------------------------

@ct.kernel
def vector_add_gather(a, b, c, TILE: ct.Constant[int]):
    idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    x = ct.gather(a, idx)
    y = ct.gather(b, idx)
    ct.scatter(c, idx, x + y)


# ---- K-loop GEMM: fp16 inputs, fp32 accumulator ----------------------------------------

@ct.kernel
def gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc)


def _gemm_args(rng, m=80, n=96, k=72, tiles=(32, 32, 16)):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return (a, b, np.zeros((m, n), np.float32), *tiles)


def _gemm_ref(args):
    a, b = args[0], args[1]
    return {"C": a.astype(np.float32) @ b.astype(np.float32)}


# ---- persistent GEMM: fewer blocks than tiles, each block strides over tiles -----------

@ct.kernel
def persistent_gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int],
                    TK: ct.Constant[int]):
    tiles_m = ct.num_tiles(C, 0, (TM, TN))
    tiles_n = ct.num_tiles(C, 1, (TM, TN))
    for tile in range(ct.bid(0), tiles_m * tiles_n, ct.num_blocks(0)):
        bm = tile // tiles_n
        bn = tile % tiles_n
        acc = ct.full((TM, TN), 0, dtype=ct.float32)
        for k in range(ct.num_tiles(A, 1, (TM, TK))):
            a = ct.load(A, (bm, k), (TM, TK), padding_mode=ZERO)
            b = ct.load(B, (k, bn), (TK, TN), padding_mode=ZERO)
            acc = ct.mma(a, b, acc)
        ct.store(C, (bm, bn), acc)


# ---- row softmax: one block per row, the row padded with -inf --------------------------

@ct.kernel
def softmax(X, Y, TN: ct.Constant[int]):
    row = ct.bid(0)
    x = ct.load(X, (row, 0), (1, TN), padding_mode=ct.PaddingMode.NEG_INF)
    x = x - ct.max(x, 1, keepdims=True)
    e = ct.exp(x)
    ct.store(Y, (row, 0), e / ct.sum(e, 1, keepdims=True))


def _softmax_args(rng, m=40, n=100):
    return (rng.standard_normal((m, n)).astype(np.float32), np.zeros((m, n), np.float32), 128)


def _softmax_ref(args):
    x = args[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"Y": e / e.sum(axis=1, keepdims=True)}


# ---- LayerNorm forward ------------------------------------------------------------------

@ct.kernel
def layernorm_fwd(X, W, B, Y, Mean, Rstd, eps: float, TN: ct.Constant[int]):
    row = ct.bid(0)
    n = X.shape[1]
    x = ct.load(X, (row, 0), (1, TN), padding_mode=ZERO)
    inside = ct.arange(TN, dtype=ct.int32).reshape((1, TN)) < n
    mean = ct.sum(x, 1, keepdims=True) / n
    xc = ct.where(inside, x - mean, 0.0)
    var = ct.sum(xc * xc, 1, keepdims=True) / n
    rstd = 1.0 / ct.sqrt(var + eps)
    w = ct.load(W, (0,), (TN,), padding_mode=ZERO).reshape((1, TN))
    b = ct.load(B, (0,), (TN,), padding_mode=ZERO).reshape((1, TN))
    ct.store(Y, (row, 0), xc * rstd * w + b)
    ct.store(Mean, (row,), mean.reshape((1,)))
    ct.store(Rstd, (row,), rstd.reshape((1,)))


def _layernorm_fwd_args(rng, m=24, n=100):
    x = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return (x, w, b, np.zeros((m, n), np.float32), np.zeros(m, np.float32),
            np.zeros(m, np.float32), 1e-5, 128)


def _layernorm_fwd_ref(args):
    x, w, b, eps = args[0].astype(np.float64), args[1], args[2], args[6]
    mean = x.mean(axis=1)
    rstd = 1.0 / np.sqrt(x.var(axis=1) + eps)
    return {"Y": (x - mean[:, None]) * rstd[:, None] * w + b, "Mean": mean, "Rstd": rstd}


# ---- LayerNorm backward: dX per row; dW/dB partial sums behind an atomic_cas lock -----------

@ct.kernel
def layernorm_bwd(DY, X, W, Mean, Rstd, DX, DWp, DBp, Locks, TN: ct.Constant[int]):
    row = ct.bid(0)
    n = X.shape[1]
    group = row % DWp.shape[0]
    x = ct.load(X, (row, 0), (1, TN), padding_mode=ZERO)
    dy = ct.load(DY, (row, 0), (1, TN), padding_mode=ZERO)
    w = ct.load(W, (0,), (TN,), padding_mode=ZERO).reshape((1, TN))
    mean = ct.load(Mean, (row,), (1,)).reshape((1, 1))
    rstd = ct.load(Rstd, (row,), (1,)).reshape((1, 1))
    inside = ct.arange(TN, dtype=ct.int32).reshape((1, TN)) < n
    xhat = ct.where(inside, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = ct.sum(xhat * wdy, 1, keepdims=True) / n
    c2 = ct.sum(wdy, 1, keepdims=True) / n
    ct.store(DX, (row, 0), (wdy - (xhat * c1 + c2)) * rstd)
    # Rows sharing a group add into the same partial row: take the group's lock first.
    while ct.atomic_cas(Locks, group, 0, 1) == 1:
        pass
    dw = ct.load(DWp, (group, 0), (1, TN), padding_mode=ZERO) + dy * xhat
    db = ct.load(DBp, (group, 0), (1, TN), padding_mode=ZERO) + dy
    ct.store(DWp, (group, 0), dw)
    ct.store(DBp, (group, 0), db)
    ct.atomic_xchg(Locks, group, 0)


def _layernorm_bwd_args(rng, m=24, n=100, groups=4):
    x = rng.standard_normal((m, n)).astype(np.float32)
    dy = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    mean = x.mean(axis=1).astype(np.float32)
    rstd = (1.0 / np.sqrt(x.var(axis=1) + 1e-5)).astype(np.float32)
    return (dy, x, w, mean, rstd, np.zeros((m, n), np.float32),
            np.zeros((groups, n), np.float32), np.zeros((groups, n), np.float32),
            np.zeros(groups, np.int32), 128)


def _layernorm_bwd_ref(args):
    dy, x, w, mean, rstd = (np.asarray(a, np.float64) for a in args[:5])
    n = x.shape[1]
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    c1 = (xhat * wdy).sum(axis=1, keepdims=True) / n
    c2 = wdy.sum(axis=1, keepdims=True) / n
    return {"DX": (wdy - (xhat * c1 + c2)) * rstd[:, None],
            "dW": (dy * xhat).sum(axis=0), "dB": dy.sum(axis=0),
            "Locks": np.zeros(len(args[8]))}


def _layernorm_bwd_out(args):
    # the kernel leaves per-group partial sums; the final reduction is a sum over groups
    return {"DX": args[5], "dW": args[6].sum(axis=0), "dB": args[7].sum(axis=0),
            "Locks": args[8]}


# ---- transpose ----------------------------------------------------------------------------

@ct.kernel
def transpose(X, Y, TM: ct.Constant[int], TN: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    t = ct.load(X, (bm, bn), (TM, TN))
    ct.store(Y, (bn, bm), ct.transpose(t))


def _transpose_args(rng, m=100, n=72):
    return (rng.standard_normal((m, n)).astype(np.float32), np.zeros((n, m), np.float32),
            32, 32)


# ---- 5-point stencil: the halo comes from gathers at offset indices (out of range -> 0) -------

@ct.kernel
def stencil(X, Y, TM: ct.Constant[int], TN: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    rows = (bm * TM + ct.arange(TM, dtype=ct.int32)).reshape((TM, 1))
    cols = (bn * TN + ct.arange(TN, dtype=ct.int32)).reshape((1, TN))
    center = ct.gather(X, (rows, cols))
    up = ct.gather(X, (rows - 1, cols))
    down = ct.gather(X, (rows + 1, cols))
    left = ct.gather(X, (rows, cols - 1))
    right = ct.gather(X, (rows, cols + 1))
    ct.store(Y, (bm, bn), 4.0 * center - up - down - left - right)


def _stencil_args(rng, m=70, n=50):
    return (rng.standard_normal((m, n)).astype(np.float32), np.zeros((m, n), np.float32),
            32, 16)


def _stencil_ref(args):
    x = np.pad(args[0].astype(np.float64), 1)
    return {"Y": 4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]}


# ---- cross-block reduction with atomic_add ---------------------------------------------

@ct.kernel
def atomic_sum(X, Out, TILE: ct.Constant[int]):
    t = ct.load(X, (ct.bid(0),), (TILE,), padding_mode=ZERO)
    ct.atomic_add(Out, 0, ct.sum(t))


def _atomic_sum_args(rng, n=3000):
    return (rng.standard_normal(n).astype(np.float32), np.zeros(1, np.float32), 256)


# ---- histogram with atomic_add (bins that no value hits stay untouched: not an error) ----

@ct.kernel
def histogram(data, bins, TILE: ct.Constant[int]):
    idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    values = ct.gather(data, idx, padding_value=-1)  # -1: out of range, skipped below
    ct.atomic_add(bins, values, 1)


def _histogram_args(rng, n=1000, nbins=64):
    # values only in [0, 40): bins 40..63 are never touched
    return (rng.integers(0, 40, n).astype(np.int32), np.zeros(nbins, np.int32), 128)


def _histogram_ref(args):
    return {"bins": np.bincount(args[0], minlength=len(args[1]))}


# ---- split-K GEMM: blocks along z share output tiles and combine them with atomic_add --------

@ct.kernel
def splitk_gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    split = ct.bid(2)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(split, ct.num_tiles(A, 1, (TM, TK)), ct.num_blocks(2)):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ZERO)
        acc = ct.mma(a, b, acc)
    rows = (bm * TM + ct.arange(TM, dtype=ct.int32)).reshape((TM, 1))
    cols = (bn * TN + ct.arange(TN, dtype=ct.int32)).reshape((1, TN))
    ct.atomic_add(C, (rows, cols), acc)


# ---- tiled views: scale a matrix through a padded view, tile by tile ----------------------

@ct.kernel
def tiled_view_scale(X, Y, alpha: float, TM: ct.Constant[int], TN: ct.Constant[int]):
    src = X.tiled_view((TM, TN), padding_mode=ZERO)
    dst = Y.tiled_view((TM, TN))
    bm = ct.bid(0)
    bn = ct.bid(1)
    dst.store((bm, bn), src.load((bm, bn)) * alpha)


def _tiled_view_args(rng, m=50, n=70):
    return (rng.standard_normal((m, n)).astype(np.float32), np.zeros((m, n), np.float32),
            1.5, 16, 32)


CASES = [
    Case("vector_add", vector_add, lambda a: (cdiv(len(a[0]), a[3]),), _vector_add_args,
         lambda a: {"c": a[0] + a[1]}),
    Case("vector_add_gather", vector_add_gather, lambda a: (cdiv(len(a[0]), a[3]),),
         _vector_add_args, lambda a: {"c": a[0] + a[1]}),
    Case("gemm_fp16_fp32acc", gemm,
         lambda a: (cdiv(a[0].shape[0], a[3]), cdiv(a[1].shape[1], a[4])),
         _gemm_args, _gemm_ref, rtol=1e-4, atol=1e-4),
    Case("persistent_gemm", persistent_gemm, lambda a: (3,),
         lambda rng: _gemm_args(rng, m=100, n=80, k=40), _gemm_ref, rtol=1e-4, atol=1e-4),
    Case("softmax", softmax, lambda a: (a[0].shape[0],), _softmax_args, _softmax_ref,
         rtol=1e-5, atol=1e-6),
    Case("layernorm_fwd", layernorm_fwd, lambda a: (a[0].shape[0],), _layernorm_fwd_args,
         _layernorm_fwd_ref, rtol=1e-4, atol=1e-4),
    Case("layernorm_bwd", layernorm_bwd, lambda a: (a[0].shape[0],), _layernorm_bwd_args,
         _layernorm_bwd_ref, outputs=_layernorm_bwd_out, rtol=1e-4, atol=1e-4),
    Case("transpose", transpose, lambda a: (cdiv(a[0].shape[0], 32), cdiv(a[0].shape[1], 32)),
         _transpose_args, lambda a: {"Y": a[0].T}),
    Case("stencil_5point", stencil,
         lambda a: (cdiv(a[0].shape[0], a[2]), cdiv(a[0].shape[1], a[3])),
         _stencil_args, _stencil_ref, rtol=1e-5, atol=1e-5),
    Case("atomic_sum", atomic_sum, lambda a: (cdiv(len(a[0]), a[2]),), _atomic_sum_args,
         lambda a: {"Out": np.array([a[0].astype(np.float64).sum()])}, rtol=1e-4, atol=1e-3),
    Case("histogram_atomic", histogram, lambda a: (cdiv(len(a[0]), a[2]),),
         _histogram_args, _histogram_ref, rtol=0, atol=0),
    Case("splitk_gemm", splitk_gemm,
         lambda a: (cdiv(a[0].shape[0], a[3]), cdiv(a[1].shape[1], a[4]), 3),
         _gemm_args, _gemm_ref, rtol=1e-4, atol=1e-4),
    Case("tiled_view_scale", tiled_view_scale,
         lambda a: (cdiv(a[0].shape[0], a[3]), cdiv(a[0].shape[1], a[4])),
         _tiled_view_args, lambda a: {"Y": a[0] * np.float32(a[2])}),
]
