"""``strategy="random"``: ``budget`` configs drawn with ``seed``; only they are compiled, and
each is measured fully in the order its compile finishes."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ..space import Config
from .exhaustive import Exhaustive

if TYPE_CHECKING:
    from ..options import TuneOptions


class RandomSearch(Exhaustive):
    def check(self, options: TuneOptions) -> str | None:
        if not options.budget:
            return "strategy='random' needs a budget (number of configs to try)"
        return None

    def choose(self, configs: list[Config], options: TuneOptions) -> list[Config]:
        picks = list(configs)
        random.Random(options.seed).shuffle(picks)
        return picks[:options.budget]
