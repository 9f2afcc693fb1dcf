"""``launch_kernel`` (under ``tile_lab.launch``): run a kernel once on the GPU through
``ct.launch`` on the current CuPy stream.

CuPy arrays are passed straight through, as are torch CUDA tensors and any object with
``__cuda_array_interface__`` / ``__dlpack__`` (cuTile reads those itself). NumPy arrays are
copied to the device, and the results copied back after the launch, like ``tile_lab.emulate``
does in the other direction. The fast path adds only a grid check, an argument scan and a
cached hints lookup on top of ``ct.launch``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ..array_like import as_launch_args
from ..errors import LaunchError, TileLabError
from ..request import LAUNCH_TIMEOUT_S
from .arrays import copy_back, device_args
from .device import gpu_available, require_gpu
from .inprocess import as_stream, check_grid, kernel_name, launch_in_process, with_hints

EMULATOR_NOTICE = "no GPU: running on the tile_lab CPU emulator"
# the in-process pieces, importable from here as before (tile_lab.cpp.launch uses them)
__all__ = ["EMULATOR_NOTICE", "as_stream", "check_grid", "copy_back", "device_args",
           "kernel_name", "launch_in_process", "launch_kernel", "with_hints"]


def launch_kernel(kernel: Any, grid: Any, args: Sequence[Any], *,
                  hints: dict[str, Any] | None = None, isolate: bool = False, stream: Any = None,
                  fallback: str | None = None,
                  timeout: float | None = LAUNCH_TIMEOUT_S) -> None:
    """The launch under ``tile_lab.launch`` (whose docstring says what the options do), for
    the plain pieces."""
    grid = check_grid(grid)
    args = as_launch_args(args)  # torch CPU tensors, CPU DLPack: zero-copy NumPy views
    if not isinstance(args, (tuple, list)):
        raise LaunchError(f"args must be a tuple or list of kernel arguments, got "
                          f"{type(args).__name__}")
    if fallback is not None and fallback != "emulate":
        raise TileLabError(f"fallback={fallback!r}: the only fallback is 'emulate'")
    if fallback == "emulate" and not gpu_available():
        from ..emulator.runtime import emulate_kernel

        print(EMULATOR_NOTICE, file=sys.stdout, flush=True)
        emulate_kernel(kernel, grid, args)
        return
    cupy = require_gpu("tile_lab.launch")
    if isolate:
        from .isolate import run_isolated
        from .job import KernelJob, TileKernel

        run_isolated("launch", KernelJob(TileKernel(kernel, hints), grid, tuple(args)), {},
                     timeout=timeout)
        return
    launch_in_process(cupy, kernel, grid, args, hints=hints, stream=stream)


