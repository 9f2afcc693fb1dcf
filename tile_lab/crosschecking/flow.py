"""Which float dtype each by-design site of a kernel computes in, read from its source.

A site's error is relative to the precision it computes in: ``ct.exp2`` of a float32 tile is
off by 2^-21, of an fp16 tile by half an fp16 ULP (2^-11) once rounded. The kernel's arrays
have known dtypes (the trace records them); the tiles follow them through the source: a
``ct.load`` of ``X`` has ``X``'s dtype, ``astype(ct.float32)`` / ``ct.full(..., ct.float32)``
/ ``dtype=ct.float32`` name one, an ``mma`` has its accumulator's, any other op the widest of
its operands (Python scalars do not count). Names are followed flow-insensitively (every
assignment of a name, two passes for loops); anything not followed (a helper function's
parameters, a value the source does not name) is *unknown*, and the caller then takes the
narrowest float dtype of the kernel's arrays — the cautious side.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Mapping
from typing import Any

from ..kernel_source import source_lines_or_none
from .sites import _callee, _pyfunc, _value_of

_FLOATS = ("float64", "float32", "tfloat32", "float16", "bfloat16", "float8_e4m3fn",
           "float8_e5m2")
_INTS = ("int64", "uint64", "int32", "uint32", "int16", "uint16", "int8", "uint8", "bool_")
# smaller: wider (a float operand makes the result float: Python scalars aside, cuTile does
# not mix tile dtypes implicitly, so this matters for scalars written as tiles only)
_RANK = {d: i for i, d in enumerate(_FLOATS + _INTS)}
_CREATE = frozenset({"full", "zeros", "ones", "arange"})


def site_dtypes(kernel: Any, arrays: Mapping[str, str]) -> dict[tuple[int, str], str]:
    """``{(line, op): dtype}`` for the calls and multiply-adds of ``kernel``'s own source
    whose operands' dtype the source determines (``op``: the call's name, or
    ``"a * b ± c"``; the dtype a float or integer dtype name); ``arrays``: the dtype name
    of each array parameter."""
    fn = _pyfunc(kernel)
    if fn is None:
        return {}
    read = source_lines_or_none(fn)
    if read is None:
        return {}
    lines, first = read
    tree = ast.parse(textwrap.dedent("".join(lines)))
    infer = _Infer(fn.__globals__, {k: v for k, v in arrays.items() if v in _RANK})
    for _ in range(2):  # a loop's carried values are assigned after their first use
        for node in ast.walk(tree):
            infer.assign(node)
    out: dict[tuple[int, str], str] = {}
    for node in ast.walk(tree):
        key: tuple[int, str] | None = None
        dt: str | None = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            key, dt = (node.lineno, "a * b ± c"), infer.dtype(node)
        elif isinstance(node, ast.Call) and infer.cast_target(node) is not None:
            key, dt = (node.lineno, "astype"), infer.cast_target(node)  # a cast: its target
        elif isinstance(node, ast.Call):
            name, _ = _callee(node.func, infer.env)
            operands = node.args[:1] or [k.value for k in node.keywords][:1]
            if name and operands:
                key, dt = (node.lineno, name), infer.dtype(operands[0])
        if key is not None and dt is not None:
            line = key[0] + first - 1
            k = (line, key[1])
            out[k] = _narrower(out[k], dt) if k in out else dt
    return out


def _wider(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return a or b
    return a if _RANK[a] <= _RANK[b] else b


def _narrower(a: str, b: str) -> str:
    return a if _RANK[a] >= _RANK[b] else b


class _Infer:
    def __init__(self, env: dict[str, Any], arrays: dict[str, str]) -> None:
        self.env = env
        self.arrays = arrays  # array parameters: their element dtype
        self.names: dict[str, str | None] = {}

    def assign(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            dt = self.dtype(node.value)
            for t in targets:
                if isinstance(t, ast.Name) and t.id not in self.arrays:
                    self.names[t.id] = _wider(self.names.get(t.id), dt)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            self.names[name] = _wider(self.names.get(name), self.dtype(node.value))

    def dtype(self, node: ast.AST) -> str | None:
        """The float dtype of a tile expression (None: not a float tile, or not known)."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.BinOp):
            return _wider(self.dtype(node.left), self.dtype(node.right))
        if isinstance(node, ast.UnaryOp):
            return self.dtype(node.operand)
        if isinstance(node, ast.IfExp):
            return _wider(self.dtype(node.body), self.dtype(node.orelse))
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node, ast.Call):
            return self.dtype(node.value) if isinstance(node, ast.Subscript) or \
                node.attr in ("T",) else None
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def cast_target(self, node: ast.Call) -> str | None:
        """The dtype an ``x.astype(d)`` / ``ct.astype(x, d)`` casts to (None: not a cast, or
        a dtype the source does not determine)."""
        func = node.func
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if isinstance(func, ast.Attribute) and func.attr == "astype":
            return self.named(node.args[0] if node.args else kw.get("dtype"))
        name, is_ct = _callee(func, self.env)
        if is_ct and name == "astype":
            return self.named(node.args[1] if len(node.args) > 1 else kw.get("dtype"))
        return None

    def _call(self, node: ast.Call) -> str | None:
        func = node.func
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        target = self.cast_target(node)
        if target is not None:
            return target
        name, is_ct = _callee(func, self.env)
        if isinstance(func, ast.Attribute) and not is_ct and \
                _value_of(func.value, self.env) is None:
            return self.dtype(func.value)  # a tile's method (reshape, permute): its dtype
        if not is_ct:
            return None
        if name in ("load", "gather") and node.args and isinstance(node.args[0], ast.Name):
            return self.arrays.get(node.args[0].id)
        if name in _CREATE:
            return self.named(kw.get("dtype", node.args[2] if len(node.args) > 2 else None))
        if name in ("mma", "mma_scaled"):
            acc = kw.get("acc", node.args[2] if len(node.args) > 2 else None)
            return self.dtype(acc) if acc is not None else None
        dts = [self.dtype(a) for a in node.args]
        out: str | None = None
        for d in dts:
            out = _wider(out, d)
        return out

    def named(self, node: ast.AST | None) -> str | None:
        """A dtype written in the source: ``ct.float32``, ``np.float16``, ``X.dtype``."""
        if node is None:
            return None
        if isinstance(node, ast.Attribute) and node.attr == "dtype":
            if isinstance(node.value, ast.Name) and node.value.id in self.arrays:
                return self.arrays[node.value.id]
            return self.dtype(node.value)
        value = _value_of(node, self.env)
        text = str(getattr(value, "name", value) if value is not None else "")
        text = text.rsplit(".", 1)[-1]
        return text if text in _RANK else None
