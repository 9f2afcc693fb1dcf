"""``strategy="coordinate"``: greedy coordinate descent from the first config. Knob by knob, it
measures the current config's neighbours along that knob and moves to any that scores better
under the objective; it stops when a full pass over the knobs improves nothing, or after
``budget`` measurements. Configs are measured in the order the search needs them (not in
compile order), each fully."""

from __future__ import annotations

from collections.abc import Iterator

from ..result import Failure, objective_score
from ..space import Config
from ..store import config_key
from .base import BaseStrategy, Outcome, Trials


class Coordinate(BaseStrategy):
    def search(self, configs: list[Config], trials: Trials) -> Iterator[Outcome]:
        budget, objective = trials.options.budget, trials.options.objective
        allowed = {config_key(c) for c in configs}
        seen: dict[str, Outcome] = dict(trials.known)
        spent = 0

        def score(o: Outcome) -> float:
            return float("inf") if isinstance(o, Failure) else objective_score(o, objective)

        def over_budget() -> bool:
            return budget is not None and spent >= budget

        current = configs[0]
        best = seen.get(config_key(current))
        if best is None:
            best = seen[config_key(current)] = trials.measure(current)
            spent += 1
            yield best
        improved = True
        while improved and not over_budget():
            improved = False
            for knob in trials.space.knobs:
                for cand in trials.space.neighbours(current, knob):
                    key = config_key(cand)
                    if key not in allowed or over_budget():
                        continue
                    out = seen.get(key)
                    if out is None:
                        out = seen[key] = trials.measure(cand)
                        spent += 1
                        yield out
                    if score(out) < score(best):
                        current, best, improved = cand, out, True
