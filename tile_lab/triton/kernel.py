"""A ``@triton.jit`` kernel and the arguments it is compiled for.

Triton compiles a kernel for a *signature*: each parameter's type (``*fp32`` for a pointer to
float32, ``i32`` for an int, ...) and the value of each ``tl.constexpr`` parameter.
:func:`signature_of` makes one from example arguments (NumPy or torch arrays, scalars) or
from a spec in Triton's own notation, ``"*fp32, *fp32, *fp32, i32, 1024"`` (types for the
plain parameters, values for the constexpr ones).
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentTypeError, SignatureError

__all__ = ["TritonSignature", "is_triton_kernel", "jit_function", "param_names",
           "signature_of"]

# NumPy / torch dtype names -> Triton's scalar type names
_TYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
          "int32": "i32", "int64": "i64", "int16": "i16", "int8": "i8", "uint8": "u8",
          "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1"}
_TYPE_RE = re.compile(r"\*?(fp(16|32|64)|bf16|i(1|8|16|32|64)|u(8|16|32|64))")


def is_triton_kernel(obj: Any) -> bool:
    """True for a ``@triton.jit`` function (a JITFunction), without importing Triton."""
    cls = type(obj)
    return any(c.__name__ in ("JITFunction", "JITCallable") and c.__module__.startswith(
        "triton.") for c in cls.__mro__)


def jit_function(obj: Any, what: str) -> Any:
    """``obj`` if it is a ``@triton.jit`` kernel, else a clear error naming ``what``."""
    if is_triton_kernel(obj):
        return obj
    kind = ("a cuTile kernel (@ct.kernel)" if type(obj).__module__.startswith("cuda.tile")
            else "a plain Python function" if inspect.isfunction(obj)
            else f"a {type(obj).__name__}")
    raise ArgumentTypeError(f"{what} must be a @triton.jit kernel, got {kind}",
                            hint="decorate it with @triton.jit (import triton)")


def param_names(kernel: Any) -> list[str]:
    return list(kernel.arg_names)


def _constexpr_params(kernel: Any) -> set[str]:
    return {p.name for p in kernel.params if p.is_constexpr}


@dataclass(frozen=True)
class TritonSignature:
    """What ``triton.compile`` needs: types per parameter (``"constexpr"`` for constexprs),
    constexpr values, and the 16-divisibility hints a GPU launch would specialise on."""

    types: dict[str, str]
    constexprs: dict[str, Any]
    divisible: tuple[int, ...]  # parameter indices known to be multiples of 16

    def text(self) -> str:
        """Human-readable, e.g. ``*fp32, *fp32, *fp32, i32, BLOCK=1024``."""
        return ", ".join(f"{k}={self.constexprs[k]}" if t == "constexpr" else t
                         for k, t in self.types.items())


def _dtype_name(a: Any) -> str | None:
    dt = getattr(a, "dtype", None)
    if dt is None or not hasattr(a, "shape"):
        return None
    return str(dt).removeprefix("torch.")


def _type_of(value: Any, index: int, name: str) -> str:
    dt = _dtype_name(value)
    if dt is not None:
        if dt not in _TYPES:
            raise SignatureError(f"argument {index} ({name}): arrays of {dt} have no Triton "
                                 f"pointer type here (use one of {', '.join(_TYPES)})")
        return "*" + _TYPES[dt]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -2**31 <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise SignatureError(f"argument {index} ({name}): {type(value).__name__} is not an array, "
                         f"int or float")


def _check_count(kernel: Any, n: int) -> list[str]:
    names = param_names(kernel)
    if n != len(names):
        raise SignatureError(f"{kernel.__name__} takes {len(names)} arguments "
                             f"({', '.join(names)}), got {n}")
    return names


def _from_args(kernel: Any, args: Sequence[Any]) -> TritonSignature:
    names = _check_count(kernel, len(args))
    consts = _constexpr_params(kernel)
    types, values, divisible = {}, {}, []
    for i, (name, value) in enumerate(zip(names, args), start=1):
        if name in consts:
            types[name], values[name] = "constexpr", value
            continue
        types[name] = _type_of(value, i, name)
        # allocations are 16-byte aligned, and Triton specialises ints that are multiples of 16
        if types[name].startswith("*") or (isinstance(value, int) and not isinstance(
                value, bool) and value % 16 == 0):
            divisible.append(i - 1)
    return TritonSignature(types, values, tuple(divisible))


def _from_spec(kernel: Any, spec: str) -> TritonSignature:
    items = [s.strip() for s in spec.split(",") if s.strip()]
    names = _check_count(kernel, len(items))
    consts = _constexpr_params(kernel)
    types, values, divisible = {}, {}, []
    for i, (name, item) in enumerate(zip(names, items), start=1):
        if name in consts:
            try:
                values[name] = ast.literal_eval(item.split("=", 1)[-1].strip())
            except (ValueError, SyntaxError):
                raise SignatureError(f"spec item {i} ({name} is a tl.constexpr): {item!r} is "
                                     f"not a literal value such as 1024") from None
            types[name] = "constexpr"
            continue
        if not _TYPE_RE.fullmatch(item):
            raise SignatureError(f"spec item {i} ({name}): {item!r} is not a Triton type such "
                                 f"as *fp32, i32 or fp32")
        types[name] = item
        if item.startswith("*"):
            divisible.append(i - 1)
    return TritonSignature(types, values, tuple(divisible))


def signature_of(kernel: Any, args: Any) -> TritonSignature:
    """The signature for example ``args`` (a sequence) or a spec string."""
    if isinstance(args, str):
        return _from_spec(kernel, args)
    if isinstance(args, Sequence):
        return _from_args(kernel, args)
    raise ArgumentTypeError(f"args must be example arguments (a tuple) or a spec string such "
                            f"as \"*fp32, *fp32, i32, 1024\", got {type(args).__name__}")
