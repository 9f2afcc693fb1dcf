"""bench/gemm_schedule_rows.py and the sweep's schedule choice on the CPU: skinny and unaligned
rows get their schedules first, the space is one tile_lab.Schedules tunable, the padded-copy
launch is right on a row whose rows are not 16-byte aligned (emulated), and the record says
which schedule won and why."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

import gemm_kernels as gk  # noqa: E402
import gemm_schedule_rows as gsr  # noqa: E402
import gpu_gemm_sweep as sw  # noqa: E402

import tile_lab  # noqa: E402


def test_alignment_and_padding():
    assert gsr.aligned(8192, 8192) and not gsr.aligned(8191, 1000)
    assert not gsr.aligned(64, 1001)  # A's rows of K
    assert gsr.padded(8191) == 8192 and gsr.padded(8192) == 8192 and gsr.padded(9) == 16


def test_skinny_and_unaligned_rows_start_with_their_schedules():
    skinny, _ = sw.candidates(sw.GemmRow("fp16", 128, 8192, 8192), max_configs=10)
    # the unsplit 2-CTA 128x128 wide tile first (A multicast, read 2x less through L2; 51.5 us
    # on the H200), its K-step and latency neighbours, the 78 us stream-K winner as control
    assert skinny[0] == gsr.sched(128, 128, "splitk_wide", tk=128, lat=4, split=1, ctas=2,
                                  warps=8)
    assert all(c["schedule"] == "splitk_wide" and c["SPLIT"] == 1 and c["num_ctas"] == 2
               for c in skinny[:8])
    assert len({(c["TK"], c["LAT"]) for c in skinny[:8]}) == 8
    assert skinny[8]["schedule"] == "streamk" and skinny[8]["TN"] == 64
    assert all(c["TM"] == 128 for c in skinny[:10])  # TM = the whole of M: B streamed once
    # M = 256 at N = 16384: 256x256 tiles on 2-CTA clusters still fill the GPU (64 for 66):
    # they stay first (the skinny list ahead of them measured 0.74x of cuBLAS on the H200)
    m256, _ = sw.candidates(sw.GemmRow("fp16", 256, 16384, 4096), max_configs=9)
    assert m256[0] == sw.cfg(256, 256, lat=4, ctas=2, warps=8)
    assert any(c.get("schedule") == "splitk_wide" for c in m256)
    odd, _ = sw.candidates(sw.GemmRow("bf16", 8191, 8191, 1000), max_configs=10)
    kinds = {c["schedule"] for c in odd}
    assert {"pad_b", "pad_bc", "streamk"} <= kinds
    assert any(c["schedule"] == "streamk" and c["TMA"] == 0 for c in odd)
    square, _ = sw.candidates(sw.GemmRow("fp16", 8192, 8192, 8192), max_configs=8)
    assert {c["schedule"] for c in square} == {"splitk"}


def test_unaligned_configs_are_screened_under_their_own_key():
    row = sw.GemmRow("fp16", 8191, 8191, 1000)
    c = sw.cfg(256, 256, lat=4, ctas=2, warps=8)
    configs, dropped = sw.candidates(row, max_configs=16,
                                     spills={sw.key(c) + "|unaligned": 95})
    assert c not in configs
    assert any(d["config"] == c and "95 LDL/STL" in d["reason"] for d in dropped)
    # the same config on an aligned row is not affected by the unaligned screen result
    ok, _ = sw.candidates(sw.GemmRow("fp16", 8192, 8192, 8192), max_configs=16,
                          spills={sw.key(c) + "|unaligned": 95})
    assert c in ok


def test_the_space_is_one_schedules_tunable():
    configs, _ = sw.candidates(sw.GemmRow("fp16", 8191, 8191, 1000), max_configs=10)
    space = sw.space_for(configs)
    kinds = gsr.schedules().knob_kinds(space)
    assert kinds["schedule"] == "schedule" and kinds["TMA"] == "constant"
    assert kinds["num_ctas"] == "hint"
    assert sorted(sw.key(c.as_dict()) for c in space.configs("sm_90")) == sorted(
        sw.key(c) for c in configs)


def _emulate(m, n, k, c, ops):
    kernel = gsr.schedules().for_config(c)
    args = ops.args(c)
    if c["schedule"] in ("pad_b", "pad_bc"):  # what work() does around the launch, on NumPy
        ops.padded_b()[:, :n] = ops.t["b"]
    tile_lab.emulate(kernel, gsr.grid(m, n, k, c, sms=3), args)
    if c["schedule"] == "dp_streamk":  # work()'s other launches, when a wave is partial
        fix_grid, fix_args = ops.fixup(c)
        if fix_grid[0]:
            tile_lab.emulate(kernel, gsr.grid(m, n, k, c, sms=3), (*args[:-1], 1))
            tile_lab.emulate(gk.streamk_fixup, fix_grid, fix_args)
    if c["schedule"] == "pad_bc":
        ops.t["c"][:] = ops.padded_c()[:, :n]


def test_every_schedule_of_an_unaligned_row_computes_the_product():
    m, n, k = 40, 37, 48  # rows of 37 halfs: not 16-byte aligned
    rng = np.random.default_rng(1)
    t = dict(a=rng.standard_normal((m, k)).astype(np.float16),
             b=rng.standard_normal((k, n)).astype(np.float16),
             c=np.zeros((m, n), np.float16), w=np.zeros((m, n), np.float32))
    ref = t["a"].astype(np.float32) @ t["b"].astype(np.float32)
    ops = sw.NumpyOperands(t, m, n, k, 3)
    for schedule in gsr.SCHEDULES:
        c = gsr.sched(32, 16, schedule, tk=16, lat=2, split=2 if schedule != "streamk" else 1,
                      tma=0 if schedule == "streamk" else 1)
        for _ in range(2):
            t["c"][:] = np.nan
            _emulate(m, n, k, c, ops)
            np.testing.assert_allclose(t["c"].astype(np.float32), ref, atol=0.05, rtol=1e-2,
                                       err_msg=schedule)
    assert ops.padded_b().shape == (k, 40) and ops.padded_c().shape == (m, 40)


def _success(schedule, us):
    c = SimpleNamespace(as_dict=lambda: {"schedule": schedule})
    return SimpleNamespace(config=c, measurement=SimpleNamespace(median_s=us * 1e-6))


def test_the_record_says_which_schedule_won_and_why():
    result = SimpleNamespace(successes=[_success("pad_b", 900.0), _success("streamk", 1200.0),
                                        _success("pad_bc", 960.0), _success("splitk", 1500.0)])
    why = sw._why(sw.GemmRow("fp16", 8191, 8191, 1000), result)
    assert why["per_schedule_us"] == pytest.approx({"pad_b": 900.0, "streamk": 1200.0,
                                                    "pad_bc": 960.0, "splitk": 1500.0})
    assert why["note"].startswith("pad_b (B copied to 16-byte rows")
    assert "(b) padded copies won, 900.0 us padded (copies timed) vs 1200.0 us" in why["note"]
    result.successes.append(_success("streamk", 800.0))
    assert "(a) no TMA won" in sw._why(sw.GemmRow("fp16", 8191, 8191, 1000), result)["note"]


def test_the_hybrid_runs_its_three_launches_through_the_operands():
    # 72x100 in 32x32 tiles = 12 tiles on 5 slots (sms=5): 10 whole (PHASE 0), 2 stream-K
    # (PHASE 1), summed by the fix-up from the workspace the operands made (SK_WAVES+1 slots
    # per block)
    m, n, k = 72, 100, 96
    rng = np.random.default_rng(2)
    t = dict(a=rng.standard_normal((m, k)).astype(np.float16),
             b=rng.standard_normal((k, n)).astype(np.float16),
             c=np.zeros((m, n), np.float16), w=np.zeros((1, 1), np.float32))
    ref = t["a"].astype(np.float32) @ t["b"].astype(np.float32)
    ops = sw.NumpyOperands(t, m, n, k, 5)
    c = gsr.sched(32, 32, "dp_streamk", tk=32, lat=2, split=1)
    assert gsr.grid(m, n, k, c, sms=5) == (5,) and ops.fixup(c)[0] == (2,)
    assert ops.streamk_slots(c).shape == (10, 32, 32)
    ops.streamk_slots(c)[:] = np.nan
    kernel = gsr.schedules().for_config(c)
    assert ops.args(c)[-1] == 0  # PHASE 0: what the tuner compiles and the screen screens
    first = ops.args(c)
    assert first[2] is t["c"]  # PHASE 0 writes C, PHASE 1 the workspace
    for phase, out in ((0, t["c"]), (1, ops.streamk_slots(c))):
        tile_lab.emulate(kernel, gsr.grid(m, n, k, c, sms=5),
                         (*first[:2], out, *first[3:-1], phase))
    tile_lab.emulate(gk.streamk_fixup, *ops.fixup(c))
    np.testing.assert_allclose(t["c"].astype(np.float32), ref, atol=0.05, rtol=1e-2)
