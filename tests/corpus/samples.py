"""Kernels in the style of NVIDIA's cutile-python samples and TileGym (written here, not
copied): fused residual + RMSNorm, MoE top-2 routing, MoE grouped GEMM, GEMM with a fused
bias + tanh-GELU epilogue, batched GEMM, a row scan carried across tiles, scatter-add with
float atomics, and decode attention with a KV cache (``tile_lab.examples.decode``).

Each is a :class:`~corpus.Case` like ``correct.CASES``: emulated against its NumPy reference
by ``tests/test_corpus_emulated.py`` (CPU) and crosschecked on a GPU by
``bench/crosscheck_all.py``. Sizes are ragged on purpose.
"""

from __future__ import annotations

import cuda.tile as ct
import numpy as np

from tile_lab.examples.decode import (
    decode_attention,
    decode_inputs,
    decode_launch,
    decode_reference,
)

from . import Case, cdiv

ZERO = ct.PaddingMode.ZERO


# ---- fused residual add + RMSNorm (TileGym's fused_add_rmsnorm) ---------------------------

@ct.kernel
def add_rmsnorm(X, R, W, Y, eps: float, TN: ct.Constant[int]):
    row = ct.bid(0)
    x = ct.load(X, index=(row, 0), shape=(1, TN), padding_mode=ZERO).astype(ct.float32)
    r = ct.load(R, index=(row, 0), shape=(1, TN), padding_mode=ZERO).astype(ct.float32)
    h = x + r
    ct.store(R, index=(row, 0), tile=h.astype(R.dtype))  # the residual stream, updated
    ms = ct.sum(h * h, axis=1, keepdims=True) / X.shape[1]
    w = ct.load(W, index=(0,), shape=(TN,), padding_mode=ZERO).reshape((1, TN))
    y = h * ct.rsqrt(ms + eps) * w.astype(ct.float32)
    ct.store(Y, index=(row, 0), tile=y.astype(Y.dtype))


def _add_rmsnorm_args(rng, m=37, n=200):
    return (rng.standard_normal((m, n)).astype(np.float16),
            rng.standard_normal((m, n)).astype(np.float16),
            rng.standard_normal(n).astype(np.float16), np.zeros((m, n), np.float16), 1e-6,
            256)


def _add_rmsnorm_ref(args):
    h = args[0].astype(np.float32) + args[1].astype(np.float32)
    ms = (h.astype(np.float64) ** 2).mean(1, keepdims=True)
    y = h / np.sqrt(ms + args[4]) * args[2].astype(np.float64)
    return {"R": h.astype(np.float16).astype(np.float64), "Y": y}


# ---- MoE router: softmax over experts, top-2 with renormalised weights --------------------

@ct.kernel
def moe_top2(Logits, Experts, Weights, TT: ct.Constant[int], E: ct.Constant[int]):
    t = ct.bid(0)
    x = ct.load(Logits, index=(t, 0), shape=(TT, E), padding_mode=ZERO)
    p = ct.exp(x - ct.max(x, axis=1, keepdims=True))
    p = p / ct.sum(p, axis=1, keepdims=True)
    lanes = ct.arange(E, dtype=ct.int32).reshape((1, E))
    first = ct.argmax(p, axis=1, keepdims=True)
    p1 = ct.max(p, axis=1, keepdims=True)
    rest = ct.where(lanes == first, -1.0, p)
    second = ct.argmax(rest, axis=1, keepdims=True)
    p2 = ct.max(rest, axis=1, keepdims=True)
    total = p1 + p2
    ct.store(Experts, index=(t, 0), tile=ct.cat((first, second), axis=1).astype(ct.int32))
    ct.store(Weights, index=(t, 0), tile=ct.cat((p1 / total, p2 / total), axis=1))


def _moe_top2_args(rng, tokens=45, experts=8):
    return (rng.standard_normal((tokens, experts)).astype(np.float32),
            np.zeros((tokens, 2), np.int32), np.zeros((tokens, 2), np.float32), 16, experts)


def _moe_top2_ref(args):
    x = args[0].astype(np.float64)
    p = np.exp(x - x.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    order = np.argsort(-p, axis=1, kind="stable")[:, :2]
    top = np.take_along_axis(p, order, 1)
    return {"Experts": order, "Weights": top / top.sum(1, keepdims=True)}


# ---- MoE grouped GEMM: token tiles sorted by expert, each tile multiplies its expert's W ------

@ct.kernel
def moe_grouped_gemm(X, W, TileExpert, Y, TM: ct.Constant[int], TN: ct.Constant[int],
                     TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    e = ct.gather(TileExpert, bm)  # this token tile's expert (routing made tiles whole)
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    ks = ct.arange(TK, dtype=ct.int32).reshape((TK, 1))
    ns = bn * TN + ct.arange(TN, dtype=ct.int32).reshape((1, TN))
    for k in range(ct.num_tiles(X, axis=1, shape=(TM, TK))):
        x = ct.load(X, index=(bm, k), shape=(TM, TK), padding_mode=ZERO)
        w = ct.gather(W, (e, k * TK + ks, ns))  # out-of-range rows/cols read 0
        acc = ct.mma(x, w, acc)
    ct.store(Y, index=(bm, bn), tile=acc.astype(Y.dtype))


def _moe_gemm_args(rng, experts=3, k=72, n=80, tm=16):
    counts = [2, 1, 3]  # token tiles per expert
    tile_expert = np.repeat(np.arange(experts), counts).astype(np.int32)
    m = tm * len(tile_expert)
    return (rng.standard_normal((m, k)).astype(np.float16),
            rng.standard_normal((experts, k, n)).astype(np.float16), tile_expert,
            np.zeros((m, n), np.float32), tm, 32, 32)


def _moe_gemm_ref(args):
    x, w, tile_expert, tm = args[0], args[1], args[2], args[4]
    rows = np.repeat(tile_expert, tm)
    return {"Y": np.einsum("mk,mkn->mn", x.astype(np.float64), w[rows].astype(np.float64))}


# ---- GEMM with a fused bias + tanh-GELU epilogue ------------------------------------------

@ct.kernel
def gemm_bias_gelu(A, B, Bias, C, TM: ct.Constant[int], TN: ct.Constant[int],
                   TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=ZERO)
        b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=ZERO)
        acc = ct.mma(a, b, acc)
    x = acc + ct.load(Bias, index=(bn,), shape=(TN,), padding_mode=ZERO).reshape((1, TN))
    inner = 0.7978845608 * (x + 0.044715 * x * x * x)
    ct.store(C, index=(bm, bn), tile=(0.5 * x * (1.0 + ct.tanh(inner))).astype(C.dtype))


def _gelu_args(rng, m=70, n=90, k=64):
    return (rng.standard_normal((m, k)).astype(np.float16),
            (0.2 * rng.standard_normal((k, n))).astype(np.float16),
            rng.standard_normal(n).astype(np.float32), np.zeros((m, n), np.float16), 32, 32, 32)


def _gelu_ref(args):
    x = args[0].astype(np.float64) @ args[1].astype(np.float64) + args[2]
    return {"C": 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))}


# ---- batched GEMM: one batch per grid z ---------------------------------------------------

@ct.kernel
def batched_gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn, z = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=2, shape=(1, TM, TK))):
        a = ct.load(A, index=(z, bm, k), shape=(1, TM, TK), padding_mode=ZERO).reshape((TM, TK))
        b = ct.load(B, index=(z, k, bn), shape=(1, TK, TN), padding_mode=ZERO).reshape((TK, TN))
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(z, bm, bn), tile=acc.reshape((1, TM, TN)))


def _batched_args(rng, batch=3, m=40, n=48, k=56):
    return (rng.standard_normal((batch, m, k)).astype(np.float16),
            rng.standard_normal((batch, k, n)).astype(np.float16),
            np.zeros((batch, m, n), np.float32), 32, 32, 16)


def _batched_ref(args):
    return {"C": args[0].astype(np.float64) @ args[1].astype(np.float64)}


# ---- row prefix sum over tiles, the running total carried from tile to tile ---------------

@ct.kernel
def row_cumsum_carry(X, Y, TM: ct.Constant[int], TN: ct.Constant[int]):
    bm = ct.bid(0)
    carry = ct.full((TM, 1), 0.0, dtype=ct.float32)
    for j in range(ct.num_tiles(X, axis=1, shape=(TM, TN))):
        x = ct.load(X, index=(bm, j), shape=(TM, TN), padding_mode=ZERO)
        s = ct.cumsum(x, axis=1) + carry
        ct.store(Y, index=(bm, j), tile=s)
        carry = ct.extract(s, index=(0, TN - 1), shape=(TM, 1))


def _cumsum_args(rng, m=20, n=300):
    return (rng.standard_normal((m, n)).astype(np.float32), np.zeros((m, n), np.float32), 8,
            64)


def _cumsum_ref(args):
    return {"Y": np.cumsum(args[0].astype(np.float64), axis=1)}


# ---- scatter-add (index_add / embedding gradient) with float atomics ----------------------

@ct.kernel
def scatter_add_rows(Src, Index, Out, TR: ct.Constant[int], D: ct.Constant[int]):
    rows = ct.bid(0) * TR + ct.arange(TR, dtype=ct.int32)
    dst = ct.gather(Index, rows, padding_value=-1).reshape((TR, 1))  # -1: past the end
    cols = ct.arange(D, dtype=ct.int32).reshape((1, D))
    vals = ct.gather(Src, (rows.reshape((TR, 1)), cols))
    ct.atomic_add(Out, (dst, cols), vals)  # row -1 is out of bounds: skipped


def _scatter_add_args(rng, n=100, d=16, out_rows=12):
    return (rng.standard_normal((n, d)).astype(np.float32),
            rng.integers(0, out_rows, n).astype(np.int32), np.zeros((out_rows, d), np.float32),
            32, d)


def _scatter_add_ref(args):
    out = np.zeros(args[2].shape)
    np.add.at(out, args[1], args[0].astype(np.float64))
    return {"Out": out}


# ---- decode attention (KV cache, causal, GQA, ragged K), V padding made zero --------------

def _decode_args(rng):
    q, k, v, o = decode_inputs(misaligned=False, seed=int(rng.integers(1 << 30)))
    return decode_launch(q, k, v, o, zero_pad=True)[1]


def _decode_ref(args):
    return {"Out": decode_reference(args[0], args[1], args[2], args[5])}


CASES = [
    Case("add_rmsnorm", add_rmsnorm, lambda a: (a[0].shape[0],), _add_rmsnorm_args,
         _add_rmsnorm_ref, rtol=1e-2, atol=1e-2),
    Case("moe_top2_routing", moe_top2, lambda a: (cdiv(a[0].shape[0], a[3]),), _moe_top2_args,
         _moe_top2_ref, rtol=1e-5, atol=1e-6),
    Case("moe_grouped_gemm", moe_grouped_gemm,
         lambda a: (len(a[2]), cdiv(a[1].shape[2], a[5])), _moe_gemm_args, _moe_gemm_ref,
         rtol=1e-4, atol=1e-3),
    Case("gemm_bias_gelu", gemm_bias_gelu,
         lambda a: (cdiv(a[0].shape[0], a[4]), cdiv(a[1].shape[1], a[5])), _gelu_args,
         _gelu_ref, rtol=1e-2, atol=1e-2),
    Case("batched_gemm", batched_gemm,
         lambda a: (cdiv(a[0].shape[1], a[3]), cdiv(a[1].shape[2], a[4]), a[0].shape[0]),
         _batched_args, _batched_ref, rtol=1e-4, atol=1e-3),
    Case("row_cumsum_carry", row_cumsum_carry, lambda a: (cdiv(a[0].shape[0], a[2]),),
         _cumsum_args, _cumsum_ref, rtol=1e-4, atol=1e-4),
    Case("scatter_add_rows", scatter_add_rows, lambda a: (cdiv(a[0].shape[0], a[3]),),
         _scatter_add_args, _scatter_add_ref, rtol=1e-5, atol=1e-5),
    Case("decode_attention", decode_attention,
         lambda a: (cdiv(a[0].shape[2], a[7]), a[0].shape[0] * a[0].shape[1]), _decode_args,
         _decode_ref, rtol=2e-2, atol=2e-3),
]
