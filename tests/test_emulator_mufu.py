"""tile_lab.emulator.mufu: the SFU's rcp/rsqrt/ex2 approximations, special values and ftz."""

from __future__ import annotations

import numpy as np

from tile_lab.emulator import mufu

INF, NAN_BITS = np.inf, 0x7FFFFFFF


def bits(v: np.ndarray) -> list[int]:
    return np.asarray(v).astype(np.float32).view(np.uint32).tolist()


def f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32).astype(np.float64)


def test_rcp_special_values_and_flushes():
    out = mufu.rcp(f32(0.0, -0.0, INF, -INF, np.nan, 1e-40, 4.0, 2.0 ** 127, -2.0 ** 127,
                       2.0 ** 126))
    assert bits(out[:5]) == [*bits(f32(INF, -INF, 0.0, -0.0)), NAN_BITS]
    assert out[5] == INF  # a subnormal input is a zero
    assert out[6] == 0.25  # powers of two are exact
    assert out[7] == 0.0 and out[8] == 0.0 and np.signbit(out[8])  # subnormal results flush
    assert out[9] == 2.0 ** -126  # (the smallest normal stays)


def test_rsqrt_special_values():
    out = mufu.rsqrt(f32(0.0, -0.0, INF, -INF, -1.0, np.nan, 4.0, 16.0, 0.25))
    assert out[0] == INF and out[1] == -INF and out[2] == 0.0
    assert bits(out[3:6]) == [NAN_BITS] * 3
    assert out[6:].tolist() == [0.5, 0.25, 2.0]  # powers of 4 are exact


def test_ex2_special_values_and_fixed_point_input():
    out = mufu.ex2(f32(0.0, -0.0, 1e-40, INF, -INF, np.nan, 128.0, -200.0, 3.0, -3.0))
    assert out[:3].tolist() == [1.0, 1.0, 1.0]
    assert out[3] == INF and out[4] == 0.0 and bits(out[5]) == NAN_BITS
    assert out[6] == INF and out[7] == 0.0
    assert out[8] == 8.0 and out[9] == 0.125  # integers are exact
    # the input is cut to 23 fraction bits: below 2**-24 everything is 2**0
    assert mufu.ex2(f32(2.0 ** -25, 2.0 ** -30)).tolist() == [1.0, 1.0]
    tiny = mufu.ex2(f32(2.0 ** -23 * 1.75, 2.0 ** -23))
    assert tiny[0] == tiny[1]  # truncation, not rounding


def test_accuracy_is_that_of_an_approximation():
    rng = np.random.default_rng(3)
    x = f32(*rng.uniform(1.0, 4.0, 4000))
    for ours, exact in ((mufu.rcp, lambda v: 1.0 / v), (mufu.rsqrt, lambda v: v ** -0.5),
                        (mufu.ex2, np.exp2)):
        want = exact(x)
        rel = np.abs(ours(x) / want - 1.0)
        assert rel.max() < 2.0 ** -21.5
        assert (ours(x) != want.astype(np.float32)).any()  # not correctly rounded
