"""``launch``: run a kernel once on the GPU through ``ct.launch`` on the current CuPy stream.

CuPy arrays are passed straight through, as are torch CUDA tensors and any object with
``__cuda_array_interface__`` / ``__dlpack__`` (cuTile reads those itself). NumPy arrays are
copied to the device, and the results copied back after the launch, like ``tile_lab.emulate``
does in the other direction. The fast path adds only a grid check, an argument scan and a
cached hints lookup on top of ``ct.launch``.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..array_like import as_launch_args
from ..errors import LaunchError, TileLabError
from .device import gpu_available, require_gpu

EMULATOR_NOTICE = "no GPU: running on the tile_lab CPU emulator"

# (kernel, hints key) -> kernel with hints applied. replace_hints() makes a new kernel with its
# own JIT cache, so it must be made once per (kernel, hints), not once per launch.
_HINTED: dict[tuple[int, str], tuple[Any, Any]] = {}


def check_grid(grid: Any) -> tuple[int, ...]:
    """``grid`` as a tuple of 1–3 positive ints, or a LaunchError naming what is wrong."""
    if type(grid) is tuple and 0 < len(grid) < 4 and all(
            type(d) is int and d > 0 for d in grid):
        return grid  # the common case, checked cheaply (launch overhead budget: a few µs)
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    try:
        dims = tuple(grid)
    except TypeError:
        raise LaunchError(f"grid must be a tuple of 1 to 3 positive ints, got {grid!r}") from None
    if not 1 <= len(dims) <= 3 or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0
            for d in dims):
        raise LaunchError(f"grid must be a tuple of 1 to 3 positive ints, got {grid!r}")
    return tuple(int(d) for d in dims)


def with_hints(kernel: Any, hints: dict[str, Any] | None) -> Any:
    """``kernel.replace_hints(**hints)``, cached so repeated launches reuse one JIT cache."""
    if not hints:
        return kernel
    key = (id(kernel), repr(sorted(hints.items())))
    hit = _HINTED.get(key)
    if hit is not None and hit[0] is kernel:
        return hit[1]
    try:
        hinted = kernel.replace_hints(**hints)
    except (TypeError, ValueError) as exc:
        raise TileLabError(f"bad hints={hints!r}: {exc}") from None
    _HINTED[key] = (kernel, hinted)  # keeps kernel alive, so its id stays unique
    return hinted


def as_stream(cupy: Any, stream: Any) -> tuple[Any, Any]:
    """(the object ``ct.launch`` gets, a CuPy stream for events and synchronization).

    None means CuPy's current stream. cuTile takes CuPy and torch streams itself; a torch
    stream is also wrapped (no copy) as a CuPy stream so CuPy events can be recorded on it.
    """
    if stream is None:
        s = cupy.cuda.get_current_stream()
        return s, s
    if isinstance(stream, cupy.cuda.Stream):
        return stream, stream
    handle = getattr(stream, "cuda_stream", None)  # torch.cuda.Stream
    if isinstance(handle, int):
        with warnings.catch_warnings():  # ExternalStream is deprecated but does what we need
            warnings.simplefilter("ignore", DeprecationWarning)
            return stream, cupy.cuda.ExternalStream(handle)
    raise TileLabError(f"stream={stream!r}: pass a CuPy stream (cupy.cuda.Stream) or a torch "
                       "CUDA stream, or None for CuPy's current stream")


def device_args(cupy: Any, args: Sequence[Any]) -> tuple[list[Any], list[tuple[int, Any]]]:
    """Arguments with NumPy arrays copied to the device; also (index, device copy) pairs whose
    results must be copied back into the NumPy originals."""
    out: list[Any] = []
    back: list[tuple[int, Any]] = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            d = cupy.asarray(a)
            out.append(d)
            back.append((i, d))
        else:
            out.append(a)
    return out, back


def copy_back(cupy: Any, args: Sequence[Any], back: list[tuple[int, Any]]) -> None:
    for i, d in back:
        np.copyto(args[i], cupy.asnumpy(d))


def launch(kernel: Any, grid: Any, args: Sequence[Any], *, hints: dict[str, Any] | None = None,
           isolate: bool = False, stream: Any = None, fallback: str | None = None,
           timeout: float | None = 120.0) -> None:
    """Launch ``kernel`` over ``grid`` with ``args`` on the GPU (see the module docstring).

    ``isolate=True`` runs it in a worker process: a fault or a hang (``timeout`` seconds)
    becomes a LaunchError here and this process's CUDA context stays healthy.
    ``fallback="emulate"`` runs the tile_lab CPU emulator when there is no GPU, after printing
    one notice line. Without a GPU and without the fallback: NoGPUError.
    """
    grid = check_grid(grid)
    args = as_launch_args(args)  # torch CPU tensors, CPU DLPack: zero-copy NumPy views
    if not isinstance(args, (tuple, list)):
        raise LaunchError(f"args must be a tuple or list of kernel arguments, got "
                          f"{type(args).__name__}")
    if fallback is not None and fallback != "emulate":
        raise TileLabError(f"fallback={fallback!r}: the only fallback is 'emulate'")
    if fallback == "emulate" and not gpu_available():
        from ..emulator import emulate

        print(EMULATOR_NOTICE, file=sys.stdout, flush=True)
        emulate(kernel, grid, args)
        return
    cupy = require_gpu("tile_lab.launch")
    if isolate:
        from .isolate import run_isolated

        run_isolated("launch", kernel, grid, args, {"hints": hints}, timeout=timeout)
        return
    launch_in_process(cupy, kernel, grid, args, hints=hints, stream=stream)


def launch_in_process(cupy: Any, kernel: Any, grid: tuple[int, ...], args: Sequence[Any], *,
                      hints: dict[str, Any] | None = None, stream: Any = None,
                      sync: bool = False) -> None:
    k = with_hints(kernel, hints)
    launch_stream, s = as_stream(cupy, stream)
    dev, back = device_args(cupy, args)
    try:
        _ct_launch()(launch_stream, grid, k, tuple(dev))
        if back or sync:
            s.synchronize()
    except Exception as exc:
        err = _launch_error(exc, kernel)
        if err is exc:
            raise
        raise err from exc
    copy_back(cupy, args, back)


@functools.cache
def _ct_launch() -> Any:
    import cuda.tile as ct

    return ct.launch


def _launch_error(exc: Exception, kernel: Any) -> Exception:
    """Compile errors pass through (their own class renders the user's line); CUDA errors
    become LaunchError naming the kernel."""
    from .._cutile_compat import is_tile_error

    if isinstance(exc, TileLabError) or is_tile_error(exc):
        return exc
    return LaunchError(f"launching {kernel_name(kernel)} failed: {type(exc).__name__}: {exc}",
                       hint="run it with isolate=True to keep this process's CUDA context "
                            "healthy, or tile_lab.sanitize(...) to find out-of-bounds accesses")


def kernel_name(kernel: Any) -> str:
    try:
        from .._cutile_compat import python_function

        return python_function(kernel).__name__
    except Exception:
        return getattr(kernel, "__name__", type(kernel).__name__)
