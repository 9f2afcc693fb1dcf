"""Solutions to the Tile Puzzles (``tile_lab.examples.puzzles``): one kernel per puzzle.

Spoilers: try the puzzles in notebook 17 first. ``SOLUTIONS[n]`` is puzzle ``n``'s kernel.
"""

from __future__ import annotations

import math

import cuda.tile as ct


@ct.kernel
def copy(x, y, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)))


@ct.kernel
def add(x, y, z, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(z, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)) +
             ct.load(y, index=(i,), shape=(T,)))


@ct.kernel
def double(x, y, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, index=(i,), tile=2 * ct.load(x, index=(i,), shape=(T,)))


@ct.kernel
def outer_sum(x, y, z, TM: ct.Constant[int], TN: ct.Constant[int]):
    bi, bj = ct.bid(0), ct.bid(1)
    tx = ct.load(x, index=(bi,), shape=(TM,)).reshape((TM, 1))
    ty = ct.load(y, index=(bj,), shape=(TN,)).reshape((1, TN))
    ct.store(z, index=(bi, bj), tile=tx + ty)


@ct.kernel
def transpose(x, y, T: ct.Constant[int]):
    bi, bj = ct.bid(0), ct.bid(1)
    # y tile (bi, bj) is x tile (bj, bi) transposed; order=(1, 0) loads it already transposed
    ct.store(y, index=(bi, bj), tile=ct.load(x, index=(bi, bj), shape=(T, T), order=(1, 0)))


@ct.kernel
def row_sum(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i = ct.bid(0)
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for j in range(ct.num_tiles(x, axis=1, shape=(TM, TN))):
        acc = acc + ct.load(x, index=(i, j), shape=(TM, TN))
    ct.store(y, index=(i,), tile=ct.sum(acc, axis=1))


@ct.kernel
def col_max(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    j = ct.bid(0)
    best = ct.full((TM, TN), -math.inf, dtype=ct.float32)
    for i in range(ct.num_tiles(x, axis=0, shape=(TM, TN))):
        best = ct.maximum(best, ct.load(x, index=(i, j), shape=(TM, TN)))
    ct.store(y, index=(j,), tile=ct.max(best, axis=0))


@ct.kernel
def softmax(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, index=(i, 0), shape=(TM, TN))
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(i, 0), tile=e / ct.sum(e, axis=1, keepdims=True))


@ct.kernel
def row_cumsum(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, index=(i, 0), tile=ct.cumsum(ct.load(x, index=(i, 0), shape=(TM, TN)), axis=1))


@ct.kernel
def gather(x, idx, y, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, index=(i,), tile=ct.gather(x, ct.load(idx, index=(i,), shape=(T,))))


@ct.kernel
def shifted_sum(x, y, T: ct.Constant[int]):
    i = ct.bid(0)
    n = y.shape[0]
    total = ct.load(x.slice(0, 0, n), index=(i,), shape=(T,))
    total = total + ct.load(x.slice(0, 1, n + 1), index=(i,), shape=(T,))
    total = total + ct.load(x.slice(0, 2, n + 2), index=(i,), shape=(T,))
    ct.store(y, index=(i,), tile=total)


@ct.kernel
def unfold(x, y, W: ct.Constant[int], S: ct.Constant[int]):
    j = ct.bid(0)
    window = x.tiled_view((W,), traversal_steps=(S,)).load((j,))
    ct.store(y, index=(j, 0), tile=window.reshape((1, W)))


@ct.kernel
def tril(x, y, T: ct.Constant[int]):
    bi, bj = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(bi, bj), shape=(T, T))
    rows = bi * T + ct.arange(T, dtype=ct.int32).reshape((T, 1))
    cols = bj * T + ct.arange(T, dtype=ct.int32).reshape((1, T))
    ct.store(y, index=(bi, bj), tile=ct.where(cols <= rows, t, 0.0))


@ct.kernel
def matvec(A, x, y, TM: ct.Constant[int], TK: ct.Constant[int]):
    i = ct.bid(0)
    acc = ct.full((TM,), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(i, k), shape=(TM, TK))
        v = ct.load(x, index=(k,), shape=(TK,)).reshape((1, TK))
        acc = acc + ct.sum(a * v, axis=1)
    ct.store(y, index=(i,), tile=acc)


@ct.kernel
def linear_relu(A, B, bias, C, TM: ct.Constant[int], TN: ct.Constant[int],
                TK: ct.Constant[int]):
    bi, bj = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        acc = ct.mma(ct.load(A, index=(bi, k), shape=(TM, TK)),
                     ct.load(B, index=(k, bj), shape=(TK, TN)), acc)
    b = ct.load(bias, index=(bj,), shape=(TN,)).astype(ct.float32).reshape((1, TN))
    ct.store(C, index=(bi, bj), tile=ct.maximum(acc + b, 0.0).astype(C.dtype))


@ct.kernel
def rmsnorm(x, w, y, eps: float, TM: ct.Constant[int], TN: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, index=(i, 0), shape=(TM, TN))
    inv = ct.rsqrt(ct.sum(t * t, axis=1, keepdims=True) / TN + eps)
    ct.store(y, index=(i, 0), tile=t * inv * ct.load(w, index=(0,), shape=(TN,)).reshape((1, TN)))


@ct.kernel
def attention(Q, K, V, Out, qk_scale_log2: float, BM: ct.Constant[int], BN: ct.Constant[int],
              D: ct.Constant[int]):
    i, bh = ct.bid(0), ct.bid(1)
    q = ct.load(Q, index=(bh, i, 0), shape=(1, BM, D)).reshape((BM, D))
    m = ct.full((BM, 1), -math.inf, dtype=ct.float32)
    row_sum = ct.full((BM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((BM, D), 0.0, dtype=ct.float32)
    for j in range(ct.num_tiles(K, axis=1, shape=(1, BN, D))):
        kt = ct.load(K, index=(bh, 0, j), shape=(1, D, BN), order=(0, 2, 1)).reshape((D, BN))
        s = ct.mma(q, kt, ct.full((BM, BN), 0.0, dtype=ct.float32)) * qk_scale_log2
        m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp2(s - m_new)
        alpha = ct.exp2(m - m_new)
        row_sum = row_sum * alpha + ct.sum(p, axis=1, keepdims=True)
        v = ct.load(V, index=(bh, j, 0), shape=(1, BN, D)).reshape((BN, D))
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m = m_new
    ct.store(Out, index=(bh, i, 0), tile=(acc / row_sum).astype(Out.dtype).reshape((1, BM, D)))


SOLUTIONS = {1: copy, 2: add, 3: double, 4: outer_sum, 5: transpose, 6: row_sum, 7: col_max,
             8: softmax, 9: row_cumsum, 10: gather, 11: shifted_sum, 12: unfold, 13: tril,
             14: matvec, 15: linear_relu, 16: rmsnorm, 17: attention}
