"""Frozen option objects for measuring: how to time (:class:`TimingOptions`) and how to run a
benchmark (:class:`BenchOptions`). ``bench``, ``bench_function``, ``bench_cpp``, the tuner and
the explorer take these instead of forwarding the same fifteen keywords through every layer."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import TileLabError
from .sampling import REGIMES
from .state import ThrottlePolicy
from .timing import MODES

DEFAULT_SAMPLES = {"cold": 30, "warm": 30, "graph": 20}


@dataclass(frozen=True)
class TimingOptions:
    """How samples are taken.

    ``mode``: "cold" (L2 flushed before each sample), "warm", or "graph" (many launches per CUDA
    graph replay, per-launch time). ``samples``: kept samples (None: 30 cold/warm, 20 graph).
    ``warmup``: untimed launches first. ``regime``: "burst" (wait until the GPU has recovered
    before timing; the default) or "sustained" (no waiting; samples under steady load).
    ``throttle``: when a sample counts as throttled and what to do (wait, discard, keep).
    ``stop_above_s``: stop after the first sample when it is slower than this (a tuning race).
    """

    mode: str = "cold"
    samples: int | None = None
    warmup: int = 3
    launches_per_sample: int | None = None
    regime: str = "burst"
    throttle: ThrottlePolicy = field(default_factory=ThrottlePolicy)
    stop_above_s: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise TileLabError(f"mode={self.mode!r} is not a timing mode; choose one of "
                               f"{', '.join(MODES)}")
        if self.samples is not None and (not isinstance(self.samples, int) or self.samples < 1):
            raise TileLabError(f"samples={self.samples!r} must be a positive int")
        if self.regime not in REGIMES:
            raise TileLabError(f"regime={self.regime!r}: choose one of {', '.join(REGIMES)}")
        if self.stop_above_s is not None and not (
                isinstance(self.stop_above_s, (int, float)) and self.stop_above_s > 0):
            raise TileLabError(f"stop_above_s={self.stop_above_s!r} must be a positive number "
                               "of seconds")

    @property
    def n(self) -> int:
        """The number of samples to keep."""
        return self.samples or DEFAULT_SAMPLES[self.mode]

    def but(self, **changes: Any) -> TimingOptions:
        """A copy with some fields changed (``None`` values leave a field as it is)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


@dataclass(frozen=True)
class BenchOptions:
    """How ``bench`` runs a kernel, beyond timing.

    ``label``/``params``: how the measurement is named and what it records. ``check_tol``:
    (rtol, atol) for ``check=``. ``isolate``: run in a worker process (``timeout`` seconds).
    ``hints``: cuTile hints applied with ``replace_hints``. ``stream``: a CuPy or torch stream
    (None: CuPy's current one). ``trace``: an emulator trace of this launch (bytes and FLOPs
    from it). ``derive_flops``: derive FLOPs from matrix-product shapes when ``flops`` is not
    given. ``writes``: what ``detect_writes`` found (skips two probe launches).
    """

    label: str | None = None
    params: dict[str, Any] | None = None
    check_tol: tuple[float, float] | None = None
    isolate: bool = False
    timeout: float | None = 300.0
    hints: dict[str, Any] | None = None
    stream: Any = None
    trace: Any = None
    derive_flops: bool = True
    writes: Any = None  # tile_lab.gpu.inprocess.Writes
