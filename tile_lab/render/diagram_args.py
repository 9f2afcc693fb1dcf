"""The checks on ``diagram()``'s and ``partition()``'s arguments: which arrays, block, lines,
and tuples of ints (shape, tile, zoom), each refused with a DiagramError that names the
argument and what would be accepted."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..errors import DiagramError
from ..tracing.index import IndexedTrace
from ..tracing.tile_geometry import tuple_text as _tup
from ..tracing.trace import Block, Trace

__all__ = ["check_args", "check_block", "check_lines", "int_tuple"]


def check_args(t: Trace, arg: str | Sequence[str] | None) -> list[str]:
    names = [a.name for a in t.arrays]
    if arg is None:
        return names
    want = [arg] if isinstance(arg, str) else list(arg)
    for w in want:
        if w not in names:
            raise DiagramError(f"arg={w!r} is not an array argument of {t.kernel}; "
                               f"its arrays are: {', '.join(names) or '(none)'}")
    return want


def check_block(t: Trace, block: int | Sequence[int] | None) -> Block | None:
    if block is None:
        return None
    b = (block,) if isinstance(block, (int, np.integer)) else tuple(block)
    if not 1 <= len(b) <= 3 or not all(isinstance(v, (int, np.integer)) for v in b):
        raise DiagramError(f"block={block!r} must be 1 to 3 ints (a block id of the grid)")
    full = tuple(int(v) for v in b) + (0,) * (3 - len(b))
    if any(not 0 <= v < g for v, g in zip(full, t.grid)):
        raise DiagramError(f"block={block!r} is outside the launch grid {_tup(t.grid)}")
    return full  # type: ignore[return-value]


def check_lines(index: IndexedTrace, line: int | Sequence[int] | None) -> set[int] | None:
    if line is None:
        return None
    want = {line} if isinstance(line, (int, np.integer)) else set(line)
    bad = sorted(w for w in want if w not in index.lines)
    if bad:
        raise DiagramError(f"line={line!r}: no memory operation on line "
                           f"{', '.join(map(str, bad))}; lines with memory operations: "
                           f"{', '.join(map(str, index.lines)) or '(none)'}")
    return {int(w) for w in want}


def int_tuple(value: Iterable[int], name: str, *, allow_zero: bool = False,
               allow_negative: bool = False) -> tuple[int, ...]:
    try:
        out = tuple(value)
    except TypeError:
        raise DiagramError(f"{name}={value!r} must be a tuple of ints") from None
    if not out or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                          for v in out):
        raise DiagramError(f"{name}={value!r} must be a non-empty tuple of ints")
    if not allow_negative and any(v < 0 or (v == 0 and not allow_zero) for v in out):
        raise DiagramError(f"{name}={value!r}: every entry must be "
                           f"{'non-negative' if allow_zero else 'positive'}")
    return tuple(int(v) for v in out)
