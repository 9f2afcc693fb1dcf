"""Differential tests: elementwise math, comparisons, bitwise ops, promotion, where, matmul."""

from __future__ import annotations

import cuda.tile as ct
import ml_dtypes
import numpy as np
import pytest
from test_emulator_harness import Case, check_gpu

import tile_lab
from tile_lab.emulator import gate
from tile_lab.errors import EmulationError


@pytest.fixture(autouse=True)
def _emulator_checks_alone():
    """These tests are about the emulator's own checks and messages; cuTile's front end
    (which rejects the same kernels first, see test_emulator_gate.py) is switched off."""
    with gate.disabled():
        yield


N, T = 256, 64


def unary_kernel(op):
    @ct.kernel
    def unary(x, y, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(y, (i,), op(ct.load(x, (i,), (TILE,))))
    return unary


def binary_kernel(op):
    @ct.kernel
    def binary(x, y, z, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(z, (i,), op(ct.load(x, (i,), (TILE,)), ct.load(y, (i,), (TILE,))))
    return binary


def _unary_case(name, op, ref, dtype=np.float32, lo=-3.0, hi=3.0, out_dtype=None, tol=1e-6):
    def make(rng):
        x = rng.uniform(lo, hi, N).astype(dtype)
        if name == "isnan":
            x[::7] = np.nan
        return x, np.zeros(N, dtype=out_dtype or dtype), T

    def reference(args):
        x = args[0].astype(np.float32) if dtype != np.float64 else args[0]
        return {1: ref(x).astype(out_dtype or dtype)}

    return Case(f"{name}-{np.dtype(dtype).name}", unary_kernel(op), (N // T,), make, reference,
                rtol=tol, atol=tol, gpu_rtol=max(tol, 2e-3), gpu_atol=max(tol, 2e-3))


UNARY = [
    _unary_case("exp", ct.exp, np.exp),
    _unary_case("exp2", ct.exp2, np.exp2),
    _unary_case("log", ct.log, np.log, lo=0.1),
    _unary_case("log2", ct.log2, np.log2, lo=0.1),
    _unary_case("sqrt", ct.sqrt, np.sqrt, lo=0.0),
    _unary_case("rsqrt", ct.rsqrt, lambda a: 1 / np.sqrt(a), lo=0.1),
    _unary_case("sin", ct.sin, np.sin),
    _unary_case("cos", ct.cos, np.cos),
    _unary_case("tan", ct.tan, np.tan, lo=-1.0, hi=1.0),
    _unary_case("sinh", ct.sinh, np.sinh),
    _unary_case("cosh", ct.cosh, np.cosh),
    _unary_case("tanh", ct.tanh, np.tanh),
    _unary_case("floor", ct.floor, np.floor),
    _unary_case("ceil", ct.ceil, np.ceil),
    _unary_case("abs", ct.abs, np.abs),
    _unary_case("negative", ct.negative, np.negative),
    _unary_case("isnan", ct.isnan, np.isnan, out_dtype=np.bool_),
    _unary_case("exp", ct.exp, np.exp, dtype=np.float16, tol=1e-3),
    _unary_case("sqrt", ct.sqrt, np.sqrt, dtype=ml_dtypes.bfloat16, lo=0.0, tol=1e-2),
    _unary_case("exp", ct.exp, np.exp, dtype=np.float64, tol=1e-12),
    _unary_case("abs", ct.abs, np.abs, dtype=np.int32, lo=-100, hi=100),
]


def _binary_case(name, op, ref, dtype=np.float32, out_dtype=None, lo=-10, hi=10,
                 nonzero=False, tol=1e-6):
    def make(rng):
        x = rng.uniform(lo, hi, N).astype(dtype)
        y = rng.uniform(lo, hi, N).astype(dtype)
        if nonzero:
            y[y == 0] = 3
        return x, y, np.zeros(N, dtype=out_dtype or dtype), T

    return Case(f"{name}-{np.dtype(dtype).name}", binary_kernel(op), (N // T,), make,
                lambda a: {2: ref(a[0], a[1]).astype(out_dtype or dtype)}, rtol=tol, atol=tol,
                gpu_rtol=max(tol, 1e-5), gpu_atol=max(tol, 1e-5))


def op_add(a, b):
    return a + b


def op_sub(a, b):
    return a - b


def op_mul(a, b):
    return a * b


def op_truediv(a, b):
    return a / b


def op_floordiv(a, b):
    return a // b


def op_mod(a, b):
    return a % b


def op_pow(a, b):
    return a ** b


def op_builtin_max(a, b):
    return max(a, b)


def op_and(a, b):
    return a & b


def op_or(a, b):
    return a | b


def op_lshift(a, b):
    return a << (b & 7)


def op_rshift(a, b):
    return a >> (b & 7)


def op_less(a, b):
    return a < b


def op_equal_self(a, b):
    return a == (b * 0 + a)


def _shift_ref(a, b, left):
    return a << (b & 7) if left else a >> (b & 7)


BINARY = [
    _binary_case("add", op_add, np.add),
    _binary_case("sub", op_sub, np.subtract),
    _binary_case("mul", op_mul, np.multiply),
    _binary_case("truediv", op_truediv, np.divide, nonzero=True),
    _binary_case("floordiv", op_floordiv, lambda a, b: np.floor(a / b), nonzero=True),
    _binary_case("mod", op_mod, np.remainder, nonzero=True, tol=1e-5),
    _binary_case("pow", op_pow, np.power, lo=0.5, hi=2.0, tol=1e-5),
    _binary_case("atan2", ct.atan2, np.arctan2, tol=1e-6),
    _binary_case("minimum", ct.minimum, np.minimum),
    _binary_case("maximum", op_builtin_max, np.maximum),
    _binary_case("add", op_add, np.add, dtype=np.int32),
    _binary_case("floordiv", op_floordiv, np.floor_divide, dtype=np.int32, nonzero=True),
    _binary_case("mod", op_mod, np.remainder, dtype=np.int32, nonzero=True),
    _binary_case("cdiv", ct.cdiv, lambda a, b: -(-a // b), dtype=np.int32, nonzero=True),
    _binary_case("truediv", op_truediv, lambda a, b: (a / b).astype(np.float32),
                 dtype=np.int32, out_dtype=np.float32, nonzero=True),
    _binary_case("and", op_and, np.bitwise_and, dtype=np.int32, lo=0, hi=1000),
    _binary_case("or", op_or, np.bitwise_or, dtype=np.int32, lo=0, hi=1000),
    _binary_case("xor", ct.bitwise_xor, np.bitwise_xor, dtype=np.uint16, lo=0, hi=60000),
    _binary_case("lshift", op_lshift, lambda a, b: _shift_ref(a, b, True), dtype=np.int32,
                 lo=0, hi=1000),
    _binary_case("rshift", op_rshift, lambda a, b: _shift_ref(a, b, False), dtype=np.int32,
                 lo=-1000, hi=1000),
    _binary_case("less", op_less, np.less, out_dtype=np.bool_),
    _binary_case("greater_equal", ct.greater_equal, np.greater_equal, dtype=np.int32,
                 out_dtype=np.bool_),
    _binary_case("equal", op_equal_self, lambda a, b: np.ones_like(a, bool), out_dtype=np.bool_),
    _binary_case("add", op_add, np.add, dtype=np.float16, tol=1e-3),
    _binary_case("mul", op_mul, np.multiply, dtype=ml_dtypes.bfloat16, tol=1e-2),
]


@pytest.mark.parametrize("case", UNARY + BINARY, ids=str)
def test_elementwise_matches(case, check_case):
    check_case(case)


# ---- promotion ------------------------------------------------------------------------------

@ct.kernel
def promotion(out):
    i8 = ct.full((4,), 1, dtype=ct.int8)
    i16 = ct.full((4,), 1, dtype=ct.int16)
    i32 = ct.full((4,), 1, dtype=ct.int32)
    u8 = ct.full((4,), 1, dtype=ct.uint8)
    f16 = ct.full((4,), 1, dtype=ct.float16)
    bf16 = ct.full((4,), 1, dtype=ct.bfloat16)
    f32 = ct.full((4,), 1, dtype=ct.float32)
    b = ct.full((4,), True, dtype=ct.bool_)
    # results first, then compile-time checks of their dtypes (ops can't run in static_assert)
    r0 = i32 + 2.5
    ct.static_assert(r0.dtype == ct.float32)
    r1 = f16 * 0.5
    ct.static_assert(r1.dtype == ct.float16)
    r2 = bf16 + 1.0
    ct.static_assert(r2.dtype == ct.bfloat16)
    r3 = u8 + 1
    ct.static_assert(r3.dtype == ct.uint8)
    r4 = i8 + 1
    ct.static_assert(r4.dtype == ct.int8)
    r5 = b + 1
    ct.static_assert(r5.dtype == ct.int32)
    r6 = i16 + i8
    ct.static_assert(r6.dtype == ct.int16)
    r7 = i32 + f16
    ct.static_assert(r7.dtype == ct.float16)
    r8 = bf16 + f32
    ct.static_assert(r8.dtype == ct.float32)
    r9 = i32 / i32
    ct.static_assert(r9.dtype == ct.float32)
    r10 = f16 / 2
    ct.static_assert(r10.dtype == ct.float16)
    r11 = ct.bid(0) + 1.5
    ct.static_assert(r11.dtype == ct.float32)
    r12 = i32 < 2
    ct.static_assert(r12.dtype == ct.bool_)
    r13 = ct.exp(i32)
    ct.static_assert(r13.dtype == ct.float32)
    r14 = f32 ** 2
    ct.static_assert(r14.dtype == ct.float32)
    r15 = ct.where(b, i32, 2.5)
    ct.static_assert(r15.dtype == ct.float32)
    r16 = ct.where(b, f16, 0)
    ct.static_assert(r16.dtype == ct.float16)
    r17 = ct.sum(i8)
    ct.static_assert(r17.dtype == ct.int8)
    r18 = ct.sum(b)
    ct.static_assert(r18.dtype == ct.int32)
    r19 = ct.argmax(f32)
    ct.static_assert(r19.dtype == ct.int32)
    r20 = f16 @ ct.full((4, 4), 1, dtype=ct.float16)
    ct.static_assert(r20.dtype == ct.float16)
    ct.store(out, (0,), (i32 + 2.5) * f32)


def test_promotion_follows_cutile_table():
    out = np.zeros(4, np.float32)
    tile_lab.emulate(promotion, (1,), (out,))
    np.testing.assert_array_equal(out, np.full(4, 3.5, np.float32))


@pytest.mark.gpu
def test_promotion_compiles_on_gpu():
    check_gpu(Case("promotion", promotion, (1,), lambda rng: (np.zeros(4, np.float32),),
                   lambda a: {0: np.full(4, 3.5, np.float32)}))


@ct.kernel
def bad_promotion(out):
    u8 = ct.full((4,), 1, dtype=ct.uint8)
    i8 = ct.full((4,), 1, dtype=ct.int8)
    ct.store(out, (0,), u8 + i8)


def test_mixed_signedness_is_an_error_at_the_kernel_line():
    with pytest.raises(EmulationError, match="signed and unsigned") as info:
        tile_lab.emulate(bad_promotion, (1,), (np.zeros(4, np.int32),))
    assert info.value.location is not None
    assert "u8 + i8" in info.value.location.text


@ct.kernel
def static_assert_fails(out):
    f16 = ct.full((4,), 1, dtype=ct.float16)
    ct.static_assert((f16 * 0.5).dtype == ct.float32, "f16 * 0.5 stays float16")
    ct.store(out, (0,), f16)


def test_static_assert_reports_its_message():
    # the emulator's own check (the gate is off here) raises cuTile's class and wording
    with pytest.raises(ct.TileStaticAssertionError,
                       match=r"^Static assertion failed: f16 \* 0\.5 stays float16"):
        tile_lab.emulate(static_assert_fails, (1,), (np.zeros(4, np.float16),))


def test_loose_scalar_rounds_to_tile_dtype_first():
    # 0.1 becomes float16 before multiplying, as the device does
    @ct.kernel
    def scale(x, y):
        ct.store(y, (0,), ct.load(x, (0,), (8,)) * 0.1)

    x = np.arange(8, dtype=np.float16)
    y = np.zeros(8, np.float16)
    tile_lab.emulate(scale, (1,), (x, y))
    want = (x.astype(np.float32) * np.float32(np.float16(0.1))).astype(np.float16)
    np.testing.assert_array_equal(y, want)


# ---- where and matmul -------------------------------------------------------------------------

@ct.kernel
def where_kernel(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, (i,), (TILE,))
    ct.store(y, (i,), ct.where(t > 0, t, 0.0))


@ct.kernel
def mma_kernel(a, b, c, acc_in, M: ct.Constant[int], N: ct.Constant[int], K: ct.Constant[int]):
    ta = ct.load(a, (0, 0), (M, K))
    tb = ct.load(b, (0, 0), (K, N))
    acc = ct.load(acc_in, (0, 0), (M, N))
    ct.store(c, (0, 0), ct.mma(ta, tb, acc))


@ct.kernel
def matmul_kernel(a, b, c, M: ct.Constant[int], N: ct.Constant[int], K: ct.Constant[int]):
    ct.store(c, (0, 0), ct.load(a, (0, 0), (M, K)) @ ct.load(b, (0, 0), (K, N)))


def _mma_case(in_dtype, acc_dtype, tol):
    def make(rng):
        a = rng.uniform(-1, 1, (32, 16)).astype(in_dtype)
        b = rng.uniform(-1, 1, (16, 64)).astype(in_dtype)
        acc = rng.uniform(-1, 1, (32, 64)).astype(acc_dtype)
        return a, b, np.zeros((32, 64), acc_dtype), acc, 32, 64, 16

    def ref(args):
        a, b, _, acc = (x.astype(np.float64) for x in args[:4])
        return {2: (a @ b + acc).astype(acc_dtype)}

    return Case(f"mma-{np.dtype(in_dtype).name}-{np.dtype(acc_dtype).name}", mma_kernel, (1,),
                make, ref, rtol=tol, atol=tol, gpu_rtol=tol * 10, gpu_atol=tol * 10)


def _int8_mma_case():
    def make(rng):
        a = rng.integers(-128, 128, (32, 16)).astype(np.int8)
        b = rng.integers(-128, 128, (16, 64)).astype(np.int8)
        acc = rng.integers(-1000, 1000, (32, 64)).astype(np.int32)
        return a, b, np.zeros((32, 64), np.int32), acc, 32, 64, 16

    return Case("mma-int8-int32", mma_kernel, (1,), make,
                lambda a: {2: a[0].astype(np.int32) @ a[1].astype(np.int32) + a[3]})


OTHER = [
    Case("where", where_kernel, (N // T,),
         lambda rng: (rng.normal(size=N).astype(np.float32), np.zeros(N, np.float32), T),
         lambda a: {1: np.where(a[0] > 0, a[0], 0).astype(np.float32)}),
    _mma_case(np.float16, np.float32, 1e-5),
    _mma_case(ml_dtypes.bfloat16, np.float32, 1e-5),
    _mma_case(np.float32, np.float32, 1e-5),
    _mma_case(np.float64, np.float64, 1e-12),
    _mma_case(np.float16, np.float16, 5e-3),
    _int8_mma_case(),
    Case("matmul-f32", matmul_kernel, (1,),
         lambda rng: (rng.normal(size=(16, 32)).astype(np.float32),
                      rng.normal(size=(32, 8)).astype(np.float32), np.zeros((16, 8), np.float32),
                      16, 8, 32),
         lambda a: {2: (a[0].astype(np.float64) @ a[1]).astype(np.float32)}, rtol=1e-5,
         atol=1e-5),
]


@pytest.mark.parametrize("case", OTHER, ids=str)
def test_where_and_matmul_match(case, check_case):
    check_case(case)


def test_mma_rejects_unsupported_accumulator():
    with pytest.raises(EmulationError, match="accumulator dtype"):
        tile_lab.emulate(mma_kernel, (1,), (np.ones((32, 16), ml_dtypes.bfloat16),
                                            np.ones((16, 64), ml_dtypes.bfloat16),
                                            np.zeros((32, 64), ml_dtypes.bfloat16),
                                            np.zeros((32, 64), ml_dtypes.bfloat16), 32, 64, 16))


def test_tf32_rounding_keeps_ten_mantissa_bits():
    @ct.kernel
    def to_tf32(x, y):
        ct.store(y, (0,), ct.load(x, (0,), (4,)).astype(ct.tfloat32).astype(ct.float32))

    x = np.array([1 + 2**-10, 1 + 2**-11, 1 + 2**-11 + 2**-20, 1 + 3 * 2**-11], np.float32)
    y = np.zeros(4, np.float32)
    tile_lab.emulate(to_tf32, (1,), (x, y))
    # nearest-even at 10 mantissa bits: ties go to even
    np.testing.assert_array_equal(y, np.array([1 + 2**-10, 1, 1 + 2**-10, 1 + 2**-9],
                                              np.float32))


# ---- shifts of mixed widths, integer inputs of float math (issue 31) ---------------------------

@ct.kernel
def shift_mixed(a, b, left, right):
    ta, tb = ct.load(a, (0,), (8,)), ct.load(b, (0,), (8,))
    ct.store(left, (0,), ta << tb)
    ct.store(right, (0,), ct.bitwise_rshift(ta, tb))


@pytest.mark.parametrize("xa, xb", [(np.int8, np.int32), (np.int64, np.int16),
                                    (np.int16, np.int8)])
def test_shifts_promote_operands_of_different_widths(xa, xb):
    a = np.array([1, -3, 7, -128, 5, 100, -1, 64], xa)
    b = np.array([0, 1, 2, 3, 4, 5, 6, 7], xb)
    wide = np.promote_types(xa, xb)
    left, right = np.zeros(8, wide), np.zeros(8, wide)
    tile_lab.emulate(shift_mixed, (1,), (a, b, left, right))
    np.testing.assert_array_equal(left, np.left_shift(a.astype(wide), b.astype(wide)))
    np.testing.assert_array_equal(right, np.right_shift(a.astype(wide), b.astype(wide)))


@ct.kernel
def int_sin(x, y):
    ct.store(y, (0,), ct.sin(ct.load(x, (0,), (16,))))


# ct.sin of the int16 values -8..7 on an H100 (cuda-tile 1.7.0, tileiras 13.4.92, 2026-12-05):
# CUDA's sinf, an ulp from the correctly rounded value at -2, -1, 1 and 2
_GPU_SIN_OF_INTEGERS = [
    0xBF7D4695, 0xBF283046, 0x3E8F0F8C, 0x3F757C10, 0x3F41BDCF, 0xBE1081C3, 0xBF68C7B8,
    0xBF576AA5, 0x00000000, 0x3F576AA5, 0x3F68C7B8, 0x3E1081C3, 0xBF41BDCF, 0xBF757C10,
    0xBE8F0F8C, 0x3F283046]


def test_integer_input_of_float_math_converts_to_float32_and_matches_the_gpu():
    x = np.arange(-8, 8, dtype=np.int16)
    y = np.zeros(16, np.float32)
    tile_lab.emulate(int_sin, (1,), (x, y))
    assert y.view(np.uint32).tolist() == _GPU_SIN_OF_INTEGERS
    rounded = np.sin(x.astype(np.float64)).astype(np.float32)
    assert (y != rounded).sum() == 4  # (what the emulator gave before it followed sinf)


@ct.kernel
def abs_bool(x, y):
    ct.store(y, (0,), abs(ct.load(x, (0,), (4,))))


def test_abs_keeps_bool():
    x = np.array([True, False, True, False])
    y = np.zeros(4, bool)
    tile_lab.emulate(abs_bool, (1,), (x, y))
    np.testing.assert_array_equal(y, x)


@ct.kernel
def floordiv_kernel(x, y, z):
    ct.store(z, (0,), ct.load(x, (0,), (4,)) // ct.load(y, (0,), (4,)))


def test_bf16_floordiv_floors_the_bf16_quotient():
    # 767/3 = 255.67 rounds to 256 in bfloat16 (8 bits): the floor of the bf16 quotient is 256
    x = np.array([767, 10, -767, 7], ml_dtypes.bfloat16)
    y = np.array([3, 4, 3, 2], ml_dtypes.bfloat16)
    z = np.zeros(4, ml_dtypes.bfloat16)
    tile_lab.emulate(floordiv_kernel, (1,), (x, y, z))
    np.testing.assert_array_equal(z.astype(np.float32), [256, 2, -256, 3])
