"""The access trace: every memory operation an emulated kernel performed.

Produced by the emulator (``tile_lab.trace``), read by the sanitizer and the diagrams.
Plain data: no HTML, no compiling. Element sets are stored compactly — a box for
tile-space ops (``ct.load``/``ct.store``/tiled views), flat index arrays only for
gather/scatter/atomics — so a trace of 10^5 operations stays small.

Coordinates are always *array* element indices (row-major ``ndim``-tuples), never bytes.

Besides memory, the trace counts tensor-core work: one :class:`MmaCall` (shapes only, no
values) per ``ct.mma`` / ``ct.matmul`` / ``ct.mma_scaled`` a block executed, from which
``Trace.mma_flops`` derives the FLOPs of the launch. The records themselves (one access, one
matrix product, one undetermined write) are in :mod:`tile_lab.tracing.access`.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .access import (
    ArrayInfo,
    Block,
    MemoryAccess,
    MmaCall,
    UndeterminedWrite,
)


@dataclass(frozen=True)
class Trace:
    """All memory operations of one emulated launch, in program order per block.

    Blocks run in row-major order of the grid (x fastest), as the emulator ran them.
    ``blocks_run`` is None when every block of the grid ran; a trace of a subset of blocks
    (``tile_lab.trace(..., blocks=...)``) lists the blocks it ran and describes only them.
    ``mma_calls`` is None when tensor-core work was not recorded (a trace saved by an
    older tile_lab), else every matrix product in program order.
    """

    kernel: str
    grid: Block
    arrays: tuple[ArrayInfo, ...]
    accesses: tuple[MemoryAccess, ...]
    source: str = ""  # kernel source text, for labels
    first_line: int = 1  # line number of the source's first line in ``filename``
    filename: str = ""
    scalars: dict = field(default_factory=dict)  # non-array arguments by name
    mma_calls: tuple[MmaCall, ...] | None = None
    blocks_run: tuple[Block, ...] | None = None
    undetermined: tuple[UndeterminedWrite, ...] = ()  # undetermined values written to memory

    # ---- lookups -------------------------------------------------------------
    def array(self, name: str) -> ArrayInfo:
        for a in self.arrays:
            if a.name == name:
                return a
        names = ", ".join(a.name for a in self.arrays)
        raise KeyError(f"no array argument named {name!r}; the kernel's arrays are: {names}")

    @property
    def blocks(self) -> list[Block]:
        """Every block the emulator ran (the whole grid unless ``blocks_run`` says
        otherwise), in the order it ran them."""
        if self.blocks_run is not None:
            return list(self.blocks_run)
        gx, gy, gz = self.grid
        return [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]

    @property
    def complete(self) -> bool:
        """True when every block of the grid ran."""
        return self.blocks_run is None or len(set(self.blocks_run)) == _grid_size(self.grid)

    # ---- tensor-core work ----------------------------------------------------------
    @property
    def mma_flops(self) -> int | None:
        """FLOPs of every matrix product the traced blocks executed (None: not recorded)."""
        if self.mma_calls is None:
            return None
        return sum(c.flops for c in self.mma_calls)

    def mma_flops_by_block(self) -> dict[Block, int]:
        """FLOPs per traced block, every traced block present (0 when it ran no mma)."""
        if self.mma_calls is None:
            raise ValueError("this trace did not record matrix products (mma_calls is None)")
        out = dict.fromkeys(self.blocks, 0)
        for c in self.mma_calls:
            out[c.block] = out.get(c.block, 0) + c.flops
        return out

    def __len__(self) -> int:
        return len(self.accesses)

    def __iter__(self) -> Iterator[MemoryAccess]:
        return iter(self.accesses)

    def select(self, *, block: Sequence[int] | None = None, arg: str | None = None,
               kind: str | Iterable[str] | None = None, line: int | None = None,
               iteration: int | None = None) -> list[MemoryAccess]:
        """Accesses matching every given filter. ``block`` may be 1–3 ints; ``kind`` is an
        access kind ("load", "store", …) or "read" / "write" (atomics are both)."""
        want_block = None if block is None else _as_block(block)
        kinds = None if kind is None else ({kind} if isinstance(kind, str) else set(kind))
        if arg is not None:
            self.array(arg)  # clear error for a wrong name
        pool = self.accesses if want_block is None else self._by_block.get(want_block, ())
        return [a for a in pool
                if (want_block is None or a.block == want_block)
                and (arg is None or a.arg == arg)
                and (kinds is None or any(_kind_matches(a, k) for k in kinds))
                and (line is None or a.line == line)
                and (iteration is None or a.iteration == iteration)]

    @functools.cached_property
    def _by_block(self) -> dict[Block, list[MemoryAccess]]:
        """Accesses grouped by block, built once: per-block queries stay O(that block)."""
        return dict(_group_by_block(self.accesses))

    def footprint(self, block: Sequence[int], arg: str, *, kind: str | None = None) -> np.ndarray:
        """Boolean mask over ``arg``'s elements that ``block`` touched (reads and writes,
        or only ``kind`` = "read" / "write")."""
        info = self.array(arg)
        out = np.zeros(info.shape, dtype=bool)
        for a in self.select(block=block, arg=arg):
            if _kind_matches(a, kind):
                out |= a.mask(info.shape)
        return out

    def coverage(self, arg: str, kind: str = "write") -> np.ndarray:
        """Per element of ``arg``: how many *distinct blocks* read ("read") or wrote
        ("write") it. Vectorised per access; cost is O(accesses + touched elements)."""
        info = self.array(arg)
        total = np.zeros(info.shape, dtype=np.int32)
        # stamp[e] = 1 + index of the last block that counted element e: each block adds
        # at most 1 per element without allocating a full-size mask per block
        stamp = np.zeros(info.shape, dtype=np.int64)
        flat_total, flat_stamp = total.reshape(-1), stamp.reshape(-1)
        for number, (_blk, accesses) in enumerate(
                _group_by_block(a for a in self.accesses
                                if a.arg == arg and _kind_matches(a, kind)), start=1):
            for a in accesses:
                if a.is_box:
                    start, stop = a.clipped_box(info.shape)
                    region = tuple(slice(s, e) for s, e in zip(start, stop))
                    total[region] += stamp[region] != number
                    stamp[region] = number
                elif a.flat_indices is not None and a.flat_indices.size:
                    idx = a.flat_indices
                    flat_total[idx] += flat_stamp[idx] != number  # repeats count once
                    flat_stamp[idx] = number
        return total

    def writers(self, arg: str, index: Sequence[int]) -> list[MemoryAccess]:
        """Every access that wrote element ``index`` of ``arg`` (stores, scatters, atomics)."""
        return self._touching(arg, index, "write")

    def readers(self, arg: str, index: Sequence[int]) -> list[MemoryAccess]:
        """Every access that read element ``index`` of ``arg``."""
        return self._touching(arg, index, "read")

    def _touching(self, arg: str, index: Sequence[int], kind: str) -> list[MemoryAccess]:
        info = self.array(arg)
        idx = tuple(int(i) for i in index)
        if len(idx) != len(info.shape) or any(not 0 <= i < n for i, n in zip(idx, info.shape)):
            raise IndexError(f"index {idx} is outside {arg} of shape {info.shape}")
        flat = int(np.ravel_multi_index(idx, info.shape))
        out = []
        for a in self.accesses:
            if a.arg != arg or not _kind_matches(a, kind):
                continue
            if a.is_box:
                start, stop = a.clipped_box(info.shape)
                if all(s <= i < e for s, i, e in zip(start, idx, stop)):
                    out.append(a)
            elif a.flat_indices is not None and np.any(a.flat_indices == flat):
                out.append(a)
        return out

    def lines(self) -> list[int]:
        """Source lines that performed memory operations, sorted."""
        return sorted({a.line for a in self.accesses})

    def max_iteration(self) -> int:
        return max((a.iteration for a in self.accesses), default=0)

    def tile_shapes(self, arg: str) -> list[tuple[int, ...]]:
        """Distinct tile shapes used on ``arg`` (in first-use order)."""
        seen: dict[tuple[int, ...], None] = {}
        for a in self.accesses:
            if a.arg == arg and a.tile_shape is not None:
                seen.setdefault(a.tile_shape, None)
        return list(seen)

    # ---- serialisation --------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write this trace to ``path`` in tile_lab's compact, versioned trace format
        (a ZIP of NumPy arrays with a JSON header; ``tile_lab.load_trace`` reads it back,
        and ``tile_lab.browse(path)`` opens it). See ``tile_lab/tracing/trace_file.py``. Returns the
        path written, to chain (``tile_lab.browse(tr.save("gemm.tltrace"))``)."""
        from .trace_file import json_scalars, write_trace_file

        header, arrays = _to_columns(self)
        header["scalars"] = json_scalars(self.scalars)
        write_trace_file(path, header, arrays)
        return Path(path)

    def to_json(self) -> str:
        return json.dumps({
            "kernel": self.kernel, "grid": list(self.grid),
            "arrays": [{"name": a.name, "shape": list(a.shape), "dtype": a.dtype}
                       for a in self.arrays],
            "accesses": [a.to_json() for a in self.accesses],
            "source": self.source, "first_line": self.first_line, "filename": self.filename,
            "scalars": self.scalars,
            "mma_calls": None if self.mma_calls is None else [c.to_json() for c in self.mma_calls],
            "blocks_run": None if self.blocks_run is None else [list(b) for b in self.blocks_run],
            "undetermined": [u.to_json() for u in self.undetermined],
        })

    @classmethod
    def from_json(cls, text: str) -> Trace:
        d = json.loads(text)
        return cls(kernel=d["kernel"], grid=tuple(d["grid"]),
                   arrays=tuple(ArrayInfo(a["name"], tuple(a["shape"]), a["dtype"])
                                for a in d["arrays"]),
                   accesses=tuple(MemoryAccess.from_json(a) for a in d["accesses"]),
                   source=d.get("source", ""), first_line=d.get("first_line", 1),
                   filename=d.get("filename", ""), scalars=d.get("scalars", {}),
                   mma_calls=None if d.get("mma_calls") is None else tuple(
                       MmaCall.from_json(c) for c in d["mma_calls"]),
                   blocks_run=None if d.get("blocks_run") is None else tuple(
                       tuple(b) for b in d["blocks_run"]),
                   undetermined=tuple(UndeterminedWrite.from_json(u)
                                      for u in d.get("undetermined", ())))

    def __repr__(self) -> str:
        return (f"Trace(kernel={self.kernel!r}, grid={format_grid(self.grid)}, "
                f"arrays={[a.name for a in self.arrays]}, accesses={len(self.accesses)})")


def load_trace(path: str | os.PathLike, *, max_bytes: int | None = None) -> Trace:
    """Read a trace written by ``Trace.save`` (anywhere: no GPU, no compiler needed).

    The file is checked before anything in it is used (``tile_lab/tracing/trace_file.py``): only
    known fields, sizes as declared and under ``max_bytes`` (default 1 GiB uncompressed),
    no pickle. A corrupt, truncated, oversized or newer-version file raises
    ``tile_lab.errors.FileFormatError`` saying which and why."""
    from .trace_file import MAX_BYTES, read_trace_file

    header, arrays = read_trace_file(path, max_bytes=MAX_BYTES if max_bytes is None
                                     else max_bytes)
    strings: list[str | None] = [*header["strings"], None]  # index -1: None
    accesses = []
    tuples, flat = arrays["tuples"].tolist(), arrays["flat"]
    t_pos = f_pos = 0
    for r, lens, fl in zip(arrays["access"].tolist(), arrays["tuple_len"].tolist(),
                           arrays["flat_len"].tolist()):
        boxes: list[tuple[int, ...] | None] = []
        for n in lens:
            boxes.append(None if n < 0 else tuple(tuples[t_pos:t_pos + n]))
            t_pos += max(n, 0)
        flat_indices = None if fl < 0 else flat[f_pos:f_pos + fl].copy()
        f_pos += max(fl, 0)
        accesses.append(MemoryAccess(
            seq=r[0], block=(r[1], r[2], r[3]), kind=strings[r[4]], op=strings[r[5]],
            arg=strings[r[6]], line=r[7], iteration=r[8], filename=strings[r[9]] or "",
            tile_index=boxes[0], tile_shape=boxes[1], box_start=boxes[2], box_stop=boxes[3],
            flat_indices=flat_indices, out_of_bounds=r[10], masked_off=r[11],
            padding=strings[r[12]], unchecked=bool(r[13])))
    mma_calls = None if "mma" not in arrays else tuple(
        MmaCall(block=(r[0], r[1], r[2]), op=strings[r[3]], m=r[4], n=r[5], k=r[6],
                batch=r[7], dtype=strings[r[8]], line=r[9], iteration=r[10],
                filename=strings[r[11]] or "", acc_dtype=strings[r[12]] or "")
        for r in arrays["mma"].tolist())
    return Trace(
        kernel=header["kernel"], grid=tuple(header["grid"]),
        arrays=tuple(ArrayInfo(a["name"], tuple(a["shape"]), a["dtype"])
                     for a in header["arrays"]),
        accesses=tuple(accesses), source=header["source"], first_line=header["first_line"],
        filename=header["filename"], scalars=header["scalars"], mma_calls=mma_calls,
        blocks_run=None if header["blocks_run"] is None else tuple(
            tuple(b) for b in header["blocks_run"]),
        undetermined=tuple(UndeterminedWrite.from_json(u) for u in header["undetermined"]))


def _to_columns(t: Trace) -> tuple[dict, dict[str, np.ndarray]]:
    """The header fields and int64 columns ``trace_file`` stores (strings as indices into
    one table; -1 for None)."""
    from .trace_file import MMA_COLUMNS

    strings: dict[str, int] = {}

    def sid(value: str | None) -> int:
        return -1 if value is None else strings.setdefault(value, len(strings))

    acc = t.accesses
    rows = np.zeros((len(acc), 14), dtype=np.int64)
    tuple_len = np.full((len(acc), 4), -1, dtype=np.int64)
    flat_len = np.full(len(acc), -1, dtype=np.int64)
    tuples: list[int] = []
    flats: list[np.ndarray] = []
    for i, a in enumerate(acc):
        rows[i] = (a.seq, *a.block, sid(a.kind), sid(a.op), sid(a.arg), a.line, a.iteration,
                   sid(a.filename), a.out_of_bounds, a.masked_off, sid(a.padding),
                   int(a.unchecked))
        for j, box in enumerate((a.tile_index, a.tile_shape, a.box_start, a.box_stop)):
            if box is not None:
                tuple_len[i, j] = len(box)
                tuples.extend(int(v) for v in box)
        if a.flat_indices is not None:
            flat_len[i] = a.flat_indices.size
            flats.append(np.asarray(a.flat_indices, dtype=np.int64).reshape(-1))
    arrays = {"access": rows, "tuple_len": tuple_len,
              "tuples": np.asarray(tuples, dtype=np.int64), "flat_len": flat_len,
              "flat": np.concatenate(flats) if flats else np.zeros(0, dtype=np.int64)}
    if t.mma_calls is not None:
        arrays["mma"] = np.array(
            [(*c.block, sid(c.op), c.m, c.n, c.k, c.batch, sid(c.dtype), c.line, c.iteration,
              sid(c.filename), sid(c.acc_dtype or None)) for c in t.mma_calls],
            dtype=np.int64).reshape(-1, len(MMA_COLUMNS))
    header = {
        "kernel": t.kernel, "grid": [int(g) for g in t.grid],
        "arrays": [{"name": a.name, "shape": [int(n) for n in a.shape], "dtype": a.dtype}
                   for a in t.arrays],
        "source": t.source, "first_line": int(t.first_line), "filename": t.filename,
        "blocks_run": None if t.blocks_run is None else [[int(v) for v in b]
                                                         for b in t.blocks_run],
        "undetermined": [u.to_json() for u in t.undetermined],
    }
    header["strings"] = list(strings)  # after every sid() call above
    return header, arrays


def format_grid(grid: Sequence[int]) -> str:
    """A grid as the user writes it: trailing axes of size 1 dropped, ``(16,)`` not
    ``(16, 1, 1)`` (the one block notation of the checker's and sanitizer's words)."""
    return _tuple_text([int(x) for x in grid][:grid_rank(grid)])


def format_block(block: Sequence[int], grid: Sequence[int]) -> str:
    """A block with as many axes as :func:`format_grid` shows: ``(5,)`` in grid ``(16,)``."""
    return _tuple_text([int(x) for x in block][:grid_rank(grid)])


def grid_rank(grid: Sequence[int]) -> int:
    """Axes up to the last one larger than 1 (at least one)."""
    return max([i + 1 for i, g in enumerate(grid) if int(g) > 1] or [1])


def _tuple_text(t: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, t)) + ("," if len(t) == 1 else "") + ")"


def _as_block(block: Sequence[int]) -> Block:
    b = tuple(int(x) for x in block)
    if not 1 <= len(b) <= 3:
        raise ValueError(f"a block id has 1 to 3 components, got {block!r}")
    return (*b, 0, 0)[:3]  # type: ignore[return-value]


def _grid_size(grid: Sequence[int]) -> int:
    n = 1
    for g in grid:
        n *= int(g)
    return n


def _kind_matches(a: MemoryAccess, kind: str | None) -> bool:
    if kind is None:
        return True
    if kind == "read":
        return a.is_read
    if kind == "write":
        return a.is_write
    return a.kind == kind


def _group_by_block(accesses: Iterable[MemoryAccess]) -> Iterator[tuple[Block, list[MemoryAccess]]]:
    groups: dict[Block, list[MemoryAccess]] = {}
    for a in accesses:
        groups.setdefault(a.block, []).append(a)
    return iter(groups.items())
