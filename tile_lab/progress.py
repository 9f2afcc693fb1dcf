"""Progress for long work (emulate, trace, sanitize, tune, sweeps), through ``tqdm.auto``.

``tqdm.auto`` draws a widget bar in Jupyter and a text bar with an ETA in a terminal. A bar
appears only once the work has run for ``delay_s`` seconds, so short runs print nothing and
notebook outputs stay deterministic for nbval.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

DEFAULT_DELAY_S = 1.0


class ProgressBar(Protocol):
    """What long-running code needs from a bar: advance it, and say what it is doing."""

    def update(self, n: int = 1) -> Any: ...

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> Any: ...


@contextmanager
def progress(total: int | None, desc: str, *, enabled: bool = True, unit: str = "it",
             delay_s: float = DEFAULT_DELAY_S) -> Iterator[ProgressBar]:
    """A ``tqdm.auto`` bar for ``total`` steps labelled ``desc``, shown after ``delay_s`` seconds.

    With ``enabled=False`` the bar is a no-op (the same object, never drawn).
    """
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, delay=delay_s, disable=not enabled,
               leave=False, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()
