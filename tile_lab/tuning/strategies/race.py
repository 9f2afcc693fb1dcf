"""``strategy="race"`` (the default): round 1 gives every config ``race.samples`` samples (a
config whose first sample is ``race.prune``× slower than the best so far stops there); round 2
measures fully only the contenders, those within ``race.keep``× of the best. A clear loser keeps
its short measurement."""

from __future__ import annotations

from collections.abc import Iterator

from ..result import Failure, Success
from ..space import Config
from .base import BaseStrategy, Outcome, Trials


class Race(BaseStrategy):
    def search(self, configs: list[Config], trials: Trials) -> Iterator[Outcome]:
        race = trials.options.race
        quick: list[Success] = []
        best = min((s.time_s for s in trials.known.values()), default=None)
        for cfg in trials.as_compiled(configs, race.samples):
            out = trials.measure(cfg, race.samples,
                                 stop_above_s=None if best is None else best * race.prune)
            if isinstance(out, Failure):
                yield out
            else:
                quick.append(out)
                best = out.time_s if best is None else min(best, out.time_s)
        if not quick or best is None:
            return
        cutoff = best * race.keep
        for out in quick:
            yield trials.measure(out.config) if out.time_s <= cutoff else out
