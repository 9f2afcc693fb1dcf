"""Decode attention with a KV cache: causal, grouped-query, ragged key length (notebook 18).

The shape of NVIDIA's ``fmha_kernel`` (cutile-python's ``test/kernels/attention.py``) in a
decode step: ``Q`` ``[batch, Hq, Lq, D]`` holds the new tokens, at positions ``input_pos …
input_pos+Lq-1``; ``K``/``V`` ``[batch, Hkv, Lk, D]`` the cache (``Hq/Hkv`` query heads share
a key/value head). Block ``(i, b*Hq + h)`` owns query rows ``i*TM …`` of head ``h`` and walks
the keys in tiles of ``TN`` with the online softmax of notebook 15 (base 2, approximate
``exp2`` and division, subnormals flushed — what the sample asks the GPU for).

``Lk`` need not divide by ``TN``: the last key tile is ragged. Its padded key columns are
masked out of the scores, but the padded *rows of V* still go through the second ``mma``,
multiplied by probability 0 — and ``0 × NaN`` is NaN. With ``ZERO_PAD=False`` (cuTile's
default ``PaddingMode.UNDETERMINED``) those rows hold whatever the GPU read: a TMA load fills
them with zeros (correct result), a plain load of a misaligned view leaves what memory held.
``ZERO_PAD=True`` loads V with ``PaddingMode.ZERO``: correct everywhere.
"""

from __future__ import annotations

import math

import cuda.tile as ct
import numpy as np

LOG2_E = 1.0 / math.log(2)


@ct.kernel
def decode_attention(Q, K, V, Out, qk_scale_log2: float, input_pos: int, D: ct.Constant[int],
                     TM: ct.Constant[int], TN: ct.Constant[int], ZERO_PAD: ct.Constant[int]):
    i, bh = ct.bid(0), ct.bid(1)
    hq = Q.shape[1]
    b, h = bh // hq, bh % hq
    hkv = h * K.shape[1] // hq  # Hq / Hkv query heads share one key/value head
    q = ct.load(Q, index=(b, h, i, 0), shape=(1, 1, TM, D)).reshape((TM, D))
    q_pos = input_pos + i * TM + ct.arange(TM, dtype=ct.int32).reshape((TM, 1))
    m = ct.full((TM, 1), -math.inf, dtype=ct.float32)
    row_sum = ct.full((TM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((TM, D), 0.0, dtype=ct.float32)
    lk = K.shape[2]
    for j in range(ct.num_tiles(K, axis=2, shape=(1, 1, TN, D))):
        kt = ct.load(K, index=(b, hkv, 0, j), shape=(1, 1, D, TN),
                     order=(0, 1, 3, 2)).reshape((D, TN))
        s = ct.mma(q, kt, ct.full((TM, TN), 0.0, dtype=ct.float32)) * qk_scale_log2
        k_pos = j * TN + ct.arange(TN, dtype=ct.int32).reshape((1, TN))
        s = ct.where((k_pos <= q_pos) & (k_pos < lk), s, -math.inf)  # causal, and inside K
        m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp2(s - m_new, flush_to_zero=True)
        alpha = ct.exp2(m - m_new, flush_to_zero=True)
        row_sum = row_sum * alpha + ct.sum(p, axis=1, keepdims=True)
        if ZERO_PAD:
            v = ct.load(V, index=(b, hkv, j, 0), shape=(1, 1, TN, D),
                        padding_mode=ct.PaddingMode.ZERO).reshape((TN, D))
        else:
            v = ct.load(V, index=(b, hkv, j, 0), shape=(1, 1, TN, D)).reshape((TN, D))
        acc = ct.mma(p.astype(V.dtype), v, acc * alpha)
        m = m_new
    out = ct.truediv(acc, row_sum, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(Out, index=(b, h, i, 0), tile=out.astype(Out.dtype).reshape((1, 1, TM, D)))


def decode_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, input_pos: int
                     ) -> np.ndarray:
    """Causal grouped-query attention in float64: query ``r`` sits at ``input_pos + r``."""
    group = q.shape[1] // k.shape[1]
    kk = np.repeat(k.astype(np.float64), group, axis=1)
    vv = np.repeat(v.astype(np.float64), group, axis=1)
    s = q.astype(np.float64) @ kk.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    q_pos = input_pos + np.arange(q.shape[2])[:, None]
    s = np.where(np.arange(k.shape[2])[None, :] <= q_pos, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ vv


def decode_inputs(*, misaligned: bool, seed: int = 0, b: int = 1, hq: int = 4, hkv: int = 2,
                  lq: int = 15, lk: int = 63, d: int = 32
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(Q, K, V, Out) in float16. K and V are views of one fused KV buffer; with
    ``misaligned`` they start one float16 (2 bytes) after a 16-byte boundary, as a slice of a
    fused buffer that carries one element of header does."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((b, hq, lq, d)).astype(np.float16)
    n = b * hkv * lk * d
    skip = 1 if misaligned else 8  # elements before K: 2 bytes, or a whole 16 bytes
    fused = np.empty(skip + 2 * n + 8, np.float16)
    fused[:] = rng.standard_normal(fused.size).astype(np.float16)
    k = fused[skip:skip + n].reshape(b, hkv, lk, d)
    v = fused[skip + n:skip + 2 * n].reshape(b, hkv, lk, d)
    return q, k, v, np.zeros((b, hq, lq, d), np.float16)


def decode_launch(q: np.ndarray, k: np.ndarray, v: np.ndarray, out: np.ndarray, *,
                  input_pos: int = 62, tm: int = 8, tn: int = 16, zero_pad: bool = False
                  ) -> tuple[tuple[int, int], tuple]:
    """(grid, args) for :func:`decode_attention` on these arrays."""
    b, hq, lq, d = q.shape
    grid = (-(-lq // tm), b * hq)
    args = (q, k, v, out, LOG2_E / math.sqrt(d), input_pos, d, tm, tn, int(zero_pad))
    return grid, args
