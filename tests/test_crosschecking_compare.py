"""Per-tile comparison helpers: ULP distance, races, locks (the budget itself:
test_crosschecking_budget.py)."""

from __future__ import annotations

import cuda.tile as ct
import numpy as np

import tile_lab
from tile_lab.crosschecking.budget import Budget
from tile_lab.crosschecking.compare import compare_output, ordered_ints
from tile_lab.crosschecking.sites import design_sites


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
