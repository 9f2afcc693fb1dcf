"""A notebook kernel as source plus the globals it names, recursively: the one walk behind
shipping a kernel to another process (:func:`kernel_spec`) and writing it out as a module of
its own (:func:`kernel_module`, a reproducer's ``kernel.py``).

Shipping: a kernel travels by reference when its module can be imported there, else as the
*source* of its ``def``.

Kernels defined in notebook cells (or strings) live only in the notebook's ``linecache``, and a
fresh process (the isolation worker, the Nsight Compute child, a compile worker, a Ray actor)
cannot import ``__main__``'s cells. Re-running the defining cell would repeat its side effects
(a file written, a print, a launch), so only the kernel's own ``def`` runs there, in a
namespace holding just the globals that definition names: modules by name, importable objects
by module and qualified name, helper functions defined beside it by their own ``def``
(recursively), other values by pickle where every class the pickle names can be imported
there. The cell's text is put in ``linecache`` under its real
filename and the ``def`` keeps its line numbers, so cuTile's ``inspect.findsource``, its line
info and its error locations are the user's.

A global that cannot travel (an object of a class defined in a cell, a closure's cell) is
named in :attr:`FunctionSource.missing`: the isolation worker goes on (the rebuilt kernel
then says which name is undefined); a compile worker declines with
:class:`KernelNotShippable`, and the launch compiles instead.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import importlib
import inspect
import linecache
import os
import pickle
import pickletools
import sys
import textwrap
import types
from dataclasses import dataclass
from typing import Any

__all__ = ["FunctionSource", "GlobalRef", "KernelModule", "KernelNotShippable", "KernelSpec",
           "function_source", "kernel_module", "kernel_spec", "source_identity", "source_lines",
           "source_lines_or_none"]


# -- reading a function's source: the package's one place that does ----------------------------

def source_lines(func: Any) -> tuple[list[str], int]:
    """``(lines, first line)`` of ``func``'s definition, decorators included, read as
    tracebacks and cuTile read it: from its file, or from ``linecache`` for a notebook cell.
    Raises OSError (no source to read: a bare ``exec``) or TypeError (not a function)."""
    return inspect.getsourcelines(func)


def source_lines_or_none(func: Any) -> tuple[list[str], int] | None:
    """:func:`source_lines`, or None where ``func`` has no source to read."""
    try:
        return inspect.getsourcelines(func)
    except (OSError, TypeError):
        return None


def source_identity(func: Any) -> str:
    """What names this version of ``func`` in a cache key or a result's context: its source,
    else (no source to read) its bytecode as hex."""
    found = source_lines_or_none(func)
    return "".join(found[0]) if found is not None else func.__code__.co_code.hex()

class KernelNotShippable(ValueError):
    """The kernel (or a global it uses) cannot be rebuilt in another process."""


@dataclass(frozen=True)
class GlobalRef:
    """One global a shipped ``def`` names: ``kind`` "module" (payload: module name), "import"
    (``(module, qualname)``), "def" (a nested :class:`FunctionSource`) or "value" (pickle)."""

    name: str
    kind: str
    payload: Any


@dataclass(frozen=True)
class FunctionSource:
    """A function's ``def`` as source: the whole file (or cell) it stands in, so its line
    numbers stay the user's, and the globals it needs."""

    name: str
    filename: str
    file_lines: tuple[str, ...]
    first_line: int  # 1-based line of the def's first decorator (else the def line)
    source: str  # the decorated def, as written
    globals: tuple[GlobalRef, ...] = ()
    missing: tuple[tuple[str, str], ...] = ()  # (name, type name) of globals left behind

    def unshippable(self) -> list[tuple[str, str]]:
        """Globals left behind, here and in the helpers this def names."""
        out = list(self.missing)
        for g in self.globals:
            if g.kind == "def":
                out += g.payload.unshippable()
        return out

    def rebuild(self, namespace: dict[str, Any] | None = None, *,
                strip_decorators: bool = False) -> Any:
        """Execute only this ``def`` (after its globals) and return what it binds."""
        ns = namespace if namespace is not None else {"__builtins__": builtins,
                                                      "__name__": "tile_lab_shipped"}
        for g in self.globals:
            if g.name in ns:
                continue
            if g.kind == "module":
                ns[g.name] = importlib.import_module(g.payload)
            elif g.kind == "import":
                ns[g.name] = _import(*g.payload)
            elif g.kind == "def":
                ns[g.name] = g.payload.rebuild(ns)
            else:
                ns[g.name] = pickle.loads(g.payload)
        if self.file_lines:  # what the %%tile magic does: the cell text under its filename
            linecache.cache[self.filename] = (sum(map(len, self.file_lines)), None,
                                              list(self.file_lines), self.filename)
        tree = ast.parse(textwrap.dedent(self.source))
        fn = tree.body[0]
        if strip_decorators and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn.decorator_list = []
        ast.increment_lineno(tree, self.first_line - 1)
        exec(compile(tree, self.filename, "exec"), ns)
        return ns[self.name]


@dataclass(frozen=True)
class KernelSpec:
    """How to rebuild a ``@ct.kernel`` in another process: imported by ``(module, qualname)``
    when its module can be imported there, else from its :class:`FunctionSource` (a kernel
    from a notebook cell, or a module the other process cannot find on its path); with the
    compiler options (hints) the kernel carried here."""

    name: str
    module: str | None = None
    qualname: str | None = None
    source: FunctionSource | None = None
    hints: tuple[tuple[str, Any], ...] = ()

    @property
    def key(self) -> str:
        """Equal for specs that rebuild the same kernel (a worker caches kernels by it)."""
        return hashlib.sha256(pickle.dumps(self)).hexdigest()

    def check_shippable(self) -> None:
        """Raise :class:`KernelNotShippable` naming a global that stays behind (only a
        kernel rebuilt from its source needs its globals shipped)."""
        if self.module is None and self.source is not None:
            for name, type_name in self.source.unshippable():
                raise KernelNotShippable(f"global {name!r} ({type_name}) cannot be sent to "
                                         "another process")

    def build(self) -> Any:
        """The kernel, in this process."""
        from ._cutile_compat import compiler_options, is_kernel, options_as_dict

        hints = dict(self.hints)
        kernel = None
        if self.module is not None and self.qualname is not None:
            try:
                kernel = _import(self.module, self.qualname)
            except (ImportError, AttributeError):
                if self.source is None:
                    raise
        if kernel is None:
            if self.source is None:
                raise KernelNotShippable(f"the spec of {self.name} holds neither a module "
                                         "nor a source")
            # the decorated def, as written (so cuTile's findsource sees what it saw here)
            kernel = self.source.rebuild()
            if not is_kernel(kernel):  # a decorator of the user's own around @ct.kernel
                import cuda.tile as ct

                return ct.kernel(self.source.rebuild(strip_decorators=True), **hints)
        if options_as_dict(compiler_options(kernel)) != hints:  # hints from replace_hints
            kernel = kernel.replace_hints(**hints)
        return kernel


def kernel_spec(kernel: Any) -> KernelSpec:
    """The :class:`KernelSpec` of a ``@ct.kernel`` (hints applied with ``replace_hints``
    included): its module and name when importable, and the source of its ``def`` (the
    fallback where that import fails). Raises :class:`KernelNotShippable` when it is neither
    importable nor has a source Python can find."""
    from ._cutile_compat import compiler_options, options_as_dict, python_function

    func = python_function(kernel)
    hints = tuple(sorted(options_as_dict(compiler_options(kernel)).items()))
    module = qualname = None
    if _importable(func) and _resolves_to(func):
        module, qualname = func.__module__, func.__qualname__
    try:
        source: FunctionSource | None = function_source(func)
    except KernelNotShippable:
        if module is None:
            raise
        source = None
    return KernelSpec(func.__name__, module, qualname, source, hints)


def _resolves_to(func: types.FunctionType) -> bool:
    """Whether importing ``func``'s module and name gives back a kernel of ``func``."""
    from ._cutile_compat import python_function

    try:
        return python_function(_import(func.__module__, func.__qualname__)) is func
    except Exception:
        return False


def function_source(func: types.FunctionType, seen: set[int] | None = None) -> FunctionSource:
    """The :class:`FunctionSource` of ``func``, defined in a file, a cell or a string whose
    text is in ``linecache``."""
    seen = set() if seen is None else seen
    seen.add(id(func))
    if func.__closure__:
        raise KernelNotShippable(f"{func.__qualname__} is a closure inside another function; "
                                 "define it at the top level of its cell or file")
    code = func.__code__
    try:
        lines, first = source_lines(func)
    except (OSError, TypeError) as exc:
        raise KernelNotShippable(f"cannot find the source of {func.__qualname__} ({exc})") \
            from None
    source = "".join(lines)
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError as exc:  # e.g. a cell whose text is not plain Python
        raise KernelNotShippable(f"the source of {func.__qualname__} does not parse: {exc}") \
            from None
    refs: list[GlobalRef] = []
    missing: list[tuple[str, str]] = []
    for name in sorted(free_names(tree)):
        if name not in func.__globals__:
            continue  # a builtin, a local or undefined (the kernel will say so)
        value = func.__globals__[name]
        ref = _global_ref(name, value, func, seen)
        if ref is None:
            missing.append((name, type(value).__name__))
        else:
            refs.append(ref)
    seen.discard(id(func))  # a helper two defs name is shipped with each; a cycle is not
    return FunctionSource(func.__name__, code.co_filename,
                          tuple(linecache.getlines(code.co_filename)), first, source,
                          tuple(refs), tuple(missing))


def _global_ref(name: str, value: Any, owner: types.FunctionType,
                seen: set[int]) -> GlobalRef | None:
    if isinstance(value, types.ModuleType):
        return GlobalRef(name, "module", value.__name__)
    func = _python_function(value)
    if func is not None:
        if _importable(func) and func.__module__ != owner.__module__:
            return GlobalRef(name, "import", (func.__module__, func.__qualname__))
        if id(func) in seen:
            return None  # a cycle through globals
        # re-running the decorated def rebuilds the same @ct.function wrapper
        try:
            return GlobalRef(name, "def", function_source(func, seen))
        except KernelNotShippable:
            return None
    if isinstance(value, (int, float, complex, str, bytes, type(None))):
        return GlobalRef(name, "value", pickle.dumps(value))
    where = _importable_object(value)
    if where is not None:  # e.g. DT = ct.float16: the other process imports the same object
        return GlobalRef(name, "import", where)
    data = _portable_pickle(value)
    return None if data is None else GlobalRef(name, "value", data)


def _portable_pickle(value: Any) -> bytes | None:
    """``value`` pickled, when another process can unpickle it: every class or function the
    pickle names comes from a module that process can import (not ``__main__``, where the
    classes of notebook cells live). None otherwise."""
    try:
        # protocol 2 names every class in a GLOBAL opcode (by its Python 3 module name)
        data = pickle.dumps(value, protocol=2, fix_imports=False)
    except Exception:
        return None
    for op, arg, _ in pickletools.genops(data):
        if op.name == "GLOBAL" and not _importable_module(str(arg).split(" ", 1)[0]):
            return None
    return data


def _importable_module(name: str) -> bool:
    if name == "__main__":
        return False
    if name in sys.builtin_module_names:
        return True
    path = getattr(sys.modules.get(name), "__file__", None)
    return bool(path) and os.path.exists(str(path))


def _python_function(value: Any) -> types.FunctionType | None:
    """The function a ``def`` bound before its decorators, or None. ``@ct.function`` returns
    a ``functools.wraps`` wrapper; ``@ct.kernel`` a kernel object."""
    annotated = getattr(value, "_annotated_function", None)
    if annotated is not None:
        value = getattr(annotated, "pyfunc", None)
    if not isinstance(value, types.FunctionType):
        return None
    return inspect.unwrap(value)


def _importable(func: types.FunctionType) -> bool:
    module = sys.modules.get(func.__module__)
    path = getattr(module, "__file__", None)
    return (module is not None and bool(path) and os.path.exists(str(path))
            and func.__module__ != "__main__" and "<locals>" not in func.__qualname__)


def _importable_object(value: Any) -> tuple[str, str] | None:
    """``(module, name)`` under which another process imports ``value`` itself: its own
    ``__module__``/``__qualname__``, else an attribute of the module its type comes from, of
    cuda.tile or of NumPy (a cuTile dtype, a NumPy constant)."""
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and module != "__main__" \
            and "<locals>" not in qualname and _resolves(module, qualname, value):
        return (module, qualname)
    for module_name in (type(value).__module__, "cuda.tile", "numpy"):
        mod = sys.modules.get(module_name)
        if mod is None or module_name == "__main__":
            continue
        for attr, x in vars(mod).items():
            if x is value and not attr.startswith("_"):
                return (module_name, attr)
    return None


def _resolves(module: str, qualname: str, value: Any) -> bool:
    try:
        return _import(module, qualname) is value
    except Exception:
        return False


def _import(module: str, qualname: str) -> Any:
    obj: Any = sys.modules.get(module) or importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


# ---- written out as a module of its own (a reproducer's kernel.py) ---------------------------

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
    (for the module's docstring).

    The kernel's source is copied as written; the names it reads from its module (or
    notebook) are written out before it: modules as imports, plain constants as literals,
    cuTile dtypes and ``ct.Constant[...]`` annotations by name, and helper functions by their
    own source (with the names *they* read, recursively). A name that cannot be written out
    is listed in ``KernelModule.unresolved`` and left as a comment, so the reproducer says
    what is missing instead of silently compiling something else."""
    from ._cutile_compat import python_function

    func = python_function(kernel)
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
    """Writes a kernel's module: its helpers' source, its constants as literals."""

    def __init__(self) -> None:
        self.imports: set[str] = {"import cuda.tile as ct"}
        self.constants: list[str] = []
        self.functions: list[tuple[str, str]] = []  # helpers first, the kernel last
        self.unresolved: list[str] = []
        self._done: set[str] = {"ct"}

    def function(self, func: types.FunctionType, is_kernel: bool = False) -> None:
        src = textwrap.dedent("".join(source_lines(func)[0]))
        func = inspect.unwrap(func)  # @ct.function wraps: its globals are cuTile's
        self._done.add(func.__name__)
        for name in free_names(ast.parse(src)):
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

        from ._cutile_compat import is_kernel

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
        elif is_kernel(value):
            self.unresolved.append(name)  # a kernel cannot call another kernel
        elif isinstance(value, types.FunctionType):
            try:
                self.function(value)
            except (OSError, TypeError):
                self.unresolved.append(name)
        else:
            self.unresolved.append(name)


def free_names(tree: ast.Module) -> list[str]:
    """Names the module's first def reads (decorators and annotations included) that it does
    not bind itself (parameters, assignments, loop targets, nested defs), in order."""
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
