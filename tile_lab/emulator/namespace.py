"""The emulated ``cuda.tile`` namespace, and kernels rebuilt to see it.

A kernel is never run against the real ``cuda.tile``: its function is rebuilt with
``types.FunctionType(code, new_globals, ...)`` where ``new_globals`` is a copy of its
module globals in which ``cuda.tile`` (under whatever name it was imported — ``ct``, or
single names such as ``from cuda.tile import load``) is replaced by the emulated
namespace. Helpers the kernel calls (``@ct.function`` or plain Python) are rebuilt the
same way, recursively. Nothing is patched process-wide.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import types
import weakref
from collections.abc import Iterator
from typing import Any

import cuda.tile as ct

from .. import _cutile_compat as compat
from . import (  # noqa: F401 (importing the ops modules registers them)
    dtypes,
    ops_atomic,
    ops_foreign,
    ops_gather,
    ops_math,
    ops_memory,
    ops_misc,
    ops_raw,
    ops_reduce,
    ops_shape,
)
from ._kernel_access import unwrap_tile_function
from .registry import IMPLEMENTATIONS, foreign_call, is_operation, is_preview, unsupported
from .tile import DTypeConstructor, Tile

# Modules whose functions are library code, never rebuilt (their globals are not kernels').
# (tile_lab itself is not one of them: its exercise and sample kernels' helpers are user code.)
_LIBRARY_ROOTS = frozenset({"cuda", "numpy", "ml_dtypes", "builtins", "math", "operator",
                            "functools", "typing", "itertools", "cupy", "torch"})


@functools.cache
def namespace() -> types.ModuleType:
    """The emulated ``cuda.tile``: registered ops, a raiser for each unsupported op, and
    every non-operation name (dtypes, enums, annotations) passed through unchanged."""
    ns = types.ModuleType("cuda.tile", "cuda.tile as seen by tile_lab's CPU emulator")
    for name in dir(ct):
        if name.startswith("_"):
            continue
        if name in IMPLEMENTATIONS:
            value = IMPLEMENTATIONS[name]
        elif name in ct.__all__ and is_operation(name):
            value = unsupported(name)
        elif isinstance(getattr(ct, name), dtypes.DType):
            value = DTypeConstructor(getattr(ct, name))  # ct.int32(x) converts
        else:
            value = getattr(ct, name)
        setattr(ns, name, value)
    ns.Tile = Tile
    ns.Array = ops_memory.Array
    ns.TiledView = ops_memory.TiledView
    ns.Slice = ops_memory.Slice
    ns.RawArrayMemory = ops_raw.RawArrayMemory
    return ns


@functools.cache
def _stub_table() -> dict[int, Any]:
    """id(real cuda.tile object) -> its emulated replacement, for names that differ."""
    return _table_for(namespace())


_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # namespace -> its table


def _table_for(ns: types.ModuleType) -> dict[int, Any]:
    table = _TABLES.get(ns)
    if table is not None:
        return table
    table = {}
    for name in dir(ct):
        if name.startswith("_"):
            continue
        real, fake = getattr(ct, name), getattr(ns, name)
        if real is not fake:
            table[id(real)] = fake
    _TABLES[ns] = table  # a namespace is built once (and never changed) before it is used
    return table


def _elementwise_builtin(name: str, py_builtin, tile_op):
    """``min``/``max`` as cuTile maps them: elementwise on tiles, Python's otherwise."""
    def dispatch(*args, **kwargs):
        if len(args) >= 2 and not kwargs and any(isinstance(a, Tile) for a in args):
            out = args[0]
            for a in args[1:]:
                out = tile_op(out, a)
            return out
        return py_builtin(*args, **kwargs)
    dispatch.__name__ = name
    return dispatch


_BUILTIN_OVERRIDES = {
    "min": _elementwise_builtin("min", builtins.min, ops_math.minimum),
    "max": _elementwise_builtin("max", builtins.max, ops_math.maximum),
}


def builtin_overrides() -> dict[str, Any]:
    """What the builtins ``min``/``max`` become in a kernel (elementwise on tiles)."""
    return dict(_BUILTIN_OVERRIDES)


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _referenced_names(code: types.CodeType) -> set[str]:
    names: set[str] = set()
    for c in _code_objects(code):
        names.update(c.co_names)
    return names


class Rebuilder:
    """Rebuilds user functions against the emulated namespace (once per function per run)
    and collects their code objects, which mark "user frames" for traces and errors."""

    def __init__(self, ns: types.ModuleType | None = None,
                 builtin_overrides: dict[str, Any] | None = None) -> None:
        """``ns``: the emulated cuda.tile to rebuild against (default: :func:`namespace`);
        ``builtin_overrides``: what ``min``/``max`` become."""
        self.user_codes: set[types.CodeType] = set()
        self._done: dict[int, types.FunctionType] = {}
        self._globals: dict[int, dict] = {}
        self._ns = ns
        self._table = _stub_table() if ns is None else _table_for(ns)
        self._builtins = _BUILTIN_OVERRIDES if builtin_overrides is None else builtin_overrides
        self._classes: dict[int, type] = {}  # id(user dataclass) -> its emulated subclass

    def function(self, fn: types.FunctionType) -> types.FunctionType:
        fn = unwrap_tile_function(fn)
        key = id(fn)
        if key in self._done:
            return self._done[key]
        new_globals = self._globals.get(id(fn.__globals__))
        if new_globals is None:
            new_globals = dict(fn.__globals__)
            self._globals[id(fn.__globals__)] = new_globals
        closure = None
        if fn.__closure__ is not None:
            closure = tuple(types.CellType(self.value(c.cell_contents)) if _filled(c)
                            else types.CellType() for c in fn.__closure__)
        new_fn = types.FunctionType(fn.__code__, new_globals, fn.__name__,
                                    _tuple_or_none(fn.__defaults__, self.value), closure)
        new_fn.__kwdefaults__ = None if fn.__kwdefaults__ is None else \
            {k: self.value(v) for k, v in fn.__kwdefaults__.items()}
        new_fn.__qualname__ = fn.__qualname__
        new_fn.__module__ = fn.__module__
        self._done[key] = new_fn
        self.user_codes.update(_code_objects(fn.__code__))
        for name in _referenced_names(fn.__code__):
            if name in fn.__globals__:
                new_globals[name] = self.value(fn.__globals__[name])
            elif name in self._builtins:
                new_globals[name] = self._builtins[name]
        return new_fn

    def value(self, value: Any) -> Any:
        ns = namespace() if self._ns is None else self._ns
        if value is ct:
            return ns
        if is_preview(value):  # foreign calls (NVSHMEM, ...): refused by name when called
            return _PreviewProxy(value) if isinstance(value, types.ModuleType) else \
                foreign_call(f"{value.__module__}.{getattr(value, '__qualname__', value)}") \
                if callable(value) else value
        if isinstance(value, types.ModuleType):
            if value.__name__ == "cuda":  # `import cuda.tile` then `cuda.tile.load(...)`
                return _ModuleProxy(value, self, {"tile": ns})
            if value.__name__.split(".")[0] not in _LIBRARY_ROOTS:
                return _ModuleProxy(value, self, {})  # user helper modules
            if value.__name__ == "torch":  # torch.float32(x): a dtype constructor in kernels
                return _ModuleProxy(value, self, {})
            return value
        try:
            replacement = self._table.get(id(value))
        except TypeError:
            replacement = None
        if replacement is not None:
            return replacement
        if isinstance(value, types.FunctionType) and _is_user_function(value):
            return self.function(value)
        if isinstance(value, type) and dataclasses.is_dataclass(value) and \
                _is_user_module(value.__module__):
            return self.dataclass(value)
        if type(value).__module__.split(".")[0] == "torch":
            native = compat.native_dtype(value)  # torch.float32 as cuTile reads it
            if native is not None:
                return DTypeConstructor(native)
        return value


    def dataclass(self, cls: type) -> type:
        """A user dataclass as a kernel sees it: a subclass whose methods (``__post_init__``,
        ``__setitem__``, ``@contextmanager`` methods, ...) are rebuilt, so cuTile operations
        in them run emulated (cuTile inlines them the same way)."""
        made = self._classes.get(id(cls))
        if made is not None:
            return made
        made = type(cls.__name__, (cls,), {"__module__": cls.__module__,
                                            "__qualname__": cls.__qualname__,
                                            "__doc__": cls.__doc__})
        self._classes[id(cls)] = made  # before its methods: they may name the class
        for klass in reversed(cls.__mro__):
            if not _is_user_module(klass.__module__):
                continue
            for name, member in vars(klass).items():
                rebuilt = self._member(member)
                if rebuilt is not None:
                    setattr(made, name, rebuilt)
        return made

    def _member(self, member: Any) -> Any:
        """A class member with its user functions rebuilt; None for anything else."""
        if isinstance(member, types.FunctionType):
            return self.value(member) if _is_user_function(member) else None
        if isinstance(member, (staticmethod, classmethod)):
            inner = self._member(member.__func__)
            return None if inner is None else type(member)(inner)
        if isinstance(member, property):
            parts = [self._member(f) or f if f is not None else None
                     for f in (member.fget, member.fset, member.fdel)]
            return property(*parts, member.__doc__)
        return None


class _ModuleProxy:
    """A user module seen from a kernel: its functions come back rebuilt (emulated)."""

    def __init__(self, module: types.ModuleType, rebuilder: Rebuilder,
                 overrides: dict[str, Any]) -> None:
        self._module, self._rebuilder, self._overrides = module, rebuilder, overrides

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        return self._rebuilder.value(getattr(self._module, name))

    def __repr__(self) -> str:
        return f"<emulated view of module {self._module.__name__!r}>"


class _PreviewProxy:
    """``cuda.tile_preview`` seen from a kernel: its functions (foreign calls) are refused
    by name when called; anything else it holds passes through."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if isinstance(value, types.ModuleType):
            return _PreviewProxy(value)
        return foreign_call(f"{self._module.__name__}.{name}") if callable(value) else value

    def __repr__(self) -> str:
        return f"<module {self._module.__name__!r} as tile_lab's emulator sees it>"


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _tuple_or_none(values, fn):
    return None if values is None else tuple(fn(v) for v in values)


def _is_user_function(fn: types.FunctionType) -> bool:
    if getattr(fn, "_cutile_python_stub", None) is not None:
        return False
    return _is_user_module(getattr(unwrap_tile_function(fn), "__module__", None))


def _is_user_module(module: str | None) -> bool:
    return (module or "").split(".")[0] not in _LIBRARY_ROOTS
