"""Flash attention forward with the experiment knobs of the attention grid
(``gpu_attention_grid.py``): ``tile_lab.examples.attention.flash_attention_tuned`` (notebook 15)
plus one constant per idea, so ``tile_lab.tune`` can keep or drop each on the GPU.

What FlashAttention-3 does on Hopper and what of it cuTile 1.7 lets a kernel say:

* producer/consumer warp specialization with TMA loads: cuTile's compiler does this itself
  (``num_worker_warps`` consumer warps, a producer it adds; ``allow_tma`` per load) -> the
  ``num_worker_warps`` hint and the ``TMA`` knob (0: plain loads for K and V);
* a deeper K/V pipeline: the ``latency`` hint per load -> ``LAT_K`` and ``LAT_V`` apart
  (0: the compiler's choice) instead of V = 2 x K;
* ping-pong of two warpgroups (one's softmax under the other's GEMMs): not expressible; two CTAs
  per SM (``occupancy=2``) interleave the same way at CTA granularity -> the ``occupancy`` hint;
* intra-warpgroup overlap of softmax with the next ``Q Kᵀ`` (FA3's Algorithm 2): ``PIPE=1``
  issues the next tile's ``Q Kᵀ`` before this tile's softmax, so the asynchronous wgmma can run
  under the exponentials (whether tileiras keeps that order is what the GPU says);
* K/V shared by a 2-CTA cluster (TMA multicast): the ``num_ctas`` hint;
* bounds checks the shapes make unneeded: ``EVEN=1`` (the sequence length a multiple of BM and
  BN) loads with ``check_bounds=False`` and tells the compiler the key count divides by BN
  (``ct.assume_divisible_by``).

Already in the kernel whatever the knobs: exp2 in base 2, causal block skipping (the key loop
stops at the diagonal tile; only tiles from ``first_masked`` on are masked), P cast to the input
dtype for the second ``mma`` with an fp32 accumulator, the 1/l normalisation once at the end.
Not expressible: keeping the Q tile in registers (where an ``mma`` operand lives is tileiras's
choice). Added for head size 128 (issue 34), each 0 = the kernel as before:

* ``FOLD=1``: ``log2(e)/sqrt(d)`` multiplied into Q once (rounded to Q's dtype) instead of
  into every score tile;
* ``SPLIT=1`` (causal, ``PIPE=0``; elsewhere the same kernel as 0): the key loop in two, the
  tiles left of the diagonal without a mask and the diagonal ones with it, instead of one loop
  testing ``j >= first_masked`` every tile; the same bits as ``SPLIT=0``;
* ``RESCALE=T > 0``: FlashAttention-4's lazy rescale at tile granularity: the running max
  (and so ``acc`` and ``l``) is updated only when some row's max grows by more than ``T``
  (base 2), a tile-wide branch; otherwise P is taken against the stale max (≤ 2^T, which
  fp16/bf16 P holds), which changes rounding, not the result;
* ``ORDER`` (causal rows: block i has i + 1 key tiles, so the launch order decides how ragged
  the last wave is): 0 = query blocks in order, the longest of each head launched last; 1 = each
  head's query blocks longest first; 2 = the grid transposed (heads fastest), longest first
  across all heads: the longest-processing-time-first order, at the price of more heads' K/V
  in L2 at once (:func:`knob_grid` gives the grid). The same bits in every order.

Ragged sequence lengths: not supported (V's padded rows are undetermined and reach the output
through P·V even where P is 0); every grid row divides by its tiles.
"""

from __future__ import annotations

import math
from typing import Any

import cuda.tile as ct


def _load_kt(K, bh, j, BN: int, D: int, LAT: int, TMA: int, EVEN: int):
    # Kᵀ tile (D, BN) straight from memory, with the knobs' hints
    if LAT > 0:
        kt = ct.load(K, index=(bh, 0, j), shape=(1, D, BN), order=(0, 2, 1), latency=LAT,
                     allow_tma=TMA > 0, check_bounds=EVEN == 0)
    else:
        kt = ct.load(K, index=(bh, 0, j), shape=(1, D, BN), order=(0, 2, 1),
                     allow_tma=TMA > 0, check_bounds=EVEN == 0)
    return kt.reshape((D, BN))


def _load_v(V, bh, j, BN: int, D: int, LAT: int, TMA: int, EVEN: int):
    if LAT > 0:
        v = ct.load(V, index=(bh, j, 0), shape=(1, BN, D), latency=LAT, allow_tma=TMA > 0,
                    check_bounds=EVEN == 0)
    else:
        v = ct.load(V, index=(bh, j, 0), shape=(1, BN, D), allow_tma=TMA > 0,
                    check_bounds=EVEN == 0)
    return v.reshape((BN, D))


def _qk(q, kt, BM: int, BN: int):
    return ct.mma(q, kt, ct.full((BM, BN), 0.0, dtype=ct.float32))


def _masked(s, rows, j, BN: int):
    # -inf where key j*BN + c lies after the query row (the causal mask)
    cols = j * BN + ct.arange(BN, dtype=ct.int32).reshape((1, BN))
    return ct.where(cols <= rows, s, -math.inf)


def _scores(q, kt, rows, j, first_masked, BM: int, BN: int, CAUSAL: int):
    # unscaled Q Kᵀ of key tile j, masked where it crosses the diagonal
    s = _qk(q, kt, BM, BN)
    if CAUSAL and j >= first_masked:
        s = _masked(s, rows, j, BN)
    return s


def _step(s, v, m, row_sum, acc, qk_scale_log2: float, FOLD: int, RESCALE: int):
    # one key tile of the online softmax: (m, row_sum, acc) after the scores s and values v.
    # FOLD: s is already in base-2 units (the scale went into Q). RESCALE > 0: the FA4 trick,
    # tile-wide: keep the stale row max unless some row's max grew by more than RESCALE
    # (base-2 units), so most tiles skip the accumulator's rescale; p is then <= 2^RESCALE,
    # which fp16/bf16 P and the fp32 sums hold, and acc / row_sum is unchanged by the choice.
    if FOLD:
        tile_max = ct.max(s, axis=1, keepdims=True)
    else:
        tile_max = ct.max(s, axis=1, keepdims=True) * qk_scale_log2
    if RESCALE > 0:
        if ct.max(tile_max - m) > RESCALE:
            m_new = ct.maximum(m, tile_max)
            alpha = ct.exp2(m - m_new, flush_to_zero=True)
            row_sum = row_sum * alpha
            acc = acc * alpha
            m = m_new
        m_new = m
    else:
        m_new = ct.maximum(m, tile_max)
    if FOLD:
        p = ct.exp2(s - m_new, flush_to_zero=True)
    else:
        p = ct.exp2(s * qk_scale_log2 - m_new, flush_to_zero=True)
    if RESCALE > 0:
        row_sum = row_sum + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(p.astype(v.dtype), v, acc)
    else:
        alpha = ct.exp2(m - m_new, flush_to_zero=True)
        row_sum = row_sum * alpha + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(p.astype(v.dtype), v, acc * alpha)
    return m_new, row_sum, acc


@ct.kernel
def flash_attention_knobs(Q, K, V, Out, qk_scale_log2: float, BM: ct.Constant[int],
                          BN: ct.Constant[int], D: ct.Constant[int], CAUSAL: ct.Constant[int],
                          LAT_K: ct.Constant[int], LAT_V: ct.Constant[int],
                          TMA: ct.Constant[int], PIPE: ct.Constant[int],
                          EVEN: ct.Constant[int], FOLD: ct.Constant[int],
                          SPLIT: ct.Constant[int], RESCALE: ct.Constant[int],
                          ORDER: ct.Constant[int]):
    if ORDER == 2:  # grid (heads, query blocks): the longest blocks of every head first
        bh, i = ct.bid(0), ct.num_blocks(1) - 1 - ct.bid(1)
    elif ORDER == 1:  # grid (query blocks, heads): each head's longest block first
        i, bh = ct.num_blocks(0) - 1 - ct.bid(0), ct.bid(1)
    else:
        i, bh = ct.bid(0), ct.bid(1)
    q = ct.load(Q, index=(bh, i, 0), shape=(1, BM, D), check_bounds=EVEN == 0).reshape((BM, D))
    if FOLD:  # log2(e)/sqrt(d) once into Q (rounded to Q's dtype), not once per score tile
        q = (q.astype(ct.float32) * qk_scale_log2).astype(Q.dtype)
    m = ct.full((BM, 1), -math.inf, dtype=ct.float32)
    row_sum = ct.full((BM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((BM, D), 0.0, dtype=ct.float32)
    seq_k = K.shape[1]
    if EVEN:
        seq_k = ct.assume_divisible_by(seq_k, BN)
    n_kv = ct.cdiv(seq_k, BN)
    first_masked = n_kv
    if CAUSAL:
        n_kv = ct.minimum(n_kv, ct.cdiv((i + 1) * BM, BN))
        first_masked = ct.minimum((i * BM) // BN, n_kv)
    rows = i * BM + ct.arange(BM, dtype=ct.int32).reshape((BM, 1))
    if SPLIT and CAUSAL and not PIPE:
        # the key tiles left of the diagonal without a mask, then the diagonal ones with it
        for j in range(first_masked):
            s_now = _qk(q, _load_kt(K, bh, j, BN, D, LAT_K, TMA, EVEN), BM, BN)
            v = _load_v(V, bh, j, BN, D, LAT_V, TMA, EVEN)
            m, row_sum, acc = _step(s_now, v, m, row_sum, acc, qk_scale_log2, FOLD, RESCALE)
        for j in range(first_masked, n_kv):
            s_now = _masked(_qk(q, _load_kt(K, bh, j, BN, D, LAT_K, TMA, EVEN), BM, BN),
                            rows, j, BN)
            v = _load_v(V, bh, j, BN, D, LAT_V, TMA, EVEN)
            m, row_sum, acc = _step(s_now, v, m, row_sum, acc, qk_scale_log2, FOLD, RESCALE)
    else:
        s = ct.full((BM, BN), 0.0, dtype=ct.float32)
        if PIPE:  # the first tile's scores before the loop; each iteration starts the next one's
            s = _scores(q, _load_kt(K, bh, 0, BN, D, LAT_K, TMA, EVEN), rows, 0, first_masked,
                        BM, BN, CAUSAL)
        for j in range(n_kv):
            if PIPE:
                s_now = s
                if j + 1 < n_kv:
                    s = _scores(q, _load_kt(K, bh, j + 1, BN, D, LAT_K, TMA, EVEN), rows,
                                j + 1, first_masked, BM, BN, CAUSAL)
            else:
                s_now = _scores(q, _load_kt(K, bh, j, BN, D, LAT_K, TMA, EVEN), rows, j,
                                first_masked, BM, BN, CAUSAL)
            v = _load_v(V, bh, j, BN, D, LAT_V, TMA, EVEN)
            m, row_sum, acc = _step(s_now, v, m, row_sum, acc, qk_scale_log2, FOLD, RESCALE)
    out = ct.truediv(acc, row_sum, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(Out, index=(bh, i, 0), tile=out.astype(Out.dtype).reshape((1, BM, D)))


KNOBS = ("LAT_K", "LAT_V", "TMA", "PIPE", "EVEN", "FOLD", "SPLIT", "RESCALE", "ORDER")
# today's kernel: the knobs added for issue 34 default to off, so a config (or a JSON record)
# from before them names the same kernel
NEW_KNOB_DEFAULTS = {"FOLD": 0, "SPLIT": 0, "RESCALE": 0, "ORDER": 0}


def knob_args(q: Any, k: Any, v: Any, out: Any, qk_scale_log2: float, d: int, causal: bool,
              config: dict[str, int]) -> tuple[Any, ...]:
    """``flash_attention_knobs``'s arguments for arrays ``[batch*heads, seq, d]`` and a config
    (BM, BN and the knobs; FOLD, SPLIT, RESCALE, ORDER may be left out: 0)."""
    c = dict(NEW_KNOB_DEFAULTS, **config)
    return (q, k, v, out, qk_scale_log2, c["BM"], c["BN"], d, int(causal),
            *(c[k] for k in KNOBS))


def knob_grid(seq: int, heads: int, config: dict[str, int]) -> tuple[int, int]:
    """The launch grid for ``heads`` (batch x heads) sequences of ``seq`` queries: (query
    blocks, heads), transposed when ``ORDER`` is 2."""
    blocks = -(-seq // config["BM"])
    return (heads, blocks) if config.get("ORDER", 0) == 2 else (blocks, heads)
