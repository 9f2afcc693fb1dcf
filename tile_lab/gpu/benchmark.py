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

A caller that measures many variants of one kernel (the tuner) learns steps 1–2 once with
:func:`detect_writes` and passes the answer as ``writes=``: the variants write the same
arguments, so each later measurement needs one warm-up launch instead of two probes. With
``stop_above_s=``, a variant whose first timed sample is slower than that stops there (a
tuning race need not time a 30× slower config five times to know it lost).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import CheckMismatch, TileLabError
from . import metrics
from .launcher import (
    as_stream,
    check_grid,
    copy_back,
    device_args,
    kernel_name,
    launch_in_process,
    with_hints,
)
from .measurement import Measurement
from .timing import MODES, l2_flush_buffer, summarize, time_samples

DEFAULT_SAMPLES = {"cold": 30, "warm": 30, "graph": 20}
GRAPH_REPLAY_TARGET_S = 2e-3  # aim for replays of ~2 ms so event resolution is irrelevant
MAX_GRAPH_LAUNCHES = 500


@dataclass(frozen=True)
class Writes:
    """Which array arguments (by position) a launch writes, and whether it is in place (its
    result depends on what those arrays held: every sample must start from fresh copies)."""

    indices: tuple[int, ...]
    in_place: bool


def validate(grid: Any, args: Any, mode: str, samples: int | None) -> tuple[int, ...]:
    grid = check_grid(grid)
    if mode not in MODES:
        raise TileLabError(f"mode={mode!r} is not a timing mode; choose one of "
                           f"{', '.join(MODES)}")
    if samples is not None and (not isinstance(samples, int) or samples < 1):
        raise TileLabError(f"samples={samples!r} must be a positive int")
    if not isinstance(args, (tuple, list)):
        raise TileLabError(f"args must be a tuple or list of kernel arguments, got "
                           f"{type(args).__name__}")
    return grid


def bench(kernel: Any, grid: Any, args: Sequence[Any], *, bytes: int | None = None,
          flops: int | None = None, mode: str = "cold", samples: int | None = None,
          warmup: int = 3, check: Callable[..., Any] | None = None,
          check_tol: tuple[float, float] | None = None, isolate: bool = False,
          label: str | None = None, params: dict[str, Any] | None = None,
          hints: dict[str, Any] | None = None, stream: Any = None,
          launches_per_sample: int | None = None, trace: Any = None,
          derive_flops: bool = True, timeout: float | None = 300.0,
          writes: Writes | None = None, stop_above_s: float | None = None) -> Measurement:
    """Benchmark ``kernel`` over ``grid`` with ``args``; return a :class:`Measurement`.

    ``mode``: "cold" (L2 flushed before each sample, default), "warm", or "graph" (many
    launches in one CUDA graph, per-launch time). ``bytes``/``flops``: what one launch moves /
    computes; without ``bytes``, every array argument counts once (or, given an emulator
    ``trace``, the unique elements it read and wrote). Without ``flops``, they are derived
    from the kernel's matrix-product shapes (``ct.mma``/``ct.matmul``): from ``trace`` when it
    describes this launch, else by emulating a few sample blocks on the CPU
    (:func:`tile_lab.gpu.metrics.estimate_flops`); ``Measurement.flops_source`` says which.
    A kernel without matrix products reports no TFLOPS. ``derive_flops=False`` skips the
    derivation (it costs a few sample blocks of CPU emulation per call, e.g. in a tuning race).

    ``check``: a reference. It is called with NumPy copies of the arguments as they were
    before the launch and either updates its array arguments in place the way the kernel
    should (returns None), or returns the expected contents of the *last* array argument.
    Every array is then compared with the GPU's (tolerance ``check_tol`` = (rtol, atol), by
    default from the dtype); a mismatch raises CheckMismatch, else the errors are recorded.

    ``isolate=True`` runs everything in a worker process (``timeout`` seconds in all).

    ``writes``: what :func:`detect_writes` found for this kernel (skips the two probe
    launches). ``stop_above_s``: stop after the first timed sample when it is slower than
    this; the measurement then has one sample and a note saying so.
    """
    grid = validate(grid, args, mode, samples)
    if stop_above_s is not None and not (isinstance(stop_above_s, (int, float))
                                         and stop_above_s > 0):
        raise TileLabError(f"stop_above_s={stop_above_s!r} must be a positive number of "
                           "seconds")
    from .device import require_gpu

    cupy = require_gpu("tile_lab.bench")
    reference = _reference(check, args) if check is not None else None
    flops, flops_source, flops_notes = resolve_flops(kernel, grid, args, flops=flops,
                                                     trace=trace, derive=derive_flops)
    if isolate:
        from .isolate import run_isolated

        kwargs = dict(bytes=bytes, flops=flops, flops_source=flops_source, mode=mode,
                      samples=samples, warmup=warmup, label=label, params=params, hints=hints,
                      launches_per_sample=launches_per_sample, writes=writes,
                      stop_above_s=stop_above_s)
        if bytes is None and trace is not None:
            kwargs["bytes"] = metrics.bytes_from_trace(trace)
        result = run_isolated("bench", kernel, grid, args, kwargs, timeout=timeout)
        if bytes is None and trace is not None:
            result = _relabel_bytes(result, "trace")
    else:
        result = _bench_here(cupy, kernel, grid, args, bytes=bytes, flops=flops,
                             flops_source=flops_source, mode=mode, samples=samples,
                             warmup=warmup, label=label, params=params, hints=hints,
                             stream=stream, launches_per_sample=launches_per_sample,
                             trace=trace, writes=writes, stop_above_s=stop_above_s)
    if flops_notes:
        from dataclasses import replace

        result = replace(result, notes=result.notes + flops_notes)
    if reference is not None:
        result = _apply_check(result, args, reference, check_tol)
    return result


def _bench_here(cupy: Any, kernel: Any, grid: tuple[int, ...], args: Sequence[Any], *,
                bytes: int | None, flops: int | None, mode: str, samples: int | None,
                warmup: int, label: str | None, params: dict[str, Any] | None,
                hints: dict[str, Any] | None, stream: Any, launches_per_sample: int | None,
                trace: Any, isolated: bool = False,
                flops_source: str | None = None, writes: Writes | None = None,
                stop_above_s: float | None = None) -> Measurement:
    import cuda.tile as ct

    from .device import device_info, provenance
    from .peaks import device_peaks

    k = with_hints(kernel, hints)
    launch_stream, s = as_stream(cupy, stream)
    if mode == "graph" and s.ptr == 0:  # the legacy default stream cannot be captured
        launch_stream = s = cupy.cuda.Stream(non_blocking=True)
    dev, back = device_args(cupy, args)
    launch_args = tuple(dev)

    def launch_once() -> None:
        ct.launch(launch_stream, grid, k, launch_args)

    pristine: dict[int, Any] = {}
    if writes is None:  # two launches: compile, surface faults, learn what the kernel writes
        writes, before = _detect_writes_here(cupy, k, grid, dev, launch_stream)
        launched = 2
        if writes.in_place:
            pristine = {i: before[i] for i in writes.indices}
        del before
    else:
        if writes.in_place:  # the samples restart from what the arguments hold now
            pristine = {i: device_copy(cupy, cupy.asarray(dev[i])) for i in writes.indices}
        # one launch: compile (or load the cubin) and surface faults before timing
        launch_in_process(cupy, k, grid, dev, stream=launch_stream, sync=True)
        launched = 1
    views = {i: cupy.asarray(dev[i]) for i in writes.indices}

    def restore() -> None:
        for i in writes.indices:
            copy_into(cupy, views[i], pristine[i])

    prepare = restore if writes.in_place else None
    notes: list[str] = []
    if writes.in_place and mode == "graph":
        notes.append("in-place kernel: graph replays apply it repeatedly (outputs restored "
                     "only before each replay)")
    for _ in range(max(0, warmup - launched)):
        if prepare:
            with s:
                prepare()
        launch_once()
    s.synchronize()

    n = samples or DEFAULT_SAMPLES[mode]
    per_sample = 1
    if mode == "graph":
        per_sample = launches_per_sample or _graph_launches(cupy, s, launch_once, prepare)
    info = device_info()
    flush = l2_flush_buffer(cupy, info.l2_bytes) if mode == "cold" else None
    timing = dict(mode=mode, prepare=prepare, flush_buffer=flush,
                  launches_per_sample=per_sample)
    if stop_above_s is not None and n > 1:
        times = time_samples(cupy, s, launch_once, samples=1, **timing)
        if times[0] > stop_above_s:
            notes.append(f"stopped after 1 sample: {times[0] * 1e3:.3g} ms > the limit of "
                         f"{stop_above_s * 1e3:.3g} ms")
        else:
            times += time_samples(cupy, s, launch_once, samples=n - 1, discard_first=False,
                                  **timing)
    else:
        times = time_samples(cupy, s, launch_once, samples=n, **timing)
    prov = provenance(isolated=isolated)  # clocks right after the timed work
    del flush

    # leave the arguments holding one launch's result from their original values
    if writes.in_place:
        with s:
            restore()
        launch_once()
    s.synchronize()
    copy_back(cupy, args, back)
    return _measurement(kernel_name(kernel), mode, grid, times, per_sample, args,
                        bytes=bytes, flops=flops, trace=trace, label=label, params=params,
                        fresh=writes.in_place, notes=notes, peaks=device_peaks(),
                        provenance=prov, flops_source=flops_source)


def detect_writes(kernel: Any, grid: Any, args: Sequence[Any], *, hints: dict[str, Any] | None
                  = None, stream: Any = None) -> Writes:
    """Launch ``kernel`` twice and report which array arguments it writes and whether it is in
    place (the second launch changes them again). Afterwards every array holds what it held
    before the call (written ones are restored from copies)."""
    from .device import require_gpu

    cupy = require_gpu("tile_lab.gpu.detect_writes")
    grid = check_grid(grid)
    launch_stream, s = as_stream(cupy, stream)
    dev, _ = device_args(cupy, args)
    writes, before = _detect_writes_here(cupy, with_hints(kernel, hints), grid, dev,
                                         launch_stream)
    with s:
        for i in writes.indices:
            copy_into(cupy, cupy.asarray(dev[i]), before[i])
    s.synchronize()
    return writes


def _detect_writes_here(cupy: Any, kernel: Any, grid: tuple[int, ...], dev: Sequence[Any],
                        stream: Any) -> tuple[Writes, dict[int, Any]]:
    return detect_writes_of(
        cupy, dev, lambda: launch_in_process(cupy, kernel, grid, dev, stream=stream, sync=True))


def detect_writes_of(cupy: Any, dev: Sequence[Any], launch_and_wait: Callable[[], None]
                     ) -> tuple[Writes, dict[int, Any]]:
    """Run ``launch_and_wait`` (one launch, synchronized) twice over the device arguments
    ``dev``: what it writes, and copies of every array from before the first launch."""
    views = {i: cupy.asarray(a) for i, a in enumerate(dev) if metrics.is_array(a)}
    before = {i: device_copy(cupy, v) for i, v in views.items()}
    launch_and_wait()
    written = [i for i, v in views.items() if not same_bytes(cupy, v, before[i])]
    first = {i: device_copy(cupy, views[i]) for i in written}
    launch_and_wait()
    in_place = any(not same_bytes(cupy, views[i], first[i]) for i in written)
    return Writes(tuple(written), in_place), before


def _measurement(kernel: str, mode: str, grid: tuple[int, ...], times: Sequence[float],
                 per_sample: int, args: Sequence[Any], *, bytes: int | None,
                 flops: int | None, trace: Any, label: str | None,
                 params: dict[str, Any] | None, fresh: bool, notes: list[str], peaks: Any,
                 provenance: Any, flops_source: str | None = None) -> Measurement:
    stats = summarize(times)
    if bytes is not None:
        nbytes, bytes_source = int(bytes), "user"
    elif trace is not None:
        nbytes, bytes_source = metrics.bytes_from_trace(trace), "trace"
    else:
        nbytes, bytes_source = metrics.bytes_from_arrays(args), "array sizes"
    if nbytes == 0:
        nbytes, bytes_source = None, None
    peak_tflops = peaks.top_tflops
    r = metrics.rates(stats.mean, nbytes=nbytes, flops=flops, peak_gbps=peaks.dram_gbps,
                      peak_tflops=peak_tflops)
    if mode != "cold":
        notes.append(f"{mode} mode: L2 not flushed; inputs that fit in L2 are served from it")
    return Measurement(
        kernel=kernel, mode=mode, grid=tuple(grid), samples_s=tuple(times), mean_s=stats.mean,
        median_s=stats.median, min_s=stats.min, std_s=stats.std, ci95_s=stats.ci95,
        launches_per_sample=per_sample, label=label, params=dict(params or {}), bytes=nbytes,
        bytes_source=bytes_source, flops=None if flops is None else int(flops),
        flops_source=None if flops is None else (flops_source or "user"), gbps=r.gbps,
        tflops=r.tflops,
        peak_gbps=peaks.dram_gbps, peak_tflops=peak_tflops, peak_fp32_tflops=peaks.fp32_tflops,
        above_roof=r.above_roof, fresh_outputs=fresh, provenance=provenance,
        notes=tuple(notes) + r.notes)


# ---- FLOPs when the caller gives none ---------------------------------------------------------
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


def _graph_launches(cupy: Any, s: Any, launch_once: Callable[[], None],
                    prepare: Callable[[], None] | None) -> int:
    """Launches per graph replay so one replay takes about GRAPH_REPLAY_TARGET_S."""
    warm = time_samples(cupy, s, launch_once, mode="warm", samples=3, prepare=prepare)
    per = max(min(warm), 1e-7)
    return int(min(MAX_GRAPH_LAUNCHES, max(1, math.ceil(GRAPH_REPLAY_TARGET_S / per))))


def copy_into(cupy: Any, dst: Any, src: Any) -> None:
    """``dst[...] = src`` on the current stream; a plain memcpy when both are contiguous
    (no kernel, so nothing for CuPy to compile on first use)."""
    if (dst.flags.c_contiguous and src.flags.c_contiguous and dst.dtype == src.dtype
            and dst.shape == src.shape and hasattr(dst.data, "copy_from_device_async")):
        dst.data.copy_from_device_async(src.data, src.nbytes)
    else:
        dst[...] = src


_COMPARE_CHUNK = 32 << 20  # bytes per host round trip of same_bytes (a multiple of 8)
_staging: list[Any] = []  # two pinned host buffers of _COMPARE_CHUNK bytes, made on first use


def device_copy(cupy: Any, a: Any) -> Any:
    """A copy of ``a`` made with :func:`copy_into` (a memcpy when contiguous)."""
    out = cupy.empty_like(a)
    copy_into(cupy, out, a)
    return out


def same_bytes(cupy: Any, a: Any, b: Any) -> bool:
    """Bitwise equality of two arrays (NaN-safe, dtype-agnostic).

    Device arrays are compared on the host, a chunk at a time through pinned buffers, stopping
    at the first differing chunk. No GPU kernel is involved on purpose: CuPy compiles each
    comparison kernel on first use (seconds per kernel on a machine that never ran it, e.g. a
    fresh cloud GPU), and a tuner must not pay that in front of its first measurement."""
    x = cupy.ascontiguousarray(a).reshape(-1).view(cupy.uint8)
    y = cupy.ascontiguousarray(b).reshape(-1).view(cupy.uint8)
    if x.size != y.size:
        return False
    if not hasattr(x, "get"):  # host arrays
        return _equal_host(np.asarray(x), np.asarray(y))
    if not _staging:
        for _ in range(2):
            mem = cupy.cuda.alloc_pinned_memory(_COMPARE_CHUNK)
            _staging.append((mem, np.frombuffer(mem, np.uint8, _COMPARE_CHUNK)))
    (_, bx), (_, by) = _staging
    for start in range(0, x.size, _COMPARE_CHUNK):
        n = min(_COMPARE_CHUNK, x.size - start)
        x[start:start + n].get(out=bx[:n])
        y[start:start + n].get(out=by[:n])
        if not _equal_host(bx[:n], by[:n]):
            return False
    return True


def _equal_host(x: np.ndarray, y: np.ndarray) -> bool:
    whole = x.size // 8 * 8  # compare 8 bytes at a time: several times faster than bytewise
    return bool(np.array_equal(x[:whole].view(np.uint64), y[:whole].view(np.uint64))
                and np.array_equal(x[whole:], y[whole:]))


# ---- check= -------------------------------------------------------------------------------------
def host_copy(value: Any) -> Any:
    """A NumPy copy of an array argument (any device array), or the value itself."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if not metrics.is_array(value):
        return value
    import cupy

    return cupy.asnumpy(cupy.asarray(value))


def _reference(check: Callable[..., Any], args: Sequence[Any]) -> dict[int, np.ndarray]:
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


def _apply_check(m: Measurement, args: Sequence[Any], expected: dict[int, np.ndarray],
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


def _relabel_bytes(m: Measurement, source: str) -> Measurement:
    from dataclasses import replace

    return replace(m, bytes_source=source)


def bench_function(fn: Callable[[], Any], *, bytes: int | None = None,
                   flops: int | None = None, mode: str = "cold", samples: int | None = None,
                   warmup: int = 3, label: str = "function", params: dict[str, Any] | None = None,
                   stream: Any = None) -> Measurement:
    """Time any GPU work ``fn`` enqueues on the current CuPy stream (a CuPy or cuBLAS baseline)
    with the same protocol and statistics as :func:`bench`. ``fn`` may launch several kernels;
    the span covers all of them. Graph mode needs ``fn`` to be capturable."""
    from .device import device_info, provenance, require_gpu
    from .peaks import device_peaks

    if mode not in MODES:
        raise TileLabError(f"mode={mode!r} is not a timing mode; choose one of "
                           f"{', '.join(MODES)}")
    cupy = require_gpu("tile_lab.gpu.bench_function")
    _, s = as_stream(cupy, stream)
    if mode == "graph" and s.ptr == 0:
        s = cupy.cuda.Stream(non_blocking=True)

    def run() -> None:
        with s:
            fn()

    for _ in range(warmup):
        run()
    s.synchronize()
    per_sample = _graph_launches(cupy, s, run, None) if mode == "graph" else 1
    flush = l2_flush_buffer(cupy, device_info().l2_bytes) if mode == "cold" else None
    times = time_samples(cupy, s, run, mode=mode, samples=samples or DEFAULT_SAMPLES[mode],
                         flush_buffer=flush, launches_per_sample=per_sample)
    prov = provenance()
    return _measurement(label, mode, (), times, per_sample, (), bytes=bytes, flops=flops,
                        trace=None, label=label, params=params, fresh=False, notes=[],
                        peaks=device_peaks(), provenance=prov)
