"""``strategy="random"``: ``budget`` configs drawn with ``seed``; only they are compiled, and
each is measured fully in the order its compile finishes."""

from __future__ import annotations

import random

from ..space import Config
from .base import SearchOptions
from .exhaustive import Exhaustive


class RandomSearch(Exhaustive):
    def check(self, options: SearchOptions) -> str | None:
        if not options.budget:
            return "strategy='random' needs a budget (number of configs to try)"
        return None

    def choose(self, configs: list[Config], options: SearchOptions) -> list[Config]:
        picks = list(configs)
        random.Random(options.seed).shuffle(picks)
        return picks[:options.budget]
