"""``bench``: time a kernel honestly and return a :class:`Measurement`.

Order of work for one call (in this process, or in the isolation worker):

1. launch once from the original arguments and synchronize (compiles; surfaces faults);
2. note which arrays the launch wrote; launch again — if the result changes, the kernel is
   in place (``x += 1``) and every sample restores the written arrays first ("fresh
   outputs"), outside the timed span;
3. ``check=`` compares the first launch's output with the reference (see :func:`bench`);
   without ``flops=``, the FLOPs were derived before any launch (:func:`resolve_flops`), from
   the original argument values;
4. time ``samples`` samples with the protocol of ``mode`` (:mod:`tile_lab.gpu.timing`);
5. leave the arguments holding the result of one launch from their original values.

Every sample carries the GPU state it ran in (:mod:`tile_lab.gpu.state`), and the samples are
taken in a named regime (``TimingOptions.regime``: "burst" by default, waiting for the GPU to
recover first). The work itself is done by :mod:`tile_lab.gpu.inprocess` (here, or in the
isolation worker); this module validates, checks and dispatches.

A caller that measures many variants of one kernel (the tuner) learns steps 1–2 once with
:func:`detect_writes` and passes the answer as ``BenchOptions(writes=...)``: the variants write
the same arguments, so each later measurement needs one warm-up launch instead of two probes.
With ``TimingOptions(stop_above_s=...)``, a variant whose first timed sample is slower than
that stops there (a tuning race need not time a 30× slower config five times to know it lost).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..array_like import as_launch_args
from ..errors import CheckMismatch, TileLabError
from . import metrics
from .arrays import host_copy, same_bytes
from .inprocess import Amounts, as_stream, build_measurement, check_grid, time_work
from .job import KernelJob, TileKernel, Writes, measure_job
from .measurement import Measurement
from .options import BenchOptions, TimingOptions
from .sampling import Timeable, TimedWork

__all__ = ["BenchOptions", "TimingOptions", "Writes", "bench", "bench_function", "bench_job",
           "bench_work", "detect_writes", "resolve_flops", "same_bytes"]


def validate(grid: Any, args: Any) -> tuple[int, ...]:
    grid = check_grid(grid)
    if not isinstance(args, (tuple, list)):
        raise TileLabError(f"args must be a tuple or list of kernel arguments, got "
                           f"{type(args).__name__}")
    return grid


def timing_of(timing: TimingOptions | None) -> TimingOptions:
    """``timing``, checked (default: TimingOptions())."""
    if timing is not None and not isinstance(timing, TimingOptions):
        raise TileLabError(f"timing= must be a tile_lab.gpu.TimingOptions, not "
                           f"{type(timing).__name__}")
    return timing or TimingOptions()


def bench(kernel: Any, grid: Any, args: Sequence[Any], *, bytes: int | None = None,
          flops: int | None = None, check: Callable[..., Any] | None = None,
          timing: TimingOptions | None = None, options: BenchOptions | None = None
          ) -> Measurement:
    """Benchmark ``kernel`` over ``grid`` with ``args``; return a :class:`Measurement`.

    ``timing``: how samples are taken, a :class:`TimingOptions` (``mode`` "cold": L2 flushed
    before each sample, the default, "warm", or "graph": many launches in one CUDA graph,
    per-launch time; how many ``samples``; the regime, throttle policy, warm-up).
    ``bytes``/``flops``: what one launch moves / computes; without ``bytes``, every array
    argument counts once (or, given an emulator trace in ``options``, the unique elements it
    read and wrote). Without ``flops``, they are derived from the kernel's matrix-product shapes
    (``ct.mma``/``ct.matmul``) by emulating a few sample blocks on the CPU
    (:func:`tile_lab.gpu.metrics.estimate_flops`); ``Measurement.flops_source`` says which.
    A kernel without matrix products reports no TFLOPS.

    ``check``: a reference. It is called with NumPy copies of the arguments as they were
    before the launch and either updates its array arguments in place the way the kernel
    should (returns None), or returns the expected contents of the *last* array argument.
    Every array is then compared with the GPU's (tolerance ``options.check_tol``, by default
    from the dtype); a mismatch raises CheckMismatch, else the errors are recorded.

    ``options``: a :class:`BenchOptions` (label, params, isolation in a worker process, hints,
    stream, trace, what the kernel writes).
    """
    # what launch() accepts, bench() accepts: torch CPU tensors and CPU DLPack objects become
    # zero-copy NumPy views, so the copy back after the launch lands in the caller's memory
    args = as_launch_args(args)
    grid = validate(grid, args)
    t = timing_of(timing)
    o = options or BenchOptions()
    from .device import require_gpu

    cupy = require_gpu("tile_lab.bench")
    flops, flops_source, flops_notes = resolve_flops(kernel, grid, args, flops=flops,
                                                     trace=o.trace, derive=o.derive_flops)
    nbytes = bytes
    if nbytes is None and o.trace is not None:
        nbytes = metrics.bytes_from_trace(o.trace)
    job = KernelJob(TileKernel(kernel, o.hints), grid, tuple(args), o.writes)
    result = bench_job(cupy, job, timing=t, options=o, check=check,
                       amounts=Amounts(nbytes, flops, flops_source))
    if bytes is None and o.trace is not None:
        result = replace(result, bytes_source="trace")
    if flops_notes:
        result = replace(result, notes=result.notes + flops_notes)
    return result


def bench_job(cupy: Any, job: KernelJob, *, timing: TimingOptions, options: BenchOptions,
              amounts: Amounts, check: Callable[..., Any] | None = None) -> Measurement:
    """Measure ``job`` (a cuTile or C++ kernel job) here, or in the isolation worker with
    ``options.isolate``; with ``check``, compare its result with the reference (see
    :func:`bench`). ``tile_lab.bench`` and ``tile_lab.bench_cpp`` both end here."""
    reference = reference_outputs(check, job.args) if check is not None else None
    if options.isolate:
        from .isolate import run_isolated

        # the worker gets no trace or stream (neither travels); bytes were resolved here
        worker_opts = replace(options, trace=None, stream=None)
        result = run_isolated("bench", job, {"timing": timing, "options": worker_opts,
                                             "amounts": amounts}, timeout=options.timeout)
    else:
        result = measure_job(cupy, job, timing, options, amounts)
    if reference is not None:
        result = apply_check(result, job.args, reference, options.check_tol)
    return result


def detect_writes(kernel: Any, grid: Any, args: Sequence[Any], *,
                  hints: dict[str, Any] | None = None, stream: Any = None) -> Writes:
    """Launch ``kernel`` twice and report which array arguments it writes and whether it is in
    place (the second launch changes them again). Afterwards every array holds what it held
    before the call (written ones are restored from copies)."""
    from .device import require_gpu

    cupy = require_gpu("tile_lab.gpu.detect_writes")
    job = KernelJob(TileKernel(kernel, hints), check_grid(grid), tuple(args)).on_device(cupy)
    launch_stream, s = as_stream(cupy, stream)
    writes, before = job.detect_writes(lambda: job.launch_and_wait(launch_stream, s))
    with s:
        job.restore({i: before[i] for i in writes.indices})
    s.synchronize()
    return writes


def resolve_flops(kernel: Any, grid: Sequence[int], args: Sequence[Any], *,
                  flops: int | None, trace: Any = None, derive: bool = True
                  ) -> tuple[int | None, str | None, tuple[str, ...]]:
    """The FLOPs a measurement reports, where they come from, and notes to show with it.

    ``flops`` given: it, "user". Else, with ``derive``: the matrix products of ``trace``
    when it recorded them for this grid and these array shapes, else of a few emulated
    sample blocks (:func:`tile_lab.gpu.metrics.estimate_flops`); None when the kernel ran
    no matrix product (elementwise kernels get no invented FLOPs). When the emulator cannot
    run the kernel, the measurement goes ahead without FLOPs and a note says why: timing
    must not depend on the emulator supporting every operation.
    """
    if flops is not None:
        if isinstance(flops, bool) or not isinstance(flops, (int, float, np.integer,
                                                              np.floating)) \
                or not math.isfinite(flops) or flops < 0:
            raise TileLabError(f"flops={flops!r} must be a non-negative number (FLOPs of one "
                               "launch)", hint="tile_lab.gpu.metrics.matmul_flops(M, N, K)")
        return int(flops), "user", ()
    if not derive:
        return None, None, ()
    if trace is not None and _trace_describes(trace, grid, args):
        estimate = metrics.flops_from_trace(trace)
    else:
        try:
            estimate = metrics.estimate_flops(kernel, grid, args)
        except TileLabError as exc:
            return None, None, (f"FLOPs not derived: the emulator could not run sample blocks "
                                f"({exc.message}); pass flops= for TFLOPS",)
        except MemoryError:
            return None, None, ("FLOPs not derived: the host has no room for copies of the "
                                "arguments to emulate sample blocks; pass flops= for TFLOPS",)
    if estimate.flops is None:
        return None, None, ()
    notes: tuple[str, ...] = ()
    if not estimate.uniform and not estimate.exact:
        notes = (f"FLOPs estimated from sample blocks that did different work "
                 f"({estimate.source}); pass flops= for an exact figure",)
    return estimate.flops, estimate.source, notes


def _trace_describes(trace: Any, grid: Sequence[int], args: Sequence[Any]) -> bool:
    """Whether ``trace`` recorded matrix products of a launch of this grid and these arrays."""
    if getattr(trace, "mma_calls", None) is None:
        return False
    if tuple(trace.grid) != (*(int(g) for g in grid), 1, 1)[:3]:
        return False
    shapes = [tuple(int(n) for n in a.shape) for a in args if metrics.is_array(a)]
    return shapes == [tuple(a.shape) for a in trace.arrays]


# ---- check= -------------------------------------------------------------------------------------
def reference_outputs(check: Callable[..., Any], args: Sequence[Any]) -> dict[int, np.ndarray]:
    """Run the reference on host copies of the original arguments: index -> expected array."""
    if not callable(check):
        raise TileLabError(f"check={check!r} must be a callable reference function")
    ref_args = [host_copy(a) for a in args]
    returned = check(*ref_args)
    expected = {i: a for i, a in enumerate(ref_args) if isinstance(a, np.ndarray)}
    if returned is not None:
        if not expected:
            raise TileLabError("check= returned an array but the kernel has no array argument")
        expected[max(expected)] = np.asarray(returned)
    return expected


def apply_check(m: Measurement, args: Sequence[Any], expected: dict[int, np.ndarray],
                 tol: tuple[float, float] | None) -> Measurement:
    from dataclasses import replace

    worst_abs = worst_rel = 0.0
    for i, exp in expected.items():
        got = host_copy(args[i])
        rtol, atol = tol if tol is not None else metrics.default_tolerance(got.dtype)
        try:
            cmp = metrics.compare(got, exp, rtol=rtol, atol=atol)
        except ValueError as exc:
            raise CheckMismatch(f"argument {i}: {exc}") from None
        if cmp.mismatches:
            raise CheckMismatch(
                f"{m.name}: argument {i} differs from the reference in {cmp.mismatches} of "
                f"{got.size} elements (max abs err {cmp.max_abs_err:.3g}, max rel err "
                f"{cmp.max_rel_err:.3g}; first worst at index {cmp.worst_index}; rtol={rtol}, "
                f"atol={atol})", hint="pass check_tol=(rtol, atol) if the tolerance is too "
                                      "strict for this dtype")
        worst_abs = max(worst_abs, cmp.max_abs_err)
        worst_rel = max(worst_rel, cmp.max_rel_err)
    return replace(m, max_abs_err=worst_abs, max_rel_err=worst_rel)


def bench_work(work: Timeable, *, bytes: int | None = None, flops: int | None = None,
               timing: TimingOptions | None = None, label: str | None = None,
               params: dict[str, Any] | None = None, stream: Any = None,
               baseline: str | None = None) -> Measurement:
    """Time any :class:`~tile_lab.gpu.sampling.Timeable` (a baseline, a C++ kernel launch, a
    kernel_work) with the protocol and statistics of :func:`bench`. ``work.run()`` enqueues on
    the current CuPy (and torch) stream and may launch several kernels; the span covers all of
    them. Graph mode needs the work to be capturable. ``bytes``/``flops``/``baseline`` default
    to the work's own fields when it has them."""
    from .device import provenance, require_gpu
    from .peaks import device_peaks

    t = timing or TimingOptions()
    cupy = require_gpu("tile_lab.gpu.bench_work")
    _, s = as_stream(cupy, stream)
    if s.ptr == 0:  # graphs cannot capture the legacy stream; torch needs a real one too
        cupy.cuda.Device().synchronize()
        s = cupy.cuda.Stream(non_blocking=True)
    sampled = time_work(cupy, s, work, t)
    prov = provenance()
    nbytes = bytes if bytes is not None else getattr(work, "bytes", None)
    nflops = flops if flops is not None else getattr(work, "flops", None)
    name = label or work.name
    return build_measurement(
        name, t, (), sampled, (),
        amounts=Amounts(nbytes, nflops, None, baseline or getattr(work, "baseline", None)),
        options=BenchOptions(label=name, params=params), peaks=device_peaks(), provenance=prov)


def bench_function(fn: Callable[[], Any], *, bytes: int | None = None,
                   flops: int | None = None, label: str = "function",
                   params: dict[str, Any] | None = None, timing: TimingOptions | None = None,
                   stream: Any = None) -> Measurement:
    """Time any GPU work ``fn`` enqueues on the current CuPy stream (a CuPy or cuBLAS baseline)
    with the same protocol and statistics as :func:`bench` (see :func:`bench_work`)."""
    t = timing_of(timing)
    return bench_work(TimedWork(label, fn), bytes=bytes, flops=flops, timing=t, label=label,
                      params=params, stream=stream)
