"""Flash attention in the transposed form, an experiment for issue 34 (head size 128): Sᵀ = K Qᵀ
and Oᵀ = Vᵀ Pᵀ, so the matrix products' N dimension is the query rows. tileiras splits a 2-CTA
cluster's tile along N (the GEMM's 128x128 2-CTA tile: each CTA 128x64, A multicast), so here
each CTA keeps whole columns of Sᵀ (the softmax stays in one CTA) and K and Vᵀ, the A operands,
are loaded once for both: what cuDNN's two consumer warpgroups get by sharing K/V tiles.
The softmax reduces along axis 0 of Sᵀ (across the MMA's rows). Dense and causal; sequence
lengths divide by the tiles (no bounds checks)."""
import math

import cuda.tile as ct


@ct.kernel
def flash_attention_t(Q, K, V, Out, qk_scale_log2: float, BM: ct.Constant[int],
                      BN: ct.Constant[int], D: ct.Constant[int], CAUSAL: ct.Constant[int],
                      LAT_K: ct.Constant[int], LAT_V: ct.Constant[int]):
    i, bh = ct.bid(0), ct.bid(1)
    qt = ct.load(Q, index=(bh, 0, i), shape=(1, D, BM), order=(0, 2, 1),
                 check_bounds=False).reshape((D, BM))
    qt = (qt.astype(ct.float32) * qk_scale_log2).astype(Q.dtype)
    m = ct.full((1, BM), -math.inf, dtype=ct.float32)
    row_sum = ct.full((1, BM), 0.0, dtype=ct.float32)
    acc = ct.full((D, BM), 0.0, dtype=ct.float32)
    seq_k = ct.assume_divisible_by(K.shape[1], BN)
    n_kv = ct.cdiv(seq_k, BN)
    first_masked = n_kv
    if CAUSAL:
        n_kv = ct.minimum(n_kv, ct.cdiv((i + 1) * BM, BN))
        first_masked = ct.minimum((i * BM) // BN, n_kv)
    cols = i * BM + ct.arange(BM, dtype=ct.int32).reshape((1, BM))
    for j in range(n_kv):
        k = ct.load(K, index=(bh, j, 0), shape=(1, BN, D), latency=LAT_K,
                    check_bounds=False).reshape((BN, D))
        st = ct.mma(k, qt, ct.full((BN, BM), 0.0, dtype=ct.float32))
        if CAUSAL and j >= first_masked:
            keys = j * BN + ct.arange(BN, dtype=ct.int32).reshape((BN, 1))
            st = ct.where(keys <= cols, st, -math.inf)
        m_new = ct.maximum(m, ct.max(st, axis=0, keepdims=True))
        p = ct.exp2(st - m_new, flush_to_zero=True)
        alpha = ct.exp2(m - m_new, flush_to_zero=True)
        row_sum = row_sum * alpha + ct.sum(p, axis=0, keepdims=True)
        vt = ct.load(V, index=(bh, 0, j), shape=(1, D, BN), order=(0, 2, 1), latency=LAT_V,
                     check_bounds=False).reshape((D, BN))
        acc = ct.mma(vt, p.astype(V.dtype), acc * alpha)
        m = m_new
    out = ct.truediv(acc, row_sum, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(Out, index=(bh, 0, i), tile=out.astype(Out.dtype).reshape((1, D, BM)),
             order=(0, 2, 1))


def t_args(q, k, v, out, scale, d, causal, c):
    """The kernel's arguments for ``[batch*heads, seq, d]`` arrays and a config (BM, BN,
    LAT_K, LAT_V)."""
    return (q, k, v, out, scale, c["BM"], c["BN"], d, int(causal), c["LAT_K"], c["LAT_V"])


def t_grid(seq, heads, c):
    """(query blocks, heads)."""
    return (seq // c["BM"], heads)
