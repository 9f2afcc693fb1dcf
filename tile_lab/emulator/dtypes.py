"""cuTile data types on the CPU: the NumPy dtype that stores each one, and cuTile's
promotion rules (including loosely typed Python scalars).

The rules mirror cuTile 1.7's documented promotion table: bool promotes to anything,
signed and unsigned integers never mix implicitly, integers promote to any float, float16
and bfloat16 do not mix, and the restricted floats (tf32, float8, float4) only combine
with themselves. A Python scalar (``2``, ``2.5``, ``True``) is *loosely typed*: it takes
the tile's dtype when its kind (bool < int < float) is not above the tile's kind
(``float16 tile * 0.5`` stays float16), otherwise it promotes as int32 / float32.
"""

from __future__ import annotations

import cuda.tile as ct
import ml_dtypes
import numpy as np

from ..errors import EmulatorUnsupported

DType = type(ct.float32)

# cuTile dtype -> NumPy storage dtype. tfloat32 is stored as float32 values rounded to
# tf32's 10-bit mantissa (see ``round_tf32``).
_TO_NUMPY: dict[object, np.dtype] = {
    ct.bool_: np.dtype(np.bool_),
    ct.int8: np.dtype(np.int8), ct.int16: np.dtype(np.int16),
    ct.int32: np.dtype(np.int32), ct.int64: np.dtype(np.int64),
    ct.uint8: np.dtype(np.uint8), ct.uint16: np.dtype(np.uint16),
    ct.uint32: np.dtype(np.uint32), ct.uint64: np.dtype(np.uint64),
    ct.float16: np.dtype(np.float16), ct.float32: np.dtype(np.float32),
    ct.float64: np.dtype(np.float64),
    ct.bfloat16: np.dtype(ml_dtypes.bfloat16),
    ct.tfloat32: np.dtype(np.float32),
    ct.float8_e4m3fn: np.dtype(ml_dtypes.float8_e4m3fn),
    ct.float8_e5m2: np.dtype(ml_dtypes.float8_e5m2),
    ct.float8_e8m0fnu: np.dtype(ml_dtypes.float8_e8m0fnu),
    ct.float4_e2m1fn: np.dtype(ml_dtypes.float4_e2m1fn),
}
# NumPy dtype -> cuTile dtype, for kernel arguments (float32 maps to float32, not tf32).
_FROM_NUMPY: dict[np.dtype, object] = {v: k for k, v in _TO_NUMPY.items() if k is not ct.tfloat32}

BOOL, INT, FLOAT = 0, 1, 2  # kinds, ordered: a loose scalar of a higher kind promotes

_SIGNED = {ct.int8, ct.int16, ct.int32, ct.int64}
_UNSIGNED = {ct.uint8, ct.uint16, ct.uint32, ct.uint64}
_FLOATS = {ct.float16, ct.bfloat16, ct.float32, ct.float64}
_RESTRICTED = {ct.tfloat32, ct.float8_e4m3fn, ct.float8_e5m2, ct.float8_e8m0fnu,
               ct.float4_e2m1fn}


class PromotionError(TypeError):
    """Two dtypes that cuTile refuses to promote implicitly."""


def to_numpy(dtype: object) -> np.dtype:
    try:
        return _TO_NUMPY[dtype]
    except KeyError:
        raise EmulatorUnsupported(f"dtype {dtype} is not supported by the CPU emulator") from None


def from_numpy(dtype: np.dtype) -> object:
    """The cuTile dtype of a NumPy array argument."""
    try:
        return _FROM_NUMPY[np.dtype(dtype)]
    except KeyError:
        raise EmulatorUnsupported(
            f"arrays of NumPy dtype {np.dtype(dtype)} have no cuTile equivalent") from None


def is_dtype(x: object) -> bool:
    return isinstance(x, DType)


def kind(dtype: object) -> int:
    if dtype is ct.bool_:
        return BOOL
    if dtype in _SIGNED or dtype in _UNSIGNED:
        return INT
    return FLOAT


def is_float(dtype: object) -> bool:
    return dtype in _FLOATS or dtype in _RESTRICTED


def is_integer(dtype: object) -> bool:
    return dtype in _SIGNED or dtype in _UNSIGNED


def is_signed(dtype: object) -> bool:
    return dtype in _SIGNED


def is_restricted(dtype: object) -> bool:
    return dtype in _RESTRICTED


def promote(a: object, b: object) -> object:
    """cuTile's implicit promotion of two tile dtypes (raises PromotionError)."""
    if a is b:
        return a
    if a in _RESTRICTED or b in _RESTRICTED:
        raise PromotionError(f"implicit promotion of {a} and {b} is not supported as it involves "
                             "restricted float dtypes; cast explicitly with astype()")
    if a is ct.bool_:
        return b
    if b is ct.bool_:
        return a
    ka, kb = kind(a), kind(b)
    if ka == INT and kb == INT:
        if (a in _SIGNED) != (b in _SIGNED):
            raise PromotionError(f"implicit promotion of {a} and {b} (signed and unsigned) is not "
                                 "supported; cast explicitly with astype()")
        return a if a.bitwidth >= b.bitwidth else b
    if ka == FLOAT and kb == INT:
        return a
    if kb == FLOAT and ka == INT:
        return b
    if {a, b} == {ct.float16, ct.bfloat16}:
        raise PromotionError("implicit promotion of float16 and bfloat16 is not supported; "
                             "cast explicitly with astype()")
    return a if a.bitwidth >= b.bitwidth else b


def loose_dtype(value: bool | int | float) -> object:
    """The dtype cuTile gives a Python scalar on its own."""
    if isinstance(value, (bool, np.bool_)):
        return ct.bool_
    if isinstance(value, (int, np.integer)):
        if -2**31 <= value < 2**31:
            return ct.int32
        if -2**63 <= value < 2**63:
            return ct.int64
        return ct.uint64
    return ct.float32


def promote_with_loose(dtype: object, value: bool | int | float) -> object:
    """Result dtype of ``tile(dtype) <op> value`` for a Python scalar ``value``."""
    value_kind = BOOL if isinstance(value, (bool, np.bool_)) else (
        INT if isinstance(value, (int, np.integer)) else FLOAT)
    result = dtype if value_kind <= kind(dtype) else promote(dtype, loose_dtype(value))
    if value_kind == INT and is_integer(result):
        info = np.iinfo(to_numpy(result))
        if not info.min <= value <= info.max:
            raise PromotionError(f"integer constant {value} is out of range of {result}")
    return result


def round_tf32(values: np.ndarray) -> np.ndarray:
    """Round float32 values to tf32 (10 explicit mantissa bits), nearest-even."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    finite = np.isfinite(values)
    lsb = (bits >> 13) & 1
    rounded = ((bits + 0x0FFF + lsb) & np.uint32(0xFFFFE000)).astype(np.uint32)
    out = np.where(finite, rounded, bits).view(np.float32)
    return out.reshape(np.shape(values))


def compute_dtype(dtype: object) -> np.dtype:
    """NumPy dtype to do arithmetic in: narrow floats compute in float32 and round once at
    the end (a correctly rounded result for + - * / of 16-bit and 8-bit floats)."""
    if dtype in (ct.float16, ct.bfloat16, ct.tfloat32) or dtype in _RESTRICTED:
        return np.dtype(np.float32)
    return to_numpy(dtype)


def cast(values: np.ndarray, dtype: object) -> np.ndarray:
    """Convert NumPy values to the storage of cuTile ``dtype`` (float→int truncates toward
    zero, as cuTile's casts do; tf32 rounds the mantissa)."""
    target = to_numpy(dtype)
    if dtype is ct.tfloat32:
        return round_tf32(np.asarray(values, dtype=np.float32))
    values = np.asarray(values)
    if values.dtype == target:
        return values
    if target.kind in "iu" and (values.dtype.kind == "f" or values.dtype in _NARROW_FLOATS):
        # float -> int as the GPU converts (cvt.rzi): toward zero, saturating, NaN -> 0
        info = np.iinfo(target)
        wide = np.nan_to_num(np.trunc(values.astype(np.float64)), nan=0.0)
        with np.errstate(invalid="ignore"):
            out = np.array(np.clip(wide, float(info.min), float(info.max)).astype(target))
        out[wide >= float(info.max)] = info.max  # float(2**63 - 1) rounds up: fix the top
        return out
    return values.astype(target)


_NARROW_FLOATS = {np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn),
                  np.dtype(ml_dtypes.float8_e5m2), np.dtype(ml_dtypes.float8_e8m0fnu),
                  np.dtype(ml_dtypes.float4_e2m1fn)}


def normalize(x: object) -> object:
    """A cuTile dtype from whatever a kernel passed as one: a ``ct`` dtype (or the emulated
    constructor standing for it), a NumPy dtype or scalar type (``np.float32``), or a torch
    dtype — the same objects cuTile accepts. Raises TypeError otherwise."""
    if isinstance(x, DType):
        return x
    if isinstance(x, KernelDType):
        return x.dtype
    if type(x).__module__.split(".")[0] == "torch":  # torch.float16 -> ct.float16
        found = getattr(ct, str(x).split(".")[-1].replace("bool", "bool_"), None)
        if isinstance(found, DType):
            return found
    elif not isinstance(x, (str, int, float)) and not any(x is t for t in (int, float, bool)):
        try:
            return from_numpy(np.dtype(x))
        except (TypeError, EmulatorUnsupported):
            pass
    raise TypeError(f"{x!r} is not a dtype")


class KernelDType:
    """``ct.float32`` etc. as a kernel sees them: the dtype itself (equal to and hashing
    like the real ``ct`` dtype). ``tile.DTypeConstructor`` makes it callable, ``ct.int32(x)``
    converting a scalar as cuTile allows in tile code (a tile is above this module)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: object) -> None:
        self.dtype = dtype

    def __eq__(self, other: object) -> bool:
        try:
            return self.dtype == normalize(other)
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __getattr__(self, name: str):
        return getattr(self.dtype, name)  # .name, .bitwidth

    def __repr__(self) -> str:
        return repr(self.dtype)

    def __str__(self) -> str:
        return str(self.dtype)


def check_implicit_cast(value: object, value_dtype: object | None, target: object) -> None:
    """cuTile's rule for implicit casts (stores, scatters, padding values, atomic updates):
    a tile's dtype must promote *to* the target (widening only); a Python scalar must not
    be of a higher kind than the target and must fit it. Raises PromotionError."""
    if value_dtype is not None:  # a tile
        if value_dtype is target:
            return
        try:
            ok = promote(value_dtype, target) is target
        except PromotionError:
            ok = False
        if not ok:
            raise PromotionError(f"cannot implicitly cast {value_dtype} to {target}; "
                                 f"convert explicitly with .astype({target})")
        return
    value_kind = BOOL if isinstance(value, (bool, np.bool_)) else (
        INT if isinstance(value, (int, np.integer)) else FLOAT)
    target_kind = kind(target)
    if target_kind == BOOL:
        if value_kind == FLOAT or value not in (0, 1):
            raise PromotionError(f"cannot implicitly cast {value} to {target}")
    elif value_kind > target_kind:
        raise PromotionError(f"cannot implicitly cast {value} to {target}")
    elif value_kind == INT and target_kind == INT:
        info = np.iinfo(to_numpy(target))
        if not info.min <= value <= info.max:
            raise PromotionError(f"{value} is out of range of {target}")
