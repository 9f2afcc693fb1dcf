"""Search strategies of ``tile_lab.tune``, one module each, and the one registry of their names.

``TuneOptions(strategy=name)`` names a registered strategy; ``tune`` runs it like this:

1. ``strategy.check(options)`` -> None, or why these options cannot run it (checked when the
   :class:`~tile_lab.tuning.options.TuneOptions` is made, e.g. "random" without a budget);
2. ``strategy.choose(configs, options)`` -> the configs this run may measure, in order (the
   space's valid configs minus those already in the store). Only these are compiled, ahead, in
   worker processes (or on a cluster);
3. ``strategy.search(configs, trials)`` -> an iterator of outcomes (a
   :class:`~tile_lab.tuning.result.Success` or :class:`~tile_lab.tuning.result.Failure`), each
   config's final one, yielded as soon as it is final: ``tune`` stores it at once (a crash loses
   at most the config in flight) and the run's result keeps them in the order yielded.

A strategy spends GPU time only through its :class:`Trials`: ``trials.measure(config, samples,
stop_above_s=)`` (a failure comes back as a Failure, never raised) and ``trials.as_compiled(
configs, samples)`` (configs in the order their compiles finish, so the GPU never waits for a
compile that another config is done with; ``samples`` lets several GPUs measure ahead). It reads
``trials.space``, ``trials.options`` (samples, budget, seed, objective, race) and ``trials.known``
(stored successes). Where the measuring happens (this GPU, an isolated worker, a Ray cluster's
GPUs) is the Measurer's business, never the strategy's.

The built-in strategies:

================  ==========================================================================
``race``          :mod:`.race`: a few samples each, full measurements for the contenders
``exhaustive``    :mod:`.exhaustive`: every config, fully, in compile order
``random``        :mod:`.random_search`: ``budget`` configs drawn with ``seed``
``coordinate``    :mod:`.coordinate`: greedy coordinate descent, at most ``budget`` measured
================  ==========================================================================

Your own strategy: subclass :class:`BaseStrategy` (it supplies ``check`` and ``choose``), write
``search``, and register it under a name::

    from tile_lab.tuning import BaseStrategy, register_strategy

    class SmallTilesFirst(BaseStrategy):
        def search(self, configs, trials):
            for cfg in sorted(configs, key=lambda c: c["TILE"]):
                yield trials.measure(cfg)

    register_strategy("small-first", SmallTilesFirst())
    tile_lab.tune(kernel, space, grid_fn, args_fn,
                  options=TuneOptions(strategy="small-first"))

Registering a name again replaces your earlier strategy of that name (a re-run notebook cell);
the built-in names cannot be replaced.
"""

from __future__ import annotations

from .base import BaseStrategy, Outcome, Strategy, Trials
from .coordinate import Coordinate
from .exhaustive import Exhaustive
from .race import Race
from .random_search import RandomSearch

__all__ = ["BaseStrategy", "Outcome", "Strategy", "Trials", "get_strategy", "register_strategy",
           "strategy_names", "unregister_strategy"]

BUILT_IN: dict[str, Strategy] = {"race": Race(), "exhaustive": Exhaustive(),
                                 "random": RandomSearch(), "coordinate": Coordinate()}
_REGISTRY: dict[str, Strategy] = dict(BUILT_IN)


def register_strategy(name: str, strategy: Strategy) -> Strategy:
    """Make ``strategy`` available as ``TuneOptions(strategy=name)``; returns it."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_strategy: the name must be a non-empty str, not {name!r}")
    if name in BUILT_IN:
        raise ValueError(f"register_strategy: {name!r} is a built-in strategy; choose another "
                         "name")
    if isinstance(strategy, type):
        raise TypeError(f"register_strategy({name!r}, ...): pass an instance, e.g. "
                        f"{strategy.__name__}(), not the class")
    if not isinstance(strategy, Strategy):
        raise TypeError(f"register_strategy({name!r}, ...): {type(strategy).__name__} is not a "
                        "Strategy (it needs check, choose and search; subclass "
                        "tile_lab.tuning.BaseStrategy)")
    _REGISTRY[name] = strategy
    return strategy


def unregister_strategy(name: str) -> None:
    """Forget the strategy registered as ``name`` (a built-in one stays)."""
    if name in BUILT_IN:
        raise ValueError(f"unregister_strategy: {name!r} is a built-in strategy")
    _REGISTRY.pop(name, None)


def strategy_names() -> tuple[str, ...]:
    """The names ``TuneOptions(strategy=...)`` accepts: the built-in ones, then yours."""
    return tuple(_REGISTRY)


def get_strategy(name: str) -> Strategy:
    """The strategy registered as ``name``; KeyError naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; choose one of "
                       f"{', '.join(_REGISTRY)}") from None
