"""Timing protocols (cold, warm, graph) and the statistics of their samples.

* ``cold`` — one launch per sample; before each sample the L2 is flushed by writing a
  buffer larger than it (``memset``), *outside* the timed span. The span is two CUDA events
  around the single launch. The host enqueues all samples before waiting, and each flush
  keeps the GPU busy for tens of µs, so the host is ahead of the GPU and the launch's host
  overhead does not fall inside the span. This is what cuTile's tuner measures (it captures
  flush + events + launch in one CUDA graph).
* ``warm`` — one launch per sample, no flush; inputs that fit in L2 are served from it.
* ``graph`` — ``launches_per_sample`` launches captured in one CUDA graph, replayed once per
  sample; the per-launch time (span / launches) excludes launch gaps. Warm L2.

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
def l2_flush_buffer(cupy: Any, l2_bytes: int) -> Any:
    """A device buffer big enough that writing it evicts everything from L2."""
    nbytes = max(4 * l2_bytes, 64 << 20)
    return cupy.empty(nbytes, dtype=cupy.uint8)


def time_samples(cupy: Any, stream: Any, launch: Callable[[], None], *, mode: str,
                 samples: int, prepare: Callable[[], None] | None = None,
                 flush_buffer: Any = None, launches_per_sample: int = 1,
                 discard_first: bool = True) -> list[float]:
    """Run ``samples`` timed samples of ``launch`` on ``stream``; return seconds per launch.

    ``prepare`` (outside the timed span) restores fresh outputs for in-place kernels.
    ``launch`` must enqueue exactly one kernel launch on ``stream``. ``discard_first=False``
    continues an earlier call's samples (its discarded sample already paid first-touch costs).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    # one extra, discarded sample first: it pays for first-touch costs of the protocol itself
    # (the flush buffer's pages, lazily loaded library code) that no later sample sees
    skip = 1 if discard_first else 0
    events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(samples + skip)]
    with stream:  # CuPy work in prepare() and the flush goes on the timed stream
        _enqueue(stream, launch, mode, events, prepare, flush_buffer, launches_per_sample)
    stream.synchronize()
    per = launches_per_sample if mode == "graph" else 1
    return [cupy.cuda.get_elapsed_time(s, e) / 1e3 / per for s, e in events[skip:]]


def _enqueue(stream: Any, launch: Callable[[], None], mode: str, events: list,
             prepare: Callable[[], None] | None, flush_buffer: Any,
             launches_per_sample: int) -> None:
    if mode == "graph":
        graph = capture_graph(stream, launch, launches_per_sample)
        if prepare is not None:
            prepare()
        graph.launch(stream)  # warm the instantiated graph once
        for start, end in events:
            start.record(stream)
            graph.launch(stream)
            end.record(stream)
    else:
        for start, end in events:
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
