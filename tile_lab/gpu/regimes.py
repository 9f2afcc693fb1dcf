"""Compare two things timed on one GPU, fairly: same regime, interleaved, with the clocks shown.

A GPU's speed depends on its power state: on an H100 a few seconds of cuBLAS drive the card
into its power cap and the SM clock falls from 1980 to ~1300 MHz, so the *same* call measures
761 or 651 TFLOPS depending on what ran just before. A ratio of two numbers taken in different
states says nothing about the two kernels. So :func:`compare_timed`

* measures in named **regimes**: *burst* (before every group of samples the GPU has recovered:
  clocks at boost, power near idle) and *sustained* (steady state under continuous load: a
  warm-up of ``sustain_s`` seconds of the two alternating, then samples without pauses);
* **interleaves** A and B in paired rounds in ABBA order (AB, BA, AB, ...) with the same
  number of samples each, so drift during the run hits both sides alike;
* reports, per regime, the ratio (B's time / A's time: above 1 means A is faster) as the
  geometric mean of the rounds' ratios with a bootstrap 95% CI over rounds, and the median SM
  clock and power each side ran at;
* enforces clock agreement when ``clock_retries`` > 0: a round whose two groups' median SM
  clocks differ by more than ``clock_tolerance`` is timed again (both groups, same order), up to
  ``clock_retries`` times, and the result records the bound and how many rounds were re-run;
* warns (:class:`ClockMismatchWarning`, and ``clock_mismatch`` on the result) when the two
  sides' median SM clocks over the regime still differ by more than ``clock_tolerance``.
"""

from __future__ import annotations

import math
import random
import statistics
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from ..errors import TileLabWarning
from .sampling import REGIMES, StateSamples, Timeable, Timer, sample_with_state
from .state import SampleState, StateReader, ThrottlePolicy


class ClockMismatchWarning(TileLabWarning):
    """The two sides of a comparison ran at SM clocks further apart than the tolerance."""


@dataclass(frozen=True)
class CompareOptions:
    """How :func:`compare_timed` measures. ``rounds`` paired rounds per regime (ABBA order),
    ``samples_per_round`` samples of each side per round."""

    regimes: tuple[str, ...] = REGIMES
    rounds: int = 8
    samples_per_round: int = 5
    throttle: ThrottlePolicy = field(default_factory=ThrottlePolicy)
    clock_tolerance: float = 0.03
    clock_retries: int = 0  # re-runs of a round whose sides' clocks differ beyond the tolerance
    sustain_s: float = 2.0
    bootstrap: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        bad = [r for r in self.regimes if r not in REGIMES]
        if bad or not self.regimes:
            raise ValueError(f"regimes {self.regimes!r}: choose from {', '.join(REGIMES)}")
        if self.rounds < 2 or self.samples_per_round < 1:
            raise ValueError("need rounds >= 2 and samples_per_round >= 1")
        if not 0.0 <= self.clock_tolerance < 1.0 or self.clock_retries < 0:
            raise ValueError(f"need 0 <= clock_tolerance < 1 and clock_retries >= 0, got "
                             f"{self.clock_tolerance!r}, {self.clock_retries!r}")


@dataclass(frozen=True)
class Side:
    """One side's samples in one regime, with the states they ran in."""

    name: str
    times_s: tuple[float, ...]
    states: tuple[SampleState, ...]
    throttled: int = 0

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def sm_mhz(self) -> float | None:
        return _median([s.sm_mhz for s in self.states])

    @property
    def power_w(self) -> float | None:
        return _median([s.power_w for s in self.states])

    def to_json_dict(self) -> dict:
        return {"name": self.name, "times_s": list(self.times_s), "throttled": self.throttled,
                "states": [s.to_json_dict() for s in self.states]}

    @classmethod
    def from_json_dict(cls, d: dict) -> Side:
        return cls(d["name"], tuple(d["times_s"]),
                   tuple(SampleState.from_json_dict(s) for s in d["states"]), d["throttled"])


@dataclass(frozen=True)
class RegimeComparison:
    """A vs B in one regime. ``ratio`` = B's time / A's time (above 1: A is faster)."""

    regime: str
    a: Side
    b: Side
    ratio: float
    ci_low: float
    ci_high: float
    round_ratios: tuple[float, ...]
    order: tuple[str, ...]  # "A"/"B" per timed group, in the order they ran
    clock_mismatch: bool
    clock_tolerance: float | None = None  # the bound the sides' clocks were held to
    rerun_rounds: int = 0  # rounds timed again because their sides' clocks disagreed
    disagreeing_rounds: int = 0  # rounds still beyond the bound after the last re-run

    @property
    def clock_gap(self) -> float | None:
        """|A's median SM clock - B's| / the higher of the two (None when unknown)."""
        return _gap(self.a.sm_mhz, self.b.sm_mhz)

    def summary(self) -> str:
        def clocks(s: Side) -> str:
            sm = "? MHz" if s.sm_mhz is None else f"{s.sm_mhz:.0f} MHz"
            pw = "" if s.power_w is None else f", {s.power_w:.0f} W"
            return f"{sm}{pw}"

        text = (f"{self.regime:9} {self.a.name} is {self.ratio:.3f}x {self.b.name} "
                f"(95% CI {self.ci_low:.3f}-{self.ci_high:.3f}); medians "
                f"{self.a.median_s * 1e6:.1f} vs {self.b.median_s * 1e6:.1f} us; SM clock "
                f"{clocks(self.a)} vs {clocks(self.b)}")
        if self.rerun_rounds:
            text += f"; {self.rerun_rounds} round(s) re-run for clock agreement"
        if self.clock_mismatch:
            text += f"  CLOCKS DIFFER by {100 * (self.clock_gap or 0):.1f}%"
        return text

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d["a"], d["b"] = self.a.to_json_dict(), self.b.to_json_dict()
        d["round_ratios"], d["order"] = list(self.round_ratios), list(self.order)
        return d

    @classmethod
    def from_json_dict(cls, d: dict) -> RegimeComparison:
        return cls(d["regime"], Side.from_json_dict(d["a"]), Side.from_json_dict(d["b"]),
                   d["ratio"], d["ci_low"], d["ci_high"], tuple(d["round_ratios"]),
                   tuple(d["order"]), d["clock_mismatch"], d.get("clock_tolerance"),
                   d.get("rerun_rounds", 0), d.get("disagreeing_rounds", 0))


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare_timed`: one :class:`RegimeComparison` per regime."""

    a_name: str
    b_name: str
    regimes: tuple[RegimeComparison, ...]
    baseline: str | None = None  # B's library name and version, when B is a baseline

    def __getitem__(self, regime: str) -> RegimeComparison:
        for r in self.regimes:
            if r.regime == regime:
                return r
        raise KeyError(regime)

    @property
    def clock_mismatch(self) -> bool:
        return any(r.clock_mismatch for r in self.regimes)

    def summary(self) -> str:
        return "\n".join(r.summary() for r in self.regimes)

    def __str__(self) -> str:
        return self.summary()

    def to_json_dict(self) -> dict:
        return {"a_name": self.a_name, "b_name": self.b_name, "baseline": self.baseline,
                "regimes": [r.to_json_dict() for r in self.regimes]}

    @classmethod
    def from_json_dict(cls, d: dict) -> Comparison:
        return cls(d["a_name"], d["b_name"],
                   tuple(RegimeComparison.from_json_dict(r) for r in d["regimes"]),
                   d.get("baseline"))


def abba_order(rounds: int) -> list[tuple[str, str]]:
    """The side order of each round: AB, BA, AB, BA, ..."""
    return [("A", "B") if r % 2 == 0 else ("B", "A") for r in range(rounds)]


def compare_timed(a: Timeable, b: Timeable, options: CompareOptions | None = None, *,
                  mode: str = "cold", timer: Timer | None = None,
                  reader: StateReader | None = None) -> Comparison:
    """Time ``a`` and ``b`` interleaved in each regime of ``options`` (see the module
    docstring) and return their :class:`Comparison`.

    ``a``/``b``: Timeables (:class:`~tile_lab.gpu.sampling.TimedWork`, a kernel's
    :func:`~tile_lab.gpu.inprocess.kernel_work`, a baseline). On a GPU the timer is CUDA events
    with the ``mode`` protocol ("cold": L2 flushed before each sample) and the reader is NVML;
    tests pass a fake ``timer`` and a recorded-trace ``reader``."""
    opts = options or CompareOptions()
    if timer is None or reader is None:
        gpu_timer, gpu_reader = _gpu_timer_and_reader(mode)
        timer, reader = timer or gpu_timer, reader or gpu_reader
    firsts = {"A": True, "B": True}
    results = []
    for regime in opts.regimes:
        if regime == "sustained":
            _sustain(a, b, timer, opts, firsts)
        results.append(_one_regime(regime, a, b, timer, reader, opts, firsts))
    comparison = Comparison(a.name, b.name, tuple(results), getattr(b, "baseline", None))
    for r in results:
        if r.clock_mismatch:
            warnings.warn(
                f"{a.name} vs {b.name} ({r.regime}): the two sides ran at SM clocks "
                f"{r.a.sm_mhz:.0f} vs {r.b.sm_mhz:.0f} MHz ({100 * (r.clock_gap or 0):.1f}% "
                f"apart, more than {100 * opts.clock_tolerance:.3g}%): the ratio "
                f"{r.ratio:.3f} compares power states as much as code",
                ClockMismatchWarning, stacklevel=2)
    return comparison


def _gpu_timer_and_reader(mode: str) -> tuple[Timer, StateReader]:
    from .device import device_info, nvml_reader, require_gpu
    from .sampling import CudaEventTimer

    cupy = require_gpu("tile_lab.compare_timed")
    stream = cupy.cuda.Stream(non_blocking=True)
    return (CudaEventTimer(cupy, stream, mode=mode, l2_bytes=device_info().l2_bytes),
            nvml_reader())


def _sustain(a: Timeable, b: Timeable, timer: Timer, opts: CompareOptions,
             firsts: dict[str, bool]) -> None:
    """Run A and B alternately until ``sustain_s`` seconds of GPU time have passed."""
    busy = 0.0
    side = 0
    while busy < opts.sustain_s:
        key, work = (("A", a), ("B", b))[side % 2]
        busy += sum(timer.time(work, opts.samples_per_round, first=firsts[key]))
        firsts[key] = False
        side += 1
        if side > 100_000:  # a timer that reports no time: do not spin forever
            break


def _one_regime(regime: str, a: Timeable, b: Timeable, timer: Timer, reader: StateReader,
                opts: CompareOptions, firsts: dict[str, bool]) -> RegimeComparison:
    works = {"A": a, "B": b}
    got: dict[str, list[StateSamples]] = {"A": [], "B": []}
    order: list[str] = []
    reruns = disagreeing = 0
    for pair in abba_order(opts.rounds):
        for attempt in range(opts.clock_retries + 1):
            groups = {}
            for key in pair:
                # burst: a state reading (and a recovery wait when throttled) per sample;
                # sustained: one per group, so the GPU stays busy between samples
                groups[key] = sample_with_state(
                    timer, works[key], opts.samples_per_round, reader, opts.throttle,
                    regime=regime, first=firsts[key],
                    chunk=1 if regime == "burst" else opts.samples_per_round)
                firsts[key] = False
                order.append(key)
            gap = _gap(_median([st.sm_mhz for st in groups["A"].states]),
                       _median([st.sm_mhz for st in groups["B"].states]))
            agree = gap is None or gap <= opts.clock_tolerance
            if agree or attempt == opts.clock_retries:
                disagreeing += not agree and opts.clock_retries > 0
                break
            reruns += 1  # this round's groups ran at different clocks: time it again
        for key in ("A", "B"):
            got[key].append(groups[key])
    ratios = [statistics.median(sb.times_s) / statistics.median(sa.times_s)
              for sa, sb in zip(got["A"], got["B"])]
    ratio = _geomean(ratios)
    low, high = bootstrap_ci(ratios, n=opts.bootstrap, seed=opts.seed)
    sides = [Side(works[k].name, tuple(t for s in got[k] for t in s.times_s),
                  tuple(st for s in got[k] for st in s.states),
                  sum(s.throttled for s in got[k])) for k in ("A", "B")]
    gap = _gap(sides[0].sm_mhz, sides[1].sm_mhz)
    mismatch = gap is not None and gap > opts.clock_tolerance
    return RegimeComparison(regime, sides[0], sides[1], ratio, low, high, tuple(ratios),
                            tuple(order), mismatch, opts.clock_tolerance, reruns, disagreeing)


def _gap(a: float | None, b: float | None) -> float | None:
    """|a - b| / max(a, b), None when either is unknown."""
    if a is None or b is None or max(a, b) <= 0:
        return None
    return abs(a - b) / max(a, b)


def bootstrap_ci(ratios: Sequence[float], *, n: int = 2000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the geometric mean of ``ratios`` (resampling rounds, with a
    seeded generator: the same data give the same interval)."""
    if not ratios:
        raise ValueError("no ratios")
    rng = random.Random(seed)
    k = len(ratios)
    means = sorted(_geomean([ratios[rng.randrange(k)] for _ in range(k)]) for _ in range(n))
    lo = means[int((1 - level) / 2 * (n - 1))]
    hi = means[int((1 + level) / 2 * (n - 1))]
    return lo, hi


def _geomean(xs: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(x) for x in xs))


def _median(xs: Sequence[float | None]) -> float | None:
    known = [x for x in xs if x is not None]
    return statistics.median(known) if known else None
