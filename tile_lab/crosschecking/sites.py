"""Where a kernel's GPU results may differ from the emulator's *by design*.

The emulator computes every op the way NumPy does: float math in float32 (or wider) with
round-to-nearest-even, subnormals kept, reductions and matrix products summed in its own
order, and ``rounding_mode`` / ``flush_to_zero`` accepted and ignored (see
``tile_lab.emulator``). A GPU may legitimately give other bits where the kernel asks for
approximate math, flushes subnormals, picks a rounding mode, sums in another order, or fuses a
multiply and an add into one FMA (one rounding instead of two: the compiler contracts
``a * b + c`` by default, and a 1-2 ULP difference, more where the sum cancels, follows). The
emulator records none of this while it runs, so these sites are read from the kernel's source
(and the ``@ct.function`` helpers it calls), by call name and keyword: a static list per
kernel, not per value. :mod:`tile_lab.crosschecking.compare` uses it to say which differences are
explained and by which line.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from types import FunctionType, ModuleType
from typing import Any

from ..kernel_source import source_lines_or_none

# calls whose device implementation is an approximation (MUFU / libdevice, a few ULP)
APPROX_OPS = frozenset({"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sin", "cos",
                        "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "pow",
                        "rsqrt", "erf", "sigmoid"})
# calls that add many values in an order the device picks (tensor cores, tree reductions)
ORDER_OPS = frozenset({"mma", "matmul", "mma_scaled", "sum", "prod", "cumsum", "cumprod",
                       "reduce", "scan", "atomic_add"})
_WORDS = {"approx": "approximate math", "ftz": "flush-to-zero", "rounding": "rounding mode",
          "order": "summation order", "fma": "multiply-add the compiler may fuse",
         "cast": "narrowing cast feeding a sum"}
# reductions whose length is one tile extent when they name an axis (else the whole tile)
_AXIS_OPS = frozenset({"sum", "prod", "reduce", "cumsum", "cumprod", "scan"})
# rounding modes the emulator does not reproduce (it always rounds to nearest even)
_NEAREST = frozenset({"RN", "None"})


@dataclass(frozen=True)
class DesignSite:
    """One op at ``line`` (of ``filename``) whose GPU result may differ from the emulator's.

    ``kind``: "approx" (approximate math), "ftz" (flush_to_zero=True), "rounding" (a rounding
    mode other than nearest-even), "order" (a sum whose order the device chooses), "fma" (a
    multiply feeding an add or subtract, which the compiler may fuse) or "cast" (an
    ``astype`` whose result a sum or matrix product takes: a value that differs by design
    may round to the neighbouring narrow value there);
    ``mode``: the rounding mode or flag as written (e.g. "APPROX", "flush_to_zero"), or
    "device default"; ``reduces``: for a reduction, "axis" (it names an axis: one tile
    extent long) or "all" (every element of its tile)."""

    line: int
    op: str
    kind: str
    mode: str
    filename: str = ""
    reduces: str = ""

    def describe(self) -> str:
        what = _WORDS[self.kind]
        return f"{self.op} at line {self.line} ({what}: {self.mode})"

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "op": self.op, "kind": self.kind, "mode": self.mode,
                "filename": self.filename, "reduces": self.reduces}


def describe_sites(sites: tuple[DesignSite, ...] | list[DesignSite]) -> str:
    """The sites in words, one entry per (line, op): "exp2 at line 48 (approximate math,
    flush-to-zero), mma at line 56 (summation order)"."""
    words = _WORDS
    groups: dict[tuple[int, str], list[str]] = {}
    for s in sites:
        what = words[s.kind]
        if s.kind in ("approx", "rounding") and s.mode != "device default":
            what += f" {s.mode}"
        groups.setdefault((s.line, s.op), []).append(what)
    return ", ".join(f"{op} at line {line} ({', '.join(dict.fromkeys(w))})"
                     for (line, op), w in groups.items())


def design_sites(kernel: Any) -> tuple[DesignSite, ...]:
    """Every by-design site of ``kernel`` (a ``@ct.kernel`` or its Python function) and of the
    functions it calls that live in Python source, sorted by file and line."""
    found: dict[tuple, DesignSite] = {}
    seen: set[int] = set()
    _scan(_pyfunc(kernel), found, seen)
    return tuple(sorted(found.values(), key=lambda s: (s.filename, s.line, s.op, s.kind)))


def _pyfunc(kernel: Any) -> FunctionType | None:
    if isinstance(kernel, FunctionType):
        return kernel
    if hasattr(kernel, "_annotated_function"):
        from .._cutile_compat import python_function

        return python_function(kernel)
    inner = getattr(kernel, "__wrapped__", None)
    return inner if isinstance(inner, FunctionType) else None


def _scan(fn: FunctionType | None, found: dict[tuple, DesignSite], seen: set[int]) -> None:
    if fn is None or id(fn.__code__) in seen:
        return
    seen.add(id(fn.__code__))
    read = source_lines_or_none(fn)
    if read is None:
        return
    lines, first = read
    tree = ast.parse(textwrap.dedent("".join(lines)))
    filename = fn.__code__.co_filename
    env = fn.__globals__
    casts = _cast_names(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 1) + first - 1
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            _add(found, DesignSite(line, "matmul (@)", "order", "device default", filename))
        if _is_multiply_add(node):
            _add(found, DesignSite(line, "a * b ± c", "fma", "compiler contraction", filename))
        if not isinstance(node, ast.Call):
            continue
        name, module = _callee(node.func, env)
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        if module:  # ct.xxx(...)
            if name in APPROX_OPS:
                mode = _mode_text(keywords.get("rounding_mode"))
                _add(found, DesignSite(line, name, "approx",
                                       mode if mode != "None" else "device default", filename))
            if name in ORDER_OPS:
                reduces = _reduces(name, node, keywords)
                _add(found, DesignSite(line, name, "order", "device default", filename,
                                       reduces))
                _casts_into(node, casts, found, first, filename)
        _flags(found, name or "", keywords, line, filename)
        target = _resolve(node.func, env)
        if target is not None:
            _scan(target, found, seen)


def _reduces(name: str, call: ast.Call, keywords: dict[str, ast.expr]) -> str:
    """"axis" when a reduction runs along one axis (scans always do), "all" when it reduces
    the whole tile (no axis, None or a tuple of axes), "" for other ops."""
    if name not in _AXIS_OPS:
        return ""
    if name in ("cumsum", "cumprod", "scan"):
        return "axis"
    axis = keywords.get("axis", call.args[1] if len(call.args) >= 2 else None)
    if axis is None or isinstance(axis, ast.Tuple) or (
            isinstance(axis, ast.Constant) and axis.value is None):
        return "all"
    return "axis"


def _is_cast(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "astype")


def _cast_names(tree: ast.AST) -> dict[str, int]:
    """Variables assigned a value an ``astype`` produced, with the cast's line (in the
    parsed text)."""
    names: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            cast = next((c for c in ast.walk(node.value) if _is_cast(c)), None)
            if cast is not None:
                names[node.targets[0].id] = cast.lineno
    return names


def _casts_into(call: ast.Call, casts: dict[str, int], found: dict[tuple, DesignSite],
                first: int, filename: str) -> None:
    """A "cast" site for each ``astype`` that a sum or matrix product takes as an operand,
    written in its arguments or assigned to a variable it takes."""
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        for node in ast.walk(arg):
            line = None
            if _is_cast(node):
                line = node.lineno
            elif isinstance(node, ast.Name) and node.id in casts:
                line = casts[node.id]
            if line is not None:
                _add(found, DesignSite(line + first - 1, "astype", "cast", "device default",
                                       filename))


def _is_multiply_add(node: ast.AST) -> bool:
    """``a * b + c``, ``c - a * b`` and the like: a product that feeds an add or subtract."""
    return (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
            and any(isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mult)
                    for side in (node.left, node.right)))


def _flags(found, name: str, keywords: dict[str, ast.expr], line: int, filename: str) -> None:
    ftz = keywords.get("flush_to_zero")
    if ftz is not None and not (isinstance(ftz, ast.Constant) and ftz.value is False):
        _add(found, DesignSite(line, name or "call", "ftz", "flush_to_zero", filename))
    mode = _mode_text(keywords.get("rounding_mode"))
    if mode not in _NEAREST and name not in APPROX_OPS:
        kind = "approx" if mode in ("APPROX", "FULL") else "rounding"
        _add(found, DesignSite(line, name or "call", kind, mode, filename))


def _add(found: dict[tuple, DesignSite], site: DesignSite) -> None:
    found.setdefault((site.filename, site.line, site.op, site.kind), site)


def _mode_text(node: ast.expr | None) -> str:
    if node is None:
        return "None"
    if isinstance(node, ast.Attribute):
        return node.attr  # ct.RoundingMode.APPROX -> "APPROX"
    if isinstance(node, ast.Constant):
        return str(node.value)
    return ast.unparse(node)


def _callee(func: ast.expr, env: dict[str, Any]) -> tuple[str | None, bool]:
    """(name, whether it is a cuda.tile function) of a call's target."""
    if isinstance(func, ast.Attribute):
        base = _value_of(func.value, env)
        is_ct = isinstance(base, ModuleType) and base.__name__.startswith("cuda.tile")
        return func.attr, is_ct
    if isinstance(func, ast.Name):
        value = env.get(func.id)
        mod = getattr(value, "__module__", "") or ""
        return func.id, mod.startswith("cuda.tile")
    return None, False


def _value_of(node: ast.expr, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _value_of(node.value, env)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def _resolve(func: ast.expr, env: dict[str, Any]) -> FunctionType | None:
    """The Python function a call reaches, when it is user code (a helper, @ct.function)."""
    value = _value_of(func, env)
    if value is None or isinstance(value, ModuleType):
        return None
    mod = getattr(value, "__module__", "") or ""
    if mod.startswith(("cuda.tile", "numpy", "builtins", "math")):
        return None
    fn = _pyfunc(value)
    return fn
