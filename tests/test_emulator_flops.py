"""The emulator counts tensor-core work (``Trace.mma_calls``) and runs subsets of blocks."""

from __future__ import annotations

import inspect
import json

import cuda.tile as ct
import ml_dtypes
import numpy as np
import pytest

import tile_lab
from tests.corpus.correct import _gemm_args, gemm, vector_add
from tile_lab._cutile_compat import python_function
from tile_lab.errors import EmulationError
from tile_lab.tracing.trace import MmaCall, Trace


def _line_of(func, needle: str) -> int:
    lines, first = inspect.getsourcelines(python_function(func))
    return first + next(i for i, text in enumerate(lines) if needle in text)


@ct.kernel
def batched_mma(A, B, C, BATCH: ct.Constant[int], TM: ct.Constant[int], TN: ct.Constant[int],
                TK: ct.Constant[int]):
    a = ct.load(A, (0, ct.bid(0), 0), (BATCH, TM, TK))
    b = ct.load(B, (0, 0, 0), (BATCH, TK, TN))
    acc = ct.full((BATCH, TM, TN), 0, dtype=ct.float32)
    ct.store(C, (0, ct.bid(0), 0), ct.mma(a, b, acc))


@ct.kernel
def matmul_twice(A, B, C, T: ct.Constant[int]):
    a = ct.load(A, (ct.bid(0), 0), (T, T))
    b = ct.load(B, (0, 0), (T, T))
    c = ct.matmul(a, b) + a @ b  # two products: the function and the operator
    ct.store(C, (ct.bid(0), 0), c)


@ct.kernel
def scaled_mma(A, AS, B, BS, C, TM: ct.Constant[int], TN: ct.Constant[int],
               TK: ct.Constant[int]):
    a = ct.load(A, (ct.bid(0), 0), (TM, TK))
    sa = ct.load(AS, (ct.bid(0), 0), (TM, TK // 32))
    b = ct.load(B, (0, 0), (TK, TN))
    sb = ct.load(BS, (0, 0), (TK // 32, TN))
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    ct.store(C, (ct.bid(0), 0), ct.mma_scaled(a, sa, b, sb, acc))


def test_a_k_loop_gemm_records_every_mma_with_its_tile_shape_block_line_and_iteration():
    args = _gemm_args(np.random.default_rng(0))  # M=80, N=96, K=72; tiles 32x32x16
    t = tile_lab.trace(gemm, (3, 3), args)
    k_tiles = 5  # ceil(72 / 16)
    assert len(t.mma_calls) == 3 * 3 * k_tiles
    line = _line_of(gemm, "ct.mma(")
    first_block = [c for c in t.mma_calls if c.block == (0, 0, 0)]
    assert [c.iteration for c in first_block] == list(range(k_tiles))
    assert {(c.op, c.m, c.n, c.k, c.batch, c.dtype, c.line) for c in t.mma_calls} == {
        ("mma", 32, 32, 16, 1, "float16", line)}
    assert t.mma_calls[0].filename.endswith("correct.py")
    # padded tiles count in full: 3x3 output tiles of 32x32, 5 K-steps of 16
    assert t.mma_flops == 2 * 96 * 96 * 80
    assert t.mma_flops_by_block() == {b: 2 * 32 * 32 * 16 * k_tiles for b in t.blocks}


def test_a_batched_3d_mma_counts_its_batch():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 64, 16)).astype(np.float16)
    b = rng.standard_normal((4, 16, 32)).astype(np.float16)
    c = np.zeros((4, 64, 32), np.float32)
    t = tile_lab.trace(batched_mma, (2,), (a, b, c, 4, 32, 32, 16))
    assert [(c.m, c.n, c.k, c.batch) for c in t.mma_calls] == [(32, 32, 16, 4)] * 2
    assert t.mma_flops == 2 * 4 * 64 * 32 * 16
    np.testing.assert_allclose(c, np.matmul(a.astype(np.float32), b.astype(np.float32)),
                               rtol=1e-5, atol=1e-5)


def test_matmul_function_and_operator_both_count():
    a = np.ones((32, 16), np.float32)
    b = np.ones((16, 16), np.float32)
    c = np.zeros((32, 16), np.float32)
    t = tile_lab.trace(matmul_twice, (2,), (a, b, c, 16))
    assert [c.op for c in t.mma_calls] == ["matmul"] * 4
    assert t.mma_flops == 4 * 2 * 16 * 16 * 16


def test_mma_scaled_counts_the_unscaled_product_shape():
    e4m3, e8m0 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu
    a = np.ones((32, 64), e4m3)
    b = np.ones((64, 16), e4m3)
    sa = np.ones((32, 2), e8m0)
    sb = np.ones((2, 16), e8m0)
    c = np.zeros((32, 16), np.float32)
    t = tile_lab.trace(scaled_mma, (2,), (a, sa, b, sb, c, 16, 16, 64))
    assert [(c.op, c.m, c.n, c.k, c.dtype) for c in t.mma_calls] == [
        ("mma_scaled", 16, 16, 64, "float8_e4m3fn")] * 2
    np.testing.assert_array_equal(c, np.full((32, 16), 64.0))


def test_a_kernel_without_matrix_products_records_none():
    n = 1000
    t = tile_lab.trace(vector_add, (8,), (np.ones(n, np.float32), np.ones(n, np.float32),
                                          np.zeros(n, np.float32), 128))
    assert t.mma_calls == () and t.mma_flops == 0
    assert set(t.mma_flops_by_block().values()) == {0}


def test_blocks_runs_only_the_given_blocks_in_grid_order():
    a, b, c, *tiles = _gemm_args(np.random.default_rng(2))
    t = tile_lab.trace(gemm, (3, 3), (a, b, c, *tiles), blocks=[(2, 2), (0,), (2, 2), (1, 0, 0)])
    assert t.blocks_run == ((0, 0, 0), (1, 0, 0), (2, 2, 0)) and t.blocks == list(t.blocks_run)
    assert not t.complete
    assert {x.block for x in t.accesses} == set(t.blocks_run)
    assert {m.block for m in t.mma_calls} == set(t.blocks_run)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    # block (bm, bn) writes C[32*bm : 32*bm+32, 32*bn : 32*bn+32]
    np.testing.assert_allclose(c[:64, :32], ref[:64, :32], rtol=1e-4, atol=1e-3)  # (0|1, 0)
    np.testing.assert_allclose(c[64:, 64:], ref[64:, 64:], rtol=1e-4, atol=1e-3)  # (2, 2)
    assert not c[:, 32:64].any() and not c[:64, 64:].any() and not c[64:, :64].any()


def test_blocks_covering_the_grid_make_a_complete_trace():
    args = (np.ones(256, np.float32), np.ones(256, np.float32), np.zeros(256, np.float32), 128)
    t = tile_lab.trace(vector_add, (2,), args, blocks=[(1,), (0,)])
    assert t.complete and t.blocks == [(0, 0, 0), (1, 0, 0)]


@pytest.mark.parametrize("blocks", [[(3, 0)], [(0, -1)], [(0, 0, 0, 0)], [], "0", [(0.5,)]])
def test_a_block_outside_the_grid_or_malformed_is_a_clear_error(blocks):
    args = _gemm_args(np.random.default_rng(3))
    with pytest.raises(EmulationError, match="blocks"):
        tile_lab.trace(gemm, (3, 3), args, blocks=blocks)


def test_mma_calls_and_blocks_run_round_trip_through_json():
    t = tile_lab.trace(gemm, (3, 3), _gemm_args(np.random.default_rng(4)), blocks=[(1, 2)])
    back = Trace.from_json(t.to_json())
    assert back.mma_calls == t.mma_calls and back.blocks_run == t.blocks_run
    assert isinstance(back.mma_calls[0], MmaCall) and back.mma_flops == t.mma_flops


def test_a_trace_saved_without_mma_calls_loads_as_not_recorded():
    t = tile_lab.trace(vector_add, (1,), (np.ones(8, np.float32), np.ones(8, np.float32),
                                          np.zeros(8, np.float32), 8))
    old = json.loads(t.to_json())
    del old["mma_calls"], old["blocks_run"]  # the format before mma counting
    back = Trace.from_json(json.dumps(old))
    assert back.mma_calls is None and back.mma_flops is None and back.complete
    with pytest.raises(ValueError, match="did not record"):
        back.mma_flops_by_block()

