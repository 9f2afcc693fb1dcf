"""The front-end gate's verdicts on disk: a kernel that cuTile's front end accepted for a
signature is not checked again in a later process (a notebook re-run, a script run twice), so
the first emulated launch skips importing cuTile's compiler and typing the kernel.

Only acceptances are stored (a rejection is checked again, to report cuTile's message). The
key is a SHA-256 over everything the verdict depends on:

* the versions of cuda.tile, tile_lab and this cache's format;
* the signature (argument dtypes, shapes, strides, alignment, constants: its ``repr``);
* the kernel's code, compiled (``marshal`` of its code object: bytecode, constants, names and
  line numbers; not the file name, which for a notebook cell changes with every kernel
  process), its annotations, and the same for every user function it reaches through its
  globals and closures (``@ct.function`` helpers, plain helpers), transitively;
* the value of every global and closure variable those functions name: ints, floats, strings,
  bools, None, cuTile dtypes and enums, tuples of those, modules of the standard library,
  NumPy or cuda.tile (by name and version).

A kernel that names anything else (a user module, an object of a user class, a NumPy array)
gets no key: it is checked every process, as before. Entries are empty files named by the key
under ``$XDG_CACHE_HOME/tile_lab/frontend`` (``~/.cache/...``). ``TILE_LAB_FRONTEND_CACHE=off``
turns the cache off; ``TILE_LAB_FRONTEND_CACHE=/abs/dir`` puts it elsewhere. A cache that
cannot be written is skipped silently (it only saves time).

Under the pytest plugin (``pytest -p tile_lab.testing``) the cache is off unless
``TILE_LAB_FRONTEND_CACHE`` names a directory (:func:`off_by_default`): a test suite may count
cuTile's compiles (patching ``cuda.tile._compile.compile_tile``), and with the cache a kernel
some earlier run accepted would not be compiled at all, where cuTile compiles it once per
process. Each process then checks each (kernel, signature) once, as cuTile compiles it once.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import marshal
import os
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ENV_VAR = "TILE_LAB_FRONTEND_CACHE"
FORMAT = "1"
_CONSTANT_TYPES = (int, float, str, bool, bytes, type(None))
_DEFAULT_OFF = [0]  # >0 inside ``off_by_default()``
_LIBRARY_ROOTS = frozenset({"cuda", "numpy", "math", "operator", "functools", "typing",
                            "itertools", "builtins", "ml_dtypes"})


def directory() -> Path | None:
    """Where verdicts live, or None when the cache is off. Raises ValueError for a value of
    ``TILE_LAB_FRONTEND_CACHE`` that is neither ``off`` nor an absolute path."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value.lower() in ("off", "0", "false", "no"):
        return None
    if value:
        if not os.path.isabs(value):
            raise ValueError(f"{ENV_VAR}={value!r}: use off (no cache) or an absolute "
                             "directory path")
        return Path(value)
    if _DEFAULT_OFF[0]:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tile_lab" / "frontend"


@contextlib.contextmanager
def off_by_default() -> Iterator[None]:
    """Inside this block the cache is off unless ``TILE_LAB_FRONTEND_CACHE`` names a
    directory (the pytest plugin's setting: see the module's docstring)."""
    _DEFAULT_OFF[0] += 1
    try:
        yield
    finally:
        _DEFAULT_OFF[0] -= 1


def key(pyfunc: types.FunctionType, signature_repr: str) -> str | None:
    """The verdict's key, or None when the kernel names something that cannot be fingerprinted."""
    import cuda.tile as ct

    from .._version import __version__

    h = hashlib.sha256()
    try:  # cuTile's version, cheaply: where it is installed and when
        installed = f"{ct.__file__}@{os.stat(ct.__file__).st_mtime_ns}"
    except (OSError, TypeError):
        return None
    for part in (FORMAT, installed, __version__, signature_repr):
        h.update(part.encode())
        h.update(b"\0")
    try:
        _function(pyfunc, h, set())
    except _Unkeyable:
        return None
    return h.hexdigest()


def known(digest: str) -> bool:
    where = directory()
    return where is not None and (where / digest).is_file()


def remember(digest: str) -> None:
    where = directory()
    if where is None:
        return
    try:
        where.mkdir(parents=True, exist_ok=True)
        (where / digest).touch()
    except OSError:  # read-only home, full disk: the cache only saves time
        pass


class _Unkeyable(Exception):
    pass


def _function(fn: Any, h: Any, seen: set[int]) -> None:
    from .._cutile_compat import is_kernel, python_function
    from ._kernel_access import unwrap_tile_function

    fn = python_function(fn) if is_kernel(fn) else fn
    if not isinstance(fn, types.FunctionType):
        raise _Unkeyable
    fn = unwrap_tile_function(fn)
    if id(fn.__code__) in seen:
        return
    seen.add(id(fn.__code__))
    h.update(b"F")
    h.update(marshal.dumps(_without_filename(fn.__code__)))
    h.update(_plain_repr(getattr(fn, "__annotations__", {})).encode())
    h.update(repr((fn.__defaults__ is not None, fn.__kwdefaults__ is not None)).encode())
    for default in (fn.__defaults__ or ()):
        _value(default, h, seen)
    for name in sorted(_names(fn.__code__)):
        if name in fn.__globals__:
            h.update(f"G{name}=".encode())
            _value(fn.__globals__[name], h, seen)
    for cell in fn.__closure__ or ():
        try:
            content = cell.cell_contents
        except ValueError:
            content = None
        h.update(b"C")
        _value(content, h, seen)


def _without_filename(code: types.CodeType) -> types.CodeType:
    """The code with its file name blanked, nested code included: a notebook cell's file name
    holds the kernel process's id (``/tmp/ipykernel_<pid>/...``), and a verdict does not
    depend on where the code was read from."""
    consts = tuple(_without_filename(c) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename="", co_consts=consts)


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _value(value: Any, h: Any, seen: set[int]) -> None:
    if hasattr(value, "__array_interface__") or hasattr(value, "__dlpack__"):
        raise _Unkeyable  # an array: its repr may elide values
    if isinstance(value, _CONSTANT_TYPES):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, tuple):
        h.update(b"(")
        for v in value:
            _value(v, h, seen)
        h.update(b")")
    elif isinstance(value, types.ModuleType):
        root = value.__name__.split(".")[0]
        if root not in _LIBRARY_ROOTS:
            raise _Unkeyable  # a user module: its functions could change unseen
        h.update(f"M{value.__name__}@{getattr(value, '__version__', '')};".encode())
    elif isinstance(value, enum.Enum):
        h.update(f"E{type(value).__module__}.{type(value).__qualname__}.{value.name};".encode())
    elif _library_object(value):  # cuda.tile ops and dtypes, NumPy functions, builtins
        shown = _qualified(value) if callable(value) else _plain_repr(value)
        h.update(f"L{_qualified(value)}={shown};".encode())
    elif isinstance(value, types.FunctionType) or is_kernel_object(value):
        _function(value, h, seen)
    else:
        raise _Unkeyable


def is_kernel_object(value: Any) -> bool:
    from .._cutile_compat import is_kernel

    return is_kernel(value)


def _plain_repr(value: Any) -> str:
    """``repr(value)``, refused when it shows a memory address (not the same next process)."""
    text = repr(value)
    if " at 0x" in text:
        raise _Unkeyable
    return text


def _library_object(value: Any) -> bool:
    module = getattr(value, "__module__", None) or getattr(type(value), "__module__", "")
    if isinstance(value, types.FunctionType) and (module or "").split(".")[0] == "tile_lab":
        return False  # tile_lab's example kernels' helpers are user code
    return (module or "").split(".")[0] in _LIBRARY_ROOTS and not is_kernel_object(value)


def _qualified(value: Any) -> str:
    module = getattr(value, "__module__", None) or type(value).__module__
    name = getattr(value, "__qualname__", None) or type(value).__qualname__
    return f"{module}.{name}"
