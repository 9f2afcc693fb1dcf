"""What a front end asks tile_lab to do with one kernel, as one frozen object.

The ``%%tile`` magic parses its line into a :class:`Request` (one per kernel it inspects, one
for the kernel it runs) and hands it to :func:`tile_lab._run.run`; nothing else travels
between them. ``--show`` is parsed here, once (:func:`parse_show`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .compile.artifacts import STAGES

__all__ = ["MODES", "PANES", "Request", "parse_show"]

# how a kernel can run, in the order their output appears (a sanitizer report comes before
# the partition diagram, which a trace draws)
MODES = ("sanitize", "trace", "emulate", "launch", "crosscheck", "profile")
PANES = (*STAGES, "partition")  # "partition": the access-trace diagram, not a compile stage


@dataclass(frozen=True)
class Request:
    """One kernel, and what to do with it.

    ``mode`` None and ``partition`` False: inspect (compile for ``args``, or for the spec
    string ``sig``, and show ``panes``). Otherwise run it on ``grid`` with ``args`` in
    ``mode`` (one of :data:`MODES`); ``partition`` also traces it and draws the diagram.
    """

    kernel: Any
    args: tuple[Any, ...] | None = None
    sig: str | None = None
    grid: tuple[int, ...] | None = None
    arch: str | None = None
    hints: Mapping[str, Any] | str | None = None
    panes: tuple[str, ...] | None = None
    mode: str | None = None
    partition: bool = False

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"mode={self.mode!r}: one of {', '.join(MODES)}")

    @property
    def inspects(self) -> bool:
        return self.mode is None and not self.partition

    @property
    def spec(self) -> tuple[Any, ...] | str | None:
        """What the compile is for: the signature string where given, else the arguments."""
        return self.sig if self.sig is not None else self.args


def parse_show(show: Sequence[str] | str | None, allowed: Sequence[str] = PANES
               ) -> tuple[tuple[str, ...] | None, bool, str | None]:
    """``(panes, partition, bad)`` of a ``show`` value ("source,sass" or a sequence): the
    inspect panes in the order given (None: the default), whether the partition diagram is
    asked for, and the first name not in ``allowed`` (None when all are), for the caller to
    word its error."""
    if show is None:
        return None, False, None
    names = [s.strip() for s in show.split(",")] if isinstance(show, str) else list(show)
    names = [n for n in names if n]
    bad = next((n for n in names if n not in allowed), None)
    panes = tuple(dict.fromkeys(n for n in names if n != "partition"))
    return panes, "partition" in names, bad
