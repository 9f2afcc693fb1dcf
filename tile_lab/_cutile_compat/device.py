"""cuTile's device side, as the emulator replaces it: the stub classes and device functions
(``ct.load``, ``ct.Array.slice``, ``@ct.function`` helpers), routing their calls to the
emulator, the device queries a kernel's host code makes, and ``ct.tune``'s benchmarks.

Part of :mod:`tile_lab._cutile_compat`, the one place that touches cuTile's private API.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


def raw_array_memory_stub() -> type:
    """cuTile's ``RawArrayMemory`` stub class (what ``Array.get_raw_memory`` returns; the
    ``cuda.tile`` namespace does not export it)."""
    from cuda.tile._stub import RawArrayMemory
    return RawArrayMemory


def stub_classes() -> dict[str, type]:
    """cuTile's stub classes whose methods kernels call on objects (arrays, tiles, views)."""
    import cuda.tile._stub as stub
    return {name: getattr(stub, name)
            for name in ("Array", "RawArrayMemory", "Tile", "TiledView", "Slice")}


def is_device_function(obj: Any) -> bool:
    """True for a function that only runs in tile code: a cuTile stub (``ct.load``,
    ``ct.Array.slice``) or a ``@ct.function`` helper; calling one on the host raises
    cuTile's "Device functions can only be called from device code"."""
    return bool(getattr(obj, "_cutile_function_wrapper", False))


def is_stub(obj: Any) -> bool:
    """True for one of cuTile's own API stubs (not a user ``@ct.function``)."""
    from cuda.tile._execution import is_stub as _is_stub
    return _is_stub(obj)


@contextlib.contextmanager
def device_calls_routed(route: Any) -> Iterator[None]:
    """While active on this thread, every call of a device function (see
    :func:`is_device_function`) goes to ``route(func, args, kwargs)`` instead of raising.
    cuTile dispatches such calls through its current ``DispatchMode`` (thread-local); its
    own front end swaps in another mode while it evaluates, so nesting is safe."""
    from cuda.tile._dispatch_mode import DispatchMode

    class _Routed(DispatchMode):
        def call_tile_function_from_host(self, func, args, kwargs):
            return route(func, args, kwargs)

    with _Routed().as_current():
        yield


def device_functions() -> dict[str, Any]:
    """Every device function of cuTile's API, by qualified name (``load``, ``Array.slice``,
    ``TiledView.dtype`` for a property's getter): all of them live in ``cuda.tile._stub``."""
    import inspect

    import cuda.tile._stub as stub
    out: dict[str, Any] = {}
    for name, obj in vars(stub).items():
        if is_device_function(obj):
            out[name] = obj
        elif inspect.isclass(obj) and obj.__module__ == stub.__name__:
            for attr, value in vars(obj).items():
                fn = value.fget if isinstance(value, property) else \
                    getattr(value, "__func__", value)
                if is_device_function(fn):
                    out[f"{name}.{attr}"] = fn
    return out


@contextlib.contextmanager
def emulated_device_queries(capability: tuple[int, int]) -> Iterator[None]:
    """Answer cuTile's own device queries (``_cext.get_compute_capability`` and the copies
    ``_compile``/``_execution`` imported by name) with ``capability`` on a machine without a
    CUDA driver, where the real ones fail loading libcuda. Test suites call them at import
    (``require_hopper_or_newer()``), so they must answer before any test module loads."""
    from cuda.tile import _cext, _compile, _execution

    def get_compute_capability(device_id: int = 0) -> tuple[int, int]:
        return capability

    modules = (_cext, _compile, _execution)
    saved = [m.__dict__.get("get_compute_capability") for m in modules]
    for module in modules:
        module.get_compute_capability = get_compute_capability  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module, original in zip(modules, saved):
            if original is not None:
                module.get_compute_capability = original  # type: ignore[attr-defined]


_TUNING_HOOKS = ("_benchmark", "benchmark_with_timeout")


def replace_tuning_benchmarks(benchmark: Any, benchmark_with_timeout: Any) -> Any:
    """Point ``cuda.tile.tune``'s two ways of timing one launch (``_benchmark``: CUDA events
    on the caller's stream; ``benchmark_with_timeout``: a CUDA IPC payload run in a worker
    process) at ``benchmark`` and ``benchmark_with_timeout``, in both modules that bound the
    names (``_tune`` and ``_tune_utils``). ``exhaustive_search`` itself, its search phases
    and its result types stay cuTile's own. Returns a function that puts cuTile's back."""
    from cuda.tile.tune import _tune, _tune_utils

    new = {"_benchmark": benchmark, "benchmark_with_timeout": benchmark_with_timeout}
    saved = [(m, name, m.__dict__[name]) for m in (_tune, _tune_utils)
             for name in _TUNING_HOOKS if name in m.__dict__]
    for module, name, _ in saved:
        setattr(module, name, new[name])

    def restore() -> None:
        for module, name, original in saved:
            setattr(module, name, original)

    return restore


def tuning_timeout_error() -> type[BaseException]:
    """The exception ``cuda.tile.tune`` raises for a launch over its time limit."""
    from cuda.tile.tune._tune_utils import TileLaunchTimeoutError

    return TileLaunchTimeoutError
