"""Timing protocols (cold, warm, graph) and the statistics of their samples.

* ``cold`` — one launch per sample; before each sample the L2 is flushed by writing a
  buffer larger than it (``memset``), *outside* the timed span. The span is two CUDA events
  around the single launch. This is what cuTile's tuner measures (it captures flush + events +
  launch in one CUDA graph).
* ``warm`` — one launch per sample, no flush; inputs that fit in L2 are served from it.
* ``graph`` — ``launches_per_sample`` launches captured in one CUDA graph, replayed once per
  sample; the per-launch time (span / launches) excludes launch gaps. Warm L2.

**Host overhead stays out of the span.** A launch whose host side is slow (torch's SDPA picking
a cuDNN graph, a Python wrapper) reaches the GPU late; if the stream was idle, the GPU sits
between the start event and the kernel, and that wait is counted. A flush only hides it when
the host is ahead, which is not the case after every ``synchronize`` (the burst regime times
one sample per call): on an H100 cuDNN attention measured 206–290 µs that way against 149–221 µs
back to back. So, as nvbench does, a :class:`StreamHold` kernel holds the stream until the
host has enqueued a batch of samples, and only then is the batch released to run.

Every protocol runs one extra sample first and discards it (first-touch costs of the flush
buffer and of lazily loaded code would otherwise land in sample 0).

The statistics are pure functions (no GPU) so they are tested on the CPU.
"""

from __future__ import annotations

import contextlib
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import TileLabWarning

MODES = ("cold", "warm", "graph")

# Two-sided 95% Student-t critical values t(0.975, df) for df = 1..30.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_critical_95(df: int) -> float:
    """t(0.975, df): exact table to df=30, Cornish-Fisher expansion beyond (error < 1e-4)."""
    if df < 1:
        raise ValueError("degrees of freedom must be >= 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


@dataclass(frozen=True)
class SampleStats:
    """Summary of timing samples (seconds). ``ci95`` is the half-width of the 95% confidence
    interval of the mean (Student t; 0 for a single sample)."""

    n: int
    mean: float
    median: float
    min: float
    max: float
    std: float
    ci95: float


def summarize(samples: Sequence[float]) -> SampleStats:
    """Mean, median, min, max, sample standard deviation and 95% CI of the mean."""
    xs = [float(x) for x in samples]
    if not xs:
        raise ValueError("no samples to summarize")
    if any(not math.isfinite(x) or x < 0 for x in xs):
        raise ValueError(f"timing samples must be finite and >= 0, got {xs!r}")
    n = len(xs)
    mean = statistics.fmean(xs)
    std = statistics.stdev(xs) if n > 1 else 0.0
    ci = t_critical_95(n - 1) * std / math.sqrt(n) if n > 1 else 0.0
    return SampleStats(n=n, mean=mean, median=statistics.median(xs), min=min(xs), max=max(xs),
                       std=std, ci95=ci)


# ---- GPU protocols ------------------------------------------------------------------------------
HOLD_SOURCE = r"""
extern "C" __global__ void tile_lab_stream_hold(volatile int* flags, long long limit) {
    // flags[0]: set by the host to release; flags[1]: set here when we gave up waiting after
    // `limit` cycles (a host that never releases must not hang the GPU)
    long long start = clock64();
    while (flags[0] == 0) {
        if (clock64() - start > limit) { flags[1] = 1; return; }
    }
}
"""
HOLD_BATCH = 32  # samples enqueued behind one hold: far below the launch queue's depth


class StreamHold:
    """nvbench's "blocking kernel": :meth:`hold` enqueues a one-thread kernel that spins on a
    flag in pinned, mapped host memory; the host then enqueues a batch of samples behind it and
    calls :meth:`release`, so the batch runs back to back on the GPU however slowly it was
    enqueued. The kernel gives up by itself after ``limit_s`` (at ``clock_hz``) if never released
    — when something enqueued behind it waits for the GPU, e.g. a launch that synchronizes —
    and :attr:`timed_out` then says so (read it after synchronizing)."""

    def __init__(self, cupy: Any, *, limit_s: float = 2.0, clock_hz: float = 2.0e9) -> None:
        import ctypes

        rt = cupy.cuda.runtime
        self._rt, self._cupy = rt, cupy
        self._host = rt.hostAlloc(8, getattr(rt, "hostAllocMapped", 2))
        self._flags = (ctypes.c_int * 2).from_address(self._host)
        get_device_pointer = getattr(rt, "hostGetDevicePointer", None)
        # with unified addressing the mapped host pointer is also the device pointer
        self._device = get_device_pointer(self._host, 0) if get_device_pointer else self._host
        self._kernel = cupy.RawKernel(HOLD_SOURCE, "tile_lab_stream_hold")
        self._limit = int(limit_s * clock_hz)
        self.timed_out = False

    def hold(self, stream: Any) -> None:
        self._flags[0] = self._flags[1] = 0
        with stream:
            self._kernel((1,), (1,), (self._cupy.uint64(self._device),
                                      self._cupy.int64(self._limit)))

    def release(self) -> None:
        self._flags[0] = 1

    def check(self) -> bool:
        """After the stream synchronized: whether the last hold gave up before its release."""
        self.timed_out = bool(self._flags[1])
        return self.timed_out

    def close(self) -> None:
        if self._host:
            self._rt.freeHost(self._host)
            self._host = 0

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def l2_flush_buffer(cupy: Any, l2_bytes: int) -> Any:
    """A device buffer big enough that writing it evicts everything from L2."""
    nbytes = max(4 * l2_bytes, 64 << 20)
    return cupy.empty(nbytes, dtype=cupy.uint8)


def time_samples(cupy: Any, stream: Any, launch: Callable[[], None], *, mode: str,
                 samples: int, prepare: Callable[[], None] | None = None,
                 flush_buffer: Any = None, launches_per_sample: int = 1,
                 discard_first: bool = True, hold: StreamHold | None = None) -> list[float]:
    """Run ``samples`` timed samples of ``launch`` on ``stream``; return seconds per launch.

    ``prepare`` (outside the timed span) restores fresh outputs for in-place kernels.
    ``launch`` must enqueue exactly one kernel launch on ``stream``. ``discard_first=False``
    continues an earlier call's samples (its discarded sample already paid first-touch costs).
    ``hold``: a :class:`StreamHold`; batches of samples are enqueued behind it and released
    together, so the launch's host overhead never falls inside a span. A hold that gave up
    (something in ``launch`` or ``prepare`` waited for the GPU) raises a HoldTimeoutWarning.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    # one extra, discarded sample first: it pays for first-touch costs of the protocol itself
    # (the flush buffer's pages, lazily loaded library code) that no later sample sees
    skip = 1 if discard_first else 0
    events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(samples + skip)]
    graph = None
    with stream:  # CuPy work in prepare() and the flush goes on the timed stream
        if mode == "graph":
            graph = capture_graph(stream, launch, launches_per_sample)
            if prepare is not None:
                prepare()
            graph.launch(stream)  # warm the instantiated graph once
        # the discarded sample runs unheld: a first launch may compile for seconds, which
        # must not happen behind a hold (it would give up waiting)
        _enqueue(stream, launch, mode, events[:skip], prepare, flush_buffer, graph)
        timed = events[skip:]
        for at in range(0, len(timed), HOLD_BATCH if hold is not None else max(len(timed), 1)):
            batch = timed[at:at + HOLD_BATCH] if hold is not None else timed
            if hold is not None:
                hold.hold(stream)
            try:
                _enqueue(stream, launch, mode, batch, prepare, flush_buffer, graph)
            finally:
                if hold is not None:
                    hold.release()
            if hold is not None and len(timed) > HOLD_BATCH:
                stream.synchronize()  # one flag serves every batch: wait before reusing it
                _warn_if_timed_out(hold)
    stream.synchronize()
    if hold is not None:
        _warn_if_timed_out(hold)
    per = launches_per_sample if mode == "graph" else 1
    return [cupy.cuda.get_elapsed_time(s, e) / 1e3 / per for s, e in events[skip:]]


class HoldTimeoutWarning(TileLabWarning):
    """A StreamHold gave up before the host released it: something enqueued behind it waited
    for the GPU, so those samples may include host overhead."""


def _warn_if_timed_out(hold: StreamHold) -> None:
    import warnings

    if hold.check():
        warnings.warn("the stream hold gave up before its release (the launch or prepare() "
                      "waited for the GPU): these samples may include host launch overhead",
                      HoldTimeoutWarning, stacklevel=3)


def _enqueue(stream: Any, launch: Callable[[], None], mode: str, events: list,
             prepare: Callable[[], None] | None, flush_buffer: Any, graph: Any) -> None:
    for start, end in events:
        if graph is not None:
            start.record(stream)
            graph.launch(stream)
            end.record(stream)
            continue
        if prepare is not None:
            prepare()
        if mode == "cold":
            flush_buffer.fill(0)  # memset on the current stream; see module docstring
        start.record(stream)
        launch()
        end.record(stream)


def capture_graph(stream: Any, launch: Callable[[], None], count: int) -> Any:
    """Capture ``count`` launches into a CUDA graph on ``stream`` (must not be the legacy
    default stream) and return the instantiated graph."""
    stream.begin_capture()
    try:
        for _ in range(count):
            launch()
    except BaseException:
        # leave the stream usable; the launch error is the one worth reporting
        with contextlib.suppress(Exception):
            stream.end_capture()
        raise
    return stream.end_capture()
