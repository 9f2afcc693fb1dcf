"""How a compile worker rebuilds a kernel that was defined in a notebook cell (or a string).

A spawned worker cannot import ``__main__``'s cells. Re-running the defining cell would repeat
its side effects (a file written, a print, a launch) in every worker, so only the kernel's own
``def`` (with its decorators) is executed there, in a namespace holding just the globals that
definition names: modules by name, plain constants by value, and helper functions defined in
cells by their own ``def`` (recursively). The cell's full text is put in ``linecache`` under its
real filename and the ``def`` keeps its line numbers, so cuTile's ``inspect.findsource`` and
its line info see exactly what they see in the parent process.

A global that cannot travel this way (an object from a cell, a closure) raises
:class:`KernelNotShippable`: precompiling is an optimisation, and the caller then leaves the
compile to the launch.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import linecache
import os
import pickle
import sys
import types
from dataclasses import dataclass
from typing import Any

__all__ = ["CellDefinition", "KernelNotShippable", "cell_definition", "rebuild"]

# Values of these types travel by pickle; anything else must be a module or a function.
_PLAIN = (int, float, complex, bool, str, bytes, type(None))


class KernelNotShippable(ValueError):
    """The kernel (or a global it uses) cannot be rebuilt in another process."""


@dataclass(frozen=True)
class CellDefinition:
    """One function's ``def`` in a cell: where it is, and the globals it needs.

    ``globals_`` holds ``(name, kind, payload)``: kind ``"module"`` (payload: module name),
    ``"value"`` (pickled plain value), ``"import"`` (``(module, qualname)`` of an importable
    function) or ``"def"`` (a nested :class:`CellDefinition`)."""

    filename: str
    text: str
    first_line: int  # co_firstlineno: the first decorator's line, else the def line
    name: str
    globals_: tuple[tuple[str, str, Any], ...]


def _importable(func: types.FunctionType) -> bool:
    module = sys.modules.get(func.__module__)
    path = getattr(module, "__file__", None)
    return (module is not None and bool(path) and os.path.exists(str(path))
            and func.__module__ != "__main__" and "<locals>" not in func.__qualname__)


def _def_node(tree: ast.Module, name: str, first_line: int, filename: str) -> ast.FunctionDef:
    """The top-level ``def name`` whose first line (decorators included) is ``first_line``."""
    for node in tree.body:
        if (isinstance(node, ast.FunctionDef) and node.name == name
                and min([node.lineno, *(d.lineno for d in node.decorator_list)]) == first_line):
            return node
    raise KernelNotShippable(f"{name} is not defined at the top level of {filename} "
                             f"(line {first_line})")


def _global_names(node: ast.FunctionDef) -> list[str]:
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Load)}
    return sorted(names)


def _python_function(value: Any) -> types.FunctionType | None:
    """The function a ``def`` in some cell or module bound (before its decorators), or None.
    ``@ct.function`` returns a ``functools.wraps`` wrapper; ``@ct.kernel`` a kernel object."""
    annotated = getattr(value, "_annotated_function", None)
    if annotated is not None:
        value = getattr(annotated, "pyfunc", None)
    if not isinstance(value, types.FunctionType):
        return None
    return inspect.unwrap(value)


def _module_attribute(value: Any) -> tuple[str, str] | None:
    """(module, name) of an importable module that holds ``value`` itself (a cuTile dtype,
    a NumPy constant), looked up in the module its type comes from, then in cuda.tile."""
    for module_name in (type(value).__module__, "cuda.tile", "numpy"):
        module = sys.modules.get(module_name)
        if module is None or module_name == "__main__":
            continue
        for attr, x in vars(module).items():
            if x is value and not attr.startswith("_"):
                return (module_name, attr)
    return None


def _shipped(name: str, value: Any, seen: set[int]) -> tuple[str, str, Any]:
    if isinstance(value, types.ModuleType):
        return (name, "module", value.__name__)
    func = _python_function(value)
    if func is not None:
        if _importable(func):
            return (name, "import", (func.__module__, func.__qualname__))
        # Re-running the decorated def rebuilds the same wrapper or kernel object.
        return (name, "def", cell_definition(func, seen))
    plain_tuple = isinstance(value, tuple) and all(isinstance(v, _PLAIN) for v in value)
    if plain_tuple or isinstance(value, _PLAIN):
        return (name, "value", pickle.dumps(value))
    where = _module_attribute(value)
    if where is not None:  # e.g. DT = ct.float16: the worker imports the same object
        return (name, "import", where)
    raise KernelNotShippable(f"global {name!r} ({type(value).__name__}) cannot be sent to a "
                             "compile worker")


def cell_definition(func: types.FunctionType, seen: set[int] | None = None) -> CellDefinition:
    """The :class:`CellDefinition` of ``func``, a function defined in a cell or string whose
    text is in ``linecache``."""
    seen = set() if seen is None else seen
    if id(func) in seen:
        raise KernelNotShippable(f"{func.__qualname__} refers to itself through globals")
    seen.add(id(func))
    if "<locals>" in func.__qualname__ or func.__closure__:
        raise KernelNotShippable(f"{func.__qualname__} is defined inside another function")
    filename = func.__code__.co_filename
    text = "".join(linecache.getlines(filename))
    if not text:
        raise KernelNotShippable(f"cannot find the source of {func.__qualname__} ({filename})")
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as e:  # e.g. a cell whose text is not plain Python
        raise KernelNotShippable(f"the source of {func.__qualname__} does not parse: {e}") from e
    node = _def_node(tree, func.__name__, func.__code__.co_firstlineno, filename)
    # Names that are not globals are parameters, locals or builtins: nothing to send.
    shipped = [_shipped(name, func.__globals__[name], seen)
               for name in _global_names(node) if name in func.__globals__]
    seen.discard(id(func))
    return CellDefinition(filename, text, func.__code__.co_firstlineno, func.__name__,
                          tuple(shipped))


def rebuild(definition: CellDefinition, namespace: dict[str, Any] | None = None) -> Any:
    """Execute only ``definition``'s ``def`` (after its globals) and return what it binds."""
    ns: dict[str, Any] = {"__name__": "__tile_lab_worker__"} if namespace is None else namespace
    for name, kind, payload in definition.globals_:
        if kind == "module":
            ns[name] = importlib.import_module(payload)
        elif kind == "value":
            ns[name] = pickle.loads(payload)
        elif kind == "import":
            obj: Any = importlib.import_module(payload[0])
            for part in payload[1].split("."):
                obj = getattr(obj, part)
            ns[name] = obj
        else:
            ns[name] = rebuild(payload, ns)
    text = definition.text
    # Register the cell so inspect.findsource sees the same lines as in the parent.
    linecache.cache[definition.filename] = (len(text), None, text.splitlines(True),
                                            definition.filename)
    node = _def_node(ast.parse(text, definition.filename), definition.name,
                     definition.first_line, definition.filename)
    module = ast.Module(body=[node], type_ignores=[])
    exec(compile(module, definition.filename, "exec"), ns)
    return ns[definition.name]

