"""The emulated tile value, and the elementwise core every arithmetic op goes through.

A :class:`Tile` is an immutable NumPy array tagged with its cuTile dtype; a
:class:`Poisoned` tile also carries a per-lane taint mask (lanes a GPU leaves undetermined;
``poison.py`` says where they come from and where they may not go), which the elementwise
core carries lane by lane. Operators follow cuTile semantics rather than NumPy's: cuTile's
promotion table, loosely typed Python scalars, bool comparison results, Python-style ``//``
and ``%``, and true division that always yields a float. Narrow floats (float16, bfloat16,
float8) compute in float32 and round once, which is how a correctly rounded device result
comes out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cuda.tile as ct
import numpy as np

from . import device_math, dtypes
from .registry import emulation_of
from .state import kernel_error

Scalar = bool | int | float


class Tile:
    """A tile: immutable values of one cuTile dtype, shape a tuple of powers of two."""

    __slots__ = ("_a", "_dtype")
    __hash__ = None  # type: ignore[assignment]  # == is elementwise, as in cuTile
    # NumPy scalars in kernel code (np.float32(2) * t) defer to the tile's operators
    __array_ufunc__ = None

    def __init__(self, values: np.ndarray, dtype: object) -> None:
        self._a = values
        self._dtype = dtype

    # ---- metadata ------------------------------------------------------------
    @property
    def dtype(self) -> object:
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self._a.shape  # ndarray or NumPy scalar: both have .shape / .ndim

    @property
    def ndim(self) -> int:
        return self._a.ndim

    def numpy(self) -> np.ndarray:
        """The values as a NumPy array (a copy)."""
        return np.array(self._a)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._a, dtype=dtype)

    # ---- methods mirroring free functions: the op registered for the cuTile stub ----
    def item(self) -> Tile:
        return emulation_of(ct.reshape)(self, ())

    def extract(self, index, shape) -> Tile:
        return emulation_of(ct.extract)(self, index, shape)

    def insert(self, index, value) -> Tile:
        return emulation_of(ct.insert)(self, index, value)

    def reshape(self, shape) -> Tile:
        return emulation_of(ct.reshape)(self, shape)

    def permute(self, axes) -> Tile:
        return emulation_of(ct.permute)(self, axes)

    def transpose(self, axis0=None, axis1=None) -> Tile:
        return emulation_of(ct.transpose)(self, axis0, axis1)

    def astype(self, dtype, *, rounding_mode=None) -> Tile:
        return emulation_of(ct.astype)(self, dtype, rounding_mode=rounding_mode)

    # ---- scalar conversion (0-d tiles drive Python control flow) ---------------------
    def _scalar(self, what: str):
        if self._a.ndim != 0:
            raise kernel_error(f"a tile of shape {self.shape} cannot be used as {what}; "
                               "only 0-d tiles can")
        return self._a.item()

    def __index__(self) -> int:
        if self._dtype not in _INDEX_DTYPES:
            raise kernel_error(f"a {self._dtype} tile cannot be used as an index")
        return self._scalar("an index")

    def __int__(self) -> int:
        return int(self._scalar("an int"))

    def __float__(self) -> float:
        return float(self._scalar("a float"))

    def __bool__(self) -> bool:
        return bool(self._scalar("a condition"))

    def __getitem__(self, index) -> Tile:
        """``t[:, None]`` inserts an axis (cuTile's only tile indexing)."""
        items = index if isinstance(index, tuple) else (index,)
        for it in items:
            if not (it is None or it is Ellipsis or it == slice(None)):
                raise kernel_error("tile indexing only inserts axes (t[:, None]); use "
                                   "ct.extract or ct.gather to select elements")
        return Tile(np.asarray(self._a)[index], self._dtype)

    def __iter__(self):
        raise kernel_error("tiles are not iterable; use ct.extract, or ct.static_iter over "
                           "a range of constants")

    # ---- operators -------------------------------------------------------------
    def __add__(self, o): return binary("add", self, o)
    def __radd__(self, o): return binary("add", o, self)
    def __sub__(self, o): return binary("sub", self, o)
    def __rsub__(self, o): return binary("sub", o, self)
    def __mul__(self, o): return binary("mul", self, o)
    def __rmul__(self, o): return binary("mul", o, self)
    def __truediv__(self, o): return binary("truediv", self, o)
    def __rtruediv__(self, o): return binary("truediv", o, self)
    def __floordiv__(self, o): return binary("floordiv", self, o)
    def __rfloordiv__(self, o): return binary("floordiv", o, self)
    def __mod__(self, o): return binary("mod", self, o)
    def __rmod__(self, o): return binary("mod", o, self)
    def __pow__(self, o): return binary("pow", self, o)
    def __rpow__(self, o): return binary("pow", o, self)
    def __and__(self, o): return bitwise("and", self, o)
    def __rand__(self, o): return bitwise("and", o, self)
    def __or__(self, o): return bitwise("or", self, o)
    def __ror__(self, o): return bitwise("or", o, self)
    def __xor__(self, o): return bitwise("xor", self, o)
    def __rxor__(self, o): return bitwise("xor", o, self)
    def __lshift__(self, o): return bitwise("lshift", self, o)
    def __rlshift__(self, o): return bitwise("lshift", o, self)
    def __rshift__(self, o): return bitwise("rshift", self, o)
    def __rrshift__(self, o): return bitwise("rshift", o, self)
    def __lt__(self, o): return compare("lt", self, o)
    def __le__(self, o): return compare("le", self, o)
    def __gt__(self, o): return compare("gt", self, o)
    def __ge__(self, o): return compare("ge", self, o)
    def __eq__(self, o): return compare("eq", self, o)  # type: ignore[override]
    def __ne__(self, o): return compare("ne", self, o)  # type: ignore[override]
    def __neg__(self): return unary("negative", self)
    def __pos__(self): return self
    def __abs__(self): return unary("abs", self)
    def __invert__(self): return unary("bitwise_not", self)
    def __matmul__(self, o): return emulation_of(ct.matmul)(self, o)
    def __rmatmul__(self, o): return emulation_of(ct.matmul)(o, self)
    def __divmod__(self, o): return emulation_of(ct.divmod)(self, o)
    def __rdivmod__(self, o): return emulation_of(ct.divmod)(o, self)

    # ---- printing: cuTile prints tiles as nested lists ---------------------------------
    def __format__(self, spec: str) -> str:
        return format_values(np.asarray(self._a), self._dtype, spec)

    def __str__(self) -> str:
        return format_values(np.asarray(self._a), self._dtype, "")

    def __repr__(self) -> str:
        return f"<tile[{self._dtype}, {self.shape}] {self}>"


_INDEX_DTYPES = frozenset({ct.int8, ct.int16, ct.int32, ct.int64, ct.uint8, ct.uint16,
                           ct.uint32, ct.uint64, ct.bool_})


# ---- undetermined lanes ---------------------------------------------------------------

# True once any Poisoned tile has been made in this process; the elementwise core and the
# taint rules test it first. It only gates a check (the check itself looks at the operands),
# and it is never reset, so launches on other threads cannot switch tracking off under a
# running one.
ACTIVE = False


@dataclass(frozen=True)
class Origin:
    """Where undetermined lanes came from, and where they first mixed into other lanes."""

    load_file: str
    load_line: int
    load_arg: str
    load_op: str = "load"
    mix_file: str | None = None
    mix_line: int | None = None
    mix_op: str | None = None


class Poisoned(Tile):
    """A tile some of whose lanes are undetermined (``_taint`` True there, at least one)."""

    __slots__ = ("_origin", "_taint")

    def __init__(self, values: np.ndarray, dtype: object, taint: np.ndarray,
                 origin: Origin) -> None:
        global ACTIVE
        super().__init__(values, dtype)
        self._taint = taint
        self._origin = origin
        ACTIVE = True

    def __getitem__(self, index) -> Tile:
        out = super().__getitem__(index)  # only inserts axes: every tainted lane stays
        return Poisoned(out._a, out._dtype, np.asarray(self._taint)[index], self._origin)


def elementwise(out: Any, *operands: Any) -> Any:
    """``out`` of a lane-by-lane op, tainted where any (broadcast) operand lane is."""
    mask, origin = None, None
    for x in operands:
        if type(x) is not Poisoned:
            continue
        m = x._taint
        if origin is None or (origin.mix_line is None and x._origin.mix_line is not None):
            origin = x._origin  # a mixed origin explains more than a plain padded one
        mask = m if mask is None else (mask | m)  # broadcasting OR
    if mask is None or not isinstance(out, Tile):
        return out
    if mask.shape != out.shape:
        mask = np.broadcast_to(mask, out.shape)
    # every Poisoned mask has a True lane, and broadcasting keeps it: no need to test
    return Poisoned(out._a, out._dtype, mask, origin)


class DTypeConstructor(dtypes.KernelDType):
    """``ct.float32`` etc. as a kernel sees them, callable: ``ct.int32(x)`` converts a scalar,
    as cuTile allows in tile code."""

    __slots__ = ()

    def __call__(self, x: object = 0) -> Tile:  # cuTile: ct.float32() is 0
        if isinstance(x, str):  # a constant: cuTile converts it as Python does, float("-inf")
            x = (float if dtypes.is_float(self.dtype) else
                 int if dtypes.is_integer(self.dtype) else bool)(x)
        t = as_tile(x, f"the argument of {self.dtype}()")
        if t.ndim != 0:
            raise kernel_error(f"{self.dtype}() converts scalars; use .astype() for tiles")
        return Tile(dtypes.cast(t._a, self.dtype), self.dtype)


def format_values(values: np.ndarray, dtype: object, spec: str) -> str:
    """cuTile's print format: nested ``[a, b]`` lists; floats as ``%f`` unless ``spec``."""
    if values.ndim == 0:
        v = values.item()
        if dtype is ct.bool_:
            v = int(v)
        if spec:
            return format(v, spec)
        return f"{v:f}" if dtypes.is_float(dtype) else str(v)
    return "[" + ", ".join(format_values(values[i], dtype, spec)
                           for i in range(values.shape[0])) + "]"


# ---- operands -------------------------------------------------------------------------

def is_loose(x: Any) -> bool:
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)) \
        and not isinstance(x, Tile)


def as_tile(x: Any, what: str = "operand") -> Tile:
    """A Tile from a tile or a Python scalar (which takes its loose dtype)."""
    if isinstance(x, Tile):
        return x
    if is_loose(x):
        dt = dtypes.loose_dtype(x)
        return Tile(np.asarray(x, dtype=dtypes.to_numpy(dt)), dt)
    raise kernel_error(f"expected a tile or a scalar as {what}, got {type(x).__name__}")


def result_dtype(x: Any, y: Any) -> object:
    """Common dtype of two operands, with loose-scalar rules."""
    try:
        if isinstance(x, Tile):
            if isinstance(y, Tile):
                return dtypes.promote(x._dtype, y._dtype)
            if is_loose(y):
                return dtypes.promote_with_loose(x._dtype, y)
        elif isinstance(y, Tile) and is_loose(x):
            return dtypes.promote_with_loose(y._dtype, x)
        elif is_loose(x) and is_loose(y):
            return dtypes.promote(dtypes.loose_dtype(x), dtypes.loose_dtype(y))
    except dtypes.PromotionError as exc:
        raise kernel_error(str(exc)) from None
    bad = y if isinstance(x, Tile) or is_loose(x) else x
    raise kernel_error(f"unsupported operand of type {type(bad).__name__} in a tile expression")


def operand(x: Any, dtype: object, compute: np.dtype) -> np.ndarray:
    """``x`` converted to ``dtype`` (rounding a loose scalar into it), as ``compute``."""
    if isinstance(x, Tile):
        a = x._a
        if x._dtype is not dtype and dtypes.to_numpy(dtype) != compute:
            a = dtypes.cast(a, dtype)  # e.g. float32 -> bfloat16 rounding before compute
        return a if np.asarray(a).dtype == compute else np.asarray(a).astype(compute)
    storage = dtypes.to_numpy(dtype)
    a = np.asarray(x).astype(storage) if storage != compute else np.asarray(x, dtype=compute)
    return a if a.dtype == compute else a.astype(compute)


def finish(values: np.ndarray, dtype: object) -> Tile:
    storage = dtypes.to_numpy(dtype)
    if np.asarray(values).dtype != storage or dtype is ct.tfloat32:
        values = dtypes.cast(values, dtype)
    return Tile(values, dtype)


# ---- elementwise kernels ----------------------------------------------------------------

def _floordiv(a, b):
    if a.dtype.kind == "f":
        return np.floor(a / b)
    return np.floor_divide(a, b)


def _mod(a, b):
    if a.dtype.kind != "f":
        return np.remainder(a, b)
    r = np.fmod(a, b)  # C remainder, then cuTile's sign correction
    fix = ((r < 0) != (b < 0)) & (r != 0)
    return np.where(fix, r + b, r)


def _pow(a, b):
    if a.dtype.kind in "iu" and np.any(np.asarray(b) < 0):
        raise kernel_error("integer ** negative integer is not supported")
    return np.power(a, b)


_ARITH = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": _floordiv, "mod": _mod, "pow": _pow,
    "atan2": lambda a, b: np.arctan2(a.astype(np.float64), b.astype(np.float64)),
    "cdiv": lambda a, b: -np.floor_divide(-a, b) if a.dtype.kind == "i"
    else np.where(a == 0, 0, (a - 1) // b + 1).astype(a.dtype),
}
_CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
        "eq": np.equal, "ne": np.not_equal}


_FAST_DTYPES = frozenset({ct.float32, ct.float64, ct.int32, ct.int64})  # storage = compute
_FAST_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def binary(fn: str, x: Any, y: Any, *, propagate_nan: bool = False) -> Any:
    """Elementwise arithmetic ``fn`` with cuTile promotion; Python scalars on both sides
    fold with Python semantics, as cuTile folds constants."""
    if type(x) is Tile and type(y) is Tile and x._dtype is y._dtype \
            and x._dtype in _FAST_DTYPES and fn in _FAST_UFUNCS:
        try:  # the common case: same-dtype + - * with nothing to convert
            return Tile(_FAST_UFUNCS[fn](x._a, y._a), x._dtype)
        except ValueError as exc:
            raise kernel_error(f"`{fn}` of shapes {x.shape} and {y.shape}: {exc}") from None
    if is_loose(x) and is_loose(y) and fn not in ("min", "max"):
        return _python_binary(fn, x, y)
    common = result_dtype(x, y)
    if common is ct.bool_:
        raise kernel_error(f"binary arithmetic `{fn}` does not support bool; cast to int first")
    if fn == "truediv" and not dtypes.is_float(common):
        common = ct.float32  # true division of integers yields the default float
    compute = dtypes.compute_dtype(common)
    a, b = operand(x, common, compute), operand(y, common, compute)
    try:
        if fn == "min":
            r = np.minimum(a, b) if propagate_nan or a.dtype.kind != "f" else np.fmin(a, b)
        elif fn == "max":
            r = np.maximum(a, b) if propagate_nan or a.dtype.kind != "f" else np.fmax(a, b)
        elif fn == "floordiv" and compute != dtypes.to_numpy(common) and a.dtype.kind == "f":
            # a 16-bit float quotient is rounded to its dtype before the floor, as on the GPU
            r = np.floor(dtypes.cast(a / b, common).astype(compute))
        else:
            r = _ARITH[fn](a, b)
    except ValueError as exc:
        raise kernel_error(f"`{fn}` of shapes {np.shape(a)} and {np.shape(b)}: {exc}") from None
    out = finish(r, common)
    return elementwise(out, x, y) if ACTIVE else out


def _python_binary(fn: str, x: Scalar, y: Scalar) -> Scalar:
    import math
    import operator
    ops = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
           "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
           "pow": operator.pow, "atan2": math.atan2, "cdiv": lambda a, b: -((-a) // b)}
    try:
        return ops[fn](x, y)
    except ZeroDivisionError as exc:
        raise kernel_error(f"constant expression: {exc}") from None


def compare(fn: str, x: Any, y: Any) -> Any:
    if (x is None or y is None) and fn in ("eq", "ne"):  # cuTile folds None tests
        return ((x is None) == (y is None)) == (fn == "eq")
    if is_loose(x) and is_loose(y):
        import operator
        return getattr(operator, fn)(x, y)
    common = result_dtype(x, y)
    compute = dtypes.compute_dtype(common)
    a, b = operand(x, common, compute), operand(y, common, compute)
    try:
        out = Tile(_CMP[fn](a, b), ct.bool_)
        return elementwise(out, x, y) if ACTIVE else out
    except ValueError as exc:
        raise kernel_error(f"comparison of shapes {np.shape(a)} and {np.shape(b)}: {exc}") \
            from None


def bitwise(fn: str, x: Any, y: Any) -> Any:
    if is_loose(x) and is_loose(y):
        import operator
        ops = {"and": operator.and_, "or": operator.or_, "xor": operator.xor,
               "lshift": operator.lshift, "rshift": operator.rshift}
        return ops[fn](x, y)
    tx = x._dtype if isinstance(x, Tile) else None
    ty = y._dtype if isinstance(y, Tile) else None
    for d, v in ((tx, x), (ty, y)):
        kind = dtypes.kind(d) if d is not None else (
            dtypes.BOOL if isinstance(v, (bool, np.bool_)) else
            dtypes.INT if isinstance(v, (int, np.integer)) else dtypes.FLOAT)
        if kind == dtypes.FLOAT:
            raise kernel_error("bitwise operations need integer or bool operands; "
                               "use ct.bitcast() for floats")
    shift = fn in ("lshift", "rshift")
    if shift:  # cuTile promotes shift operands like arithmetic ones; bool is no integer
        for side, d, v in (("left", tx, x), ("right", ty, y)):
            if d is ct.bool_ or (d is None and isinstance(v, (bool, np.bool_))):
                raise kernel_error(f"bitwise shift needs an integer {side}-hand side, "
                                   "got bool")
    elif tx is not None and ty is not None and tx is not ty:
        raise kernel_error(f"bitwise operands must have the same dtype, got {tx} and {ty}")
    common = result_dtype(x, y)
    a, b = operand(x, common, dtypes.to_numpy(common)), operand(y, common, dtypes.to_numpy(common))
    try:
        if fn == "and":
            r = np.bitwise_and(a, b)
        elif fn == "or":
            r = np.bitwise_or(a, b)
        elif fn == "xor":
            r = np.bitwise_xor(a, b)
        elif fn == "lshift":
            r = np.left_shift(a, b)
        else:
            r = np.right_shift(a, b)
    except ValueError as exc:
        raise kernel_error(f"`{fn}` of shapes {np.shape(a)} and {np.shape(b)}: {exc}") from None
    out = Tile(np.asarray(r).astype(a.dtype, copy=False), common)
    return elementwise(out, x, y) if ACTIVE else out


_FLOAT_UNARY = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda a: 1.0 / np.sqrt(a), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil,
}


def unary(fn: str, x: Any) -> Tile:
    out = _unary(fn, x)
    return elementwise(out, x) if ACTIVE else out


def _unary(fn: str, x: Any) -> Tile:
    t = as_tile(x)
    dt = t._dtype
    if fn == "isnan":
        if not dtypes.is_float(dt):
            return Tile(np.zeros(t.shape, dtype=bool), ct.bool_)
        return Tile(np.isnan(np.asarray(t._a, dtype=np.float32)
                             if dtypes.compute_dtype(dt) != dtypes.to_numpy(dt) else t._a),
                    ct.bool_)
    if fn == "bitwise_not":
        if dtypes.is_float(dt):
            raise kernel_error("bitwise not needs an integer or bool tile")
        return Tile(np.invert(t._a), dt)
    if fn == "abs" and dt is ct.bool_:
        return t  # cuTile keeps bool for abs (negation promotes it to int32)
    if fn in ("negative", "abs"):
        if dt is ct.bool_:
            dt = ct.int32
        compute = dtypes.compute_dtype(dt)
        a = operand(t, dt, compute)
        return finish(np.negative(a) if fn == "negative" else np.abs(a), dt)
    if fn in ("floor", "ceil") and not dtypes.is_float(dt):
        raise kernel_error(f"ct.{fn} does not accept integer inputs")
    if not dtypes.is_float(dt):
        dt = ct.float32  # integer inputs convert to float32 first, as cuTile does
    a = operand(t, dt, dtypes.compute_dtype(dt))
    if dt is ct.float32 and fn in device_math.FUNCTIONS:
        # CUDA's own float32 algorithms, bit for bit (range reduction, FMA polynomials)
        return Tile(device_math.FUNCTIONS[fn](a), dt)
    # narrower and wider floats: evaluated in float64 and rounded once (NumPy's float32
    # SIMD loops are off by an ulp on many inputs)
    if fn != "rsqrt":  # (rsqrt stays 1/sqrt in float32: an approximation on the GPU too)
        a = a.astype(np.float64, copy=False)
    return finish(_FLOAT_UNARY[fn](a), dt)

