"""Per-tile comparison helpers: ULP distance, undetermined boxes, the by-design budget."""

from __future__ import annotations

import cuda.tile as ct
import numpy as np

import tile_lab
from tile_lab.crosschecking.compare import (
    Budget,
    _Allowance,
    _within_budget,
    budget_eps,
    compare_output,
    ordered_ints,
)
from tile_lab.crosschecking.sites import design_sites
from tile_lab.tracing.trace import MmaCall


def ulps(a, b, dtype):
    x = np.array([a], dtype)
    y = np.array([b], dtype)
    return int(abs(ordered_ints(x) - ordered_ints(y))[0])


def test_ulp_distance_counts_representable_values():
    one = np.float32(1.0)
    assert ulps(one, np.nextafter(one, np.float32(2)), np.float32) == 1
    assert ulps(0.0, -0.0, np.float32) == 0
    tiny = np.nextafter(np.float32(0), np.float32(1))
    assert ulps(-tiny, tiny, np.float32) == 2  # across zero
    assert ulps(1.0, np.nextafter(np.float16(1), np.float16(2)), np.float16) == 1
    assert ulps(1.0, 2.0, np.float64) == 2 ** 52


F32 = 2.0 ** -23


def test_budget_scales_with_the_output_not_only_the_element():
    e = np.array([100.0, 1e-3], np.float64)
    g = e + np.array([0.0, 1e-4])  # 10% of a small element, tiny against the output's 100
    ok = _within_budget(g, e, np.ones(2, bool), "float32", _Allowance(Budget(), F32, 100.0))
    assert ok.tolist() == [True, True]
    strict = _within_budget(g, e, np.ones(2, bool), "float32",
                            _Allowance(Budget(ulps=8, scale_ulps=0), F32, 100.0))
    assert strict.tolist() == [True, False]
    # a one-element tile (a row's mean that cancelled to -0.00048) measured against itself
    # alone would fail; against the output's other means (~0.15) it is a rounding difference
    mean_e, mean_g = np.array([-0.0004812383558601141]), np.array([-0.0004812467086594552])
    assert not _within_budget(mean_g, mean_e, np.ones(1, bool), "float32",
                              _Allowance(Budget(), F32, 0.00048))[0]
    assert _within_budget(mean_g, mean_e, np.ones(1, bool), "float32",
                          _Allowance(Budget(), F32, 0.156))[0]


def _mma(acc_dtype: str) -> MmaCall:
    return MmaCall((0, 0, 0), "mma", 64, 64, 32, 1, "float16", 9, 0, "k.py", acc_dtype)


def test_a_narrow_accumulator_sets_the_budget_epsilon():
    class _T:
        mma_calls: tuple = ()

    t = _T()
    assert budget_eps("float32", t) == F32
    t.mma_calls = (_mma("float32"),)
    assert budget_eps("float32", t) == F32
    t.mma_calls = (_mma("float32"), _mma("float16"))
    assert budget_eps("float32", t) == 2.0 ** -10  # fp16 partial sums, whatever C holds
    t.mma_calls = (_mma(""),)  # a trace reloaded from a file: precision unknown
    assert budget_eps("float16", t) == 2.0 ** -10


@ct.kernel
def last_block_wins(out, x):
    t = ct.load(x, index=(ct.bid(0),), shape=(1,))
    ct.store(out, index=(0,), tile=t)


def test_a_tile_several_blocks_store_to_is_a_race_not_an_emulator_bug():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(1, np.float32)
    trace = tile_lab.trace(last_block_wins, (8,), (out, x))
    gpu = np.array([3.0], np.float32)  # block 3's store landed last on the GPU
    cmp = compare_output("out", gpu, out, trace, design_sites(last_block_wins), Budget())
    (tile,) = cmp.tiles
    assert tile.verdict == "undetermined" and tile.classes["mismatch"] == 0
    assert "written by 8 blocks" in tile.reason and "race" in tile.reason


def test_a_flushed_subnormal_is_within_budget():
    sub = np.float32(1e-40)
    ok = _within_budget(np.array([0.0]), np.array([float(sub)]), np.ones(1, bool),
                        "float32", _Allowance(Budget(ulps=0, scale_ulps=0), F32, 0.0))
    assert ok.tolist() == [True]


def test_blocks_taking_turns_under_a_lock_are_a_summation_order_not_a_race():
    from corpus import correct

    case = {c.name: c for c in correct.CASES}["layernorm_bwd"]
    grid, args = case.build()
    trace = tile_lab.trace(case.kernel, grid, args)
    names = [a.name for a in trace.arrays]
    emu = np.asarray(args[names.index("DWp")])
    gpu = (emu * (1 + 2.0 ** -22)).astype(emu.dtype)  # the lock taken in another order
    cmp = compare_output("DWp", gpu, emu, trace, design_sites(case.kernel), Budget())
    multi = [t for t in cmp.tiles if t.n_blocks > 1 and t.differing]
    assert multi and all(t.verdict == "design" for t in multi)
