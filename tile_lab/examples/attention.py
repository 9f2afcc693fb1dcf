"""Flash attention forward (FlashAttention-2's online softmax) as one cuTile kernel.

Block ``(i, bh)`` owns query rows ``i*BM … i*BM+BM-1`` of batch-head ``bh``. It walks the keys in
tiles of ``BN``: scores ``S = Q Kᵀ`` for that tile, a running row maximum ``m`` and running sum
``l`` of ``exp(S - m)``, and an output accumulator rescaled by ``exp(m_old - m_new)`` whenever the
maximum grows — so the full ``S×S`` score matrix never exists. Arrays are ``[batch*heads, seq,
head_dim]``; ``qk_scale_log2`` is ``log2(e) / sqrt(head_dim)`` (the kernel works in base 2, as
the hardware's ``exp2`` does).
"""

from __future__ import annotations

import math

import cuda.tile as ct
import numpy as np

LOG2_E = 1.0 / math.log(2)


@ct.kernel
def flash_attention(Q, K, V, Out, qk_scale_log2: float, BM: ct.Constant[int],
                    BN: ct.Constant[int], D: ct.Constant[int], CAUSAL: ct.Constant[int]):
    i, bh = ct.bid(0), ct.bid(1)
    q = ct.load(Q, index=(bh, i, 0), shape=(1, BM, D)).reshape((BM, D))
    m = ct.full((BM, 1), -math.inf, dtype=ct.float32)  # running row max (base-2 scores)
    row_sum = ct.full((BM, 1), 0.0, dtype=ct.float32)  # running row sum of exp2(s - m)
    acc = ct.full((BM, D), 0.0, dtype=ct.float32)
    n_kv = ct.num_tiles(K, axis=1, shape=(1, BN, D))
    if CAUSAL:  # key tiles wholly after the last query row of this block contribute nothing
        n_kv = ct.minimum(n_kv, ct.cdiv((i + 1) * BM, BN))
    for j in range(n_kv):
        # Kᵀ tile straight from memory: order=(0, 2, 1) reads K[bh, j*BN:, :] as (D, BN)
        kt = ct.load(K, index=(bh, 0, j), shape=(1, D, BN), order=(0, 2, 1)).reshape((D, BN))
        s = ct.mma(q, kt, ct.full((BM, BN), 0.0, dtype=ct.float32)) * qk_scale_log2
        if CAUSAL:
            rows = i * BM + ct.arange(BM, dtype=ct.int32).reshape((BM, 1))
            cols = j * BN + ct.arange(BN, dtype=ct.int32).reshape((1, BN))
            s = ct.where(cols <= rows, s, -math.inf)
        m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp2(s - m_new)
        alpha = ct.exp2(m - m_new)  # how much the old max overstated: rescale old sums
        row_sum = row_sum * alpha + ct.sum(p, axis=1, keepdims=True)
        v = ct.load(V, index=(bh, j, 0), shape=(1, BN, D)).reshape((BN, D))
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m = m_new
    ct.store(Out, index=(bh, i, 0), tile=(acc / row_sum).astype(Out.dtype).reshape((1, BM, D)))


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                        causal: bool = False) -> np.ndarray:
    """softmax(Q Kᵀ / sqrt(d)) V in float64, for ``[batch*heads, seq, head_dim]`` arrays."""
    q64, k64, v64 = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    s = q64 @ k64.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    if causal:
        n_q, n_k = s.shape[-2:]
        s = np.where(np.tril(np.ones((n_q, n_k), bool)), s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=-1, keepdims=True)) @ v64


def grid(q_shape: tuple[int, int, int], BM: int) -> tuple[int, int]:
    """The launch grid for ``[batch*heads, seq, head_dim]`` queries: (query tiles, batch*heads)."""
    return (math.ceil(q_shape[1] / BM), q_shape[0])


@ct.kernel
def flash_attention_tuned(Q, K, V, Out, qk_scale_log2: float, BM: ct.Constant[int],
                          BN: ct.Constant[int], D: ct.Constant[int], CAUSAL: ct.Constant[int],
                          LATENCY: ct.Constant[int]):
    """``flash_attention`` with the changes that make it fast; each is one line below.
    ``LATENCY`` (1-5) is the K loads' latency hint; V, used later in each iteration, gets twice
    it."""
    i, bh = ct.bid(0), ct.bid(1)
    q = ct.load(Q, index=(bh, i, 0), shape=(1, BM, D)).reshape((BM, D))
    m = ct.full((BM, 1), -math.inf, dtype=ct.float32)
    row_sum = ct.full((BM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((BM, D), 0.0, dtype=ct.float32)
    n_kv = ct.num_tiles(K, axis=1, shape=(1, BN, D))
    first_masked = n_kv  # key tiles before this one need no mask at all
    if CAUSAL:
        n_kv = ct.minimum(n_kv, ct.cdiv((i + 1) * BM, BN))
        first_masked = (i * BM) // BN  # only tiles crossing the diagonal pay for the mask
    rows = i * BM + ct.arange(BM, dtype=ct.int32).reshape((BM, 1))
    for j in range(n_kv):
        # the latency hints tell the compiler how far ahead to fetch K and V (pipeline depth)
        kt = ct.load(K, index=(bh, 0, j), shape=(1, D, BN), order=(0, 2, 1),
                     latency=LATENCY).reshape((D, BN))
        s = ct.mma(q, kt, ct.full((BM, BN), 0.0, dtype=ct.float32))  # unscaled scores
        if CAUSAL and j >= first_masked:
            cols = j * BN + ct.arange(BN, dtype=ct.int32).reshape((1, BN))
            s = ct.where(cols <= rows, s, -math.inf)
        # scale the row maxima (BM values), not the whole tile, then fold the scale and the
        # subtraction into one multiply-add per score
        m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True) * qk_scale_log2)
        p = ct.exp2(s * qk_scale_log2 - m_new, flush_to_zero=True)
        alpha = ct.exp2(m - m_new, flush_to_zero=True)
        row_sum = row_sum * alpha + ct.sum(p, axis=1, keepdims=True)
        v = ct.load(V, index=(bh, j, 0), shape=(1, BN, D), latency=2 * LATENCY).reshape((BN, D))
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m = m_new
    # one approximate reciprocal-multiply per output (the result is rounded to 16 bits anyway)
    out = ct.truediv(acc, row_sum, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(Out, index=(bh, i, 0), tile=out.astype(Out.dtype).reshape((1, BM, D)))
