"""The bottom layer of the GPU package: launch a cuTile kernel and time work *in this process*.

``tile_lab.launch`` calls this directly, ``tile_lab.bench`` through a kernel job
(:mod:`tile_lab.gpu.job`), in this process or in the isolation worker
(:mod:`tile_lab.gpu.isolate`); nothing here imports those modules, so the package has no
import circle.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import LaunchError, TileLabError
from . import metrics
from .arrays import copy_back, device_args

__all__ = ["Amounts", "KernelWork", "Sampled", "as_stream", "build_measurement", "check_grid",
           "copy_back", "device_args", "kernel_name", "kernel_work", "launch_error",
           "launch_in_process", "time_work", "with_hints"]
from .measurement import Measurement
from .timing import summarize, time_samples

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
        err = launch_error(exc, kernel_name(kernel))
        if err is exc:
            raise
        raise err from exc
    copy_back(cupy, args, back)


@functools.cache
def _ct_launch() -> Any:
    import cuda.tile as ct

    return ct.launch


def launch_error(exc: Exception, name: str) -> Exception:
    """Compile errors pass through (their own class renders the user's line); CUDA errors
    become LaunchError naming the kernel ``name``."""
    from .._cutile_compat import is_tile_error

    if isinstance(exc, TileLabError) or is_tile_error(exc):
        return exc
    return LaunchError(f"launching {name} failed: {type(exc).__name__}: {exc}",
                       hint="run it with isolate=True to keep this process's CUDA context "
                            "healthy, or tile_lab.sanitize(...) to find out-of-bounds accesses")


def kernel_name(kernel: Any) -> str:
    try:
        from .._cutile_compat import python_function

        return python_function(kernel).__name__
    except Exception:
        return getattr(kernel, "__name__", type(kernel).__name__)


GRAPH_REPLAY_TARGET_S = 2e-3  # aim for replays of ~2 ms so event resolution is irrelevant
MAX_GRAPH_LAUNCHES = 500


@dataclass(frozen=True)
class KernelWork:
    """A cuTile kernel launch as a :class:`~tile_lab.gpu.sampling.Timeable`: ``run`` launches
    on CuPy's current stream; ``prepare`` restores the outputs of an in-place kernel."""

    name: str
    kernel: Any
    grid: tuple[int, ...]
    args: tuple[Any, ...]
    restore: Callable[[], None] | None = None

    def run(self) -> None:
        import cupy

        _ct_launch()(cupy.cuda.get_current_stream(), self.grid, self.kernel, self.args)

    def prepare(self) -> None:
        if self.restore is not None:
            self.restore()


def kernel_work(kernel: Any, grid: Sequence[int], args: Sequence[Any], *,
                hints: dict[str, Any] | None = None, name: str | None = None) -> KernelWork:
    """A kernel launch to time (with :func:`tile_lab.gpu.compare_timed` or a baseline race).
    Device arrays only (NumPy arrays would be copied on every launch). ``name`` labels it in
    comparisons and races (default: the kernel's name), e.g. with its config."""
    grid = check_grid(grid)
    if any(isinstance(a, np.ndarray) for a in args):
        raise TileLabError("kernel_work needs device arrays (CuPy, torch); got a NumPy array")
    return KernelWork(name or kernel_name(kernel), with_hints(kernel, hints), grid, tuple(args))


@dataclass(frozen=True)
class Sampled:
    """What the timing step of a kernel job (:func:`tile_lab.gpu.job.measure_job`) hands to
    :func:`build_measurement`, besides the arguments."""

    times: tuple[float, ...]
    per_sample: int
    fresh: bool
    notes: tuple[str, ...]
    samples: Any  # tile_lab.gpu.sampling.StateSamples


def time_work(cupy: Any, s: Any, work: Any, timing: Any, *, warmup_done: int = 0,
              l2_bytes: int | None = None) -> Sampled:
    """Warm up, then time ``work`` (a Timeable) on stream ``s`` with ``timing``, recording the
    GPU state with every sample (NVML; nothing recorded without it)."""
    from .device import device_info, nvml_reader
    from .sampling import CudaEventTimer, sample_with_state

    for _ in range(max(0, timing.warmup - warmup_done)):
        with s:
            work.prepare()
            work.run()
    s.synchronize()
    per_sample = 1
    if timing.mode == "graph":
        per_sample = timing.launches_per_sample or _graph_launches(cupy, s, work)
    l2 = device_info().l2_bytes if l2_bytes is None else l2_bytes
    timer = CudaEventTimer(cupy, s, mode=timing.mode, l2_bytes=l2, launches_per_sample=per_sample)
    # a state reading per sample, except in warm mode where syncing after every sample would put
    # the launch overhead inside the next span: there, one reading per 5 samples
    chunk = 5 if timing.mode == "warm" else 1
    got = sample_with_state(timer, work, timing.n, nvml_reader(), timing.throttle,
                            regime=timing.regime, chunk=chunk, stop_above_s=timing.stop_above_s)
    notes = got.notes
    if timer.hold_error:  # say so: host launch overhead may then fall inside the spans
        notes += (f"timed without a stream hold ({timer.hold_error}): host launch overhead "
                  "may fall inside the spans",)
    del timer
    return Sampled(got.times_s, per_sample, False, notes, got)


def _graph_launches(cupy: Any, s: Any, work: Any) -> int:
    """Launches per graph replay so one replay takes about GRAPH_REPLAY_TARGET_S."""
    def launch() -> None:
        with s:
            work.run()

    warm = time_samples(cupy, s, launch, mode="warm", samples=3, prepare=work.prepare)
    per = max(min(warm), 1e-7)
    return int(min(MAX_GRAPH_LAUNCHES, max(1, math.ceil(GRAPH_REPLAY_TARGET_S / per))))


@dataclass(frozen=True)
class Amounts:
    """What one launch moves and computes, as the caller knows it (None: derive or leave out),
    and the library baseline it is, if any."""

    bytes: int | None = None
    flops: int | None = None
    flops_source: str | None = None
    baseline: str | None = None


def build_measurement(kernel: str, timing: Any, grid: tuple[int, ...], sampled: Sampled,
                      args: Sequence[Any], *, amounts: Amounts, options: Any, peaks: Any,
                      provenance: Any) -> Measurement:
    """A :class:`Measurement` from samples (pure: no GPU; tests build them from fakes)."""
    bytes_, flops, flops_source = amounts.bytes, amounts.flops, amounts.flops_source
    baseline = amounts.baseline
    times = sampled.times
    stats = summarize(times)
    trace = getattr(options, "trace", None)
    nbytes: int | None
    bytes_source: str | None
    if bytes_ is not None:
        nbytes, bytes_source = int(bytes_), "user"
    elif trace is not None:
        nbytes, bytes_source = metrics.bytes_from_trace(trace), "trace"
    else:
        nbytes, bytes_source = metrics.bytes_from_arrays(args), "array sizes"
    if nbytes == 0:
        nbytes, bytes_source = None, None
    peak_tflops = peaks.top_tflops
    r = metrics.rates(stats.mean, nbytes=nbytes, flops=flops, peak_gbps=peaks.dram_gbps,
                      peak_tflops=peak_tflops)
    notes = list(sampled.notes)
    if timing.mode != "cold":
        notes.append(f"{timing.mode} mode: L2 not flushed; inputs that fit in L2 are served "
                     "from it")
    got = sampled.samples
    params = getattr(options, "params", None)
    return Measurement(
        kernel=kernel, mode=timing.mode, grid=tuple(grid), samples_s=tuple(times),
        mean_s=stats.mean, median_s=stats.median, min_s=stats.min, std_s=stats.std,
        ci95_s=stats.ci95, launches_per_sample=sampled.per_sample,
        label=getattr(options, "label", None), params=dict(params or {}), bytes=nbytes,
        bytes_source=bytes_source, flops=None if flops is None else int(flops),
        flops_source=None if flops is None else (flops_source or "user"), gbps=r.gbps,
        tflops=r.tflops, peak_gbps=peaks.dram_gbps, peak_tflops=peak_tflops,
        peak_fp32_tflops=peaks.fp32_tflops, above_roof=r.above_roof,
        fresh_outputs=sampled.fresh, provenance=provenance, notes=tuple(notes) + r.notes,
        regime=None if got is None else timing.regime,
        states=() if got is None else tuple(got.states),
        throttled_samples=0 if got is None else got.throttled,
        discarded_samples=0 if got is None else got.discarded,
        throttle_policy=None if got is None else timing.throttle.action, baseline=baseline)
