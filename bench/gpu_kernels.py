"""Example cuTile kernels used by the GPU benchmarks (``bench/gpu_*.py``).

Plain, untuned versions: the point of the benchmarks is an honest side-by-side ratio,
not a tuned kernel. Every kernel keeps its tile sizes as ``ct.Constant`` parameters so a
benchmark can sweep them.
"""

from __future__ import annotations

import cuda.tile as ct


@ct.kernel
def vector_add(a, b, c, tile: ct.Constant[int]):
    i = ct.bid(0)
    ta = ct.load(a, (i,), (tile,))
    tb = ct.load(b, (i,), (tile,))
    ct.store(c, (i,), ta + tb)


@ct.kernel
def gemm(a, b, c, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    # C[tm, tn] tile per block; fp32 accumulator, fp16/bf16 operands.
    i = ct.bid(0)
    j = ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.num_tiles(a, 1, (tm, tk))):
        ta = ct.load(a, (i, k), (tm, tk), padding_mode=ct.PaddingMode.ZERO)
        tb = ct.load(b, (k, j), (tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ta, tb, acc)
    ct.store(c, (i, j), acc.astype(c.dtype))


@ct.kernel
def softmax_rows(x, y, tile_n: ct.Constant[int]):
    # One row per block; the row fits one tile (tile_n >= row length, padded with -inf).
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, tile_n), padding_mode=ct.PaddingMode.NEG_INF)
    t = t.astype(ct.float32)
    m = ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t - m)
    s = ct.sum(e, axis=1, keepdims=True)
    ct.store(y, (row, 0), (e / s).astype(y.dtype))


@ct.kernel
def layernorm_rows(x, w, b, y, eps: float, n: int, tile_n: ct.Constant[int]):
    # One row per block; padding is zero so sums over the padded tile equal sums over the row.
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, tile_n), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    mean = ct.sum(t, axis=1, keepdims=True) / n
    cols = ct.arange(tile_n, dtype=ct.int32).reshape((1, tile_n))
    d = ct.where(cols < n, t - mean, 0.0)
    var = ct.sum(d * d, axis=1, keepdims=True) / n
    tw = ct.load(w, (0,), (tile_n,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    tb = ct.load(b, (0,), (tile_n,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    out = d * ct.rsqrt(var + eps) * tw.reshape((1, tile_n)) + tb.reshape((1, tile_n))
    ct.store(y, (row, 0), out.astype(y.dtype))
