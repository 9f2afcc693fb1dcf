"""``bench_cpp``: time a CUDA Tile C++ kernel with the protocol and statistics of ``bench``.

The timing itself is :func:`tile_lab.gpu.bench_function` (cold / warm / graph protocols, L2
flush, confidence intervals, provenance), so a C++ Measurement sits next to a Python one in the
same tables and plots. What this module adds is what ``bench`` does for Python kernels before
timing: launch once (surfacing faults), note which arrays the kernel writes, check them against
a reference, and leave the arguments holding one launch's result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..artifacts import Inspection
from ..errors import TileLabError
from ..gpu import metrics
from ..gpu.benchmark import (
    _apply_check,
    _reference,
    bench_function,
    copy_into,
    detect_writes_of,
    validate,
)
from ..gpu.measurement import Measurement
from .launch import _require_gpu, prepare_launch


def bench_cpp(inspection: Inspection, grid: Any, args: Sequence[Any], *,
              bytes: int | None = None, flops: int | None = None, mode: str = "cold",
              samples: int | None = None, warmup: int = 3,
              check: Callable[..., Any] | None = None,
              check_tol: tuple[float, float] | None = None, label: str | None = None,
              params: dict[str, Any] | None = None, stream: Any = None) -> Measurement:
    """Benchmark the C++ kernel of ``inspection`` (from ``inspect_cpp``) over ``grid``.

    Arguments, ``mode``, ``bytes``/``flops``, ``check``/``check_tol`` and the result mean what
    they mean for ``tile_lab.bench``: without ``bytes`` every array argument counts once; NumPy
    arrays are copied to the GPU and the result copied back. One difference: a kernel that
    updates its input in place is *not* restored between samples (each sample applies it to
    the previous one's output); the Measurement says so in its notes. Without a GPU raises
    NoGPUError -- the CPU emulator runs cuTile Python kernels only.
    """
    if not isinstance(inspection, Inspection):
        raise TileLabError(f"bench_cpp needs the Inspection from tile_lab.inspect_cpp, not "
                           f"{type(inspection).__name__}")
    dims = validate(grid, args, mode, samples)
    cupy = _require_gpu()
    from ..gpu.launcher import as_stream, copy_back, device_args

    reference = _reference(check, args) if check is not None else None
    _, s = as_stream(cupy, stream)
    if mode == "graph" and s.ptr == 0:  # the legacy default stream cannot be captured
        s = cupy.cuda.Stream(non_blocking=True)
    dev, back = device_args(cupy, list(args))
    launch = prepare_launch(cupy, inspection, None, dims, dev)

    def launch_and_wait() -> None:
        launch(s)
        s.synchronize()

    # two launches from the original values: which arrays are outputs, and is it in place?
    writes, pristine = detect_writes_of(cupy, dev, launch_and_wait)
    written, in_place = writes.indices, writes.in_place

    m = bench_function(lambda: launch(s), bytes=metrics.bytes_from_arrays(dev)
                       if bytes is None else bytes, flops=flops, mode=mode, samples=samples,
                       warmup=max(0, warmup - 2), label=label or inspection.kernel_name,
                       params=params, stream=s)

    # leave the arguments holding one launch's result from their original values
    if in_place:
        with s:
            for i in written:
                copy_into(cupy, cupy.asarray(dev[i]), pristine[i])
        launch(s)
    s.synchronize()
    copy_back(cupy, args, back)

    notes = [f"CUDA Tile C++ kernel ({inspection.arch}"
             + (f", {' '.join(inspection.hints['defines'])}" if inspection.hints.get("defines")
                else "") + ")"]
    if in_place:
        notes.append("in-place kernel: each sample applies it to the previous sample's output "
                     "(bench_cpp does not restore outputs between samples)")
    m = replace(m, kernel=inspection.kernel_name, label=label, grid=dims,
                bytes_source=("user" if bytes is not None else "array sizes") if m.bytes else None,
                notes=tuple(notes) + m.notes)
    if reference is not None:
        m = _apply_check(m, args, reference, check_tol)
    return m

