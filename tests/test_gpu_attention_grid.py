"""bench/gpu_attention_grid.py and bench/attention_kernels.py on the CPU: the grid's rows, the
staged tuning's logic with scripted measurements, and every experiment knob of the kernel
computing attention correctly on the emulator."""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass

import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

import attention_space as sp  # noqa: E402
import gpu_attention_grid as ag  # noqa: E402
from attention_kernels import flash_attention_knobs, knob_args  # noqa: E402

import tile_lab  # noqa: E402
from tile_lab.examples.attention import LOG2_E, attention_reference, grid  # noqa: E402


def test_grid_rows_follow_fa3s_shapes_and_put_the_extremes_first():
    assert len(sp.ROWS) == 32 and len({r.name for r in sp.ROWS}) == 32
    for r in sp.ROWS:
        assert r.batch * r.seq == 16384 and r.heads * r.d == 2048
    assert sp.ROWS[0].name == "fp16 1x16x16384x128"
    assert {r.seq for r in sp.ROWS[:16]} == {16384, 2048}
    causal = sp.AttnRow("bf16", 2048, 64, True)
    assert causal.name == "bf16 8x32x2048x64 causal"
    assert causal.flops * 2 == sp.AttnRow("bf16", 2048, 64, False).flops
    assert causal.tuning_class == "D=64 causal=1 short"


def test_stage_one_crosses_the_screened_tiles_with_occupancy_and_pipe():
    cfgs = sp.stage1(sp.AttnRow("fp16", 2048, 128, False))
    assert len(cfgs) == 12
    assert {(c["BM"], c["BN"], c["num_worker_warps"]) for c in cfgs} == set(sp.TILES[128])
    assert {(c["occupancy"], c["PIPE"]) for c in cfgs} == {(1, 0), (1, 1), (2, 0), (2, 1)}
    assert all(c["EVEN"] == 1 for c in cfgs)  # 2048 divides by every tile
    assert sp.even(sp.AttnRow("fp16", 2000, 128, False), 64, 128) == 0


def test_stage_one_leaves_out_what_the_spill_screen_flagged():
    row = sp.AttnRow("bf16", 16384, 128, True)
    cfgs = sp.stage1(row)
    flagged = {sp.screen_key(row, cfgs[3]): 56, sp.screen_key(row, cfgs[4]): 0,
               sp.screen_key(sp.AttnRow("fp16", 2048, 128, False), cfgs[5]): 12}
    kept = sp.stage1(row, flagged)
    # only this (head size, mask)'s spilling config goes; dtype and length do not matter
    assert kept == cfgs[:3] + cfgs[4:]
    assert sp.screen_key(row, cfgs[3]).startswith("D=128 causal=1 BM=")


def test_stage_two_changes_one_knob_at_a_time_cheap_experiments_first():
    best = sp.stage1(sp.AttnRow("fp16", 2048, 64, True))[0]
    variants = ag.stage2(best, max_configs=20)
    for v in variants:
        assert sum(v[k] != best[k] for k in best) == 1
    assert [next(k for k in best if v[k] != best[k]) for v in variants[:3]] == [
        "num_ctas", "TMA", "EVEN"]
    assert len(variants) == 3 + 3 + 3  # LAT_V and LAT_K: three values other than best's
    assert len(ag.stage2(best, max_configs=4)) == 4
    # a ragged shape keeps its bounds checks: no variant turns them off
    ragged = dict(best, EVEN=0)
    assert all(v["EVEN"] == 0 for v in ag.stage2(ragged, 20))
    assert len(ag.stage2(ragged, 20)) == 2 + 3 + 3


def test_combined_takes_each_knob_that_won_its_own_experiment():
    best = dict(sp.stage1(sp.AttnRow("fp16", 2048, 128, False))[0])
    lat_v8, tma0, ctas2 = dict(best, LAT_V=8), dict(best, TMA=0), dict(best, num_ctas=2)
    ranked = [(1.00, best), (0.97, lat_v8), (1.05, tma0), (0.99, ctas2)]
    assert ag.combined(best, ranked) == dict(best, LAT_V=8, num_ctas=2)
    # a single winner is a config already measured: nothing new to try
    assert ag.combined(best, [(1.00, best), (0.97, lat_v8), (1.05, tma0)]) is None


@dataclass
class _M:
    median_s: float
    n: int = 10


@dataclass
class _S:
    config: object
    measurement: _M


class _Cfg(dict):
    def as_dict(self):
        return dict(self)


@dataclass
class _Result:
    successes: list
    failures: list


def test_staged_tuning_runs_three_stages_and_skips_a_winner_that_gets_attention_wrong():
    row = sp.AttnRow("fp16", 2048, 128, False)
    first = sp.stage1(row)
    best = first[5]

    def speed(c):  # stage 1: config 5 fastest; TMA off, LAT_V 8 and a cluster each help
        same_tiles = all(c[k] == best[k] for k in ("BM", "BN", "occupancy", "PIPE"))
        return ((0.9 if same_tiles else 2.0) - 0.05 * (c["TMA"] == 0)
                - 0.03 * (c["LAT_V"] == 8) - 0.2 * (c["num_ctas"] == 2))

    stages = []

    def run_stage(cfgs):
        stages.append(cfgs)
        return _Result([_S(_Cfg(c), _M(speed(c))) for c in cfgs], [])

    def error(c):
        return 0.5 if c["num_ctas"] == 2 else 1e-3

    out = ag.staged_tuning(row, run_stage, error, max_configs=10)
    assert stages[0] == first and stages[1][0] == best and len(stages[1]) == 1 + 9
    both = dict(best, TMA=0, LAT_V=8, num_ctas=2)
    assert stages[2] == [both]  # combined
    # stage 4: the fastest so far and stage 1's fastest other tile, each with FOLD, RESCALE
    # and both (a dense row: no SPLIT)
    assert len(stages[3]) == 2 * 4 and stages[3][0] == both
    assert stages[3][1:4] == [dict(both, FOLD=1), dict(both, RESCALE=8),
                              dict(both, FOLD=1, RESCALE=8)]
    assert (stages[3][4]["BM"], stages[3][4]["BN"]) != (best["BM"], best["BN"])
    # the six fastest (with the cluster) got attention wrong; the next one won
    assert [ch["max_abs_err"] for ch in out["checks"]] == [0.5] * 6 + [1e-3]
    assert out["config"] == dict(best, TMA=0)
    assert out["median_us"] == pytest.approx(0.85e6)
    assert {e["stage"] for e in out["experiments"]} == {"tiles", "one knob", "combined",
                                                        "new knobs"}
    json.dumps(out)  # the experiment log goes into the JSON as it is


def test_stage_four_can_win_and_a_stage_or_check_that_fails_is_recorded():
    row = sp.AttnRow("bf16", 16384, 128, True)
    first = sp.stage1(row)

    def speed(c):  # stage 1's first config fastest; SPLIT and FOLD help; RESCALE breaks
        knobs = ("SPLIT", "FOLD", "RESCALE", "ORDER")
        return (1.0 if c == dict(first[0], **{k: c[k] for k in knobs})
                else 2.0) - 0.02 * c["SPLIT"] - 0.01 * c["FOLD"]

    def error(c):
        if c["RESCALE"]:
            raise RuntimeError("illegal address")  # its check launch fails: passed over
        return 1e-3

    def run_stage(cfgs):
        return _Result([_S(_Cfg(c), _M(speed(c))) for c in cfgs], [])

    out = ag.staged_tuning(row, run_stage, error, max_configs=10)
    # all on was fastest (0.97) but its check launch failed; SPLIT alone won
    assert out["checks"][0]["config"] == dict(first[0], SPLIT=1, FOLD=1, RESCALE=8, ORDER=2)
    assert "illegal address" in out["checks"][0]["error"]
    assert out["config"] == dict(first[0], SPLIT=1)
    assert out["median_us"] == pytest.approx(0.98e6)
    assert any(e["stage"] == "new knobs" for e in out["experiments"])

    def broken_fourth(cfgs):
        if any(c["FOLD"] for c in cfgs):
            raise RuntimeError("no compiler")
        return run_stage(cfgs)

    out = ag.staged_tuning(row, broken_fourth, lambda c: 1e-3, max_configs=10)
    assert out["config"] == first[0]
    assert out["experiments"][-1] == dict(stage="new knobs", failed="stage",
                                          error="RuntimeError: no compiler")


def test_new_knob_variants_split_only_causal_loops_without_pipe():
    dense, causal = sp.AttnRow("fp16", 2048, 128, False), sp.AttnRow("fp16", 2048, 128, True)
    base = sp.stage1(causal)[0]
    assert base["PIPE"] == 0 and base["FOLD"] == base["SPLIT"] == base["RESCALE"] == 0
    assert sp.new_knob_variants(causal, base) == [
        dict(base, FOLD=1), dict(base, RESCALE=8), dict(base, SPLIT=1), dict(base, ORDER=1),
        dict(base, ORDER=2), dict(base, FOLD=1, RESCALE=8, SPLIT=1, ORDER=2)]
    assert all(v["SPLIT"] == 0 for v in sp.new_knob_variants(dense, base))
    # every query block of a dense row has the same work: the launch order is not tried there
    assert all(v["ORDER"] == 0 for v in sp.new_knob_variants(dense, base))
    assert all(v["SPLIT"] == 0 for v in sp.new_knob_variants(causal, dict(base, PIPE=1)))


def test_stage_four_leaves_out_variants_whose_register_shape_spilled():
    row = sp.AttnRow("fp16", 4096, 128, True)
    first = [(1.0 + i, c) for i, c in enumerate(sp.stage1(row))]
    best = dict(first[0][1], LAT_V=8)  # a stage-2 winner: not itself in the screen
    # the screen saw RESCALE=8 spill at the stage-1 latencies: the same shape at LAT_V 8 goes
    spills = {sp.screen_key(row, dict(first[0][1], RESCALE=8)): 40}
    spills = {**spills, sp.shape_key(row, dict(first[0][1], RESCALE=8)): 40}
    cfgs = ag.stage4(row, [(0.5, best)], first, spills)
    assert cfgs[0] == best and dict(best, FOLD=1) in cfgs
    assert dict(best, RESCALE=8) not in cfgs and dict(best, FOLD=1, SPLIT=1) not in cfgs
    assert dict(best, SPLIT=1) in cfgs


def test_screen_keys_of_todays_configs_are_unchanged_and_shape_keys_are_read_back(tmp_path):
    row = sp.AttnRow("fp16", 2048, 128, False)
    c = sp.stage1(row)[0]
    assert sp.screen_key(row, c) == (
        "D=128 causal=0 BM=64,BN=128,LAT_K=2,LAT_V=4,TMA=1,PIPE=0,EVEN=1,"
        "num_worker_warps=4,occupancy=2,num_ctas=1")
    assert sp.screen_key(row, dict(c, RESCALE=8)).endswith(",EVEN=1,RESCALE=8,"
                                                           "num_worker_warps=4,occupancy=2,"
                                                           "num_ctas=1")
    path = tmp_path / "screen.json"
    path.write_text(json.dumps({"configs": [
        dict(key=sp.screen_key(row, dict(c, FOLD=1)), config=dict(c, FOLD=1), spills=12),
        dict(key=sp.screen_key(row, c), config=c, spills=0)]}))
    spills = sp.load_screen(str(path))
    assert sp.spill_count(spills, row, dict(c, FOLD=1, LAT_V=8, EVEN=0)) == 12
    assert sp.spill_count(spills, row, dict(c, LAT_V=8)) == 0
    assert sp.spill_count(spills, sp.AttnRow("fp16", 2048, 128, True), dict(c, FOLD=1)) == 0


@pytest.mark.parametrize("seq, causal, knobs", [
    (128, 1, dict(LAT_K=2, LAT_V=4, TMA=1, PIPE=1, EVEN=1)),  # the FA3 overlap, masked
    (128, 0, dict(LAT_K=0, LAT_V=0, TMA=0, PIPE=1, EVEN=1)),  # compiler latencies, no TMA
    (96, 1, dict(LAT_K=1, LAT_V=8, TMA=1, PIPE=0, EVEN=0)),  # ragged: bounds checks on
    (96, 0, dict(LAT_K=4, LAT_V=2, TMA=1, PIPE=1, EVEN=0)),
])
def test_every_knob_combination_computes_attention(seq, causal, knobs):
    rng = np.random.default_rng(seq + causal)
    d, bm, bn = 16, 32, 32
    q, k, v = (rng.standard_normal((2, seq, d)).astype(np.float16) for _ in range(3))
    out = np.full_like(q, np.nan)
    tile_lab.emulate(flash_attention_knobs, grid(q.shape, bm),
                     knob_args(q, k, v, out, LOG2_E / math.sqrt(d), d, bool(causal),
                               dict(knobs, BM=bm, BN=bn)))
    want = attention_reference(q, k, v, causal=bool(causal))
    np.testing.assert_allclose(out.astype(np.float64), want, atol=3e-3)


def test_space_of_holds_exactly_the_stage_configs():
    cfgs = sp.stage1(sp.AttnRow("bf16", 4096, 64, False))
    kept, _ = ag.space_of(cfgs).split("sm_90")
    assert sorted(map(str, (c.as_dict() for c in kept))) == sorted(map(str, cfgs))
    assert ag.space_of(cfgs).classify(flash_attention_knobs)["PIPE"] == "constant"


def test_list_runs_without_a_gpu(capsys):
    ag.main(["--list", "--rows", "x2048x"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8 and lines[0].startswith(" 8 fp16 8x16x2048x128: class D=128")


@pytest.mark.gpu
def test_knob_kernel_on_the_gpu_matches_sdpa():
    pytest.importorskip("torch")
    backend = ag.AttentionBackend()
    row = sp.AttnRow("bf16", 2048, 128, True)
    t = backend._tensors(row)
    for c in sp.stage1(row)[:4] + ag.stage2(sp.stage1(row)[0], 9):
        assert backend._err(row, t, c) < 2e-2, c


def test_experiments_table_says_what_each_knob_did(capsys, tmp_path):
    row = sp.AttnRow("fp16", 2048, 128, False)
    best = sp.stage1(row)[0]
    log = [dict(stage="tiles", config=best, median_us=100.0),
           dict(stage="tiles", config=sp.stage1(row)[1], median_us=120.0),
           dict(stage="one knob", config=best, median_us=101.0),
           dict(stage="one knob", config=dict(best, num_ctas=2), median_us=110.0),
           dict(stage="one knob", config=dict(best, LAT_V=8), median_us=97.0),
           dict(stage="one knob", config=dict(best, TMA=0), failed="compile", error="x")]
    rec = dict(name=row.name, row=row.as_json(), status="ok", runs=[],
               tuning=dict(config=dict(best, LAT_V=8), experiments=log,
                           tuning_class=row.tuning_class))
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"rows": [rec]}))
    ag.main(["--markdown", str(path), "--experiments"])
    out = capsys.readouterr().out
    table = out[out.index("| tuned on"):].splitlines()
    assert table[2].startswith(f"| {row.name} (D=128 causal=0 short) | stage 1's best:")
    assert table[2].endswith("| 101.0 | 1.000 | baseline of the experiments |")
    assert table[3] == "| | one knob: num_ctas=2 | 110.0 | 0.918 | dropped |"
    assert table[4] == "| | one knob: LAT_V=8 | 97.0 | 1.041 | kept (the winner) |"
    assert "failed (compile)" in table[5]
