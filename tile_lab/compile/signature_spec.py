"""The signature spec string: ``"f32[4096], f32[4096], f32[4096], 128"`` read item by item.

The grammar alone (:func:`parse_spec` -> :class:`SpecItem`), and the dtype codes it knows;
:mod:`tile_lab.compile.signature` turns the items into cuTile constraints for a kernel's parameters,
and the reproducer writes example arrays from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import SignatureError

__all__ = ["DTYPE_CODES", "SpecItem", "parse_spec"]

# spec dtype code -> (cuTile dtype name, NumPy dtype name)
DTYPE_CODES: dict[str, tuple[str, str]] = {
    "bool": ("bool_", "bool"),
    "i8": ("int8", "int8"), "i16": ("int16", "int16"),
    "i32": ("int32", "int32"), "i64": ("int64", "int64"),
    "u8": ("uint8", "uint8"), "u16": ("uint16", "uint16"),
    "u32": ("uint32", "uint32"), "u64": ("uint64", "uint64"),
    "f16": ("float16", "float16"), "bf16": ("bfloat16", "bfloat16"),
    "f32": ("float32", "float32"), "f64": ("float64", "float64"),
    "f8e4m3": ("float8_e4m3fn", "float8_e4m3fn"), "f8e5m2": ("float8_e5m2", "float8_e5m2"),
}


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
