"""Elementwise math, comparisons, bitwise ops, ``where``, and matrix multiply.

``rounding_mode`` RZ/RM/RP/RA and ``flush_to_zero=True`` are applied (``rounding.py``) on
``+ - * /`` and ``sqrt``; ``flush_to_zero`` also on ``minimum`` and ``maximum``. float32
transcendentals (and integers, which convert to float32) follow CUDA's algorithms
(``device_math.py``), including ``exp``'s and ``tanh``'s ``APPROX``, ``exp2``'s and ``rsqrt``'s
``flush_to_zero`` and ``sqrt``'s ``APPROX`` forms. ``APPROX``/``FULL`` float32 division
computes the exactly rounded quotient: within the GPU's approximation, not bit-equal to it.
"""

from __future__ import annotations

import math

import cuda.tile as ct
import numpy as np

from ..tracing.trace import MmaCall
from . import device_math, dtypes, poison, rounding
from .registry import emulates
from .state import current, kernel_error, record_site
from .tile import (
    Tile,
    as_tile,
    binary,
    bitwise,
    compare,
    elementwise,
    finish,
    is_loose,
    result_dtype,
    unary,
)

# ---- arithmetic -------------------------------------------------------------------------

@emulates(ct.add)
def add(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    if flush_to_zero or rounding.is_directed(rounding_mode):
        return _rounded("add", x, y, rounding_mode, flush_to_zero)
    return binary("add", x, y)


@emulates(ct.sub)
def sub(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    if flush_to_zero or rounding.is_directed(rounding_mode):
        return _rounded("sub", x, y, rounding_mode, flush_to_zero)
    return binary("sub", x, y)


@emulates(ct.mul)
def mul(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    if flush_to_zero or rounding.is_directed(rounding_mode):
        return _rounded("mul", x, y, rounding_mode, flush_to_zero)
    return binary("mul", x, y)


@emulates(ct.truediv)
def truediv(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    if flush_to_zero or rounding.is_directed(rounding_mode):
        return _rounded("truediv", x, y, rounding_mode, flush_to_zero)
    return binary("truediv", x, y)


_EXACT = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
          "sqrt": np.sqrt}


def _rounded(fn: str, x, y, mode, ftz: bool) -> Tile:
    """``fn`` of float operands computed wider and rounded once in ``mode`` (``ftz``:
    float32 subnormal inputs and results become zeros). ``y`` None: a unary ``fn``."""
    operands = (x,) if y is None else (x, y)
    common = as_tile(x).dtype if y is None else result_dtype(x, y)
    if (fn == "truediv" or y is None) and not dtypes.is_float(common):
        common = ct.float32  # integer division and sqrt compute in float32
    if not dtypes.is_float(common):  # (cuTile refuses rounding modes on integers)
        return binary(fn, x, y)
    args = [_values_as(v, common) for v in operands]
    if ftz:
        args = [rounding.flush(a) for a in args]
    exact = _EXACT[fn](*(rounding.wide(a) for a in args))
    out = rounding.round_to(exact, dtypes.to_numpy(common), mode)
    return elementwise(Tile(rounding.flush(out) if ftz else out, common), *operands)


@emulates(ct.floordiv)
def floordiv(x, y, /):
    return binary("floordiv", x, y)


@emulates(ct.mod)
def mod(x, y, /):
    return binary("mod", x, y)


@emulates(ct.divmod)
def divmod(x, y, /):
    if dtypes.is_float(result_dtype(x, y)) and not (is_loose(x) and is_loose(y)):
        raise kernel_error("ct.divmod is not implemented for floating-point values in cuTile")
    return binary("floordiv", x, y), binary("mod", x, y)


@emulates(ct.pow)
def pow(x, y, /):
    # float base with an integer exponent keeps the base's dtype (cuTile's fpowi)
    if isinstance(x, Tile) and dtypes.is_float(x.dtype) and (
            (isinstance(y, Tile) and dtypes.is_integer(y.dtype))
            or (is_loose(y) and isinstance(y, int) and not isinstance(y, bool))):
        compute = dtypes.compute_dtype(x.dtype)
        exponent = y._a if isinstance(y, Tile) else y
        return finish(np.power(np.asarray(x._a, dtype=compute),
                               np.asarray(exponent).astype(compute)), x.dtype)
    return binary("pow", x, y)


@emulates(ct.atan2)
def atan2(x1, x2, /):
    return binary("atan2", x1, x2)


@emulates(ct.cdiv)
def cdiv(x, y, /):
    return binary("cdiv", x, y)


@emulates(ct.minimum)
def minimum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    return binary("min", _ftz(x, flush_to_zero), _ftz(y, flush_to_zero),
                  propagate_nan=propagate_nan)


@emulates(ct.maximum)
def maximum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    return binary("max", _ftz(x, flush_to_zero), _ftz(y, flush_to_zero),
                  propagate_nan=propagate_nan)


# ---- comparisons and bitwise -------------------------------------------------------------------

@emulates(ct.greater)
def greater(x, y, /):
    return compare("gt", x, y)


@emulates(ct.greater_equal)
def greater_equal(x, y, /):
    return compare("ge", x, y)


@emulates(ct.less)
def less(x, y, /):
    return compare("lt", x, y)


@emulates(ct.less_equal)
def less_equal(x, y, /):
    return compare("le", x, y)


@emulates(ct.equal)
def equal(x, y, /):
    return compare("eq", x, y)


@emulates(ct.not_equal)
def not_equal(x, y, /):
    return compare("ne", x, y)


@emulates(ct.bitwise_and)
def bitwise_and(x, y, /):
    return bitwise("and", x, y)


@emulates(ct.bitwise_or)
def bitwise_or(x, y, /):
    return bitwise("or", x, y)


@emulates(ct.bitwise_xor)
def bitwise_xor(x, y, /):
    return bitwise("xor", x, y)


@emulates(ct.bitwise_lshift)
def bitwise_lshift(x, y, /):
    return bitwise("lshift", x, y)


@emulates(ct.bitwise_rshift)
def bitwise_rshift(x, y, /):
    return bitwise("rshift", x, y)


@emulates(ct.bitwise_not)
def bitwise_not(x, /):
    return unary("bitwise_not", x)


# ---- unary math -----------------------------------------------------------------------------

@emulates(ct.exp)
def exp(x, /, *, rounding_mode=None):
    if rounding_mode is ct.RoundingMode.APPROX:
        return _device(device_math.exp_approx, "exp", x)
    return unary("exp", x)  # FULL is the default sequence


@emulates(ct.exp2)
def exp2(x, /, *, flush_to_zero=False):
    if flush_to_zero:
        return _device(device_math.exp2_ftz, "exp2", x)
    return unary("exp2", x)


def _device(function, fn: str, x) -> Tile:
    """A float32 form of ``fn`` (an approximate or flush-to-zero one) from ``device_math``;
    other dtypes take ``fn``'s plain form (cuTile refuses these options for them at
    compile time)."""
    t = as_tile(x)
    if t.dtype is not ct.float32 and dtypes.is_float(t.dtype):
        return unary(fn, x)
    a = np.asarray(t._a, dtype=np.float32)
    return elementwise(Tile(function(a), ct.float32), x)


def _ftz(x, on: bool):
    """``x`` with float32 subnormals flushed to zero when ``on`` (taint kept)."""
    if not on or not isinstance(x, Tile) or x.dtype is not ct.float32:
        return x
    return elementwise(Tile(rounding.flush(x._a), x.dtype), x)


@emulates(ct.log)
def log(x, /):
    return unary("log", x)


@emulates(ct.log2)
def log2(x, /):
    return unary("log2", x)


@emulates(ct.sqrt)
def sqrt(x, /, *, rounding_mode=None, flush_to_zero=False):
    if rounding_mode is ct.RoundingMode.APPROX:
        return _device(device_math.sqrt_approx, "sqrt", x)
    if flush_to_zero or rounding.is_directed(rounding_mode):
        return _rounded("sqrt", x, None, rounding_mode, flush_to_zero)
    return unary("sqrt", x)


@emulates(ct.rsqrt)
def rsqrt(x, /, *, flush_to_zero=False):
    if flush_to_zero:
        return _device(device_math.rsqrt_ftz, "rsqrt", x)
    return unary("rsqrt", x)


@emulates(ct.sin)
def sin(x, /):
    return unary("sin", x)


@emulates(ct.cos)
def cos(x, /):
    return unary("cos", x)


@emulates(ct.tan)
def tan(x, /):
    return unary("tan", x)


@emulates(ct.sinh)
def sinh(x, /):
    return unary("sinh", x)


@emulates(ct.cosh)
def cosh(x, /):
    return unary("cosh", x)


@emulates(ct.tanh)
def tanh(x, /, *, rounding_mode=None):
    if rounding_mode is ct.RoundingMode.APPROX:
        return _device(device_math.tanh_approx, "tanh", x)
    return unary("tanh", x)  # FULL is the default sequence


@emulates(ct.floor)
def floor(x, /):
    return unary("floor", x)


@emulates(ct.ceil)
def ceil(x, /):
    return unary("ceil", x)


@emulates(ct.abs)
def abs(x, /):
    return unary("abs", x)


@emulates(ct.negative)
def negative(x, /):
    return unary("negative", x)


@emulates(ct.isnan)
def isnan(x, /):
    return unary("isnan", x)


# ---- selection ---------------------------------------------------------------------------------

@emulates(ct.where, taint=poison.WHERE)
def where(cond, x, y, /) -> Tile:
    c = as_tile(cond, "condition")
    if c.dtype is not ct.bool_:
        raise kernel_error(f"ct.where needs a bool condition, got {c.dtype}")
    common = result_dtype(x, y)
    tx, ty = Tile(_values_as(x, common), common), Tile(_values_as(y, common), common)
    try:
        return Tile(np.where(c._a, tx._a, ty._a), common)
    except ValueError:
        raise kernel_error(f"ct.where: shapes {c.shape}, {tx.shape}, {ty.shape} do not "
                           "broadcast") from None


def _values_as(x, dtype: object) -> np.ndarray:
    if isinstance(x, Tile):
        return x._a if x.dtype is dtype else dtypes.cast(x._a, dtype)
    return dtypes.cast(np.asarray(x), dtype)


# ---- matrix multiply ----------------------------------------------------------------------

_MMA_ACC = {
    ct.float16: (ct.float16, ct.float32), ct.bfloat16: (ct.float32,),
    ct.float32: (ct.float32,), ct.tfloat32: (ct.float32,), ct.float64: (ct.float64,),
    ct.float8_e4m3fn: (ct.float16, ct.float32), ct.float8_e5m2: (ct.float16, ct.float32),
    ct.int8: (ct.int32,), ct.uint8: (ct.int32,),
}


def _product(x: Tile, y: Tile, acc_dtype: object) -> np.ndarray:
    """x @ y with products and sums in the accumulator's precision (float32 for narrow
    floats, exact int64 for 8-bit integers, float64 for float64)."""
    if x.ndim == 0 or y.ndim == 0:
        raise kernel_error("matrix multiply needs tiles of rank 1 to 3")
    if dtypes.is_integer(acc_dtype):
        a, b = np.asarray(x._a, dtype=np.int64), np.asarray(y._a, dtype=np.int64)
    else:
        compute = np.float64 if acc_dtype is ct.float64 else np.float32
        a, b = np.asarray(x._a, dtype=compute), np.asarray(y._a, dtype=compute)
    try:
        return np.matmul(a, b)
    except ValueError:
        raise kernel_error(f"matrix multiply of shapes {x.shape} and {y.shape}") from None


def _record_mma(op: str, x: Tile, y: Tile, product: np.ndarray, acc_dtype: object) -> None:
    """Count one matrix product into the trace: its shapes only (O(1) per call)."""
    run = current()
    rec = run.mma_recorder
    if rec is None:
        return
    filename, line, it = record_site(run)
    m = x.shape[-2] if x.ndim >= 2 else 1
    n = y.shape[-1] if y.ndim >= 2 else 1
    k = x.shape[-1]
    batch = math.prod(product.shape[:-2]) if x.ndim >= 2 and y.ndim >= 2 else 1
    rec.append(MmaCall(run.bid, op, int(m), int(n), int(k), batch, str(x.dtype), line, it,
                       filename, str(acc_dtype)))


@emulates(ct.mma, taint=poison.MATMUL)
def mma(x, y, /, acc, *, use_fast_acc=False) -> Tile:
    x, y, acc = as_tile(x, "x"), as_tile(y, "y"), as_tile(acc, "acc")
    if x.dtype is not y.dtype and {x.dtype, y.dtype} != {ct.int8, ct.uint8}:
        raise kernel_error(f"ct.mma: x and y must have the same dtype, got {x.dtype} and "
                           f"{y.dtype}")
    allowed = _MMA_ACC.get(x.dtype)
    if allowed is None:
        raise kernel_error(f"ct.mma does not support inputs of dtype {x.dtype}")
    if acc.dtype not in allowed:
        raise kernel_error(f"ct.mma: accumulator dtype {acc.dtype} is not supported for "
                           f"{x.dtype} inputs (allowed: {', '.join(map(str, allowed))})")
    if x.ndim < 2 or y.ndim < 2:
        raise kernel_error("ct.mma needs 2-d or 3-d tiles")
    product = _product(x, y, acc.dtype)
    compute = dtypes.compute_dtype(acc.dtype)
    acc_values = np.asarray(acc._a, dtype=compute)
    try:
        if product.dtype == compute and product.shape == acc_values.shape:
            product += acc_values  # product is a fresh array: accumulate in place
            total = product
        else:
            total = product.astype(compute, copy=False) + acc_values
    except ValueError:
        raise kernel_error(f"ct.mma: accumulator shape {acc.shape} does not match "
                           f"{product.shape}") from None
    if total.shape != acc.shape:
        raise kernel_error(f"ct.mma: accumulator shape {acc.shape} does not match the "
                           f"product shape {product.shape}")
    _record_mma("mma", x, y, product, acc.dtype)
    return finish(total, acc.dtype)


@emulates(ct.matmul, taint=poison.MATMUL)
def matmul(x, y, /) -> Tile:
    x, y = as_tile(x, "x"), as_tile(y, "y")
    common = result_dtype(x, y)
    if common not in _MMA_ACC:
        raise kernel_error(f"ct.matmul does not support dtype {common}")
    acc = _MMA_ACC[common][-1]
    product = _product(x.astype(common), y.astype(common), acc)
    _record_mma("matmul", x, y, product, common)
    return finish(product, common)


@emulates(ct.mma_scaled, taint=poison.MATMUL)
def mma_scaled(x, x_scale, y, y_scale, /, acc) -> Tile:
    x, y, acc = as_tile(x, "x"), as_tile(y, "y"), as_tile(acc, "acc")
    xs, ys = as_tile(x_scale, "x_scale"), as_tile(y_scale, "y_scale")
    k, ks = x.shape[-1], xs.shape[-1]
    if ks == 0 or k % ks or ys.shape[-2] != ks:
        raise kernel_error(f"ct.mma_scaled: K={k} is not divisible by the scale's K_s={ks}")
    block = k // ks
    a = np.asarray(x._a, dtype=np.float32) * np.repeat(np.asarray(xs._a, np.float32), block, -1)
    b = np.asarray(y._a, dtype=np.float32) * np.repeat(np.asarray(ys._a, np.float32), block, -2)
    product = np.matmul(a, b)
    _record_mma("mma_scaled", x, y, product, acc.dtype)
    return finish(product + np.asarray(acc._a, dtype=np.float32), acc.dtype)
