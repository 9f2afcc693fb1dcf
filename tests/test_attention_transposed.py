"""bench/attention_transposed.py on the emulator: the transposed form computes attention, dense
and causal, against a float64 NumPy reference."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

from attention_transposed import flash_attention_t, t_args, t_grid  # noqa: E402

import tile_lab  # noqa: E402
from tile_lab.examples.attention import LOG2_E, attention_reference  # noqa: E402


@pytest.mark.parametrize("causal, bm, bn", [(0, 32, 32), (1, 32, 32), (1, 32, 16), (0, 16, 32)])
def test_the_transposed_form_computes_attention(causal, bm, bn):
    rng = np.random.default_rng(bm + bn + causal)
    q, k, v = (rng.standard_normal((2, 64, 32)).astype(np.float16) for _ in range(3))
    out = np.full_like(q, np.nan)
    c = dict(BM=bm, BN=bn, LAT_K=2, LAT_V=4)
    tile_lab.emulate(flash_attention_t, t_grid(64, 2, c),
                     t_args(q, k, v, out, LOG2_E / math.sqrt(32), 32, causal, c))
    ref = attention_reference(q, k, v, causal=bool(causal))
    assert np.abs(out.astype(np.float64) - ref).max() < 3e-3
