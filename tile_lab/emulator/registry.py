"""Which emulator function stands in for which cuTile operation.

``@emulates(ct.load)`` registers a function as the CPU version of a cuTile stub and checks,
at import, that both have the same parameters (names, kinds, defaults): a cuTile upgrade
that changes a signature fails loudly here instead of mis-binding arguments at run time.
``@emulates(ct.sum, taint=poison.REDUCTION)`` also wraps it in the rule by which undetermined
lanes move through it (``poison.py``): an op carries its taint rule where it is defined.

This module sits at the bottom of the emulator: it knows no tile and no op module, only the
table that the op modules fill as they are imported (``Tile``'s methods such as
``t.reshape`` call their op through :func:`emulation_of`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol

import cuda.tile as ct

from ..errors import EmulatorUnsupported

# cuTile public name -> emulator implementation
IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {}


class TaintRule(Protocol):
    """How undetermined lanes move through an op (``poison.Rule`` is the one kind)."""

    def wrap(self, name: str, impl: Callable[..., Any]) -> Callable[..., Any]:
        """``impl`` with the rule applied to its result."""
        ...


class SignatureMismatch(TypeError):
    """An emulator function's parameters differ from the cuTile stub it emulates."""


def _params(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def check_signature(stub: Callable[..., Any], impl: Callable[..., Any], name: str) -> None:
    want, got = _params(stub), _params(impl)
    if want != got:
        raise SignatureMismatch(
            f"emulator for ct.{name} has signature {inspect.signature(impl)} but cuTile's "
            f"stub is {inspect.signature(stub)}; update tile_lab/emulator to match cuTile")


def emulates(stub: Callable[..., Any], *, name: str | None = None,
             taint: TaintRule | None = None):
    """Register the decorated function as the emulation of cuTile ``stub``; with ``taint``,
    wrapped in that rule (lane-by-lane ops need none: ``tile.py``'s core carries taint)."""
    op_name = name or stub.__name__

    def decorate(impl: Callable[..., Any]) -> Callable[..., Any]:
        check_signature(stub, impl, op_name)
        if taint is not None:
            impl = taint.wrap(op_name, impl)
        IMPLEMENTATIONS[op_name] = impl
        return impl

    return decorate


def emulation_of(stub: Callable[..., Any]) -> Callable[..., Any]:
    """The function registered (``@emulates``) as the emulation of cuTile ``stub``."""
    try:
        return IMPLEMENTATIONS[stub.__name__]
    except KeyError:
        raise EmulatorUnsupported(
            f"ct.{stub.__name__} has no emulation registered; import tile_lab.emulator "
            "(it registers every op)") from None


def emulates_method(stub: Callable[..., Any]):
    """Check a method against a cuTile class stub method (e.g. ``ct.Array.tiled_view``)."""
    def decorate(impl: Callable[..., Any]) -> Callable[..., Any]:
        target = stub.fget if isinstance(stub, property) else stub
        check_signature(target, impl, getattr(target, "__qualname__", target.__name__))
        return impl

    return decorate


# Names in cuda.tile.__all__ that are not operations a kernel calls: host API, types,
# dtypes, enums, exceptions, annotations, decorators and submodules.
HOST_NAMES = frozenset({
    "launch", "function", "kernel", "compiler_timeout", "tune", "compilation", "ByTarget",
    "foreign_pointer_dtype",
})


def is_operation(name: str) -> bool:
    """True for names in ``cuda.tile.__all__`` that a kernel calls as an operation."""
    if name in HOST_NAMES:
        return False
    obj = getattr(ct, name)
    if inspect.isclass(obj):
        return name == "Slice"  # the one class that kernels construct as an operation
    return inspect.isfunction(obj) and not name[0].isupper()


def operation_names() -> list[str]:
    return [n for n in ct.__all__ if is_operation(n)]


def refuses(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark an emulator function that only raises EmulatorUnsupported (``stubs.coverage``
    lists its cuTile function as refused, not emulated)."""
    fn._tile_lab_refused = True  # type: ignore[attr-defined]
    return fn


def unsupported(name: str) -> Callable[..., Any]:
    def raiser(*args: Any, **kwargs: Any) -> Any:
        raise EmulatorUnsupported(
            f"{name} is not supported by the CPU emulator (ct.{name})",
            hint="run the kernel on a GPU with tile_lab.launch, or avoid this operation")
    raiser.__name__ = name
    raiser.__qualname__ = f"unsupported.{name}"
    return refuses(raiser)


# cuTile's foreign calls (NVSHMEM, other device libraries linked into the kernel) come from
# this package; cuda.tile itself only hands out the pointers they take (ops_foreign.py).
PREVIEW_PACKAGE = "cuda.tile_preview"


def is_preview(obj: Any) -> bool:
    """True for the ``cuda.tile_preview`` module (or a submodule) and what it defines."""
    name = obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", None)
    return isinstance(name, str) and (name == PREVIEW_PACKAGE
                                      or name.startswith(PREVIEW_PACKAGE + "."))


def foreign_call(qualname: str) -> Callable[..., Any]:
    """What a kernel's ``cuda.tile_preview`` function becomes: it raises EmulatorUnsupported
    naming it (a foreign call runs device library code, e.g. NVSHMEM, that has no CPU form)."""
    def raiser(*args: Any, **kwargs: Any) -> Any:
        raise EmulatorUnsupported(
            f"{qualname} is a foreign call (cuda.tile_preview: NVSHMEM or another device "
            "library linked into the kernel), which the CPU emulator cannot run",
            hint="run the kernel on a GPU with tile_lab.launch (NVSHMEM calls also need "
                 "the nvshmem package there)")
    raiser.__name__ = raiser.__qualname__ = qualname.rpartition(".")[2]
    return refuses(raiser)
