"""``strategy="exhaustive"``: every config, measured fully, in the order its compile finishes."""

from __future__ import annotations

from collections.abc import Iterator

from ..space import Config
from .base import BaseStrategy, Outcome, Trials


class Exhaustive(BaseStrategy):
    def search(self, configs: list[Config], trials: Trials) -> Iterator[Outcome]:
        for cfg in trials.as_compiled(configs):
            yield trials.measure(cfg)
