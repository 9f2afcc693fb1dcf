"""``bench_cpp``: time a CUDA Tile C++ kernel with the protocol and statistics of ``bench``.

A C++ launch is a :class:`~tile_lab.gpu.sampling.Timeable` (:func:`cpp_work`), so it is timed
by the same code path as cuTile Python kernels and library baselines
(:func:`tile_lab.gpu.benchmark.bench_work`: cold / warm / graph protocols, L2 flush, GPU state
with every sample, regimes, confidence intervals, provenance), and a C++ Measurement sits next
to a Python one in the same tables and plots. What this module adds is what ``bench`` does for
Python kernels before timing: launch once (surfacing faults), note which arrays the kernel
writes, check them against a reference, and leave the arguments holding one launch's result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..artifacts import Inspection
from ..errors import TileLabError
from ..gpu import metrics
from ..gpu.arrays import copy_back, copy_into, device_args
from ..gpu.benchmark import apply_check, bench_work, reference_outputs, timing_of, validate
from ..gpu.inprocess import as_stream, detect_writes_of
from ..gpu.measurement import Measurement
from ..gpu.options import BenchOptions, TimingOptions
from ..gpu.sampling import TimedWork
from .launch import _require_gpu, prepare_launch


def cpp_work(inspection: Inspection, grid: Any, args: Sequence[Any]) -> TimedWork:
    """One launch of the C++ kernel of ``inspection`` as a Timeable (device arrays only), for
    ``tile_lab.gpu.compare_timed`` against a Python kernel or a baseline."""
    dims = validate(grid, args)
    cupy = _require_gpu()
    launch = prepare_launch(cupy, inspection, None, dims, list(args))
    return TimedWork(inspection.kernel_name,
                     lambda: launch(cupy.cuda.get_current_stream()),
                     bytes=metrics.bytes_from_arrays(args))


def bench_cpp(inspection: Inspection, grid: Any, args: Sequence[Any], *,
              bytes: int | None = None, flops: int | None = None, mode: str | None = None,
              samples: int | None = None, check: Callable[..., Any] | None = None,
              timing: TimingOptions | None = None,
              options: BenchOptions | None = None) -> Measurement:
    """Benchmark the C++ kernel of ``inspection`` (from ``inspect_cpp``) over ``grid``.

    Arguments, ``mode``/``samples``/``timing``, ``bytes``/``flops``, ``check`` and
    ``options`` (label, params, check_tol, stream) mean what they mean for ``tile_lab.bench``:
    without ``bytes`` every array argument counts once; NumPy arrays are copied to the GPU and
    the result copied back. One difference: a kernel that updates its input in place is *not*
    restored between samples (each sample applies it to the previous one's output); the
    Measurement says so in its notes. Without a GPU raises NoGPUError -- the CPU emulator runs
    cuTile Python kernels only.
    """
    if not isinstance(inspection, Inspection):
        raise TileLabError(f"bench_cpp needs the Inspection from tile_lab.inspect_cpp, not "
                           f"{type(inspection).__name__}")
    dims = validate(grid, args)
    t = timing_of(timing, mode, samples)
    o = options or BenchOptions()
    cupy = _require_gpu()
    reference = reference_outputs(check, args) if check is not None else None
    _, s = as_stream(cupy, o.stream)
    if s.ptr == 0:  # the legacy default stream cannot be captured
        cupy.cuda.Device().synchronize()
        s = cupy.cuda.Stream(non_blocking=True)
    dev, back = device_args(cupy, list(args))
    launch = prepare_launch(cupy, inspection, None, dims, dev)

    def launch_and_wait() -> None:
        launch(s)
        s.synchronize()

    # two launches from the original values: which arrays are outputs, and is it in place?
    writes, pristine = detect_writes_of(cupy, dev, launch_and_wait)
    work = TimedWork(inspection.kernel_name, lambda: launch(cupy.cuda.get_current_stream()))
    m = bench_work(work, bytes=metrics.bytes_from_arrays(dev) if bytes is None else bytes,
                   flops=flops, timing=t.but(warmup=max(0, t.warmup - 2)),
                   label=o.label or inspection.kernel_name, params=o.params, stream=s)

    # leave the arguments holding one launch's result from their original values
    if writes.in_place:
        with s:
            for i in writes.indices:
                copy_into(cupy, cupy.asarray(dev[i]), pristine[i])
        launch(s)
    s.synchronize()
    copy_back(cupy, args, back)

    notes = [f"CUDA Tile C++ kernel ({inspection.arch}"
             + (f", {' '.join(inspection.hints['defines'])}" if inspection.hints.get("defines")
                else "") + ")"]
    if writes.in_place:
        notes.append("in-place kernel: each sample applies it to the previous sample's output "
                     "(bench_cpp does not restore outputs between samples)")
    m = replace(m, kernel=inspection.kernel_name, label=o.label, grid=dims,
                bytes_source=("user" if bytes is not None else "array sizes") if m.bytes else None,
                notes=tuple(notes) + m.notes)
    if reference is not None:
        m = apply_check(m, args, reference, o.check_tol)
    return m
