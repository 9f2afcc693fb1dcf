"""tile_lab.emulator.device_math: CUDA's float32 math, bit for bit, against GPU measurements."""

from __future__ import annotations

from fractions import Fraction

import cuda.tile as ct
import numpy as np
import pytest
from cuda.tile import RoundingMode as RM
from device_math_cases import gpu_cases

import tile_lab
from tile_lab.emulator import device_math

# fixture key -> what computes it here
_FUNCTIONS = {
    "exp": device_math.exp, "exp_approx": device_math.exp_approx, "exp2": device_math.exp2,
    "exp2_ftz": device_math.exp2_ftz, "log": device_math.log, "log2": device_math.log2,
    "rsqrt": device_math.rsqrt, "rsqrt_ftz": device_math.rsqrt_ftz, "sin": device_math.sin,
    "cos": device_math.cos, "tan": device_math.tan, "sinh": device_math.sinh,
    "cosh": device_math.cosh, "tanh": device_math.tanh,
}
_EXACT = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
          "rsqrt": lambda v: 1.0 / np.sqrt(v), "sin": np.sin, "cos": np.cos, "tan": np.tan,
          "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh}


@pytest.mark.parametrize("key", sorted(_FUNCTIONS))
def test_matches_the_gpu_where_it_is_not_correctly_rounded(key):
    x, gpu = gpu_cases(key)
    assert len(x) >= 6
    assert _FUNCTIONS[key](x).view(np.uint32).tolist() == gpu.tolist()
    with np.errstate(all="ignore"):
        rounded = _EXACT[key.split("_")[0]](x.astype(np.float64)).astype(np.float32)
    assert (rounded.view(np.uint32) != gpu).all()  # (what the emulator gave before)


def test_shapes_and_special_values():
    x = np.array([[0.0, -0.0], [np.inf, -np.inf], [np.nan, 1.0]], np.float32)
    assert device_math.sin(x).shape == (3, 2)
    assert device_math.sin(np.float32(0.5)).shape == ()
    log = device_math.log(x)
    assert log[0, 0] == -np.inf and log[0, 1] == -np.inf and log[1, 0] == np.inf
    assert log[2, 1] == 0.0
    # NaN results carry the GPU's canonical NaN
    for v in (log[1, 1], log[2, 0], device_math.sin(x)[1, 0], device_math.rsqrt(x)[1, 1]):
        assert np.asarray(v).view(np.uint32) == 0x7FFFFFFF
    assert device_math.exp(np.float32(-200.0)) == 0.0
    assert device_math.exp(np.float32(100.0)) == np.inf
    assert device_math.tanh(np.float32(-20.0)) == -1.0
    assert np.signbit(device_math.sin(np.float32(-0.0)))


def test_large_arguments_take_the_exact_reduction():
    # |x| >= 105615: Payne-Hanek with 2/pi to 192 bits. glibc's float64 sin/cos reduce
    # exactly too, so they are a faithful reference at any magnitude
    x = np.array([105615.0, 123456.7, -7.5e5, 1e30, -3.0e38, 2.0 ** 100, 8.5e37], np.float32)
    for ours, exact in ((device_math.sin, np.sin), (device_math.cos, np.cos)):
        want = exact(x.astype(np.float64))
        ulps = np.abs(ours(x) - want) / np.spacing(np.abs(want).astype(np.float32))
        assert (ulps < 1.5).all(), ulps


# ---- the exact float32 FMA --------------------------------------------------------------------

def _correctly_rounded_fma(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    near = np.float32(float(exact))
    candidates = [np.nextafter(near, np.float32(-np.inf)), near,
                  np.nextafter(near, np.float32(np.inf))]
    return min(candidates, key=lambda v: (abs(Fraction(float(v)) - exact),
                                          int(np.float32(v).view(np.uint32)) & 1))


def test_fma_rounds_once_where_a_float64_sum_would_round_twice():
    # 3 * (1 + k 2**-23), k odd, is a float32 midpoint; the tiny c decides the rounding, but a
    # float64 sum forgets it (rounds back to the midpoint) and then rounds to even
    b = (1.0 + np.array([1, 3, 5, 7]) * 2.0 ** -23).astype(np.float32)
    a = np.full(len(b), 3.0, np.float32)
    naive_wrong = 0
    for c in (np.float32(2.0 ** -70), np.float32(-(2.0 ** -70))):
        cs = np.full(len(b), c, np.float32)
        got = device_math.fma(a, b, cs)
        want = np.array([_correctly_rounded_fma(*v) for v in zip(a, b, cs)], np.float32)
        assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()
        naive = (a.astype(np.float64) * b + cs).astype(np.float32)
        naive_wrong += int((naive != want).sum())
    assert naive_wrong == 4  # half the cases are real double-rounding cases


def test_fma_random_and_subnormal_results():
    rng = np.random.default_rng(7)
    a = rng.standard_normal(300).astype(np.float32) * np.float32(2.0 ** -70)
    b = rng.standard_normal(300).astype(np.float32) * np.float32(2.0 ** -70)
    c = (rng.integers(-2 ** 20, 2 ** 20, 300) * 2.0 ** -149).astype(np.float32)
    got = device_math.fma(a, b, c)
    want = np.array([_correctly_rounded_fma(*v) for v in zip(a, b, c)], np.float32)
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()


# ---- through a cuTile kernel --------------------------------------------------------------------

@ct.kernel
def unary_ops(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(TILE,))
    ct.store(y, index=(0, 0), tile=ct.reshape(ct.sin(t), (1, TILE)))
    ct.store(y, index=(1, 0), tile=ct.reshape(ct.tanh(t), (1, TILE)))
    ct.store(y, index=(2, 0), tile=ct.reshape(ct.rsqrt(t), (1, TILE)))
    ct.store(y, index=(3, 0), tile=ct.reshape(ct.exp(t, rounding_mode=RM.APPROX), (1, TILE)))


def test_the_emulator_runs_kernels_on_the_device_math():
    cases = {key: gpu_cases(key) for key in ("sin", "tanh", "rsqrt", "exp_approx")}
    x = np.concatenate([cases[k][0] for k in cases])
    n = 64
    x = np.concatenate([x, np.ones(n - len(x), np.float32)])
    y = np.zeros((4, n), np.float32)
    tile_lab.emulate(unary_ops, (1,), (x, y, n))
    start = 0
    for row, (key, (inputs, gpu)) in enumerate(cases.items()):
        assert y[row].view(np.uint32).tolist() == _FUNCTIONS[key](x).view(np.uint32).tolist()
        got = y[row, start:start + len(inputs)]
        assert got.view(np.uint32).tolist() == gpu.tolist(), key
        start += len(inputs)


@ct.kernel
def one_op(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(y, index=(ct.bid(0),), tile=ct.sin(t) + ct.log2(t) + ct.tan(t) + ct.tanh(t))


@pytest.mark.timeout(300)
def test_tileiras_still_emits_the_sequences_replayed_here():
    """The PTX tileiras makes of ct.sin/log2/tan/tanh holds the constants and approximate
    instructions device_math replays (a new tileiras that changed them fails here)."""
    ptx = str(tile_lab.inspect(one_op, "f32[4096], f32[4096], 128", arch="sm_90").ptx)
    constants = ["3F22F983", "BFC90FDA", "B3A22168", "A7C234C5", "47CE4780",  # reduction
                 "37CBAC00", "BAB607ED", "B94D4153", "3D2AAABB", "3C0885E4",  # sin/cos
                 "3DC6B27F", "BF38AA3B", "3F3504F3",  # log2 (offset as an integer)
                 "3C190000", "3EAAAA88", "3A00B43C",  # tan
                 "3C80F082", "BEAAA9ED", "4038AA3B", "41102CB4", "3F19999A"]  # tanh
    text = ptx.upper()
    missing = [c for c in constants if f"0F{c}" not in text and str(int(c, 16)) not in ptx
               and str(int(c, 16) - 2 ** 32) not in ptx]
    assert not missing
    for instruction in ("rcp.approx.ftz.f32", "ex2.approx.ftz.f32", "mul.rn.f64"):
        assert instruction in ptx
