"""Frozen options of a tuning run: :class:`TuneOptions` and the race's :class:`RaceOptions`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import TileLabError
from .space import Config
from .strategies import get_strategy, strategy_names

OBJECTIVES = ("time", "gbps", "tflops")


class TuneError(TileLabError):
    """A tuning run that cannot start (bad strategy, empty space, bad budget)."""


def _default_timing() -> Any:
    from ..gpu.options import TimingOptions

    return TimingOptions(samples=20)


@dataclass(frozen=True)
class RaceOptions:
    """The race: every config gets ``samples`` samples; only those within ``keep`` times the
    best are measured fully; a config whose first sample is ``prune`` times slower than the best
    so far stops at that sample."""

    samples: int = 5
    keep: float = 1.5
    prune: float = 3.0

    def __post_init__(self) -> None:
        if not self.keep >= 1.0 or not self.prune >= self.keep:
            raise TuneError(f"need 1 <= keep <= prune, got keep={self.keep}, "
                            f"prune={self.prune}")


@dataclass(frozen=True)
class TuneOptions:
    """How ``tile_lab.tune`` searches and measures.

    ``strategy``: "race" (default), "exhaustive", "random" (``budget`` configs drawn with
    ``seed``), "coordinate" (greedy, at most ``budget`` measurements), or the name of a
    strategy you registered (:mod:`tile_lab.tuning.strategies`). ``objective``: "time",
    "gbps" or "tflops". ``timing``: a :class:`~tile_lab.gpu.options.TimingOptions` (protocol,
    samples of a full measurement, and the **regime** every config is ranked in: "burst" by
    default, so configs measured late in a long run are not penalised for the heat of the ones
    before). ``flops``/``bytes``: per launch, a number or a function of the config, for TFLOPS /
    GB/s. ``arch``: the target (default: the local GPU's); ``workers``: compile processes.
    """

    strategy: str = "race"
    objective: str = "time"
    budget: int | None = None
    seed: int = 0
    race: RaceOptions = field(default_factory=RaceOptions)
    timing: Any = field(default_factory=_default_timing)
    flops: int | Callable[[Config], int] | None = None
    bytes: int | Callable[[Config], int] | None = None
    arch: str | None = None
    workers: int | None = None
    isolate: bool = False
    precompile: bool = True
    progress: bool = True
    # a tile_lab.tuning.cluster.ClusterOptions: compile on a Ray cluster's CPUs and measure on
    # its GPUs (one actor per GPU); None compiles in local processes and measures here
    cluster: Any = None

    def __post_init__(self) -> None:
        if self.strategy not in strategy_names():
            raise TuneError(f"unknown strategy {self.strategy!r}; choose one of "
                            f"{', '.join(strategy_names())}")
        if self.objective not in OBJECTIVES:
            raise TuneError(f"unknown objective {self.objective!r}; choose time, gbps or "
                            "tflops")
        problem = get_strategy(self.strategy).check(self)
        if problem:
            raise TuneError(problem)

    @property
    def samples(self) -> int:
        return int(self.timing.n)

    @property
    def regime(self) -> str:
        return str(self.timing.regime)
