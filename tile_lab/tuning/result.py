"""What a tuning run produced: every success with its measurement, every failure with its error.

Failures are data (never a time of ``inf``); ``summary()`` and the rich display show both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .space import Config


@dataclass(frozen=True)
class Success:
    config: Config
    measurement: Any  # tile_lab.gpu.measurement.Measurement (or a recorded dict-backed one)
    from_store: bool = False

    @property
    def time_s(self) -> float:
        return float(self.measurement.mean_s)

    @property
    def ci95_s(self) -> float:
        return float(self.measurement.ci95_s)

    @property
    def gbps(self) -> float | None:
        return self.measurement.gbps

    @property
    def tflops(self) -> float | None:
        return self.measurement.tflops


@dataclass(frozen=True)
class Failure:
    config: Config
    stage: str  # "setup" | "compile" | "launch" | "verify" | "measure"
    error: str
    from_store: bool = False


def objective_score(success: Success, objective: str) -> float:
    """``success`` under ``objective`` ("time", "gbps" or "tflops"), lower is better."""
    if objective == "time":
        return success.time_s
    value = success.gbps if objective == "gbps" else success.tflops
    return -(value or 0.0)


@dataclass(frozen=True)
class TuningResult:
    """``best`` (a Success or None), ``successes``, ``failures``, ``rejected`` (filtered out by
    the space before running, with the reason), and the context the results are valid in."""

    kernel_name: str
    successes: tuple[Success, ...]
    failures: tuple[Failure, ...]
    rejected: tuple[Any, ...] = ()
    context: dict[str, Any] = field(default_factory=dict)
    objective: str = "time"
    wall_s: float = 0.0
    # where the wall time went, in seconds: "setup" (context, store), "start_workers",
    # "warm_up", "compile_wait" (blocked until the next config's compile finished), "measure"
    # (launching and timing), "shutdown"
    timings: dict[str, float] = field(default_factory=dict)
    # config key -> seconds its compile took in a worker process (parallel compiles only)
    compile_s: dict[str, float] = field(default_factory=dict)
    # the GPU regime every config was measured (and is ranked) in: "burst" | "sustained"
    regime: str | None = None
    # on a cluster: {"jobs_on": {node: compile and warm-up jobs}, "measured_on": {config key:
    # node/gpu},
    # "gpus": n, "cross_check": [re-timings of the top configs on one GPU]}; empty otherwise
    placement: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> Success | None:
        if not self.successes:
            return None
        return min(self.successes, key=self._score)

    @property
    def worst(self) -> Success | None:
        if not self.successes:
            return None
        return max(self.successes, key=self._score)

    def _score(self, s: Success) -> float:
        return objective_score(s, self.objective)

    def ranked(self) -> list[Success]:
        return sorted(self.successes, key=self._score)

    def summary(self, top_k: int = 10) -> str:
        lines = [f"{self.kernel_name}: {len(self.successes)} succeeded, "
                 f"{len(self.failures)} failed, {len(self.rejected)} filtered out"
                 + (f", {self.wall_s:.1f} s" if self.wall_s else "")
                 + (f"; ranked in the {self.regime} regime" if self.regime else "")]
        for i, s in enumerate(self.ranked()[:top_k]):
            extra = []
            if s.gbps is not None:
                extra.append(f"{s.gbps:.0f} GB/s")
            if s.tflops is not None:
                extra.append(f"{s.tflops:.1f} TFLOPS")
            mark = "best " if i == 0 else "     "
            # one sample has no interval: "± 0.0" would read as zero uncertainty
            n = getattr(s.measurement, "n", None)
            if n is None:  # a recorded measurement
                n = len(getattr(s.measurement, "samples_s", None) or (0, 0))
            ci = "(1 sample)" if n < 2 else f"± {s.ci95_s * 1e6:.1f}"
            lines.append(f"  {mark}{s.config.label():<48} {s.time_s * 1e6:10.1f} µs "
                         f"{ci}  {' '.join(extra)}")
        for f in self.failures:
            lines.append(f"  FAIL {f.config.label():<48} [{f.stage}] {f.error.splitlines()[0]}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        from ..display import mimebundle  # drawn by render/tune_plots.py

        return str(mimebundle(self).get("text/html", ""))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # text/plain is the summary: a terminal IPython printed the dataclass repr
        from ..display import mimebundle

        return mimebundle(self)
