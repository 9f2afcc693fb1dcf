"""Rounding modes and flush-to-zero: astype and arithmetic, checked against exact values."""

from __future__ import annotations

from fractions import Fraction

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.emulator import rounding

RM = ct.RoundingMode


def _exact_directed(value: Fraction, mode) -> np.float32:
    """The float32 that ``mode`` rounds the exact rational ``value`` to (by search)."""
    lo = np.float32(float(value))
    while Fraction(float(lo)) > value:
        lo = np.nextafter(lo, np.float32(-np.inf))
    while Fraction(float(np.nextafter(lo, np.float32(np.inf)))) <= value:
        lo = np.nextafter(lo, np.float32(np.inf))
    hi = lo if Fraction(float(lo)) == value else np.nextafter(lo, np.float32(np.inf))
    if mode is RM.RM:
        return lo
    if mode is RM.RP:
        return hi
    if mode is RM.RZ:
        return lo if value >= 0 else hi
    dl, dh = value - Fraction(float(lo)), Fraction(float(hi)) - value
    if dl != dh:
        return lo if dl < dh else hi
    return hi if value > 0 else lo  # RA: ties away from zero


@pytest.mark.parametrize("mode", [RM.RZ, RM.RM, RM.RP, RM.RA])
def test_round_to_matches_exact_rationals(mode):
    rng = np.random.default_rng(7)
    src = np.concatenate([rng.normal(size=300) * 10.0 ** rng.integers(-40, 38, 300),
                          [1 + 2.0 ** -24, -(1 + 2.0 ** -24), 1 + 3 * 2.0 ** -25, 0.1]])
    got = rounding.round_to(src, np.dtype(np.float32), mode)
    want = [_exact_directed(Fraction(float(v)), mode) for v in src]
    np.testing.assert_array_equal(got, np.array(want, np.float32))


def f64_to_f32(mode):
    @ct.kernel
    def kernel(x, y):
        ct.store(y, (0,), ct.load(x, (0,), (4,)).astype(np.float32, rounding_mode=mode))
    return kernel


@pytest.mark.parametrize("mode, pick", [(RM.RN, "near"), (RM.RZ, "zero"), (RM.RM, "down"),
                                        (RM.RP, "up")])
def test_astype_f64_to_f32_rounds_in_the_mode(mode, pick):
    one = np.float32(1)
    step = float(np.nextafter(one, np.float32(2)) - one)
    x = np.array([1 + 0.7 * step, -(1 + 0.7 * step), 1 + 0.2 * step, -(1 + 0.2 * step)])
    y = np.zeros(4, np.float32)
    tile_lab.emulate(f64_to_f32(mode), (1,), (x, y))
    up, dn = np.float32(1 + step), one
    expect = {"near": [up, -up, dn, -dn], "zero": [dn, -dn, dn, -dn],
              "down": [dn, -up, dn, -up], "up": [up, -dn, up, -dn]}[pick]
    np.testing.assert_array_equal(y, np.array(expect, np.float32))


def arith(op, mode, ftz=False):
    @ct.kernel
    def kernel(a, b, out):
        ta, tb = ct.load(a, (0,), (4,)), ct.load(b, (0,), (4,))
        ct.store(out, (0,), op(ta, tb, rounding_mode=mode, flush_to_zero=ftz))
    return kernel


@pytest.mark.parametrize("op, exact", [(ct.add, lambda p, q: p + q),
                                       (ct.mul, lambda p, q: p * q),
                                       (ct.truediv, lambda p, q: p / q)])
@pytest.mark.parametrize("mode", [RM.RZ, RM.RM, RM.RP])
def test_float32_arithmetic_in_directed_modes(op, exact, mode):
    rng = np.random.default_rng(3)
    a = rng.normal(size=4).astype(np.float32)
    b = rng.normal(size=4).astype(np.float32)
    out = np.zeros(4, np.float32)
    tile_lab.emulate(arith(op, mode), (1,), (a, b, out))
    want = [_exact_directed(exact(Fraction(float(p)), Fraction(float(q))), mode)
            for p, q in zip(a, b)]
    np.testing.assert_array_equal(out, np.array(want, np.float32))


def test_flush_to_zero_drops_float32_subnormals():
    tiny = np.finfo(np.float32).tiny
    a = np.array([tiny / 4, -tiny / 8, tiny, 1.0], np.float32)  # two subnormal inputs
    b = np.array([1.0, 1.0, 0.25, 1e-39], np.float32)  # 1e-39 is subnormal too
    out = np.zeros(4, np.float32)
    tile_lab.emulate(arith(ct.mul, None, ftz=True), (1,), (a, b, out))
    np.testing.assert_array_equal(out, [0.0, -0.0, 0.0, 0.0])  # tiny*0.25 is subnormal
    assert np.signbit(out[1])
    tile_lab.emulate(arith(ct.mul, None, ftz=False), (1,), (a, b, out))
    assert out[0] == a[0] and out[2] == np.float32(tiny * 0.25)


def test_tf32_round_zero_and_away():
    v = np.array([1 + 2.0 ** -11, -(1 + 2.0 ** -11)], np.float32)  # a tie between tf32 values
    np.testing.assert_array_equal(rounding.round_tf32(v, RM.RZ), [1, -1])
    np.testing.assert_array_equal(rounding.round_tf32(v, RM.RA), [1 + 2.0 ** -10,
                                                                 -(1 + 2.0 ** -10)])
    np.testing.assert_array_equal(rounding.round_tf32(v, RM.RN), [1, -1])
