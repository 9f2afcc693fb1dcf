"""Kernel signatures from example arguments or from a short spec string.

cuTile compiles one kernel per *signature*: the dtype and rank of each array and what
may be assumed about it (alignment, unit strides, divisibility), the type of each scalar
and the value of each ``ct.Constant``. ``KernelSignature.from_kernel_args`` derives one
from device arrays but needs a CUDA driver; this module derives the same assumptions on
any machine from

* example arguments: NumPy arrays, torch tensors, CuPy arrays, anything with
  ``__cuda_array_interface__``, ``__array_interface__`` or ``__dlpack__`` (read by
  ``tile_lab.array_like`` from metadata, without copying), Python/NumPy scalars,
  values for ``ct.Constant`` parameters, lists of arrays; or
* a spec string such as ``"f32[4096], f32[4096], f32[4096], 128"`` (parsed by
  :func:`parse_spec`: the grammar alone, :class:`SpecItem` by item, which the
  reproducer also reads to write example arrays).

The assumptions mirror what cuTile's launcher specialises on at launch time: base address
16-byte aligned, unit strides as constants, strides and extents divisible by 16 (bytes
resp. elements) where they are, no internal aliasing for strided-disjoint arrays.
"""

from __future__ import annotations

import itertools
import math
import re
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cuda.tile as ct
import numpy as np
from cuda.tile.compilation import (
    ArrayConstraint,
    CallingConvention,
    KernelSignature,
    ListConstraint,
    ScalarConstraint,
    TupleConstraint,
)

from .. import _cutile_compat as compat
from ..array_like import (
    ALIGN_BYTES,
    DTYPE_CODES,
    ArgumentProblem,
    ArrayDesc,
    code_for_numpy_dtype,
    contiguous_strides,
    describe_array,
    is_array_like,
)
from ..errors import ArgumentValueError, SignatureError

# -- the spec string, item by item -----------------------------------------------------

@dataclass(frozen=True)
class SpecItem:
    """One comma-separated item of a spec string."""

    text: str  # as written
    name: str | None  # from "name=..." when given
    kind: str  # "array" | "scalar" | "value"
    code: str | None = None  # dtype code for arrays and scalars
    shape: tuple[int, ...] = ()
    value: Any = None  # for kind == "value"


def _split_top_level(text: str) -> list[str]:
    items, depth, cur = [], 0, []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur))
    return items


_NAME_PREFIX = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(.*)$", re.S)
_ARRAY = re.compile(r"^([A-Za-z]\w*)\s*\[(.*)\]$", re.S)
_INT = re.compile(r"^[+-]?\d[\d_]*$")


def _parse_literal(text: str) -> Any:
    if text in ("True", "False"):
        return text == "True"
    if _INT.match(text):
        return int(text.replace("_", ""))
    try:
        return float(text)
    except ValueError:
        pass
    if text.startswith("(") and text.endswith(")"):
        inner = [t.strip() for t in _split_top_level(text[1:-1])]
        return tuple(_parse_literal(t) for t in inner if t)
    raise ValueError(text)


def parse_spec(spec: str) -> list[SpecItem]:
    """Parse a signature spec string, item by item.

    Items, separated by top-level commas, each optionally prefixed ``name=``:

    * ``f32[4096]``, ``f16[1024,512]``, ``bf16[M=8192,K=8192]``: a contiguous array
      (dims may be named for readability);
    * ``i32``, ``i64``, ``f32``, ``bool``: a runtime scalar of that dtype;
    * ``128``, ``0.5``, ``True``, ``(64, 64)``: a value: the value of a ``ct.Constant``
      parameter, or a runtime scalar (int -> i32, float -> f32) for other parameters.

    dtype codes: ``bool i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64 f8e4m3 f8e5m2``.
    """
    if not spec.strip():
        return []
    out = []
    for pos, raw in enumerate(_split_top_level(spec), start=1):
        text = raw.strip()
        if not text:
            raise SignatureError(f"signature spec item {pos} is empty (in {spec!r})")
        name = None
        m = _NAME_PREFIX.match(text)
        if m:
            name, text = m.group(1), m.group(2).strip()
        out.append(_parse_item(text, name, pos, raw.strip()))
    return out


def _parse_item(text: str, name: str | None, pos: int, raw: str) -> SpecItem:
    m = _ARRAY.match(text)
    if m:
        code = m.group(1)
        _check_code(code, pos, raw)
        dims = []
        for d in (x.strip() for x in m.group(2).split(",")):
            dm = re.match(r"^(?:[A-Za-z_]\w*\s*=\s*)?([\d_]+)$", d)
            if not dm:
                raise SignatureError(
                    f"signature spec item {pos} ({raw!r}): bad dimension {d!r}; "
                    "write a size like 4096 or a named size like M=4096")
            dims.append(int(dm.group(1).replace("_", "")))
        return SpecItem(raw, name, "array", code=code, shape=tuple(dims))
    if re.match(r"^[A-Za-z]\w*$", text) and text not in ("True", "False"):
        _check_code(text, pos, raw)
        return SpecItem(raw, name, "scalar", code=text)
    try:
        value = _parse_literal(text)
    except ValueError:
        raise SignatureError(
            f"signature spec item {pos} ({raw!r}) is neither an array like f32[4096], "
            "a scalar dtype like i32, nor a value like 128") from None
    return SpecItem(raw, name, "value", value=value)


def _check_code(code: str, pos: int, raw: str) -> None:
    if code not in DTYPE_CODES:
        raise SignatureError(f"signature spec item {pos} ({raw!r}): unknown dtype {code!r}; "
                             f"known dtypes: {' '.join(DTYPE_CODES)}")


# -- building signatures ----------------------------------------------------------------

def _ct_dtype(code: str):
    return getattr(ct, DTYPE_CODES[code][0])


_CODE_BY_CT_NAME = {ct_name: code for code, (ct_name, _) in DTYPE_CODES.items()}
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class BuiltSignature:
    """A cuTile ``KernelSignature`` plus its human-readable form."""

    kernel_signature: KernelSignature
    display: str  # e.g. "f32[4096], f32[4096], f32[4096], TILE=128"


# -- constraints -----------------------------------------------------------------------

def _elements_disjoint(shape: Sequence[int], strides: Sequence[int]) -> bool:
    # Sorting by stride, each stride must be positive and step over the previous extent.
    pairs = sorted(zip(strides, shape, strict=True))
    if not pairs:
        return True
    if pairs[0][0] <= 0:
        return False
    return all(s1 >= s0 * n0 for (s0, n0), (s1, _) in itertools.pairwise(pairs))


def array_constraint(desc: ArrayDesc, param: compat.ParamInfo | None = None) -> ArrayConstraint:
    """The ArrayConstraint cuTile's launcher would derive for an array like ``desc``."""
    ndim = len(desc.shape)
    if any(s < 0 for s in desc.strides):
        raise ArgumentProblem("negative strides are not supported by cuTile")
    index_dtype = (param.array_index_dtype if param and param.array_index_dtype is not None
                   else ct.int32)
    extent = sum((n - 1) * s for n, s in zip(desc.shape, desc.strides, strict=True) if n > 0)
    if index_dtype == ct.int32 and max([extent, *desc.shape], default=0) > _INT32_MAX:
        raise ArgumentProblem("shape or strides exceed int32; annotate the parameter with "
                          "ct.ArrayAnnotation(index_dtype=ct.int64)")
    static_shapes = set(_static_dims("static_shape_dims", param, ndim))
    static_strides = set(_static_dims("static_stride_dims", param, ndim))
    if static_strides:
        # cuTile: listing static strides replaces its own stride == 1 inference
        stride_constant = tuple(s if i in static_strides else None
                                for i, s in enumerate(desc.strides))
    else:
        stride_constant = tuple(1 if s == 1 else None for s in desc.strides)
    shape_constant = tuple(n if i in static_shapes else None for i, n in enumerate(desc.shape))
    bits = _ct_dtype(desc.code).bitwidth
    per16 = (ALIGN_BYTES * 8) // bits if (ALIGN_BYTES * 8) % bits == 0 else 1
    stride_div = tuple(
        per16 if (s * bits) % 8 == 0 and (s * bits // 8) % ALIGN_BYTES == 0 and c is None else 1
        for s, c in zip(desc.strides, stride_constant, strict=True))
    shape_div = tuple(16 if n % 16 == 0 and c is None else 1
                      for n, c in zip(desc.shape, shape_constant, strict=True))
    return ArrayConstraint(
        _ct_dtype(desc.code), ndim, index_dtype=index_dtype, stride_lower_bound_incl=0,
        alias_groups=(), may_alias_internally=not _elements_disjoint(desc.shape, desc.strides),
        stride_constant=stride_constant,
        shape_constant=shape_constant if any(c is not None for c in shape_constant) else None,
        stride_divisible_by=stride_div, shape_divisible_by=shape_div,
        base_addr_divisible_by=ALIGN_BYTES if desc.aligned else 1)


def _static_dims(field: str, param: compat.ParamInfo | None, ndim: int) -> list[int]:
    """The axes ``param``'s ArrayAnnotation names in ``field`` (negative ones counted from
    the end), refused as cuTile's launcher refuses them: a ValueError for an axis beyond
    the array's rank or named twice."""
    dims = getattr(param, field) if param is not None else ()
    out: list[int] = []
    for d in dims:
        axis = d + ndim if d < 0 else d
        if not 0 <= axis < ndim:
            raise ArgumentValueError(f"{field} contains axis {d} but array rank is {ndim}")
        if axis in out:
            raise ArgumentValueError(f"{field} contains duplicate axis {d}")
        out.append(axis)
    return out


def _scalar_constraint(value: Any, param: compat.ParamInfo) -> tuple[ScalarConstraint, str]:
    if isinstance(value, np.generic):
        code = code_for_numpy_dtype(value.dtype)
        if code is None:
            raise ArgumentProblem(f"scalars of dtype {value.dtype} are not supported")
        return ScalarConstraint(_ct_dtype(code)), code
    if isinstance(value, bool):
        return ScalarConstraint(ct.bool_), "bool"
    if isinstance(value, int):
        dtype = param.scalar_dtype or ct.int32
        if dtype == ct.int32 and not -_INT32_MAX - 1 <= value <= _INT32_MAX:
            raise ArgumentProblem(f"{value} does not fit int32; annotate the parameter "
                              "with ct.ScalarAnnotation(dtype=ct.int64)")
        return ScalarConstraint(dtype), _CODE_BY_CT_NAME[dtype.name]
    if isinstance(value, float):
        return ScalarConstraint(ct.float32), "f32"
    raise ArgumentProblem(f"expected an array or a scalar, got {type(value).__name__}")


def _expected_kind(param: compat.ParamInfo) -> str | None:
    """"array"/"scalar" when the parameter's type hint says which, else None."""
    ann = param.annotation
    if typing.get_origin(ann) is typing.Annotated:
        ann = typing.get_args(ann)[0]
    if ann is ct.Array or (isinstance(ann, type) and issubclass(ann, ct.Array)):
        return "array"
    if ann in (int, float, bool):
        return "scalar"
    return None


def _constant_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return tuple(_constant_value(v) for v in value)
    return value


def _format_constant(value: Any) -> str:
    return repr(value)


def _arg_constraint(value: Any, param: compat.ParamInfo) -> tuple[Any, str]:
    """(constraint or constant value, display text) for one example argument."""
    desc = describe_array(value)
    if param.constant:
        if desc is not None or isinstance(value, list):
            raise ArgumentProblem("the parameter is a ct.Constant: give a value "
                              f"(e.g. {param.name}=128), not an array")
        v = _constant_value(value)
        return v, f"{param.name}={_format_constant(v)}"
    kind = _expected_kind(param)
    if desc is not None:
        if kind == "scalar":
            raise ArgumentProblem("the parameter is annotated as a scalar but got an array")
        return array_constraint(desc, param), desc.display()
    if kind == "array":
        raise ArgumentProblem("expected an array (NumPy, torch, CuPy or DLPack), got "
                          f"{type(value).__name__}")
    if isinstance(value, list):
        return _list_constraint(value, param)
    if isinstance(value, tuple):
        items = [_arg_constraint(v, _item_param(param, i)) for i, v in enumerate(value)]
        return (TupleConstraint([c for c, _ in items]),
                "(" + ", ".join(t for _, t in items) + ")")
    return _scalar_constraint(value, param)


def _item_param(param: compat.ParamInfo, i: int) -> compat.ParamInfo:
    """What the annotation says about item ``i`` of a tuple parameter (its own item
    annotation, e.g. ``ct.Constant[int]``, when given; else the parameter's)."""
    if param.items is not None and i < len(param.items):
        return param.items[i]
    return param.each if param.each is not None else param


def _list_constraint(values: list, param: compat.ParamInfo) -> tuple[ListConstraint, str]:
    if not values:
        raise ArgumentProblem("an empty list cannot be a kernel argument")
    descs = [describe_array(v) for v in values]
    if any(d is None for d in descs):
        raise ArgumentProblem("lists must hold arrays only")
    first = descs[0]
    if any(d.code != first.code or len(d.shape) != len(first.shape) for d in descs):
        raise ArgumentProblem("all arrays in a list must have the same dtype and rank")
    # the list's ct.ListAnnotation(element=...) describes every array in it
    element_param = param.element if param.element is not None else param
    constraints = [array_constraint(d, element_param) for d in descs]
    c0 = constraints[0]
    # an axis annotated static is one constant for the whole list: items must agree there
    shape_constant = _agreed_constants("shape", [c.shape_constant for c in constraints])
    static_strides = bool(element_param.static_stride_dims)
    stride_constant = (_agreed_constants("stride", [c.stride_constant for c in constraints])
                       if static_strides else
                       # else cuTile specialises a list on what holds for every element
                       tuple(v if all(c.stride_constant[i] == v for c in constraints) else None
                             for i, v in enumerate(c0.stride_constant)))
    element = ArrayConstraint(
        c0.dtype, c0.ndim, index_dtype=c0.index_dtype, stride_lower_bound_incl=0,
        alias_groups=(), may_alias_internally=any(c.may_alias_internally for c in constraints),
        stride_constant=stride_constant, shape_constant=shape_constant,
        stride_divisible_by=tuple(math.gcd(*(c.stride_divisible_by[i] for c in constraints))
                                  for i in range(c0.ndim)),
        shape_divisible_by=tuple(math.gcd(*(c.shape_divisible_by[i] for c in constraints))
                                 for i in range(c0.ndim)),
        base_addr_divisible_by=math.gcd(*(c.base_addr_divisible_by for c in constraints)))
    return (ListConstraint(element, alias_groups=(), elements_may_alias=True),
            f"list[{len(values)} x {first.code}{len(first.shape)}d]")


def _agreed_constants(what: str, per_item: list[tuple[int | None, ...] | None]
                      ) -> tuple[int | None, ...] | None:
    """The constants (None: not annotated static) every item of a list shares; a ValueError
    with cuTile's wording where two items differ on an annotated axis."""
    first = per_item[0]
    if first is None:
        return None
    for other in per_item[1:]:
        for axis, (a, b) in enumerate(zip(first, other, strict=True)):
            if a is not None and a != b:
                raise ArgumentValueError(
                    f"Arrays in list vary in static {what} at axis {axis}: {a} vs {b}")
    return first


# -- spec items (parse_spec's) as constraints ---------------------------------------------

def _spec_item_constraint(item: SpecItem, param: compat.ParamInfo) -> tuple[Any, str]:
    if item.kind == "value":
        if param.constant:
            return _arg_constraint(item.value, param)
        if _expected_kind(param) == "array":
            raise ArgumentProblem(f"expected an array like f32[1024], got the value {item.text}")
        return _arg_constraint(item.value, param)
    if param.constant:
        raise ArgumentProblem(f"the parameter is a ct.Constant: give its value "
                          f"(e.g. {param.name}=128), not {item.text!r}")
    if item.kind == "scalar":
        if _expected_kind(param) == "array":
            raise ArgumentProblem(f"expected an array like {item.code}[1024], got a scalar")
        return ScalarConstraint(_ct_dtype(item.code)), item.code
    desc = ArrayDesc(item.code, item.shape, contiguous_strides(item.shape), True)
    if _expected_kind(param) == "scalar":
        raise ArgumentProblem("the parameter is annotated as a scalar but got an array")
    return array_constraint(desc, param), desc.display()


# -- entry points ----------------------------------------------------------------------

def _describe_param(i: int, param: compat.ParamInfo) -> str:
    return f"argument {i + 1} ({param.name!r})"


def _check_count(name: str, params: Sequence[compat.ParamInfo], n: int, what: str) -> None:
    if n != len(params):
        raise SignatureError(
            f"{name}() takes {len(params)} argument{'s' * (len(params) != 1)} "
            f"({', '.join(p.name for p in params)}) but {what} has {n}")


def _finish(parts: list[tuple[Any, str]]) -> BuiltSignature:
    constraints = [c for c, _ in parts]
    needs_v2 = any(isinstance(c, TupleConstraint) or _has_static_shape(c) or (
        isinstance(c, ListConstraint) and _has_static_shape(c.element)) for c in constraints)
    cconv = (CallingConvention.cutile_python_v2() if needs_v2
             else CallingConvention.cutile_python_v1())
    try:
        sig = KernelSignature(constraints, cconv)
    except (TypeError, ValueError) as e:
        raise SignatureError(f"cuTile rejected the signature: {e}") from e
    return BuiltSignature(sig, ", ".join(t for _, t in parts))


def _has_static_shape(c: Any) -> bool:
    """An array constraint with a constant extent (cuTile passes those under its v2 calling
    convention)."""
    return isinstance(c, ArrayConstraint) and any(x is not None for x in c.shape_constant)


def signature_from_args(kernel: Any, args: Sequence[Any]) -> BuiltSignature:
    """The signature for calling ``kernel`` with example arguments ``args``."""
    return _from_args(_facts(kernel), args)


def _facts(kernel: Any) -> compat.KernelFacts:
    facts = compat.kernel_facts(kernel)
    if facts is None:
        raise SignatureError(f"expected a @ct.kernel function, got {type(kernel).__name__}")
    return facts


def _from_args(facts: compat.KernelFacts, args: Sequence[Any]) -> BuiltSignature:
    params = facts.parameters
    args = list(args)
    _check_count(facts.name, params, len(args), "the argument list")
    parts = []
    for i, (value, param) in enumerate(zip(args, params, strict=True)):
        try:
            parts.append(_arg_constraint(value, param))
        except ArgumentValueError:
            raise  # cuTile's launcher raises these as they are
        except (ArgumentProblem, TypeError, ValueError) as e:
            raise SignatureError(f"{_describe_param(i, param)}: {e}") from None
    return _finish(parts)


def constraints_from_args(kernel: Any, args: Sequence[Any]) -> list[Any]:
    """The parameter constraints (and constant values) cuTile's launcher derives for
    ``args``, without a CUDA driver (for ``KernelSignature.from_kernel_args`` on the CPU)."""
    return list(signature_from_args(kernel, args).kernel_signature.parameters)


def signature_from_spec(kernel: Any, spec: str) -> BuiltSignature:
    """The signature described by a spec string (see ``parse_spec``)."""
    return _from_spec(_facts(kernel), spec)


def _from_spec(facts: compat.KernelFacts, spec: str) -> BuiltSignature:
    params = facts.parameters
    items = parse_spec(spec)
    _check_count(facts.name, params, len(items), f"the signature spec {spec!r}")
    parts = []
    for i, (item, param) in enumerate(zip(items, params, strict=True)):
        if item.name is not None and item.name != param.name:
            raise SignatureError(f"{_describe_param(i, param)}: the spec names it "
                                 f"{item.name!r} ({item.text!r})")
        try:
            parts.append(_spec_item_constraint(item, param))
        except (ArgumentProblem, TypeError, ValueError) as e:
            raise SignatureError(f"{_describe_param(i, param)}: {e}") from None
    return _finish(parts)


def build_signature(kernel: Any, args_or_sig: str | Sequence[Any]) -> BuiltSignature:
    """Dispatch: a ``str`` is a spec, any other sequence is example arguments."""
    return signature_of(_facts(kernel), args_or_sig)


def signature_of(facts: compat.KernelFacts, args_or_sig: str | Sequence[Any]
                 ) -> BuiltSignature:
    """:func:`build_signature` for a kernel whose facts the caller has already gathered
    (``compile/inspect.py``'s ``prepare``): the signature reads no more of cuTile's kernel."""
    if isinstance(args_or_sig, str):
        return _from_spec(facts, args_or_sig)
    if isinstance(args_or_sig, Sequence):
        return _from_args(facts, list(args_or_sig))
    if is_array_like(args_or_sig):
        raise SignatureError("args_or_sig must be a sequence of example arguments "
                             "(a tuple or list) or a spec string, not a single array")
    raise SignatureError("args_or_sig must be a sequence of example arguments or a spec "
                         f"string like 'f32[4096], 128', got {type(args_or_sig).__name__}")
