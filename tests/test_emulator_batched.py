"""All blocks in one NumPy pass (``emulator/batched.py``): where a kernel runs batched it
gives exactly the block-by-block result, and every kernel it cannot vouch for runs block by
block."""

from __future__ import annotations

import copy

import cuda.tile as ct
import numpy as np
import pytest
from corpus import buggy, correct

import tile_lab
from tile_lab.emulator import batched, blocks

CASES = {c.name: c for c in (*correct.CASES, *buggy.CASES)}


@pytest.fixture
def paths(monkeypatch):
    """Which path each launch took: "batched" or "blocks"."""
    taken: list[str] = []
    real_try, real_blocks = batched.try_run, blocks.run_blocks

    def try_run(*a, **k):
        ok = real_try(*a, **k)
        if ok:
            taken.append("batched")
        return ok

    def run_blocks(*a, **k):
        taken.append("blocks")
        return real_blocks(*a, **k)

    monkeypatch.setattr(batched, "try_run", try_run)
    monkeypatch.setattr(blocks, "run_blocks", run_blocks)
    return taken


def _block_by_block(kernel, grid, args):
    with blocks.limits(max_steps=10**9):  # a step budget always runs block by block
        tile_lab.emulate(kernel, grid, args)


@pytest.mark.parametrize("pass_blocks", [4096, 3], ids=["one-pass", "passes-of-3"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_corpus_kernel_gives_the_block_by_block_result_bit_for_bit(name, pass_blocks,
                                                                         paths, monkeypatch):
    import warnings

    monkeypatch.setattr(batched, "MIN_BLOCKS", 1)  # the corpus's grids are small
    monkeypatch.setattr(batched, "BLOCKS_PER_PASS", pass_blocks)
    case = CASES[name]
    grid, args = case.build()
    twin = copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the buggy corpus warns (undetermined values)
        try:
            _block_by_block(case.kernel, grid, twin)
        except Exception as exc:  # a buggy kernel may fail: the batched path must fail too
            with pytest.raises(type(exc)):
                tile_lab.emulate(case.kernel, grid, args)
            return
        tile_lab.emulate(case.kernel, grid, args)
    for a, b in zip(args, twin):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=name)
    assert paths[0] == "blocks"  # the reference run (the corpus's shapes are mostly ragged
    # on purpose, so most of its kernels fall back; the kernels below run batched)


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, (bid,), ct.load(a, (bid,), (TILE,)) + ct.load(b, (bid,), (TILE,)) * 2)


@ct.kernel
def gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        acc = ct.mma(ct.load(A, (bm, k), (TM, TK)), ct.load(B, (k, bn), (TK, TN)), acc)
    ct.store(C, (bm, bn), acc)


def test_straight_line_kernels_run_batched_with_the_same_result(paths):
    rng = np.random.default_rng(1)
    a, b = (
        rng.standard_normal(64 * 32).astype(np.float32),
        rng.standard_normal(64 * 32).astype(np.float32),
    )
    c, c_ref = np.zeros_like(a), np.zeros_like(a)
    tile_lab.emulate(vadd, (64,), (a, b, c, 32))
    _block_by_block(vadd, (64,), (a, b, c_ref, 32))
    np.testing.assert_array_equal(c, c_ref)
    A = rng.standard_normal((128, 96)).astype(np.float32)
    B = rng.standard_normal((96, 64)).astype(np.float32)
    C, C_ref = np.zeros((128, 64), np.float32), np.zeros((128, 64), np.float32)
    tile_lab.emulate(gemm, (8, 4), (A, B, C, 16, 16, 32))
    _block_by_block(gemm, (8, 4), (A, B, C_ref, 16, 16, 32))
    np.testing.assert_array_equal(C, C_ref)
    assert paths == ["batched", "blocks", "batched", "blocks"]


@ct.kernel
def depends_on_block(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, (bid,), (TILE,))
    if bid % 2 == 0:
        t = t * 3
    ct.store(y, (bid,), t)


@ct.kernel
def in_place(x, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(x, (bid,), ct.load(x, (bid,), (TILE,)) + 1)


@ct.kernel
def everyone_writes_tile_0(x, y, TILE: ct.Constant[int]):
    ct.store(y, (0,), ct.load(x, (ct.bid(0),), (TILE,)))


@ct.kernel
def ragged(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, (bid,), ct.load(x, (bid,), (TILE,), padding_mode=ct.PaddingMode.ZERO) + 1)


def test_what_it_cannot_vouch_for_runs_block_by_block(paths):
    x = np.arange(32 * 8, dtype=np.float32)
    y = np.zeros_like(x)
    tile_lab.emulate(depends_on_block, (32,), (x, y, 8))  # control flow on the block id
    want = x.reshape(32, 8) * np.where(np.arange(32) % 2 == 0, 3, 1)[:, None]
    np.testing.assert_array_equal(y, want.ravel())
    tile_lab.emulate(in_place, (32,), (y, 8))  # loaded and stored: blocks could interact
    np.testing.assert_array_equal(y, want.ravel() + 1)
    z = np.zeros(8, np.float32)
    tile_lab.emulate(everyone_writes_tile_0, (32,), (x, z, 8))  # a race: the last block wins
    np.testing.assert_array_equal(z, x[-8:])
    assert paths == ["blocks"] * 3
    assert depends_on_block._annotated_function.pyfunc in batched._NEVER  # not tried again
    assert in_place._annotated_function.pyfunc not in batched._NEVER  # only for these args


def test_small_grids_traces_and_step_budgets_run_block_by_block(paths):
    x = np.arange(8 * 4, dtype=np.float32)
    tile_lab.emulate(vadd, (8,), (x, x, np.zeros_like(x), 4))  # < MIN_BLOCKS
    big = np.arange(64 * 4, dtype=np.float32)
    tile_lab.trace(vadd, (64,), (big, big, np.zeros_like(big), 4))
    _block_by_block(vadd, (64,), (big, big, np.zeros_like(big), 4))
    assert paths == ["blocks"] * 3


@ct.kernel
def rmsnorm(x, w, y, eps: float, N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, N)).astype(ct.float32)
    ms = ct.sum(t * t, axis=1, keepdims=True) / N
    out = t * ct.rsqrt(ms + eps) * ct.load(w, (0, 0), (1, N))
    ct.store(y, (row, 0), out.astype(y.dtype))


@ct.kernel
def softmax_rows(x, y, N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, N))
    e = ct.exp(t - ct.max(t, axis=-1, keepdims=True))
    ct.store(y, (row, 0), e / ct.sum(e, 1, keepdims=True))


@ct.kernel
def relu_scale(x, y, alpha, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, (i, ct.bid(1)), (TILE, TILE))
    ct.store(y, (i, ct.bid(1)), ct.where(t > 0, t * alpha, -abs(t) * 0.0))


def test_norms_and_elementwise_kernels_run_batched_bit_for_bit(paths):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 128)).astype(np.float16)
    w = rng.standard_normal((1, 128)).astype(np.float32)
    y, y_ref = np.zeros_like(x), np.zeros_like(x)
    tile_lab.emulate(rmsnorm, (64,), (x, w, y, 1e-6, 128))
    _block_by_block(rmsnorm, (64,), (x, w, y_ref, 1e-6, 128))
    np.testing.assert_array_equal(y, y_ref)
    s = rng.standard_normal((32, 64)).astype(np.float32)
    o, o_ref = np.zeros_like(s), np.zeros_like(s)
    tile_lab.emulate(softmax_rows, (32,), (s, o, 64))
    _block_by_block(softmax_rows, (32,), (s, o_ref, 64))
    np.testing.assert_array_equal(o, o_ref)
    r = rng.standard_normal((64, 64)).astype(np.float32)
    q, q_ref = np.zeros_like(r), np.zeros_like(r)
    tile_lab.emulate(relu_scale, (8, 8), (r, q, 0.5, 8))
    _block_by_block(relu_scale, (8, 8), (r, q_ref, 0.5, 8))
    np.testing.assert_array_equal(q, q_ref)
    assert paths == ["batched", "blocks"] * 3


@ct.kernel
def sums_and_differences(a, b, s, d, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, (bid,), (TILE,))
    y = ct.load(b, (bid,), (TILE,))
    total = x + y  # used by a store and by another operation
    ct.store(s, (bid,), total)
    ct.store(d, (bid,), (x - y) * y + total)


@ct.kernel
def wrapping_add(a, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, (bid,), ct.load(a, (bid,), (TILE,)) + ct.load(a, (bid,), (TILE,)))


def test_arithmetic_computed_straight_into_the_array_gives_the_block_by_block_result(paths):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(64 * 16).astype(np.float32)
    b = rng.standard_normal(64 * 16).astype(np.float32)
    out = [np.zeros_like(a) for _ in range(4)]
    tile_lab.emulate(sums_and_differences, (64,), (a, b, out[0], out[1], 16))
    _block_by_block(sums_and_differences, (64,), (a, b, out[2], out[3], 16))
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_array_equal(out[1], out[3])
    np.testing.assert_array_equal(out[0], a + b)
    big = np.full(32 * 8, 2**31 - 1, np.int32)  # int32 wraps around, as on the GPU
    c, c_ref = np.zeros_like(big), np.zeros_like(big)
    tile_lab.emulate(wrapping_add, (32,), (big, c, 8))
    _block_by_block(wrapping_add, (32,), (big, c_ref, 8))
    np.testing.assert_array_equal(c, c_ref)
    assert (c == -2).all()
    assert paths == ["batched", "blocks", "batched", "blocks"]


@ct.kernel
def transpose_tiles(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0), ct.bid(1)), (TILE, TILE))
    ct.store(y, (ct.bid(1), ct.bid(0)), t * 2)


@ct.kernel
def two_blocks_per_tile(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0), ct.bid(1)), (TILE, TILE))
    ct.store(y, (ct.bid(0) // 2, ct.bid(1)), t)


def test_stores_to_distinct_tiles_run_batched_and_a_tile_written_twice_does_not(paths):
    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    y, y_ref = np.zeros((16, 32), np.float32), np.zeros((16, 32), np.float32)
    tile_lab.emulate(transpose_tiles, (8, 4), (x, y, 4))  # tile (i, j) to (j, i)
    _block_by_block(transpose_tiles, (8, 4), (x, y_ref, 4))
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_array_equal(y[:4, :4], x[:4, :4] * 2)
    z, z_ref = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    tile_lab.emulate(two_blocks_per_tile, (8, 4), (x, z, 4))  # blocks 2k, 2k+1: one tile
    _block_by_block(two_blocks_per_tile, (8, 4), (x, z_ref, 4))
    np.testing.assert_array_equal(z, z_ref)
    assert paths == ["batched", "blocks", "blocks", "blocks"]


def test_batched_launches_on_two_threads_each_see_their_own_run():
    from concurrent.futures import ThreadPoolExecutor

    def launch(seed: int) -> bool:
        a = np.random.default_rng(seed).standard_normal(64 * 32).astype(np.float32)
        b = a[::-1].copy()
        c = np.zeros_like(a)
        for _ in range(20):
            tile_lab.emulate(vadd, (64,), (a, b, c, 32))
            if not np.array_equal(c, a + b * 2):
                return False
        return True

    with ThreadPoolExecutor(2) as pool:
        assert all(pool.map(launch, range(6)))


@ct.kernel
def spins_everywhere(x, TILE: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (TILE,))
    while True:
        t = t + 1
    ct.store(x, (ct.bid(0),), t)


def test_ctrl_c_stops_a_batched_run_and_nothing_is_written(ctrl_c_delivered):
    import _thread
    import threading

    from tile_lab.emulator.blocks import EmulationInterrupted

    x = np.zeros(32 * 8, np.float32)
    out = np.zeros_like(x)
    # cuTile's front-end check first (its first call imports torch, 2-3 s): the Ctrl-C below
    # is meant for the run, not for that import (tests/test_cutile_compat.py has that case)
    from tile_lab.emulator import gate
    gate.check(spins_everywhere, (x, 8))
    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(EmulationInterrupted) as info:
            tile_lab.emulate(spins_everywhere, (32,), (x, 8))
    finally:
        timer.cancel()
    text = str(info.value)
    # the interrupt lands in the loop: at its `while True:` head or in its body, both true
    first = spins_everywhere._annotated_function.pyfunc.__code__.co_firstlineno
    assert "all 32 blocks together (batched)" in text
    assert any(f":{first + k};" in text for k in (3, 4)), text
    assert "no block's writes reached the arrays" in text
    assert (x == out).all()


@ct.kernel
def row_softmax(x, y, TILE: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.NEG_INF)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(row, 0), tile=e / ct.sum(e, axis=1, keepdims=True))


@ct.kernel
def tiles_2d(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0), ct.bid(1)), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (ct.bid(0), ct.bid(1)), t * 2 + 1)


@ct.kernel
def ragged_undetermined(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, (bid,), ct.load(x, (bid,), (TILE,)) + 1)


def test_tiles_past_the_arrays_end_run_batched_with_the_block_by_block_bits(paths):
    # a load with a padding mode reads its padding value past the end, a store drops those
    # lanes: both defined, so the launch runs batched, and gives the block-by-block bits
    short = np.arange(32 * 8 - 3, dtype=np.float32)  # the last tile is ragged
    out = np.zeros_like(short)
    tile_lab.emulate(ragged, (32,), (short, out, 8))
    np.testing.assert_array_equal(out, short + 1)

    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 763)).astype(np.float32)  # every row's tile is ragged
    y, y_ref = np.zeros_like(x), np.zeros_like(x)
    tile_lab.emulate(row_softmax, (40,), (x, y, 1024))
    _block_by_block(row_softmax, (40,), (x, y_ref, 1024))
    np.testing.assert_array_equal(y.view(np.uint32), y_ref.view(np.uint32))

    a = rng.standard_normal((37, 45)).astype(np.float32)  # ragged on both axes, 3 groups
    b, b_ref = np.full_like(a, 7.0), np.full_like(a, 7.0)
    tile_lab.emulate(tiles_2d, (5, 6), (a, b, 8, 8))
    _block_by_block(tiles_2d, (5, 6), (a, b_ref, 8, 8))
    np.testing.assert_array_equal(b, a * 2 + 1)
    np.testing.assert_array_equal(b, b_ref)
    assert paths == ["batched", "batched", "blocks", "batched", "blocks"]


def test_ragged_tiles_without_a_padding_mode_or_outside_the_array_run_block_by_block(paths):
    import warnings

    short = np.arange(32 * 8 - 3, dtype=np.float32)
    out = np.zeros_like(short)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undetermined lanes: the block-by-block run taints
        tile_lab.emulate(ragged_undetermined, (32,), (short, out, 8))
    np.testing.assert_array_equal(out, short + 1)
    # a grid one block too large: the last block's tiles lie entirely outside (it warns)
    out2 = np.zeros_like(short)
    with pytest.warns(Warning, match="entirely outside"):
        tile_lab.emulate(ragged, (33,), (short, out2, 8))
    np.testing.assert_array_equal(out2, short + 1)
    assert paths == ["blocks", "blocks"]


def test_a_launch_runs_in_passes_of_blocks_with_the_block_by_block_bits(paths, monkeypatch):
    # passes of 5 blocks: every pass's stores are written before the next pass runs
    monkeypatch.setattr(batched, "BLOCKS_PER_PASS", 5)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((37, 100)).astype(np.float32)
    y, y_ref = np.zeros_like(x), np.zeros_like(x)
    tile_lab.emulate(row_softmax, (37,), (x, y, 128))
    _block_by_block(row_softmax, (37,), (x, y_ref, 128))
    np.testing.assert_array_equal(y.view(np.uint32), y_ref.view(np.uint32))
    a = np.arange(32 * 8, dtype=np.float32)  # 1-d, block i takes tile i: views per pass
    b = np.zeros_like(a)
    tile_lab.emulate(ragged, (32,), (a, b, 8))
    np.testing.assert_array_equal(b, a + 1)
    assert paths == ["batched", "blocks", "batched"]


def test_a_pass_that_cannot_run_batched_after_others_were_written_reruns_block_by_block(
        paths, monkeypatch):
    import warnings

    # only the last pass holds the ragged tile whose lanes are undetermined: the passes
    # before it were written, then every block runs again one by one, to the same result
    monkeypatch.setattr(batched, "BLOCKS_PER_PASS", 8)
    short = np.arange(32 * 8 - 3, dtype=np.float32)
    out = np.full_like(short, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tile_lab.emulate(ragged_undetermined, (32,), (short, out, 8))
    np.testing.assert_array_equal(out, short + 1)
    assert paths == ["blocks"]
    assert ragged_undetermined._annotated_function.pyfunc not in batched._NEVER
