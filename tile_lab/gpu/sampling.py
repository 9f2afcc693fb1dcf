"""Time a closure, sample by sample, with the GPU's state recorded around every sample.

The timer knows no kernel (Triton's ``testing.do_bench`` shape): it times a :class:`Timeable`
— anything with a ``name``, a ``run()`` that enqueues its GPU work on the current stream, and a
``prepare()`` that runs outside the timed span. cuTile Python kernels
(:func:`tile_lab.gpu.inprocess.kernel_work`), CUDA Tile C++ kernels
(:func:`tile_lab.cpp.bench.cpp_work`) and baselines (:mod:`tile_lab.gpu.baselines`) are all
Timeables, so they go through this one path.

:func:`sample_with_state` is the layer above the raw timer: it reads the GPU state after every
chunk of samples, flags throttled samples, and applies the :class:`ThrottlePolicy` (wait for
recovery, discard, or keep and flag). Both the timer and the state reader are protocols, so the
CPU tests drive this code with a fake timer and a recorded NVML trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .state import SampleState, StateReader, ThrottlePolicy, wait_for_recovery
from .timing import MODES, StreamHold, l2_flush_buffer, time_samples

REGIMES = ("burst", "sustained")


class Timeable(Protocol):
    """Something that can be launched and timed: a kernel launch, a baseline call."""

    @property
    def name(self) -> str: ...

    def run(self) -> None:
        """Enqueue one unit of work (one launch, or one library call) on the current stream."""

    def prepare(self) -> None:
        """Restore inputs before a sample, outside the timed span (a no-op for most work)."""


@dataclass(frozen=True)
class TimedWork:
    """A Timeable made of closures. ``baseline`` names and versions a library baseline
    (e.g. ``"torch.matmul (cuBLAS), torch 2.11.0"``) for the measurement's provenance."""

    name: str
    run_fn: Callable[[], None]
    prepare_fn: Callable[[], None] | None = None
    bytes: int | None = None
    flops: int | None = None
    baseline: str | None = None

    def run(self) -> None:
        self.run_fn()

    def prepare(self) -> None:
        if self.prepare_fn is not None:
            self.prepare_fn()


class Timer(Protocol):
    """Times ``samples`` samples of ``work``; returns seconds per sample (synchronized)."""

    def time(self, work: Timeable, samples: int, *, first: bool) -> list[float]:
        """``first``: this is the first call for ``work`` (the timer may discard a sample to
        pay first-touch costs)."""


class CudaEventTimer:
    """CUDA events around each sample on ``stream`` with the protocol of ``mode`` (see
    :mod:`tile_lab.gpu.timing`): "cold" flushes L2 before each sample, "warm" does not.

    Samples are enqueued behind a :class:`~tile_lab.gpu.timing.StreamHold` so host launch
    overhead stays out of every span; ``hold=False`` times without it (the old protocol, for
    comparison), and where the hold kernel cannot be built ``hold_error`` says why."""

    def __init__(self, cupy: Any, stream: Any, *, mode: str = "cold", l2_bytes: int = 0,
                 launches_per_sample: int = 1, hold: bool = True) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.cupy, self.stream, self.mode = cupy, stream, mode
        self.per_sample = launches_per_sample
        self.flush = l2_flush_buffer(cupy, l2_bytes) if mode == "cold" else None
        self.hold: StreamHold | None = None
        self.hold_error: str | None = None
        if hold:
            try:
                self.hold = StreamHold(cupy)
            except Exception as e:  # no NVRTC or no mapped memory: time unheld, and say so
                self.hold_error = f"{type(e).__name__}: {e}"

    def time(self, work: Timeable, samples: int, *, first: bool) -> list[float]:
        stream = self.stream
        torch_stream = _torch_stream(stream.ptr)

        def launch() -> None:
            # CuPy's and (when loaded) torch's current stream are both the timed stream, so a
            # torch baseline's kernels land between the events too
            with stream, torch_stream():
                work.run()

        return time_samples(self.cupy, stream, launch, mode=self.mode, samples=samples,
                            prepare=work.prepare, flush_buffer=self.flush,
                            launches_per_sample=self.per_sample, discard_first=first,
                            hold=self.hold)


def _torch_stream(ptr: int) -> Callable[[], Any]:
    """Makes contexts that set torch's current stream to the CUDA stream ``ptr`` (no-ops
    when torch is not loaded)."""
    import contextlib
    import sys

    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return contextlib.nullcontext
    external = torch.cuda.ExternalStream(ptr)
    return lambda: torch.cuda.stream(external)


RAMP_LIMIT = 64  # untimed samples a burst may run to bring an idle GPU up to its clocks


def ramp_up(timer: Timer, work: Timeable, reader: StateReader, policy: ThrottlePolicy, *,
            first: bool) -> bool:
    """A rested GPU idles at low clocks (an H100 at 345 MHz) and takes a few hundred
    microseconds of work to reach them again: run ``work`` untimed until NVML shows an SM clock
    at or above the throttle threshold (at most RAMP_LIMIT samples), so a burst measures the
    boost clock, not the ramp. Returns the ``first`` flag for the timer's next call."""
    top = reader.max_sm_mhz()
    if top is None:
        return first
    for _ in range(RAMP_LIMIT):
        state = reader.read()
        if state is None or state.sm_mhz is None or state.sm_mhz >= policy.threshold * top:
            break
        timer.time(work, 1, first=first)
        first = False
    return first


@dataclass(frozen=True)
class StateSamples:
    """Samples kept for the statistics, the state recorded with each, and what was dropped."""

    times_s: tuple[float, ...]
    states: tuple[SampleState, ...]
    throttled: int = 0  # samples taken in a throttled state (kept or not)
    discarded: int = 0  # throttled samples dropped by the "discard" policy
    waited_s: float = 0.0  # time spent waiting for the GPU to recover
    notes: tuple[str, ...] = field(default=())


def sample_with_state(timer: Timer, work: Timeable, samples: int, reader: StateReader,
                      policy: ThrottlePolicy, *, regime: str = "burst", first: bool = True,
                      chunk: int = 1, stop_above_s: float | None = None) -> StateSamples:
    """Time ``samples`` samples of ``work`` in chunks of ``chunk``, reading the GPU state after
    each chunk (every sample of a chunk gets that reading).

    In the *burst* regime the GPU is let recover before the first chunk and (policy "wait")
    after any throttled chunk. In the *sustained* regime nothing waits: throttling is what
    steady load looks like, so samples are kept and flagged whatever the policy.
    ``stop_above_s``: stop after the first chunk when its first sample is slower than that.
    """
    if regime not in REGIMES:
        raise ValueError(f"regime {regime!r}: choose one of {', '.join(REGIMES)}")
    top = reader.max_sm_mhz()
    waited = 0.0
    notes: list[str] = []
    burst = regime == "burst"
    if burst and policy.action == "wait":
        ok, waited = wait_for_recovery(reader, policy)
        if not ok:
            notes.append(f"GPU still throttled after waiting {policy.max_wait_s:g} s")
    if burst:
        first = ramp_up(timer, work, reader, policy, first=first)
    times: list[float] = []
    states: list[SampleState] = []
    throttled = discarded = 0
    remaining = samples
    budget = 3 * samples  # discarded samples are replaced, up to this many timed in all
    while remaining > 0 and budget > 0:
        n = min(chunk, remaining)
        got = timer.time(work, n, first=first)
        first = False
        budget -= n
        state = reader.read()
        hot = policy.throttled(state, top)
        if hot:
            throttled += n
            if burst and policy.action == "discard":
                discarded += n
                continue
        remaining -= n
        if hot and burst and policy.action == "wait" and remaining > 0:
            _, w = wait_for_recovery(reader, policy)
            waited += w
            ramp_up(timer, work, reader, policy, first=False)
        times += got
        states += [SampleState.of(state, hot)] * n
        if stop_above_s is not None and got and got[0] > stop_above_s:
            notes.append(f"stopped after {len(times)} sample(s): {got[0] * 1e3:.3g} ms > the "
                         f"limit of {stop_above_s * 1e3:.3g} ms")
            break
    if discarded:
        notes.append(f"{discarded} throttled sample(s) discarded")
    if throttled and not discarded:
        notes.append(f"{throttled} sample(s) taken while throttled (flagged)")
    if not times:
        raise RuntimeError(f"all {samples} samples of {work.name} were throttled and "
                           "discarded; use the 'wait' or 'keep' throttle policy")
    return StateSamples(tuple(times), tuple(states), throttled, discarded, waited, tuple(notes))
