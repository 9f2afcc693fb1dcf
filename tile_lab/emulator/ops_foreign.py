"""Foreign pointers (cuTile 1.7): ``array.foreign_pointer`` and ``ct.Array.from_foreign``.

On the GPU a foreign pointer is an array's base pointer as an opaque scalar: it can only be
handed to a foreign call or turned back into an array with ``Array.from_foreign(pointer,
shape, strides)``, a view of any shape and element strides over the memory it points to.
Here the pointer is the kernel argument's memory from that base element on (what
``Array.get_raw_memory`` reaches too), so a view inside that memory is emulated exactly: its
loads, stores, gathers and atomics read and write the argument, and the trace records them
as the argument's elements. A view that reaches past the argument's memory would read or
write memory the kernel was not given (what lies there on a GPU the emulator cannot know):
it is refused by name (``EmulatorUnsupported``) at the ``from_foreign`` line, as are foreign
calls (``cuda.tile_preview``: NVSHMEM and other device libraries, ``stubs.py``).
"""

from __future__ import annotations

from typing import Any

import cuda.tile as ct
import numpy as np

from ..errors import EmulatorUnsupported
from .ops_memory import Array
from .ops_raw import RawArrayMemory
from .registry import IMPLEMENTATIONS
from .state import kernel_error
from .tile import Tile


class ForeignPointer:
    """``array.foreign_pointer``: a scalar that only ``Array.from_foreign`` (or a foreign
    call) takes; it holds the memory it points to (the argument's, from the array's base)."""

    __slots__ = ("_base", "_memory")

    def __init__(self, memory: RawArrayMemory, base: int = 0) -> None:
        self._memory, self._base = memory, base  # base: elements past the memory's start

    @property
    def dtype(self) -> object:
        return ct.foreign_pointer_dtype(self._memory.dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    @property
    def ndim(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"<foreign pointer to {self._memory._array.name}[{self._memory.dtype}]>"


class ForeignArray(Array):
    """An array built by ``Array.from_foreign``: a strided view over an argument's memory.
    Its accesses are recorded as the argument elements they touch (``to_argument``)."""

    __slots__ = ("_base", "_estrides", "_memory")

    def __init__(self, data: np.ndarray, memory: RawArrayMemory, base: int,
                 strides: tuple[int, ...], static_dims: tuple[int, ...]) -> None:
        super().__init__(data, memory.dtype, memory._array.name, static_dims=static_dims)
        self._memory, self._base, self._estrides = memory, base, strides

    _foreign = True

    def to_argument(self, sel: tuple[np.ndarray, ...]) -> tuple[tuple[np.ndarray, ...], Any]:
        """Element indices of this view -> (the argument's element indices, relative to the
        array the pointer came from; which of them are argument elements at all)."""
        pos = np.full(np.shape(sel[0]) if sel else (), self._base, dtype=np.int64)
        for idx, s in zip(sel, self._estrides):
            pos = pos + np.asarray(idx, dtype=np.int64) * s
        return self._memory._argument_coords(np.atleast_1d(pos))

    @property
    def origin_array(self) -> Array:
        """The argument (or its slice) whose memory this view is over."""
        return self._memory._array

    def slice(self, axis, start, stop) -> ForeignArray:
        nd = self._data.ndim
        whole = Array.slice(self, axis, start, stop)  # checks, and the sliced data
        ax = int(axis) % nd
        return ForeignArray(whole._data, self._memory,
                            self._base + int(start) * self._estrides[ax], self._estrides,
                            tuple(k for k, n in enumerate(self.shape) if type(n) is int))

    def __repr__(self) -> str:
        return (f"<array from_foreign({self.name})[{self._dtype}, {self._data.shape}, "
                f"strides {self._estrides}]>")


def foreign_pointer(array: Array) -> ForeignPointer:
    if isinstance(array, ForeignArray):  # the argument's memory still, from the view's base
        return ForeignPointer(array._memory, array._base)
    return ForeignPointer(RawArrayMemory(array))


def _items(values: Any, what: str) -> tuple[list[int], list[int]]:
    """(the ints, the positions given as compile-time ints) of a shape or strides tuple."""
    if not isinstance(values, (tuple, list)):
        raise kernel_error(f"Array.from_foreign: {what} must be a tuple of integers, got "
                           f"{type(values).__name__}")
    out, static = [], []
    for k, v in enumerate(values):
        if isinstance(v, Tile) and v.ndim == 0 and np.asarray(v._a).dtype.kind == "i":
            out.append(int(v._a))
        elif isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            out.append(int(v))
            static.append(k)
        else:
            raise kernel_error(f"Array.from_foreign: {what}[{k}] must be a signed integer "
                               f"scalar, got {v!r}")
        if out[-1] < 0:
            raise kernel_error(f"Array.from_foreign: {what}[{k}] is {out[-1]}; cuTile needs "
                               "non-negative shapes and strides")
    return out, static


def from_foreign(pointer, shape, strides) -> ForeignArray:
    if not isinstance(pointer, ForeignPointer):
        raise kernel_error("Array.from_foreign expects a foreign pointer (an array's "
                           f".foreign_pointer), got {type(pointer).__name__}")
    dims, static = _items(shape, "shape")
    steps, _ = _items(strides, "strides")
    if len(dims) != len(steps):
        raise kernel_error(f"Array.from_foreign: shape {tuple(dims)} and strides "
                           f"{tuple(steps)} must have the same rank")
    memory, base = pointer._memory, pointer._base
    size = memory._mem.shape[0] - base
    last = sum((n - 1) * s for n, s in zip(dims, steps)) if all(dims) else -1
    if last >= size:
        name = memory._array.name
        raise EmulatorUnsupported(
            f"Array.from_foreign: a view of shape {tuple(dims)} and strides {tuple(steps)} "
            f"reaches element {last} from the pointer into argument {name!r}, past the "
            f"{size} element{'s' if size != 1 else ''} of {name!r} there: on a GPU it "
            "would touch memory the kernel was not given, which the CPU emulator does not "
            "have", hint="keep the view inside the array the pointer came from (its shape and "
                 "strides), or run the kernel on a GPU with tile_lab.launch")
    item = memory._mem.itemsize
    data = np.lib.stride_tricks.as_strided(memory._mem[base:], shape=tuple(dims),
                                           strides=tuple(s * item for s in steps))
    return ForeignArray(data, memory, base, tuple(steps), tuple(static))


IMPLEMENTATIONS["Array.foreign_pointer"] = foreign_pointer  # Array's members call these
IMPLEMENTATIONS["Array.from_foreign"] = from_foreign
