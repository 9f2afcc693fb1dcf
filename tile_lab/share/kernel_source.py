"""A kernel written out as a module of its own (``kernel.py`` of a reproducer).

The kernel's source is copied as written; the names it reads from its module (or notebook)
are written out before it: modules as imports, plain constants as literals, cuTile dtypes and
``ct.Constant[...]`` annotations by name, and helper functions by their own source (with the
names *they* read, recursively). A name that cannot be written out is listed in
``KernelModule.unresolved`` and left as a comment, so the reproducer says what is missing
instead of silently compiling something else.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types
from dataclasses import dataclass
from typing import Any

from .. import _cutile_compat as compat

__all__ = ["KernelModule", "kernel_module"]


@dataclass(frozen=True)
class KernelModule:
    """``text``: the module; ``name``: the kernel's name in it; ``kernel_line``: the line of
    ``text`` where the kernel's source starts (its first decorator); ``unresolved``: names
    the kernel reads that could not be written out."""

    text: str
    name: str
    kernel_line: int
    unresolved: tuple[str, ...]


def kernel_module(kernel: Any, origin: str) -> KernelModule:
    """``kernel.py`` for ``kernel`` (a ``@ct.kernel``); ``origin`` names where it came from
    (for the module's docstring)."""
    func = compat.python_function(kernel)
    writer = _Writer()
    writer.function(func, is_kernel=True)
    head = [f'"""{func.__name__}: {origin}, written out by tile_lab.reproducer."""', "",
            *sorted(writer.imports), ""]
    if writer.constants:
        head += [*writer.constants, ""]
    if writer.unresolved:
        head += [f"# NOT WRITTEN OUT (define these by hand): {', '.join(writer.unresolved)}",
                 ""]
    body: list[str] = []
    kernel_line = 0
    for name, src in writer.functions:
        if name == func.__name__:
            kernel_line = len(head) + len(body) + 2
        body += ["", *src.rstrip("\n").split("\n"), ""]
    text = "\n".join(head + body).rstrip("\n") + "\n"
    return KernelModule(text, func.__name__, kernel_line, tuple(writer.unresolved))


class _Writer:
    def __init__(self) -> None:
        self.imports: set[str] = {"import cuda.tile as ct"}
        self.constants: list[str] = []
        self.functions: list[tuple[str, str]] = []  # helpers first, the kernel last
        self.unresolved: list[str] = []
        self._done: set[str] = {"ct"}

    def function(self, func: types.FunctionType, is_kernel: bool = False) -> None:
        src = textwrap.dedent(inspect.getsource(func))
        func = inspect.unwrap(func)  # @ct.function wraps: its globals are cuTile's
        self._done.add(func.__name__)
        for name in _free_names(src):
            if name in self._done or hasattr(builtins, name):
                continue
            self._done.add(name)
            if name in func.__globals__:
                self._global(name, func.__globals__[name])
            elif func.__closure__ and name in func.__code__.co_freevars:
                cell = func.__closure__[func.__code__.co_freevars.index(name)]
                self._global(name, cell.cell_contents)
            else:
                self.unresolved.append(name)
        self.functions.append((func.__name__, src))

    def _global(self, name: str, value: Any) -> None:
        import cuda.tile as ct

        if isinstance(value, types.ModuleType):
            self.imports.add(f"import {value.__name__}" if value.__name__ == name
                             else f"import {value.__name__} as {name}")
        elif value is None or isinstance(value, (bool, int, float, str)) or (
                isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str))
                                                 for v in value)):
            self.constants.append(f"{name} = {value!r}")
        elif isinstance(value, ct.DType):
            self.constants.append(f"{name} = ct.{value.name}")
        elif any(value == ct.Constant[t] for t in (int, float, bool)):
            kind = next(t for t in (int, float, bool) if value == ct.Constant[t])
            self.constants.append(f"{name} = ct.Constant[{kind.__name__}]")
        elif compat.is_kernel(value):
            self.unresolved.append(name)  # a kernel cannot call another kernel
        elif isinstance(value, types.FunctionType):
            try:
                self.function(value)
            except (OSError, TypeError):
                self.unresolved.append(name)
        else:
            self.unresolved.append(name)


def _free_names(src: str) -> list[str]:
    """Names read in ``src`` (decorators and annotations included) that it does not bind
    itself (parameters, assignments, loop targets, nested defs), in order."""
    tree = ast.parse(src)
    bound: set[str] = set()
    seen: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                seen.setdefault(node.id, None)
            else:
                bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and \
                node is not tree.body[0]:
            bound.add(getattr(node, "name", ""))
    return [n for n in seen if n not in bound]
