"""Differential tests: factories, shape ops and dtype conversion. Expected values are the
outputs printed in cuTile's API reference examples where one exists."""

from __future__ import annotations

import cuda.tile as ct
import ml_dtypes
import numpy as np
import pytest
from test_emulator_harness import Case

import tile_lab
from tile_lab.emulator import gate
from tile_lab.errors import EmulationError


@pytest.fixture(autouse=True)
def _emulator_checks_alone():
    """These tests are about the emulator's own checks and messages; cuTile's front end
    (which rejects the same kernels first, see test_emulator_gate.py) is switched off."""
    with gate.disabled():
        yield



@ct.kernel
def factories(a, b, c, d, e):
    ct.store(a, (0,), ct.arange(8, dtype=ct.int32, start=7, step=-1))
    ct.store(b, (0, 0), ct.full((2, 2), 3, dtype=ct.int32) + ct.ones((2, 2), dtype=ct.int32))
    ct.store(c, (0,), ct.arange(4, dtype=ct.float32, start=0.5, step=0.25))
    ct.store(d, (0, 0), ct.astile(((1, 2), (3, 4)), dtype=ct.int32))
    ct.store(e, (0,), ct.zeros((4,), dtype=ct.float16) + ct.bid(0))


@ct.kernel
def shapes(r, p, t, e, bc, ca0, ca1):
    x = ct.arange(8, dtype=ct.int32)
    ct.store(r, (0, 0), ct.reshape(x, (2, 4)))
    cube = ct.arange(8, dtype=ct.int32).reshape((2, 2, 2))
    ct.store(p, (0, 0, 0), ct.permute(cube, (2, 0, 1)))
    ct.store(t, (0, 0), ct.transpose(x.reshape((2, 4))))
    ct.store(e, (0, 0), x[:, None] + ct.expand_dims(x, 0) * 0)
    ct.store(bc, (0, 0), ct.broadcast_to(ct.arange(4, dtype=ct.int32), (2, 4)))
    tx = ct.full((2, 2), 3, dtype=ct.int32)
    ty = ct.full((2, 2), 7, dtype=ct.int32)
    ct.store(ca0, (0, 0), ct.cat((tx, ty), 0))
    ct.store(ca1, (0, 0), ct.cat((tx, ty), 1))


@ct.kernel
def extract_insert(sub, ins):
    tile = ct.arange(16, dtype=ct.int32).reshape((4, 4))
    ct.store(sub, (0, 0), ct.extract(tile, (0, 1), shape=(2, 2)))
    ct.store(ins, (0, 0), ct.insert(tile, (0, 1), ct.full((2, 2), 99, dtype=ct.int32)))


@ct.kernel
def conversions(f, bits, packed, unpacked, trunc):
    ct.store(f, (0,), ct.astype(ct.arange(4, dtype=ct.int32), ct.float32) / 2)
    ct.store(bits, (0,), ct.bitcast(ct.full((1,), 1.0, dtype=ct.float32), ct.uint32))
    ct.store(packed, (0,), ct.pack_to_bytes(ct.full((1,), 0x04030201, dtype=ct.int32)))
    ct.store(unpacked, (0,), ct.unpack_from_bytes(ct.arange(4, dtype=ct.uint8) + 1, ct.int32))
    ct.store(trunc, (0,), ct.full((4,), -2.7, dtype=ct.float32).astype(ct.int32))


@ct.kernel
def float_to_int(x, y):
    ct.store(y, (0,), ct.load(x, (0,), (8,)).astype(ct.int32))


CASES = [
    Case("float-to-int-saturates", float_to_int, (1,),
         lambda rng: (np.array([1e10, -1e10, np.nan, -2.7, 2.7, np.inf, -np.inf, 0.5],
                               np.float32), np.zeros(8, np.int32)),
         lambda a: {1: np.array([2**31 - 1, -2**31, 0, -2, 2, 2**31 - 1, -2**31, 0])}),
    Case("factories", factories, (2,),
         lambda rng: (np.zeros(8, np.int32), np.zeros((2, 2), np.int32), np.zeros(4, np.float32),
                      np.zeros((2, 2), np.int32), np.zeros(4, np.float16)),
         lambda a: {0: np.arange(7, -1, -1, dtype=np.int32), 1: np.full((2, 2), 4, np.int32),
                    2: np.array([0.5, 0.75, 1.0, 1.25], np.float32),
                    3: np.array([[1, 2], [3, 4]], np.int32),
                    4: np.full(4, 1, np.float16)}),  # the last block (bid 1) stores last
    Case("shapes", shapes, (1,),
         lambda rng: (np.zeros((2, 4), np.int32), np.zeros((2, 2, 2), np.int32),
                      np.zeros((4, 2), np.int32), np.zeros((8, 8), np.int32),
                      np.zeros((2, 4), np.int32), np.zeros((4, 2), np.int32),
                      np.zeros((2, 4), np.int32)),
         lambda a: {0: np.arange(8).reshape(2, 4),
                    1: np.array([[[0, 2], [4, 6]], [[1, 3], [5, 7]]]),
                    2: np.arange(8).reshape(2, 4).T, 3: np.repeat(np.arange(8)[:, None], 8, 1),
                    4: np.array([[0, 1, 2, 3]] * 2), 5: np.array([[3, 3]] * 2 + [[7, 7]] * 2),
                    6: np.array([[3, 3, 7, 7]] * 2)}),
    Case("extract-insert", extract_insert, (1,),
         lambda rng: (np.zeros((2, 2), np.int32), np.zeros((4, 4), np.int32)),
         lambda a: {0: np.array([[2, 3], [6, 7]]),
                    1: np.array([[0, 1, 99, 99], [4, 5, 99, 99], [8, 9, 10, 11],
                                 [12, 13, 14, 15]])}),
    Case("conversions", conversions, (1,),
         lambda rng: (np.zeros(4, np.float32), np.zeros(1, np.uint32), np.zeros(4, np.uint8),
                      np.zeros(1, np.int32), np.zeros(4, np.int32)),
         lambda a: {0: np.array([0, 0.5, 1, 1.5], np.float32), 1: np.array([0x3F800000]),
                    2: np.array([1, 2, 3, 4]), 3: np.array([0x04030201]),
                    4: np.full(4, -2)}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_shape_ops_match(case, check_case):
    check_case(case)


@ct.kernel
def float_to_narrow(x, h, b, f8):
    t = ct.load(x, (0,), (8,))
    ct.store(h, (0,), t.astype(ct.float16))
    ct.store(b, (0,), t.astype(ct.bfloat16))
    ct.store(f8, (0,), t.astype(ct.float8_e4m3fn))


def test_narrow_float_casts_round_like_ml_dtypes():
    x = np.random.default_rng(1).normal(size=8).astype(np.float32)
    h, b = np.zeros(8, np.float16), np.zeros(8, ml_dtypes.bfloat16)
    f8 = np.zeros(8, ml_dtypes.float8_e4m3fn)
    tile_lab.emulate(float_to_narrow, (1,), (x, h, b, f8))
    np.testing.assert_array_equal(h, x.astype(np.float16))
    np.testing.assert_array_equal(b, x.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(f8.astype(np.float32),
                                  x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32))


@ct.kernel
def bad_reshape(x):
    ct.store(x, (0,), ct.arange(8, dtype=ct.int32).reshape((3, -1)))


def test_reshape_to_an_impossible_shape_is_an_error():
    with pytest.raises(EmulationError, match="reshape"):
        tile_lab.emulate(bad_reshape, (1,), (np.zeros(8, np.int32),))


@ct.kernel
def bad_arange(x):
    ct.store(x, (0,), ct.arange(12, dtype=ct.int32))


def test_arange_size_must_be_a_power_of_two():
    with pytest.raises(EmulationError, match="power of two"):
        tile_lab.emulate(bad_arange, (1,), (np.zeros(16, np.int32),))


@ct.kernel
def scalar_bitcast(out):
    bits = ct.bitcast(1.0, ct.uint32)
    ct.static_assert(bits.ndim == 0)
    ct.store(out, (0,), bits)


def test_bitcast_of_a_scalar_stays_a_scalar():
    out = np.zeros(2, np.uint32)
    tile_lab.emulate(scalar_bitcast, (1,), (out,))
    np.testing.assert_array_equal(out, [0x3F800000, 0])
