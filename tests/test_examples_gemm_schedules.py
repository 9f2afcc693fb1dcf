"""The skinny / stream-K GEMM schedules (tile_lab.examples.gemm_schedules), emulated against
NumPy: ragged and exact shapes, fp16 and bf16, even and uneven K division, and two consecutive
launches on one workspace (the arrival counters must come back zero, and a workspace full of
NaN from a previous run must not leak into C)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tile_lab
from tile_lab.examples.gemm_schedules import (
    _pieces,
    dp_streamk_grids,
    dp_streamk_split,
    gemm_dp_streamk,
    gemm_splitk_wide,
    gemm_splitk_ws,
    gemm_streamk,
    gemm_streamk_wide,
    splitk_grid,
    streamk_fixup,
    streamk_grid,
)

SHAPES = {"ragged": (40, 72, 200), "exact": (64, 64, 256)}
DTYPES = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}


def _operands(shape, dtype):
    m, n, k = shape
    rng = np.random.default_rng(m * 7 + k)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


def _check(c, ref, dtype):
    # products of rounded inputs summed in fp32; the output rounded once to 8 (bf16) or 11
    # (fp16) mantissa bits
    tol = 0.08 if dtype is ml_dtypes.bfloat16 else 0.02
    np.testing.assert_allclose(c.astype(np.float32), ref, atol=tol * np.abs(ref).max(), rtol=0)


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
@pytest.mark.parametrize("split", [1, 3, 4])
def test_splitk_workspace_matches_numpy_twice(shape, dtype, split):
    # K = 200 in TK = 32 steps is 7 steps: 3 slices of 3 (the last one short), 4 slices of 2
    # (uneven); K = 256 is 8 steps: 4 slices divide it evenly, 3 leave the last slice short.
    m, n, _ = SHAPES[shape]
    a, b, ref = _operands(SHAPES[shape], DTYPES[dtype])
    tm, tn, tk = 64, 32, 32
    tiles = -(-m // tm) * -(-n // tn)
    c = np.zeros((m, n), DTYPES[dtype])
    w = np.full((split, m, n), np.nan, np.float32)  # stale: never read before written
    arrived = np.zeros(tiles, np.int32)
    for launch in range(2):
        c[:] = np.nan
        tile_lab.emulate(gemm_splitk_ws, splitk_grid(m, n, tm, tn, split, slots=5),
                         (a, b, c, w, arrived, tm, tn, tk, 2, 1))
        _check(c, ref, DTYPES[dtype])
        assert not arrived.any(), f"launch {launch}: counters left {arrived}"


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
@pytest.mark.parametrize("slots", [1, 3, 5, 16])
def test_streamk_matches_numpy_twice(shape, dtype, slots):
    # 2-6 output tiles of 7-8 K steps over 1, 3, 5 or 16 blocks: ranges that cut tiles
    # unevenly, blocks that share one tile three ways, and one block doing everything.
    m, n, k = SHAPES[shape]
    a, b, ref = _operands(SHAPES[shape], DTYPES[dtype])
    tm, tn, tk = 64, 32, 32
    grid = streamk_grid(m, n, k, tm, tn, tk, slots)
    tiles = -(-m // tm) * -(-n // tn)
    c = np.zeros((m, n), DTYPES[dtype])
    w = np.full((2 * grid[0], tm, tn), np.nan, np.float32)
    arrived = np.zeros(tiles, np.int32)
    for launch in range(2):
        c[:] = np.nan
        tile_lab.emulate(gemm_streamk, grid, (a, b, c, w, arrived, tm, tn, tk, 2, 0))
        _check(c, ref, DTYPES[dtype])
        assert not arrived.any(), f"launch {launch}: counters left {arrived}"


def test_streamk_grid_never_exceeds_the_iterations():
    # 1 tile of 2 K steps: two blocks at most, whatever the SM count
    assert streamk_grid(64, 32, 64, 64, 32, 32, slots=132) == (2,)
    assert streamk_grid(128, 8192, 8192, 128, 128, 64, slots=132) == (132,)
    assert splitk_grid(128, 8192, 128, 64, 2, slots=132) == (132,)
    assert splitk_grid(64, 64, 64, 64, 2, slots=132) == (2,)


def test_a_dirty_counter_shows_in_the_output():
    # the control for the counter checks above: a counter left at 1 by a broken launch makes
    # the first slice of that tile believe it is last, so C is wrong there
    m, n, _ = SHAPES["exact"]
    a, b, ref = _operands(SHAPES["exact"], np.float16)
    c = np.zeros((m, n), np.float16)
    w = np.zeros((2, m, n), np.float32)
    arrived = np.array([1, 0], np.int32)
    tile_lab.emulate(gemm_splitk_ws, (1,), (a, b, c, w, arrived, 64, 32, 32, 2, 1))
    assert not np.allclose(c[:, :32].astype(np.float32), ref[:, :32], atol=0.5)


# The wide kernels reduce in row pieces: 64x256 tiles are 2 pieces of 32 rows for stream-K, and
# 2 (SPLIT 2) or 4 (SPLIT 4) pieces for split-K, so these shapes exercise the piece indexing.
WIDE = {"ragged": (40, 300, 200), "exact": (128, 512, 256)}


def test_wide_tiles_are_reduced_in_pieces():
    assert _pieces(64, 256, 8192) == 2
    assert [_pieces(64, 256 * s, 16384) for s in (1, 2, 4)] == [1, 2, 4]
    assert _pieces(128, 256, 8192) == 4 and _pieces(128, 64, 8192) == 1


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("shape", list(WIDE), ids=list(WIDE))
@pytest.mark.parametrize("slots", [1, 3, 5, 16])
def test_streamk_wide_matches_numpy_twice(shape, dtype, slots):
    # 2-4 output tiles of 7-8 K steps over 1-16 blocks: tiles cut between 2-4 blocks, and with
    # one block, whole tiles that go through the block's own slot one after another
    m, n, k = WIDE[shape]
    a, b, ref = _operands(WIDE[shape], DTYPES[dtype])
    tm, tn, tk = 64, 256, 32
    grid = streamk_grid(m, n, k, tm, tn, tk, slots)
    c = np.zeros((m, n), DTYPES[dtype])
    w = np.full((2 * grid[0], tm, tn), np.nan, np.float32)
    arrived = np.zeros(-(-m // tm) * -(-n // tn), np.int32)
    for launch in range(2):
        c[:] = np.nan
        tile_lab.emulate(gemm_streamk_wide, grid, (a, b, c, w, arrived, tm, tn, tk, 2, 1))
        _check(c, ref, DTYPES[dtype])
        assert not arrived.any(), f"launch {launch}: counters left {arrived}"


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("shape", list(WIDE), ids=list(WIDE))
@pytest.mark.parametrize("split", [1, 2, 4])
def test_splitk_wide_matches_numpy_twice(shape, dtype, split):
    # K = 200 is 7 steps of 32: SPLIT 4 gives slices of 2, 2, 2, 1; on 5 blocks some blocks
    # take two units, so a block's plane is reused across tiles
    m, n, _ = WIDE[shape]
    a, b, ref = _operands(WIDE[shape], DTYPES[dtype])
    tm, tn, tk = 64, 256, 32
    c = np.zeros((m, n), DTYPES[dtype])
    w = np.full((split, m, n), np.nan, np.float32)
    arrived = np.zeros(-(-m // tm) * -(-n // tn), np.int32)
    for launch in range(2):
        c[:] = np.nan
        tile_lab.emulate(gemm_splitk_wide, splitk_grid(m, n, tm, tn, split, slots=5),
                         (a, b, c, w, arrived, tm, tn, tk, 2, split))
        _check(c, ref, DTYPES[dtype])
        assert not arrived.any(), f"launch {launch}: counters left {arrived}"


@pytest.mark.parametrize("kernel", ["streamk_wide", "splitk_wide"])
def test_a_dirty_counter_breaks_the_wide_kernels(kernel):
    # the control: a counter left at 1 makes the first tile's reduction run early (split-K) or
    # never (stream-K, one block: the count it waits for is 0), so that tile of C is wrong
    m, n, _ = WIDE["exact"]
    a, b, ref = _operands(WIDE["exact"], np.float16)
    tm, tn, tk = 64, 256, 32
    c = np.full((m, n), np.nan, np.float16)
    arrived = np.zeros(4, np.int32)
    arrived[0] = 1
    if kernel == "streamk_wide":
        w = np.zeros((2, tm, tn), np.float32)
        tile_lab.emulate(gemm_streamk_wide, (1,), (a, b, c, w, arrived, tm, tn, tk, 2, 1))
    else:
        w = np.zeros((2, m, n), np.float32)
        tile_lab.emulate(gemm_splitk_wide, (1,), (a, b, c, w, arrived, tm, tn, tk, 2, 2))
    tile = c[:tm, :tn].astype(np.float32)
    assert not np.allclose(tile, ref[:tm, :tn], atol=0.5)
    np.testing.assert_allclose(c[tm:, :tn].astype(np.float32), ref[tm:, :tn],
                               atol=0.02 * np.abs(ref).max(), rtol=0)


# Data-parallel + stream-K on 12 output tiles (3x4 of 32x32 over a 72x100 output: ragged in M
# and N) of 7 K steps (K = 200 at TK 32, the last step ragged):
# blocks, SK_WAVES -> (data-parallel tiles, stream-K tiles) and what the stream-K part does.
HYBRID = {
    "5-blocks": (5, 1, (10, 2)),   # 14 iterations on 5 blocks: each tail tile over 3 blocks
    "7-blocks": (7, 1, (7, 5)),    # 35 on 7: 5 each, tiles cut between 2 blocks
    "11-blocks": (11, 1, (11, 1)),  # 7 on 11: 4 blocks with an empty range, 1 tile on 7
    "5-blocks-sk2": (5, 2, (5, 7)),  # one wave more: 49 on 5, ~2 tiles a block, some whole
    "4-blocks": (4, 1, (12, 0)),   # 12 % 4 == 0: plain data-parallel
    "12-blocks-sk2": (12, 2, (12, 0)),  # one block per tile: no partial wave
}


def test_the_hybrid_splits_off_the_partial_wave():
    # 256 tiles of 256x256 on 66 2-CTA slots: 3 full waves whole, 58 tiles stream-K (or one
    # wave more with SK_WAVES 2); 1024 tiles: 15 waves whole; whole waves: no stream-K
    assert dp_streamk_split(256, 66, 1) == (198, 58)
    assert dp_streamk_split(256, 66, 2) == (132, 124)
    assert dp_streamk_split(1024, 66, 2) == (924, 100)
    assert dp_streamk_split(264, 66, 2) == (264, 0)
    assert dp_streamk_split(70, 66, 2) == (66, 4)  # under two waves: one stays whole
    assert [dp_streamk_split(12, b, s) for b, s, _ in HYBRID.values()] == [
        want for _, _, want in HYBRID.values()]
    # the fix-up: one block per (stream-K tile, piece of 32 rows); none for whole waves
    assert dp_streamk_grids(4096, 4096, 256, 256, 1, 66) == ((66,), (58 * 8,))
    assert dp_streamk_grids(8192, 8192, 256, 256, 1, 1024) == ((1024,), (0,))


def _hybrid(a, b, c, w, blocks, sk_waves, *, fixup=True):
    m, n = c.shape
    tm = tn = tk = 32
    for phase, out in ((0, c), (1, w)):  # whole tiles into C, then the partials into W
        tile_lab.emulate(gemm_dp_streamk, (blocks,),
                         (a, b, out, tm, tn, tk, 2, 2, sk_waves, phase))
    grid = dp_streamk_grids(m, n, tm, tn, sk_waves, blocks)[1]
    if fixup and grid[0]:
        tile_lab.emulate(streamk_fixup, grid, (a, c, w, blocks, tm, tn, tk, 2, sk_waves))


@pytest.mark.parametrize("case", list(HYBRID), ids=list(HYBRID))
def test_dp_streamk_matches_numpy_twice(case):
    blocks, sk_waves, (_, sk) = HYBRID[case]
    m, n, k = 72, 100, 200
    dtype = ml_dtypes.bfloat16 if case == "7-blocks" else np.float16
    a, b, ref = _operands((m, n, k), dtype)
    c = np.zeros((m, n), dtype)
    w = np.full(((sk_waves + 1) * blocks, 32, 32), np.nan, np.float32)  # stale until written
    for _ in range(2):
        c[:] = np.nan
        _hybrid(a, b, c, w, blocks, sk_waves)
        _check(c, ref, dtype)
    # the stream-K part went through the workspace; whole waves never touch it
    assert np.isnan(w).all() == (sk == 0)


def test_the_hybrid_fixup_reads_only_slots_written_by_phase_1():
    # the control: a workspace slot read before it was written is NaN, and shows in C. Here
    # the fix-up runs on a fresh NaN workspace (PHASE 1 wrote another): exactly the two
    # stream-K tiles (the last two in the grouped order, GROUP 2) come out NaN
    m, n, k = 72, 100, 200
    a, b, ref = _operands((m, n, k), np.float16)
    c = np.full((m, n), np.nan, np.float16)
    w = np.full((10, 32, 32), np.nan, np.float32)
    _hybrid(a, b, c, w.copy(), 5, 1, fixup=False)
    tile_lab.emulate(streamk_fixup, dp_streamk_grids(m, n, 32, 32, 1, 5)[1],
                     (a, c, w, 5, 32, 32, 32, 2, 1))
    bad = np.isnan(c.astype(np.float32))
    # tiles 10 and 11 of 12 in the grouped order: row block 2 (rows 64-71), columns 64-99
    assert bad[64:, 64:].all() and not bad[:64].any() and not bad[:, :64].any()
    _check(c[:64], ref[:64], np.float16)
