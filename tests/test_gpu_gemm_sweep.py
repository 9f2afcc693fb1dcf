"""bench/gpu_gemm_sweep.py on the CPU: the 18 rows, each row's pruned space (tiles that fit,
split-K where the output tiles leave the last wave short, the spill screen, --max-configs), the
persistent grid, and the split-K kernel itself on the emulator (ragged shapes, several slices
meeting in the workspace, the workspace and counters left clean for the next launch)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

import gemm_kernels as gk  # noqa: E402
import gemm_schedule_rows as gsr  # noqa: E402
import gpu_gemm_sweep as sw  # noqa: E402

import tile_lab  # noqa: E402


def test_eighteen_rows_fp16_and_bf16_of_nine_shapes():
    assert len(sw.ROWS) == 18 and len({r.name for r in sw.ROWS}) == 18
    assert {r.dtype for r in sw.ROWS} == {"fp16", "bf16"}
    names = {r.name for r in sw.ROWS}
    for n in ("fp16 4096x4096x4096", "bf16 128x8192x8192", "fp16 8191x8191x1000",
              "bf16 256x16384x4096", "fp16 8192x2048x8192"):
        assert n in names
    assert sw.GemmRow("fp16", 128, 8192, 8192).flops == 2 * 128 * 8192 * 8192


def test_large_squares_start_from_the_known_winner_and_stay_within_max_configs():
    row = sw.GemmRow("fp16", 8192, 8192, 8192)
    configs, dropped = sw.candidates(row, max_configs=4)
    assert configs[0] == sw.cfg(256, 256, lat=4, ctas=2, warps=8)  # KERNELS.md's 1.013x
    assert len(configs) == 4 and all(c["SPLIT"] == 1 for c in configs)
    assert all(d["reason"] == "beyond --max-configs 4" for d in dropped)
    assert len(configs) + len(dropped) == len(sw.LARGE)


def test_rows_ending_in_a_partial_wave_try_the_hybrid_after_the_rest():
    # 256 tiles of 256x256 on 66 2-CTA slots: 3.88 waves, the last 88% full; the hybrid lost
    # there on the H200, so it comes after every other config
    for shape in ((4096, 4096, 4096), (8192, 2048, 8192), (4000, 4000, 4000)):
        configs, _ = sw.candidates(sw.GemmRow("bf16", *shape), max_configs=8)
        assert configs == list(sw.LARGE)
        configs, _ = sw.candidates(sw.GemmRow("bf16", *shape), max_configs=12)
        assert configs[-3:] == sw.hybrid_configs()
        assert [(c["schedule"], c["LAT"], c["SPLIT"]) for c in configs[-3:]] == [
            ("dp_streamk", 4, 1), ("dp_streamk", 6, 1), ("dp_streamk", 4, 2)]
        # one tunable: dp_streamk's SK_WAVES rides on the SPLIT knob, named so in the record
        assert gsr.schedules().knob_kinds(sw.space_for(configs))["SPLIT"] == "constant"
        text = sw.describe(dict(config=configs[-1]))
        assert text.startswith("dp_streamk (whole tiles for the full waves")
        assert text.endswith("SK_WAVES 2") and "split-K" not in text
    # 1024 tiles (15.5 waves) and the 16384x16384x4096 row: their lists as before
    for shape in ((8192, 8192, 8192), (8192, 8192, 2048), (16384, 16384, 4096)):
        configs, _ = sw.candidates(sw.GemmRow("fp16", *shape), max_configs=12)
        assert configs == list(sw.LARGE), shape
    assert sw.waves(4096, 4096, sw.LARGE[0]) == 4 and sw.waves(8192, 8192, sw.LARGE[0]) == 16


def test_tall_skinny_gets_split_k_and_no_tile_taller_than_the_matrix():
    row = sw.GemmRow("bf16", 128, 8192, 8192)
    configs, dropped = sw.candidates(row, max_configs=32)
    # the skinny schedules (gemm_schedule_rows.skinny_configs) first, then the atomic split-K
    configs = [c for c in configs if c["schedule"] == "splitk"]
    assert configs[0]["SPLIT"] > 1 and all(c["TM"] <= 128 for c in configs)
    # the first split fills the last wave best: 128x128 tiles on 2-CTA clusters, 64 tiles x 2
    # slices = 128 units over 66 slots (97%)
    assert sw.wave_fill(sw.tiles(128, 8192, configs[0]) * configs[0]["SPLIT"],
                        sw.slots(configs[0])) > 0.95
    assert any(c["LAT"] == 8 for c in configs)  # a deeper prefetch for a memory-bound shape
    assert any("larger than the 128x8192 output" in d["reason"] for d in dropped)
    # every split leaves each slice at least 4 K tiles
    assert all(-(-8192 // 64) // c["SPLIT"] >= 4 for c in configs)


def test_spilling_configs_are_left_out_with_their_count():
    row = sw.GemmRow("fp16", 8192, 8192, 8192)
    first = sw.cfg(256, 256, lat=4, ctas=2, warps=8)
    configs, dropped = sw.candidates(row, max_configs=8, spills={sw.key(first): 872})
    assert first not in configs
    assert {"config": first, "reason": "872 LDL/STL in its sm_90 SASS"} in dropped


def test_grid_is_one_block_per_slot_but_never_more_than_the_work():
    c = sw.cfg(256, 256, ctas=2, warps=8)
    assert sw.grid_for(8192, 8192, c) == (66,)  # 132 SMs / 2-CTA clusters
    assert sw.grid_for(256, 512, c) == (2,)
    split = sw.cfg(128, 128, ctas=2, warps=8, split=4)
    assert sw.grid_for(128, 1024, split) == (32,)  # 8 tiles x 4 slices
    assert sw.grid_for(128, 1024, dict(split, occupancy=2)) == (32,)
    assert sw.slots(dict(split, occupancy=2), sms=132) == 132


def test_the_space_holds_exactly_the_pruned_configs():
    configs, _ = sw.candidates(sw.GemmRow("fp16", 128, 8192, 8192), max_configs=5)
    space = sw.space_for(configs)
    kept, rejected = space.split("sm_90")
    assert sorted(sw.key(c.as_dict()) for c in kept) == sorted(sw.key(c) for c in configs)
    assert all(r.reason == "not in this shape's pruned list" for r in rejected)
    kinds = gsr.schedules().knob_kinds(space)
    assert kinds["num_ctas"] == "hint" and kinds["SPLIT"] == "constant"
    assert kinds["schedule"] == "schedule"


def test_describe_names_every_knob():
    text = sw.describe({"config": sw.cfg(128, 128, ctas=2, warps=8, split=4, lat=8)})
    assert text == "128×128×64, 2-CTA, 8 warps, LAT 8, occ 1, GROUP 8, split-K 4"


def test_describe_says_an_unsplit_wide_tile_uses_no_workspace():
    # splitk_wide at SPLIT 1 stores C directly (the H200 M = 128 winner), not through a workspace
    one = sw.describe({"config": dict(sw.cfg(128, 128, tk=128, ctas=2, warps=8, split=1, lat=6),
                                      schedule="splitk_wide", TMA=1)})
    assert one.startswith("splitk_wide (not split: each tile's whole K loop, C stored directly)")
    two = sw.describe({"config": dict(sw.cfg(128, 128, tk=128, ctas=2, warps=8, split=2, lat=6),
                                      schedule="splitk_wide", TMA=1)})
    assert two.startswith("splitk_wide (split-K through a workspace, reduced in row pieces)")
    assert two.endswith(", split-K 2")


@pytest.mark.parametrize("m, n, k, tiles, split, grid", [
    (40, 72, 100, (16, 32, 16), 3, (5,)),  # ragged M, N and K; K slices of 3, 3 and 1 tiles
    (32, 64, 256, (16, 32, 32), 4, (3,)),  # fewer blocks than work units: blocks loop
    (64, 48, 64, (16, 16, 16), 1, (4,)),  # SPLIT=1: a plain store, no workspace
])
def test_split_k_kernel_matches_numpy_and_leaves_its_workspace_clean(m, n, k, tiles, split,
                                                                       grid):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    w = np.zeros((m, n), np.float32)
    arrived = np.zeros(-(-m // tiles[0]) * -(-n // tiles[1]), np.int32)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    for launch in range(2):  # the second launch starts from what the first left behind
        c = np.full((m, n), np.nan, np.float16)
        tile_lab.emulate(gk.gemm_splitk, grid, (a, b, c, w, arrived, *tiles, 2, 4, split))
        np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-3, atol=2e-2,
                                   err_msg=f"launch {launch}")
        assert not w.any() and not arrived.any()


def test_split_k_partials_really_meet_in_the_workspace():
    # with the counter already at SPLIT-2, the first slice to arrive is taken as the last: it
    # writes out only its own partial, so C differs from the full product (the test can fail)
    rng = np.random.default_rng(8)
    a = rng.standard_normal((16, 64)).astype(np.float16)
    b = rng.standard_normal((64, 16)).astype(np.float16)
    w = np.zeros((16, 16), np.float32)
    arrived = np.array([2], np.int32)
    c = np.zeros((16, 16), np.float16)
    tile_lab.emulate(gk.gemm_splitk, (1,), (a, b, c, w, arrived, 16, 16, 16, 1, 4, 4))
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.abs(c.astype(np.float32) - ref).max() > 0.1


def test_list_and_markdown_run_without_a_gpu(capsys, tmp_path):
    sw.main(["--list", "--rows", "bf16 128x8192x8192", "--max-configs", "3"])
    out = capsys.readouterr().out
    assert out.startswith("11 bf16 128x8192x8192: 3 configs") and "SPLIT=2" in out
    rec = {"name": "fp16 4096x4096x4096", "row": {}, "status": "skipped",
           "reason": "budget: 3 s left, a row needs about 20 s", "runs": []}
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"rows": [rec]}))
    sw.main(["--markdown", str(path)])
    out = capsys.readouterr().out
    assert "| fp16 4096x4096x4096 | skipped: budget: 3 s left" in out
    assert "0 of 0 measured rows" in out


def test_tune_waits_for_the_compiles_started_with_the_sweep_and_keeps_the_pool(monkeypatch):
    """The sweep's compile plumbing on the CPU (tileiras runs here): every row's compiles are
    sent to one pool at the start; tile_lab.tune, handed them through SweepMeasurer, measures
    the configs as their compiles finish and leaves the shared pool open for the next row.
    Timing is replaced by a scripted measurement (no GPU)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import sweep_common as sc

    import tile_lab.gpu as tg
    from tile_lab.gpu.measurement import Measurement
    from tile_lab.tuning import TuneOptions
    from tile_lab.tuning.parallel_compile import Precompiler

    row = sw.GemmRow("fp16", 256, 256, 512)
    # the atomic split-K schedule's first two (the skinny schedules are tested elsewhere)
    configs = [c for c in sw.candidates(row, max_configs=16)[0] if c["schedule"] == "splitk"]
    configs = configs[:2]
    kernels = gsr.schedules()
    a = np.zeros((256, 512), np.float16)
    b = np.zeros((512, 256), np.float16)
    c = np.zeros((256, 256), np.float16)
    w = np.zeros((1, 1), np.float32)
    arrived = np.zeros(16, np.int32)

    def args(cfg):
        return (a, b, c, w, arrived, *(cfg[k] for k in ("TM", "TN", "TK", "GROUP", "LAT",
                                                        "SPLIT")))

    timed = {}

    def fake_bench_work(work, *, flops, timing, params):
        t = 1e-3 * (1 + params["LAT"] / 100)
        timed[sw.key(params)] = timing.samples
        return Measurement(kernel="gemm_splitk", mode="cold", grid=(1,), samples_s=(t,),
                           mean_s=t, median_s=t, min_s=t, std_s=0.0, ci95_s=0.0, flops=flops)

    monkeypatch.setattr(tg, "bench_work", fake_bench_work)
    monkeypatch.setattr(tg, "kernel_work", lambda kernel, grid, args: (kernel, grid))
    space = sw.space_for(configs)
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    try:
        ahead = Precompiler(kernels, space.configs("sm_90"), args,
                            kernels.knob_kinds(space), "sm_90", 2,
                            executor=sc.KeepOpen(pool))
        result = tile_lab.tune(kernels, space, lambda cfg: sw.grid_for(256, 256, cfg),
                               args, options=TuneOptions(progress=False, arch="sm_90"),
                               measure=sc.SweepMeasurer(row.flops, ahead=ahead))
        assert not result.failures, result.summary()
        assert sorted(timed) == sorted(sw.key(cfg) for cfg in configs)
        assert result.best.config.as_dict() == configs[0]  # LAT 4 beats LAT 6 here
        assert all(f.done() and f.result()[1] is None for f in ahead.futures.values())
        assert set(result.compile_s) == set(ahead.futures)  # compile times from the workers
        assert pool.submit(sum, (1, 2)).result(timeout=60) == 3  # still open for the next row
    finally:
        pool.shutdown(cancel_futures=True)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_split_k_kernel_on_the_gpu_matches_torch_on_consecutive_launches(dtype):
    """The atomics and the arrival counter on real hardware: every split config of a
    tall-skinny and a ragged shape matches torch.matmul on two launches in a row (a workspace
    or counter left dirty by the first launch would break the second)."""
    pytest.importorskip("torch")
    backend = sw.GemmBackend()
    for row in (sw.GemmRow(dtype, 128, 2048, 4096), sw.GemmRow(dtype, 200, 1000, 3000)):
        configs = [sw.cfg(**t, split=s) for t in sw.SPLIT_TILES for s in (1, 2, 4)]
        # and the new schedules (stream-K, workspace split-K, padded copies) on the same rows
        configs += gsr.skinny_configs(row.m)[:4] + gsr.unaligned_configs()[:4]
        ops = backend._operands(row, configs)
        for c in configs:
            assert backend._verified(ops, c) < 1e-2, (row.name, c)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_hybrid_on_the_gpu_matches_torch_on_consecutive_launches(dtype):
    """dp_streamk's two launches on real hardware (TMA partial stores, then the fix-up launch
    reading them): 256 ragged tiles of 256x256 (58 stream-K on 66 slots of an H100/H200) and
    81 tiles, each config twice in a row against torch.matmul."""
    pytest.importorskip("torch")
    backend = sw.GemmBackend()
    for row in (sw.GemmRow(dtype, 4000, 4000, 512), sw.GemmRow(dtype, 2200, 2200, 1000)):
        configs = sw.hybrid_configs()
        ops = backend._operands(row, configs)
        for c in configs:
            assert backend._verified(ops, c) < 1e-2, (row.name, c)
