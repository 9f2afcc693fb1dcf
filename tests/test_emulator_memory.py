"""Differential tests: tile-space load/store, padding modes, order, tiled views, slices,
gather/scatter and advanced indexing. Several expectations are the outputs printed in
cuTile's own API reference examples."""

from __future__ import annotations

import cuda.tile as ct
import ml_dtypes
import numpy as np
import pytest
from test_emulator_harness import Case

import tile_lab
from tile_lab._cutile_compat import python_function
from tile_lab.emulator import gate
from tile_lab.errors import EmulationError


@pytest.fixture(autouse=True)
def _emulator_checks_alone():
    """These tests are about the emulator's own checks and messages; cuTile's front end
    (which rejects the same kernels first, see test_emulator_gate.py) is switched off."""
    with gate.disabled():
        yield


PM = ct.PaddingMode


@ct.kernel
def copy_1d(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,), padding_mode=ct.PaddingMode.ZERO))


def padded_tail_kernel(mode):
    @ct.kernel
    def padded_tail(x, y, TILE: ct.Constant[int]):
        # the tile at index 1 of a 10-element array covers elements 8..15: 6 lanes padded
        ct.store(y, (0,), ct.load(x, (1,), (TILE,), padding_mode=mode))
    return padded_tail


def _padding_case(mode, pad):
    def ref(a):
        want = np.full(8, pad, np.float32)
        want[:2] = a[0][8:10]
        return {1: want}
    return Case(f"padding-{mode.name}", padded_tail_kernel(mode), (1,),
                lambda rng: (rng.normal(size=10).astype(np.float32), np.zeros(8, np.float32), 8),
                ref, atol=0, rtol=0)


@ct.kernel
def load_orders(x, f_out, p_out):
    for i in range(4):
        ct.store(f_out, (i, 0), ct.load(x, (i, 0), shape=(1, 4), order="F"))


@ct.kernel
def load_order_3d(x, out):
    for i in range(2):
        ct.store(out, (i, 0, 0), ct.load(x, (i, 0, 0), shape=(1, 2, 2), order=(0, 2, 1)))


@ct.kernel
def store_transposed(x, y):
    t = ct.load(x, (0, 0), (4, 8))
    ct.store(y, (0, 0), t, order="F")  # y[c, r] = t[r, c]


@ct.kernel
def scalar_loads_and_stores(x, y):
    for i in range(4):
        v = ct.load(x, (i,), shape=())
        ct.store(y, (i // 2, i % 2), tile=v * 10)


@ct.kernel
def partial_store(x):
    tile = ct.ones((4,), dtype=x.dtype)
    ct.store(x, (0,), tile)
    ct.store(x, (1,), tile * 2)


@ct.kernel
def tiled_views(x, out):
    tv = x.tiled_view((2, 4))
    ct.store(out, (0, 0), tv.load((1, 0)))
    tv2 = x.tiled_view((2, 4), traversal_steps=(1, 4))
    ct.store(out, (1, 0), tv2.load((1, 0)))


@ct.kernel
def tiled_view_store(y):
    tv = y.tiled_view(4)
    tv.store(1, ct.full((4,), 99, dtype=ct.int32))
    tv.atomic_store_add(0, ct.full((4,), 5, dtype=ct.int32))


@ct.kernel
def sliced(x, out, offset, length):
    sub = x.slice(axis=0, start=offset, stop=offset + length)
    ct.store(out, (0,), ct.load(sub, (1,), (4,)))


@ct.kernel
def gather_scatter(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    idx = ct.arange(TILE, dtype=ct.int32) + i * TILE
    v = ct.gather(x, idx, padding_value=-1.0)       # out-of-range lanes give -1
    ct.scatter(y, idx, v * 2.0, mask=idx % 2 == 0)  # odd lanes stay untouched


@ct.kernel
def gather_2d(x, out):
    rows = ct.arange(4, dtype=ct.int32)[:, None]
    cols = ct.arange(8, dtype=ct.int32)[None, :] - 2  # two columns out of range on the left
    ct.store(out, (0, 0), ct.gather(x, (rows, cols)))


@ct.kernel
def advanced(x, y, col_start):
    rows = ct.arange(4, dtype=ct.int32)
    tile = ct.load_advanced_indexing(x, (rows, ct.Slice(col_start, 4)),
                                     padding_mode=ct.PaddingMode.ZERO)
    ct.store_advanced_indexing(y, (rows + 1, ct.Slice(0, 4)), tile)


def _gather_ref(a):
    x, y = a[0], a[1].copy()
    n = x.shape[0]
    for j in range(0, y.shape[0], 2):
        y[j] = x[j] * 2 if j < n else -2.0
    return {1: y}


CASES = [
    Case("copy-ragged-tail", copy_1d, (4,),
         lambda rng: (rng.normal(size=200).astype(np.float32), np.zeros(200, np.float32), 64),
         lambda a: {1: a[0]}),
    _padding_case(PM.ZERO, 0.0),
    _padding_case(PM.NEG_ZERO, -0.0),
    _padding_case(PM.NAN, np.nan),
    _padding_case(PM.POS_INF, np.inf),
    _padding_case(PM.NEG_INF, -np.inf),
    Case("load-order-F", load_orders, (1,),
         lambda rng: (np.arange(16, dtype=np.int32).reshape(4, 4), np.zeros((4, 4), np.int32),
                      np.zeros(1, np.int32)),
         lambda a: {1: np.arange(16, dtype=np.int32).reshape(4, 4).T.copy()}),
    Case("load-order-021", load_order_3d, (1,),
         lambda rng: (np.arange(8, dtype=np.int32).reshape(2, 2, 2),
                      np.zeros((2, 2, 2), np.int32)),
         lambda a: {1: np.array([[[0, 2], [1, 3]], [[4, 6], [5, 7]]], np.int32)}),
    Case("store-order-F", store_transposed, (1,),
         lambda rng: (rng.normal(size=(4, 8)).astype(np.float32), np.zeros((8, 4), np.float32)),
         lambda a: {1: a[0].T.copy()}),
    Case("scalar-load-store", scalar_loads_and_stores, (1,),
         lambda rng: (np.arange(4, dtype=np.int32), np.zeros((2, 2), np.int32)),
         lambda a: {1: np.array([[0, 10], [20, 30]], np.int32)}),
    Case("partial-store-discards", partial_store, (1,),
         lambda rng: (np.zeros(6, np.int32),),
         lambda a: {0: np.array([1, 1, 1, 1, 2, 2], np.int32)}),
    Case("tiled-view-steps", tiled_views, (1,),
         lambda rng: (np.arange(16, dtype=np.int32).reshape(4, 4), np.zeros((4, 4), np.int32)),
         lambda a: {1: np.array([[8, 9, 10, 11], [12, 13, 14, 15], [4, 5, 6, 7],
                                 [8, 9, 10, 11]], np.int32)}),
    Case("tiled-view-store", tiled_view_store, (1,),
         lambda rng: (np.ones(8, np.int32),),
         lambda a: {0: np.array([6, 6, 6, 6, 99, 99, 99, 99], np.int32)}),
    Case("array-slice", sliced, (1,),
         lambda rng: (np.arange(16, dtype=np.int32), np.zeros(4, np.int32), 8, 8),
         lambda a: {1: np.array([12, 13, 14, 15], np.int32)}),
    Case("gather-scatter-mask", gather_scatter, (3,),
         lambda rng: (rng.normal(size=40).astype(np.float32), np.zeros(48, np.float32), 16),
         _gather_ref),
    Case("gather-2d-broadcast", gather_2d, (1,),
         lambda rng: (np.arange(32, dtype=np.float32).reshape(4, 8), np.zeros((4, 8), np.float32)),
         lambda a: {1: np.concatenate([np.zeros((4, 2), np.float32), a[0][:, :6]], axis=1)}),
    Case("advanced-indexing", advanced, (1,),
         lambda rng: (np.arange(64, dtype=np.int32).reshape(8, 8), np.zeros((6, 4), np.int32), 2),
         lambda a: {1: np.array([[0] * 4, [2, 3, 4, 5], [10, 11, 12, 13], [18, 19, 20, 21],
                                 [26, 27, 28, 29], [0] * 4], np.int32)}),
]


def _copy_case(dtype):
    def make(rng):
        x = rng.integers(0, 100, 200) if np.dtype(dtype).kind in "biu" else rng.normal(size=200)
        return x.astype(dtype), np.zeros(200, dtype), 64

    return Case(f"copy-{np.dtype(dtype).name}", copy_1d, (4,), make, lambda a: {1: a[0]},
                rtol=0, atol=0)


DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
          ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]
CASES += [_copy_case(dt) for dt in DTYPES]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_memory_ops_match(case, check_case):
    check_case(case)


@ct.kernel
def count_tiles(x, out):
    ct.store(out, (0,), ct.num_tiles(x, 0, shape=(4, 8)))
    ct.store(out, (1,), ct.num_tiles(x, 1, shape=(4, 8)))
    ct.store(out, (2,), ct.num_tiles(x, 0, shape=(4, 8), order="F"))
    ct.store(out, (3,), x.tiled_view((4, 8)).num_tiles(0))


def test_num_tiles_counts_partial_tiles():
    out = np.zeros(4, np.int32)
    tile_lab.emulate(count_tiles, (1,), (np.zeros((42, 64), np.float32), out))
    np.testing.assert_array_equal(out, [11, 8, 16, 11])


@ct.kernel
def count_strided_tiles(x, out):
    ct.store(out, (0,), x.tiled_view((4,), traversal_steps=(2,)).num_tiles(0))  # overlapping
    ct.store(out, (1,), x.tiled_view((4,), traversal_steps=(8,)).num_tiles(0))  # gaps


def test_num_tiles_with_traversal_steps_counts_every_origin_inside():
    # origins 0, 2, ..., 14 in 16 elements: 8 windows, the last one reaching past the end
    out = np.zeros(2, np.int32)
    tile_lab.emulate(count_strided_tiles, (1,), (np.zeros(16, np.float32), out))
    np.testing.assert_array_equal(out, [8, 2])


@ct.kernel
def odd_tile(x, y):
    t = ct.load(x, (0,), (6,))
    ct.store(y, (0,), t)


def test_non_power_of_two_tile_shape_names_the_line():
    with pytest.raises(EmulationError, match="power of two") as info:
        tile_lab.emulate(odd_tile, (1,), (np.zeros(8, np.float32), np.zeros(8, np.float32)))
    assert "ct.load(x, (0,), (6,))" in info.value.location.text
    assert info.value.location.line == python_function(odd_tile).__code__.co_firstlineno + 2


@ct.kernel
def dynamic_shape(x, y, n):
    ct.store(y, (0,), ct.load(x, (0,), (n,)))


def test_tile_shape_must_be_a_constant():
    with pytest.raises(EmulationError, match="compile-time constant"):
        tile_lab.emulate(dynamic_shape, (1,), (np.zeros(8, np.float32), np.zeros(8, np.float32),
                                              8))


@ct.kernel
def wrong_rank(x, y):
    ct.store(y, (0,), ct.load(x, (0,), (4, 4)))


def test_tile_rank_must_match_the_array():
    with pytest.raises(EmulationError, match="rank"):
        tile_lab.emulate(wrong_rank, (1,), (np.zeros(8, np.float32), np.zeros(8, np.float32)))


@ct.kernel
def load_from_scalar(x, n):
    ct.load(n, (0,), (4,))


def test_loading_from_a_scalar_names_the_problem():
    with pytest.raises(EmulationError, match="expects an array"):
        tile_lab.emulate(load_from_scalar, (1,), (np.zeros(8, np.float32), 3))


def test_int_arrays_reject_nan_padding():
    with pytest.raises(EmulationError, match="float array"):
        tile_lab.emulate(padded_tail_kernel(PM.NAN), (1,),
                         (np.zeros(10, np.int32), np.zeros(8, np.int32), 8))


@ct.kernel
def narrowing_store(x, y):
    ct.store(y, (0,), ct.load(x, (0,), (4,)))  # float32 tile into a float16 array


@ct.kernel
def float_into_int_scatter(y):
    ct.scatter(y, ct.arange(4, dtype=ct.int32), 1.5)


@ct.kernel
def atomic_max_on_floats(y):
    ct.atomic_max(y, 0, 1.0)


@pytest.mark.parametrize("kernel, args, reason", [
    (narrowing_store, (np.zeros(4, np.float32), np.zeros(4, np.float16)),
     "cannot implicitly cast float32 to float16"),
    (float_into_int_scatter, (np.zeros(4, np.int32),), "cannot implicitly cast 1.5"),
    (atomic_max_on_floats, (np.zeros(4, np.float32),), "atomic_max does not support"),
], ids=["narrowing-store", "float-scatter-into-int", "atomic-max-float"])
def test_implicit_casts_only_widen(kernel, args, reason):
    with pytest.raises(EmulationError, match=reason):
        tile_lab.emulate(kernel, (1,), args)
