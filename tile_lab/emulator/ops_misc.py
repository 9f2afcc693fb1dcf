"""Printing, assertions, compile-time helpers, no-op scheduling hints, and the grid queries
(``ct.bid``, ``ct.num_blocks``).

In the emulator the whole kernel is ordinary Python, so ``static_eval``/``static_iter``
simply return their (already evaluated) argument; ``static_assert`` checks at run time.
"""

from __future__ import annotations

import builtins
import re

import cuda.tile as ct
import numpy as np

from . import state
from .operands import const_int
from .registry import emulates
from .state import kernel_error
from .tile import Tile, format_values


@emulates(ct.print)
def print(*args, sep=" ", end="\n") -> None:
    builtins.print(*(str(a) for a in args), sep=sep, end=end)


_SPEC = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|L|z|j|t)?([diouxXeEfFgGaAc%])")


@emulates(ct.printf)
def printf(format, *args) -> None:
    values = []
    for a in args:
        if isinstance(a, Tile):
            if a.ndim != 0:
                values.append(format_values(np.asarray(a._a), a.dtype, ""))
                continue
            a = a._a.item()
        values.append(a)
    # C length modifiers (%lld, %hd) mean nothing to Python's % operator: drop them
    py_format = _SPEC.sub(lambda m: re.sub(r"(hh|h|ll|l|L|z|j|t)(?=[a-zA-Z%]$)", "",
                                           m.group(0)), format)
    py_format = py_format.replace("%u", "%d")
    try:
        builtins.print(py_format % tuple(values), end="")
    except (TypeError, ValueError) as exc:
        raise kernel_error(f"ct.printf format {format!r} does not match its "
                           f"{len(values)} arguments: {exc}") from None


@emulates(ct.assert_)
def assert_(cond, /, message=None) -> None:
    values = cond._a if isinstance(cond, Tile) else cond
    if not np.all(values):
        failed = int(np.size(values) - np.count_nonzero(values))
        if message:  # cuTile: "Message to print if condition is false", as the device prints
            builtins.print(message, flush=True)
        text = "ct.assert_ failed" + (f": {message}" if message else "")
        raise kernel_error(f"{text} ({failed} of {np.size(values)} lanes false)")


@emulates(ct.static_eval)
def static_eval(expr, /):
    return expr


@emulates(ct.static_assert)
def static_assert(condition, message=None, /):
    if state.typed():
        return  # cuTile's front end evaluated it for this signature, and it held
    if isinstance(condition, Tile):
        raise kernel_error("ct.static_assert needs a compile-time constant condition, got a tile")
    if not condition:  # cuTile's class and wording (runtime.py gives it the kernel line)
        raise ct.TileStaticAssertionError(message or "")


@emulates(ct.static_iter)
def static_iter(iterable):
    return iterable


@emulates(ct.static_exception)
def static_exception(exc, /):
    """``raise ct.static_exception(ValueError(...))``: cuTile raises a ``ct.StaticException``
    at compile time, worded as here (the gate raises cuTile's own before a gated kernel runs;
    outside the gate the emulator raises it where the kernel reaches the ``raise``)."""
    if not isinstance(exc, BaseException):
        raise kernel_error(f"'{type(exc).__name__}' is not derived from 'BaseException'")
    text = str(exc)
    name = type(exc).__name__ + (f": {text}" if text else "")
    return ct.StaticException(f"Exception was raised at compile time ({name})")


@emulates(ct.ensure_constant)
def ensure_constant(value, /):
    if isinstance(value, Tile) and not (state.typed() and value.ndim == 0):
        raise ct.TileStaticAssertionError(
            "Argument of ensure_constant() is not a compile-time constant")
    return value


@emulates(ct.assume_divisible_by)
def assume_divisible_by(x, divisor):
    if int(x) % int(divisor):
        raise kernel_error(f"ct.assume_divisible_by: {int(x)} is not divisible by {divisor} "
                           "(undefined behaviour on the GPU)")
    return x


@emulates(ct.grid_dependency_control_wait)
def grid_dependency_control_wait() -> None:
    return None  # launches run one at a time in the emulator


@emulates(ct.grid_dependency_control_launch_dependents)
def grid_dependency_control_launch_dependents() -> None:
    return None


# ---- where a block is in the grid --------------------------------------------------------

def _grid_axis(axis) -> int:
    if type(axis) is int and 0 <= axis <= 2:  # the common case, first
        return axis
    a = const_int(axis, "axis")
    if not 0 <= a <= 2:
        raise kernel_error(f"grid axis must be 0, 1 or 2, got {a}")
    return a


@emulates(ct.bid)
def bid(axis) -> Tile:
    return state.current().bid_tiles[_grid_axis(axis)]


@emulates(ct.num_blocks)
def num_blocks(axis) -> Tile:
    return state.current().grid_tiles[_grid_axis(axis)]
