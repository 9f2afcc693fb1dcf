"""Operation arguments that must be compile-time constants: ints, tile shapes, axes.

Every op module and the taint rules (``poison.py``) check them the same way; this module
sits just above ``tile.py`` (a tile is never a constant).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import state
from .state import kernel_error
from .tile import Tile


def const_int(x: Any, what: str) -> int:
    if isinstance(x, Tile) and x.ndim == 0 and x._a.dtype.kind in "iu" and state.typed():
        # cuTile's front end folded this value to a constant (a ct.Constant tuple item,
        # n + ct.int16(2)): the emulator holds the same value as a 0-d tile
        return int(x._a)
    if isinstance(x, Tile) or not isinstance(x, (int, np.integer)) or isinstance(x, bool):
        raise kernel_error(f"{what} must be a compile-time constant int, got "
                           f"{type(x).__name__}", hint="annotate the parameter ct.Constant[int]")
    return int(x)


# tile shapes already checked by const_shape (the load/store fast path reads it too)
VALID_SHAPES: dict[Any, tuple[int, ...]] = {}


def const_shape(shape: Any, what: str, *, allow_empty: bool = True,
                 power_of_two: bool = True) -> tuple[int, ...]:
    if power_of_two and allow_empty:
        try:
            return VALID_SHAPES[shape]
        except (KeyError, TypeError):  # new, or unhashable (holds a tile): check it below
            pass
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    out = tuple(const_int(d, what) for d in dims)
    if not out and not allow_empty:
        raise kernel_error(f"{what} must not be empty")
    if power_of_two:
        for d in out:
            if d <= 0 or d & (d - 1):
                raise kernel_error(f"{what} {out}: every dimension of a tile must be a power "
                                   f"of two, got {d}")
        if allow_empty and isinstance(shape, (tuple, int)):
            VALID_SHAPES[shape] = out
    return out


def const_axes(axis: Any, ndim: int, *, allow_tuple: bool = True) -> int | tuple[int, ...] | None:
    """The non-negative axis (or axes; None: all) of a reduction or scan over ``ndim`` axes."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        if not allow_tuple:
            raise kernel_error("argmin/argmax reduce one axis (or all); a tuple is not supported")
        return tuple(const_int(a, "axis") % ndim for a in axis)
    a = const_int(axis, "axis")
    if not -ndim <= a < ndim:
        raise kernel_error(f"axis {a} is out of range for a {ndim}-d tile")
    return a % ndim
