"""What one block did, record by record: the entries of a :class:`~tile_lab.tracing.trace.Trace`.

A :class:`MemoryAccess` is one memory operation (a box of elements for tile-space ops, flat
indices for gather/scatter/atomics), an :class:`MmaCall` one matrix product (shapes only), an
:class:`UndeterminedWrite` a value the emulator could not determine that reached memory.
Coordinates are *array* element indices (row-major ``ndim``-tuples), never bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Block = tuple[int, int, int]

READ_KINDS = frozenset({"load", "gather"})
WRITE_KINDS = frozenset({"store", "scatter"})
ATOMIC_KINDS = frozenset({"atomic"})


@dataclass(frozen=True)
class ArrayInfo:
    """A kernel argument that is an array: its parameter name, shape and dtype name."""

    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True, eq=False)
class MemoryAccess:
    """One memory operation by one block.

    ``kind``: "load" | "store" | "gather" | "scatter" | "atomic".
    ``op``: the cuTile function, e.g. "load", "store", "gather", "atomic_add", "atomic_cas".
    For tile-space ops, ``tile_index``/``tile_shape`` give the tile, and ``box_start``/
    ``box_stop`` give the element box the tile covers *before* clipping to the array (it
    may extend past the array: those lanes are padded on a load, discarded on a store).
    For gather/scatter/atomics, ``flat_indices`` are the in-bounds element indices
    touched (after the mask), and ``out_of_bounds`` counts lanes that fell outside.
    ``line`` is the source line in ``filename``; ``iteration`` counts earlier executions
    of the same source line by the same block (the loop iteration for a loop body).
    """

    seq: int
    block: Block
    kind: str
    op: str
    arg: str
    line: int
    iteration: int
    filename: str = ""
    tile_index: tuple[int, ...] | None = None
    tile_shape: tuple[int, ...] | None = None
    box_start: tuple[int, ...] | None = None
    box_stop: tuple[int, ...] | None = None
    flat_indices: np.ndarray | None = None
    out_of_bounds: int = 0
    masked_off: int = 0
    padding: str | None = None  # padding mode name on loads, when relevant
    unchecked: bool = False  # gather/scatter with check_bounds=False

    @property
    def is_read(self) -> bool:
        return self.kind in READ_KINDS or self.kind in ATOMIC_KINDS

    @property
    def is_write(self) -> bool:
        return self.kind in WRITE_KINDS or self.kind in ATOMIC_KINDS

    @property
    def is_box(self) -> bool:
        return self.box_start is not None

    def clipped_box(self, shape: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The part of the tile box inside an array of ``shape`` (start, stop per axis)."""
        assert self.box_start is not None and self.box_stop is not None
        start = tuple(min(max(s, 0), n) for s, n in zip(self.box_start, shape))
        stop = tuple(min(max(e, 0), n) for e, n in zip(self.box_stop, shape))
        stop = tuple(max(a, b) for a, b in zip(start, stop))
        return start, stop

    def element_count(self, shape: Sequence[int]) -> int:
        """How many in-bounds elements this access touched."""
        if self.is_box:
            start, stop = self.clipped_box(shape)
            return int(np.prod([b - a for a, b in zip(start, stop)]))
        return 0 if self.flat_indices is None else int(self.flat_indices.size)

    def mask(self, shape: Sequence[int]) -> np.ndarray:
        """Boolean array of ``shape``: True where this access touched an element."""
        out = np.zeros(tuple(shape), dtype=bool)
        if self.is_box:
            start, stop = self.clipped_box(shape)
            out[tuple(slice(a, b) for a, b in zip(start, stop))] = True
        elif self.flat_indices is not None:
            out.reshape(-1)[self.flat_indices] = True
        return out

    def outside_count(self, shape: Sequence[int]) -> int:
        """Lanes outside the array: padded (loads) or discarded (stores)."""
        if self.is_box:
            assert self.box_start is not None and self.box_stop is not None
            total = int(np.prod([b - a for a, b in zip(self.box_start, self.box_stop)]))
            return total - self.element_count(shape)
        return self.out_of_bounds

    def to_json(self) -> dict:
        d = {k: getattr(self, k) for k in (
            "seq", "block", "kind", "op", "arg", "line", "iteration", "filename",
            "tile_index", "tile_shape", "box_start", "box_stop", "out_of_bounds",
            "masked_off", "padding", "unchecked")}
        d["flat_indices"] = None if self.flat_indices is None else self.flat_indices.tolist()
        return d

    @classmethod
    def from_json(cls, d: dict) -> MemoryAccess:
        d = dict(d)
        for k in ("block", "tile_index", "tile_shape", "box_start", "box_stop"):
            if d.get(k) is not None:
                d[k] = tuple(d[k])
        if d.get("flat_indices") is not None:
            d["flat_indices"] = np.asarray(d["flat_indices"], dtype=np.int64)
        return cls(**d)


@dataclass(frozen=True)
class MmaCall:
    """One tile matrix product executed by one block: ``batch`` products of (m×k)·(k×n).

    ``op``: "mma" | "matmul" | "mma_scaled"; ``dtype``: the input operands' dtype name;
    ``acc_dtype``: the accumulator's ("" where unknown).
    Shapes are the *tile* shapes: a tile padded at a ragged array edge still costs its full
    product on the tensor cores (the hardware multiplies the padding too), so it counts in
    full; the FLOPs are the work executed, not the useful 2·M·N·K of the problem.
    """

    block: Block
    op: str
    m: int
    n: int
    k: int
    batch: int
    dtype: str
    line: int
    iteration: int
    filename: str = ""
    acc_dtype: str = ""

    @property
    def flops(self) -> int:
        """2·batch·M·N·K: one multiply and one add per term (an FMA counts as 2 FLOPs)."""
        return 2 * self.batch * self.m * self.n * self.k

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in (
            "block", "op", "m", "n", "k", "batch", "dtype", "line", "iteration", "filename",
            "acc_dtype")}

    @classmethod
    def from_json(cls, d: dict) -> MmaCall:
        d = dict(d)
        d["block"] = tuple(d["block"])
        return cls(**d)


@dataclass(frozen=True)
class UndeterminedWrite:
    """Undetermined lanes (``PaddingMode.UNDETERMINED`` padding, or values computed from
    it) written into in-bounds elements of an argument by one op of one block.

    ``load_*``: the load that padded; ``mix_*``: the op that first combined padded lanes
    with other lanes (a reduction, scan or matrix product; None when padded lanes were
    stored as they are); ``line``: the writing op (store, scatter, atomic). The element box
    ``[box_start, box_stop)`` bounds the ``elements`` written, in argument coordinates.
    """

    block: Block
    op: str
    arg: str
    line: int
    filename: str
    load_line: int
    load_arg: str
    load_op: str
    mix_line: int | None
    mix_op: str | None
    box_start: tuple[int, ...]
    box_stop: tuple[int, ...]
    elements: int

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, d: dict) -> UndeterminedWrite:
        d = dict(d)
        for k in ("block", "box_start", "box_stop"):
            d[k] = tuple(d[k])
        return cls(**d)
