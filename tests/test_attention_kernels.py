"""bench/attention_kernels.py on the emulator: the knobs added for head size 128 (issue 34) —
FOLD (softmax scale folded into Q), SPLIT (causal loop split at the diagonal), RESCALE (FA4's
thresholded rescale) — each computing attention against a float64 NumPy reference, and each
doing what it says (SPLIT: the same bits; RESCALE: rescales skipped, yet taken when a row max
jumps)."""

from __future__ import annotations

import math
import os
import sys

import ml_dtypes
import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

from attention_kernels import (  # noqa: E402
    KNOBS,
    NEW_KNOB_DEFAULTS,
    flash_attention_knobs,
    knob_args,
    knob_grid,
)

import tile_lab  # noqa: E402
from tile_lab.examples.attention import LOG2_E, attention_reference  # noqa: E402

BASE = dict(BM=32, BN=32, LAT_K=2, LAT_V=4, TMA=1, PIPE=0, EVEN=1)
DTYPES = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}


def _qkv(seq: int, d: int, dtype: str, seed: int, heads: int = 2):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((heads, seq, d)).astype(DTYPES[dtype]) for _ in range(3))


def _run(q, k, v, causal: int, **knobs) -> np.ndarray:
    c = dict(BASE, **knobs)
    d = q.shape[-1]
    out = np.full_like(q, np.nan)
    tile_lab.emulate(flash_attention_knobs, knob_grid(q.shape[1], q.shape[0], c),
                     knob_args(q, k, v, out, LOG2_E / math.sqrt(d), d, bool(causal), c))
    return out.astype(np.float64)


def test_knob_args_default_the_new_knobs_to_todays_kernel():
    q = np.zeros((1, 64, 16), np.float16)
    args = knob_args(q, q, q, q, 0.5, 16, True, BASE)
    assert args[4:9] == (0.5, 32, 32, 16, 1)
    assert dict(zip(KNOBS, args[9:])) == dict(LAT_K=2, LAT_V=4, TMA=1, PIPE=0, EVEN=1,
                                              FOLD=0, SPLIT=0, RESCALE=0, ORDER=0)
    assert set(NEW_KNOB_DEFAULTS) == {"FOLD", "SPLIT", "RESCALE", "ORDER"}
    assert len(args) == 9 + len(KNOBS)


# fp16 and bf16, causal and not, head sizes 64 and 128, each new knob alone, all together and
# with the PIPE overlap
@pytest.mark.parametrize("dtype, d, causal, knobs, atol", [
    ("fp16", 64, 1, dict(FOLD=1), 3e-3),
    ("bf16", 64, 0, dict(FOLD=1, RESCALE=8), 2e-2),
    ("fp16", 128, 1, dict(SPLIT=1), 3e-3),
    ("bf16", 128, 1, dict(FOLD=1, SPLIT=1, RESCALE=8), 2e-2),
    ("fp16", 128, 0, dict(RESCALE=8, PIPE=1), 3e-3),
    ("fp16", 64, 1, dict(FOLD=1, RESCALE=8, PIPE=1), 3e-3),
])
def test_new_knobs_compute_attention(dtype, d, causal, knobs, atol):
    q, k, v = _qkv(128, d, dtype, seed=d + causal)
    got = _run(q, k, v, causal, **knobs)
    want = attention_reference(q, k, v, causal=bool(causal))
    np.testing.assert_allclose(got, want, atol=atol)


def test_split_gives_the_same_bits_as_the_masked_loop():
    # the same tiles with the same mask, only in two loops: not one bit may move (BM 64 over
    # BN 32 puts two masked tiles in each block, BM 32 over BN 64 a masked tile left of none)
    q, k, v = _qkv(128, 32, "fp16", seed=3)
    for bm, bn in ((64, 32), (32, 64)):
        one = _run(q, k, v, 1, BM=bm, BN=bn)
        two = _run(q, k, v, 1, BM=bm, BN=bn, SPLIT=1)
        np.testing.assert_array_equal(two, one)


def test_split_leaves_the_unmasked_and_the_pipelined_kernels_as_they_are():
    q, k, v = _qkv(64, 32, "fp16", seed=4)
    np.testing.assert_array_equal(_run(q, k, v, 0, SPLIT=1), _run(q, k, v, 0))
    np.testing.assert_array_equal(_run(q, k, v, 1, PIPE=1, SPLIT=1), _run(q, k, v, 1, PIPE=1))


def test_rescale_skips_rescales_and_stays_within_todays_error():
    q, k, v = _qkv(256, 64, "fp16", seed=5, heads=1)
    want = attention_reference(q, k, v, causal=False)
    exact = _run(q, k, v, 0)
    lazy = _run(q, k, v, 0, RESCALE=8)
    # if every tile took the rescale branch the bits would be today's: they differ, so some
    # tiles kept the stale max ...
    assert np.abs(lazy - exact).max() > 0
    # ... and the error against float64 is today's, give or take rounding
    err0, err8 = np.abs(exact - want).max(), np.abs(lazy - want).max()
    assert err8 < 2 * err0 + 1e-3 and err8 < 3e-3


def test_rescale_takes_the_branch_when_a_row_max_jumps():
    # keys of the last tiles 16x larger: scores jump by far more than 2^8 in base 2, so a kernel
    # that never rescaled would overflow exp2 (inf, then nan); the branch must fire
    q, k, v = _qkv(128, 32, "fp16", seed=6, heads=1)
    q = (q.astype(np.float32) * 2).astype(np.float16)
    k[:, 64:] = (k[:, 64:].astype(np.float32) * 16).astype(np.float16)
    want = attention_reference(q, k, v, causal=True)
    got = _run(q, k, v, 1, RESCALE=8, SPLIT=1)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, atol=5e-3)


def test_fold_rounds_the_scaled_q_and_stays_accurate():
    q, k, v = _qkv(64, 64, "bf16", seed=7)
    want = attention_reference(q, k, v, causal=True)
    plain, folded = _run(q, k, v, 1), _run(q, k, v, 1, FOLD=1)
    assert np.abs(folded - plain).max() > 0  # Q * scale rounded to bf16: other bits
    assert np.abs(folded - want).max() < 2e-2


def test_launch_order_moves_no_bit_and_transposes_the_grid_only_for_order_two():
    # causal: query block i has i + 1 key tiles; ORDER 1 and 2 launch the long ones first, but
    # each block computes the same rows from the same tiles, so not one bit may move
    assert knob_grid(128, 3, dict(BM=32)) == (4, 3) == knob_grid(128, 3, dict(BM=32, ORDER=1))
    assert knob_grid(128, 3, dict(BM=32, ORDER=2)) == (3, 4)
    q, k, v = _qkv(128, 32, "fp16", seed=8, heads=3)
    today = _run(q, k, v, 1)
    np.testing.assert_allclose(today, attention_reference(q, k, v, causal=True), atol=3e-3)
    for order in (1, 2):
        np.testing.assert_array_equal(_run(q, k, v, 1, ORDER=order), today)
        np.testing.assert_array_equal(_run(q, k, v, 1, ORDER=order, PIPE=1),
                                      _run(q, k, v, 1, PIPE=1))
