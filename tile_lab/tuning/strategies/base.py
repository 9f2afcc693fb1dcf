"""The :class:`Strategy` protocol, the :class:`Trials` a strategy searches with, and
:class:`BaseStrategy` (the defaults: every config, any options)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from ..result import Failure, Success
from ..space import Config, Space

Outcome = Success | Failure


class RaceSettings(Protocol):
    """What the race strategy reads of a run's race options
    (:class:`~tile_lab.tuning.options.RaceOptions`)."""

    @property
    def samples(self) -> int: ...
    @property
    def keep(self) -> float: ...
    @property
    def prune(self) -> float: ...


class SearchOptions(Protocol):
    """What a strategy reads of a run's options (a
    :class:`~tile_lab.tuning.options.TuneOptions` is one): the strategies know the search,
    not the rest of a tuning run's settings (nor import them)."""

    @property
    def samples(self) -> int: ...
    @property
    def budget(self) -> int | None: ...
    @property
    def seed(self) -> int: ...
    @property
    def objective(self) -> str: ...
    @property
    def race(self) -> RaceSettings: ...


class Trials(Protocol):
    """What ``tile_lab.tune`` hands a strategy: the space, the run's options, what the store
    already holds, and the two ways to spend time on the GPU."""

    @property
    def space(self) -> Space:
        """The space being searched (its knobs, ``neighbours(config, knob)``)."""

    @property
    def options(self) -> SearchOptions:
        """The run's options (``samples``, ``budget``, ``seed``, ``objective``, ``race``)."""

    @property
    def known(self) -> Mapping[str, Success]:
        """config key -> stored Success of an earlier run in the same context (those configs
        are not among the strategy's configs: they are never measured again)."""

    def measure(self, config: Config, samples: int | None = None, *,
                stop_above_s: float | None = None) -> Outcome:
        """Measure ``config`` with ``samples`` samples (default: ``options.samples``); stop
        after the first sample when it is slower than ``stop_above_s``. A config whose compile,
        launch or check failed comes back as a Failure (never raised)."""

    def as_compiled(self, configs: Sequence[Config],
                    samples: int | None = None) -> Iterator[Config]:
        """``configs`` in the order their compiles finish. ``samples``: what the strategy will
        ask of each first, so that several GPUs can measure them ahead while it waits."""


@runtime_checkable
class Strategy(Protocol):
    """A search over a space's valid configs (see the package's docstring)."""

    def check(self, options: SearchOptions) -> str | None:
        """Why ``options`` cannot run this strategy (e.g. a missing budget), or None."""

    def choose(self, configs: list[Config], options: SearchOptions) -> list[Config]:
        """The configs this run may measure, in order: only these are compiled."""

    def search(self, configs: list[Config], trials: Trials) -> Iterator[Outcome]:
        """Measure configs through ``trials``; yield each config's final outcome once, as soon
        as it is final (``tune`` stores it the moment it is yielded)."""


class BaseStrategy(ABC):
    """A strategy that accepts any options and may measure every config; a subclass writes
    :meth:`search`."""

    def check(self, options: SearchOptions) -> str | None:
        return None

    def choose(self, configs: list[Config], options: SearchOptions) -> list[Config]:
        return list(configs)

    @abstractmethod
    def search(self, configs: list[Config], trials: Trials) -> Iterator[Outcome]: ...
