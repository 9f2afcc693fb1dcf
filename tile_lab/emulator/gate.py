"""The front-end gate: a kernel cuTile rejects does not run on the emulator either.

Before a ``@ct.kernel`` runs, cuTile's own front end (parsing, type inference, constant
folding, ``static_assert``; no tileiras, no GPU) types it for the signature of the actual
arguments. A kernel the compiler would reject (``range(4, 0, -1)``, a name bound to tiles of
different dtypes on two paths, a Python list of tiles) fails here with cuTile's message at
the kernel's line, as cuTile's own exception class (``ct.TileTypeError`` & co.; also a
:class:`~tile_lab.errors.CompileError`, see ``compile.errors.as_cutile_error``), instead
of "working" on the CPU and failing on the GPU. ``ct.launch``'s own argument checks (count,
tuple arity, constants) raise cuTile's TypeError the same way. Each (kernel, signature)
is checked once per process, and an acceptance is remembered on disk for later processes
(``verdict_cache.py``; keyed by the kernel's code, what it names, the signature and cuTile's
version; ``TILE_LAB_FRONTEND_CACHE=off`` turns that off).

Where something replaced ``ct.kernel._compile`` (what ``ct.launch`` calls to compile; a test
patches it to target sm_80), that compile decides instead, on every launch, with the
compute capability cuTile's device query answers: it runs cuTile's whole compile, tileiras
included, as ``ct.launch`` would.

Plain Python functions (not ``@ct.kernel``) are not gated: cuTile cannot compile them.
Arguments the signature builder cannot describe skip the gate; the emulator's own checks
report them.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .. import _cutile_compat as compat
from .._cutile_compat import kernel_compile
from ..errors import TileLabError
from . import verdict_cache

_PASSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # kernel -> {signature repr}
_LOCK = threading.Lock()
_OFF = [0]  # >0 inside ``disabled()``
_QUICK: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # kernel -> {quick keys}


def check(kernel: Any, args: Sequence[Any]) -> bool:
    """Raise cuTile's error (its class and message; a CompileError at the kernel line) if it
    rejects ``kernel`` or ``ct.launch`` rejects these arguments; return at once for a
    signature that passed before. True when cuTile's front end accepted the kernel for
    this signature (so its compile-time facts, e.g. every ``static_assert``, hold); False
    when it was not asked (gate off, a plain function, arguments it cannot describe)."""
    if _OFF[0] or not compat.is_kernel(kernel):
        return False
    override = kernel_compile.overridden_compile(kernel)
    if override is not None:
        return _check_with_override(kernel, args, override)
    quick = _quick_key(args)
    if quick is not None and quick in _QUICK.get(kernel, ()):
        return True  # the same argument layout passed before: skip building its signature
    _check_launch_arguments(kernel, args)
    signature = _signature(kernel, args)
    if signature is None:
        return False  # arguments the signature cannot describe: the emulator reports them
    key = repr(signature)
    with _LOCK:
        seen = _PASSED.setdefault(kernel, set())
        if key in seen:
            return True
    disk = _disk_key(kernel, key)
    if disk is not None and verdict_cache.known(disk):
        _passed(kernel, seen, key, quick)  # accepted in an earlier process
        return True
    if not _verdict(compat.check_frontend, kernel, signature):
        return False
    _passed(kernel, seen, key, quick)
    if disk is not None:
        verdict_cache.remember(disk)
    return True


def _verdict(compile_check: Any, *how: Any) -> bool:
    """Run ``compile_check(*how)``; raise cuTile's error as ct.launch would if it rejects the
    kernel; False when cuTile could not look at it (no verdict), True when it accepted."""
    try:
        return compile_check(*how) is not False
    except Exception as exc:
        if compat.is_parameter_error(exc):  # ct.launch raises these TypeErrors as they are
            from ..errors import ArgumentTypeError

            raise ArgumentTypeError(str(exc), hint="cuTile rejects the kernel's parameter "
                                    "annotations for these arguments") from None
        if not compat.is_kernel_rejection(exc):
            return False  # cuTile could not look at the kernel (e.g. no source): no verdict
        from ..compile.errors import as_cutile_error

        raise as_cutile_error(exc, "cuTile's compiler rejects this kernel, so the emulator "
                              "does not run it") from None


def _check_with_override(kernel: Any, args: Sequence[Any], override: Any) -> bool:
    """The gate where something replaced ``kernel._compile`` (a test making cuTile target
    sm_80, say): that compile is what ct.launch would run, so it decides, on every launch
    (what it does may differ from call to call; no verdict is remembered). It runs cuTile's
    whole compile, tileiras included, where cuTile's own ``_compile`` is called."""
    _check_launch_arguments(kernel, args)
    signature = _signature(kernel, args)
    if signature is None:
        return False
    return _verdict(kernel_compile.compile_with_override, override, signature)


def _signature(kernel: Any, args: Sequence[Any]) -> Any:
    """cuTile's KernelSignature for these arguments; None for arguments the signature
    builder cannot describe. What cuTile's launcher refuses with a ValueError (an axis
    annotated static beyond the rank) is raised, with its message."""
    from ..compile.signature import build_signature
    from ..errors import ArgumentValueError

    try:
        return build_signature(kernel, [_describable(a) for a in args]).kernel_signature
    except ArgumentValueError:
        raise
    except (TileLabError, TypeError, ValueError):
        return None


def _passed(kernel: Any, seen: set, key: str, quick: tuple | None) -> None:
    with _LOCK:
        seen.add(key)
        if quick is not None:
            _QUICK.setdefault(kernel, set()).add(quick)


def _disk_key(kernel: Any, signature_repr: str) -> str | None:
    """The kernel's key in the on-disk verdict cache (None: off, or not fingerprintable).
    A bad ``TILE_LAB_FRONTEND_CACHE`` is an EmulationError naming it."""
    try:
        if verdict_cache.directory() is None:
            return None
    except ValueError as exc:
        from ..errors import EmulationError

        raise EmulationError(str(exc)) from None
    return verdict_cache.key(compat.python_function(kernel), signature_repr)


def _quick_key(args: Sequence[Any]) -> tuple | None:
    """Everything of the arguments a signature depends on, for plain NumPy arrays and
    scalars (dtype, shape, strides, 16-byte alignment; type and value): equal keys give
    equal signatures. None for anything else (the signature is built every time)."""
    out = []
    for a in args:
        if type(a) is np.ndarray:
            out.append((a.dtype.str, a.shape, a.strides, a.ctypes.data % 16))
        elif type(a) in (int, float, bool) or isinstance(a, (np.integer, np.floating)):
            out.append((type(a), a))
        else:
            return None
    return tuple(out)


def _check_launch_arguments(kernel: Any, args: Sequence[Any]) -> None:
    """cuTile's ``ct.launch`` checks of the arguments against the kernel's parameters
    (count, tuple arity, constants), raised as cuTile raises them: a TypeError with cuTile's
    message (tile_lab's ArgumentTypeError, a TypeError, for the notebook display)."""
    try:
        compat.check_launch_arguments(kernel, args)
    except TypeError as exc:
        from ..errors import ArgumentTypeError

        raise ArgumentTypeError(str(exc), hint="cuTile's ct.launch rejects these "
                                "arguments, so the emulator does not run the kernel") from None


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Skip the gate inside this block: the emulator's own checks alone decide (for testing
    them, or for trying an op cuTile's front end does not accept yet)."""
    _OFF[0] += 1
    try:
        yield
    finally:
        _OFF[0] -= 1


def _describable(value: Any) -> Any:
    """``value`` as the signature builder reads it: torch CPU tensors as NumPy views (no
    copy; same dtype, shape, strides and alignment); everything else unchanged."""
    if isinstance(value, (list, tuple)):
        return type(value)(_describable(v) for v in value)
    if type(value).__module__.split(".")[0] == "torch" and hasattr(value, "numpy"):
        try:
            if value.device.type == "cpu":
                return value.detach().numpy()
        except (TypeError, RuntimeError):  # e.g. bfloat16, which NumPy lacks: not gated
            pass
    return value


def clear_cache() -> None:
    """Forget which kernels passed (the next launch of each is checked again)."""
    with _LOCK:
        _PASSED.clear()
        _QUICK.clear()

