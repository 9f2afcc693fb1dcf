"""cuTile device functions reached other than through a rebuilt kernel's globals.

The rebuilt kernel sees the emulated ``cuda.tile`` (``namespace.py``), but a kernel can still
hold one of cuTile's real device functions: a stub kept in a dict and picked with
``ct.static_eval(OPS[k])``, the unbound form ``ct.TiledView.load(view, index)``, a method of a
user class (a dataclass's ``__setitem__``, a context manager) whose globals are not rebuilt,
or a ``@ct.function`` helper reached through an object. Called on the host, each would raise
cuTile's "Device functions can only be called from device code". While an emulated launch
runs, cuTile's own dispatch hands every such call to :func:`router` instead
(``_cutile_compat.device.device_calls_routed``): it runs the emulator's version, rebuilds a user
helper, or refuses with an :class:`~tile_lab.errors.EmulatorUnsupported` naming the function.
:func:`coverage` says which of cuTile's device functions are emulated and which refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._cutile_compat import device as compat
from ..errors import EmulatorUnsupported
from . import namespace as namespace_mod
from .ops_memory import Array, Slice, TiledView
from .ops_raw import RawArrayMemory
from .registry import IMPLEMENTATIONS, foreign_call, is_preview
from .tile import Tile

# the emulator's class for each of cuTile's stub classes
EMULATED_CLASSES: dict[str, type] = {"Array": Array, "RawArrayMemory": RawArrayMemory,
                                     "Tile": Tile, "TiledView": TiledView, "Slice": Slice,
                                     # the typing protocol of scalars: in a kernel, 0-d tiles
                                     "ScalarProtocol": Tile}


def _refused(qualname: str) -> EmulatorUnsupported:
    return EmulatorUnsupported(
        f"ct.{qualname} is not supported by the CPU emulator",
        hint="run the kernel on a GPU with tile_lab.launch, or avoid this operation")


def resolve(func: Any, rebuild: Callable[[Any], Any] | None = None) -> Callable[..., Any]:
    """The emulator's callable for the cuTile device function ``func`` (a method comes back
    unbound: call it with the object first). ``rebuild`` turns a user ``@ct.function``
    into its emulated version. Raises EmulatorUnsupported for what is not emulated."""
    fake = namespace_mod._stub_table().get(id(func))
    if fake is not None:
        return fake
    qualname = getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))
    if is_preview(func):  # a foreign call (NVSHMEM, ...) reached through an object
        return foreign_call(f"{func.__module__}.{qualname}")
    owner, _, attr = qualname.partition(".")
    from_cutile = compat.is_stub(func) or \
        (getattr(func, "__module__", None) or "").startswith("cuda.tile")
    if not from_cutile:
        if rebuild is None:
            raise _refused(qualname)
        return rebuild(func)  # a user @ct.function helper
    if not attr:  # a module-level stub that cuda.tile does not export
        impl = IMPLEMENTATIONS.get(owner)
        if impl is None:
            raise _refused(qualname)
        return impl
    cls = EMULATED_CLASSES.get(owner)
    impl = None if cls is None else cls.__dict__.get(attr)
    if isinstance(impl, property):
        impl = impl.fget
    elif isinstance(impl, (staticmethod, classmethod)):
        impl = impl.__func__
    if impl is None or compat.is_device_function(impl):
        raise _refused(qualname)
    return impl


def router(rebuild: Callable[[Any], Any]) -> Callable[[Any, tuple, dict], Any]:
    """What an emulated launch installs as cuTile's dispatch: run ``func`` emulated."""
    def route(func: Any, args: tuple, kwargs: dict) -> Any:
        return resolve(func, rebuild)(*args, **kwargs)
    return route


def coverage() -> dict[str, str]:
    """Every cuTile device function (qualified name) -> ``"emulated"`` or the message of the
    error the emulator refuses it with."""
    out = {}
    for name, func in compat.device_functions().items():
        try:
            impl = resolve(func)
        except EmulatorUnsupported as exc:
            out[name] = str(exc)
            continue
        refused = getattr(impl, "_tile_lab_refused", False) or \
            getattr(getattr(impl, "__wrapped__", None), "_tile_lab_refused", False)
        out[name] = f"ct.{name} is refused by the CPU emulator" if refused else "emulated"
    return out
