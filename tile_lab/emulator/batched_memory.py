"""Where the blocks of a batched pass (``batched.py``) read and write: every block's tile
gathered from an array in one NumPy operation, or scattered into it, with the tiles inside
the array, or reaching past its end (the padding value read there, those lanes dropped on
store), and the check that no two stores of a pass write one tile."""

from __future__ import annotations

from typing import Any

import numpy as np


def written_twice(shape: tuple[int, ...], box: tuple[int, ...], all_starts: list[list[Any]],
                   n: int) -> bool:
    """Whether two of the stores' tiles (every store, every block) are one tile: each tile
    numbered by its place in the array's grid of whole tiles, the numbers sorted once."""
    counts = tuple(-(-e // s) for e, s in zip(shape, box))  # a partial tile at the end too
    numbers = np.concatenate([np.ravel_multi_index(_tile_index(starts, box, n), counts)
                              for starts in all_starts])
    numbers.sort()
    return bool(np.any(numbers[1:] == numbers[:-1]))


def _consecutive(starts: list[Any], box: tuple[int, ...], n: int) -> bool:
    """A 1-d access whose blocks take tiles one after another (block i of the pass: the
    pass's first tile + i)."""
    if len(box) != 1 or not isinstance(starts[0], np.ndarray):
        return False
    st, s = starts[0], box[0]
    return bool(np.array_equal(np.diff(st), np.full(n - 1, s)))


def gather(data: np.ndarray, starts: list[Any], box: tuple[int, ...], n: int) -> np.ndarray:
    """Every block's tile, the tiles lying inside the array (a view where they follow one
    another: no block writes an array that is loaded)."""
    view = consecutive_view(data, starts, box, n)
    return view if view is not None else _tiles(data, box)[_tile_index(starts, box, n)]


def consecutive_view(data: np.ndarray, starts: list[Any], box: tuple[int, ...], n: int
                     ) -> np.ndarray | None:
    """The pass's tiles as an (n, box) view of a 1-d array whose blocks take tiles one
    after another; None for any other access."""
    if not _consecutive(starts, box, n):
        return None
    first = int(starts[0][0])
    return data[first:first + n * box[0]].reshape(n, box[0])


def scatter(data: np.ndarray, starts: list[Any], box: tuple[int, ...], values: np.ndarray,
            n: int) -> None:
    """Every block's tile written, the tiles lying inside the array."""
    _tiles(data, box)[_tile_index(starts, box, n)] = np.broadcast_to(values, (n, *box))


def _ragged_groups(shape: tuple[int, ...], starts: list[Any], box: tuple[int, ...], n: int
                   ) -> list[tuple[np.ndarray | None, tuple[int, ...], tuple[np.ndarray, ...]]]:
    """Blocks whose tiles reach past the array's end, grouped by how many lanes of each axis
    lie inside (few groups: whole tiles and the edge ones). Per group: its blocks (None: all),
    the lanes inside per axis, and index arrays that broadcast to (blocks, *lanes)."""
    nd = len(box)
    inside = [np.broadcast_to(np.minimum(size - np.asarray(st, np.int64), s), (n,))
              for st, s, size in zip(starts, box, shape)]
    keys, which = np.unique(np.stack(inside, axis=1), axis=0, return_inverse=True)
    which = which.reshape(-1)
    groups = []
    for g, lanes in enumerate(keys):
        sel = None if len(keys) == 1 else np.flatnonzero(which == g)
        index = []
        for axis, (st, count) in enumerate(zip(starts, lanes)):
            first = np.asarray(st, np.int64)
            if first.ndim and sel is not None:
                first = first[sel]
            view = [-1 if first.ndim else 1] + [1] * nd
            view[1 + axis] = int(count)
            index.append((first.reshape(-1, 1) + np.arange(count)).reshape(view))
        groups.append((sel, tuple(int(c) for c in lanes), tuple(index)))
    return groups


def gather_ragged(data: np.ndarray, starts: list[Any], box: tuple[int, ...], n: int,
                   fill: np.ndarray) -> np.ndarray:
    """Every block's tile, its lanes past the array's end holding ``fill`` (the load's
    padding value), as the block-by-block load reads it."""
    out = np.empty((n, *box), data.dtype)
    out[...] = fill
    for sel, lanes, index in _ragged_groups(data.shape, starts, box, n):
        part = (slice(None) if sel is None else sel, *(slice(0, c) for c in lanes))
        out[part] = data[index]
    return out


def scatter_ragged(data: np.ndarray, starts: list[Any], box: tuple[int, ...], values: Any,
                    n: int) -> None:
    """Every block's tile written where it lies inside the array; lanes past the end are
    dropped, as the block-by-block store drops them."""
    values = np.broadcast_to(values, (n, *box))
    for sel, lanes, index in _ragged_groups(data.shape, starts, box, n):
        part = (slice(None) if sel is None else sel, *(slice(0, c) for c in lanes))
        data[index] = values[part]


def _tiles(data: np.ndarray, box: tuple[int, ...]) -> np.ndarray:
    """``data`` seen as a grid of whole tiles of shape ``box`` (a view; partial tiles at the
    far edges are left out, and no batched access touches them)."""
    counts = tuple(n // s for n, s in zip(data.shape, box))
    strides = tuple(st * s for st, s in zip(data.strides, box)) + data.strides
    return np.lib.stride_tricks.as_strided(data, counts + box, strides, writeable=True)


def _tile_index(starts: list[Any], box: tuple[int, ...], n: int) -> tuple[Any, ...]:
    """Per axis, the tile index of every block's tile (starts are multiples of the box)."""
    return tuple(np.broadcast_to(np.asarray(st, np.int64) // s, (n,))
                 for st, s in zip(starts, box))
