"""The sanitizer's checks on one array argument's accesses (:mod:`tile_lab.sanitizer.checks` runs
them for every array of a trace): tiles entirely out of bounds, unchecked accesses outside
the array, write races and scatter collisions, order-dependent reads, uncovered outputs.

Every check is vectorised: an int32 "last writer" array updated box by box (or with the flat
indices of gathers/scatters/atomics), never a Python loop over elements.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tracing.trace import ArrayInfo, Block, MemoryAccess, Trace, format_block
from .report import Box, Finding, box_size, format_box

# ops whose tile entirely outside the array is undefined (partly outside is fine); for
# these the trace records lanes, not a box
_ADVANCED_INDEXING = frozenset({"load_advanced_indexing", "store_advanced_indexing"})
_MAX_BOXES = 8  # element ranges kept per finding; ``count`` always has the full total


def boxes_from_mask(mask: np.ndarray, limit: int | None = None) -> list[Box]:
    """Cover the True elements of ``mask`` with disjoint boxes: runs along the last axis,
    merged across consecutive indices of each outer axis when identical. Only rows with
    a True element are visited, so a mostly-False mask of any size is cheap."""
    mask = np.asarray(mask, dtype=bool)
    if mask.ndim == 0:
        return [((), ())] if mask else []
    boxes = _boxes(mask)
    return boxes if limit is None else boxes[:limit]


def _boxes(mask: np.ndarray) -> list[Box]:
    if mask.ndim == 1:
        padded = np.concatenate(([False], mask, [False])).astype(np.int8)
        edges = np.flatnonzero(np.diff(padded))
        return [((int(s),), (int(e),)) for s, e in zip(edges[::2], edges[1::2])]
    rows = np.flatnonzero(mask.reshape(mask.shape[0], -1).any(axis=1))
    out: list[Box] = []
    run_start, run_stop, run_sub = -1, -1, None
    for r in rows.tolist():
        sub = _boxes(mask[r])
        if r == run_stop and sub == run_sub:
            run_stop = r + 1
            continue
        if run_sub is not None:
            out += [((run_start, *s), (run_stop, *e)) for s, e in run_sub]
        run_start, run_stop, run_sub = r, r + 1, sub
    if run_sub is not None:
        out += [((run_start, *s), (run_stop, *e)) for s, e in run_sub]
    return out


class ArrayChecker:
    """All checks for one array argument. Accesses are processed in trace order."""

    def __init__(self, trace: Trace, info: ArrayInfo, accesses: list[int],
                 blocks: np.ndarray, locks: list[int]) -> None:
        self.trace = trace
        self.info = info
        self.shape = tuple(info.shape)
        self.size = int(np.prod(self.shape)) if self.shape else 1
        self.idx = accesses
        self.blocks = blocks
        self.locks = locks
        self.acc = trace.accesses
        self.plain_writer: np.ndarray | None = None  # set by write_findings

    def _b(self, block: Block) -> str:
        """A block as the launch grid has axes: ``(1,)`` in grid ``(4,)``."""
        return format_block(block, self.trace.grid)

    # region of an access, as something that indexes an array of self.shape
    def _region(self, a: MemoryAccess):
        if a.is_box:
            region = tuple(slice(min(max(s, 0), n), min(max(e, 0), n))
                           for s, e, n in zip(a.box_start, a.box_stop, self.shape))
            return None if any(r.stop <= r.start for r in region) else region
        if a.flat_indices is None or a.flat_indices.size == 0:
            return None
        flat = np.asarray(a.flat_indices, dtype=np.int64)
        flat = flat[(flat >= 0) & (flat < self.size)]  # the trace promises this; be safe
        if flat.size == 0:
            return None
        return np.unravel_index(flat, self.shape) if self.shape else ()

    def _finding(self, kind: str, message: str, a: MemoryAccess, **kw) -> Finding:
        return Finding(kind=kind, message=message, arg=self.info.name, line=a.line,
                       block=a.block, filename=a.filename, iteration=a.iteration, **kw)

    # -- tile entirely outside / unchecked lanes outside -----------------------------------
    def bounds_findings(self) -> list[Finding]:
        groups: dict[tuple[str, int, str], list[MemoryAccess]] = {}
        outside = self._boxes_entirely_outside()
        for i in self.idx:
            a = self.acc[i]
            if i in outside or (a.op in _ADVANCED_INDEXING and a.out_of_bounds
                                and (a.flat_indices is None or a.flat_indices.size == 0)):
                groups.setdefault(("tile_out_of_bounds", a.line, a.op), []).append(a)
            elif a.unchecked and a.outside_count(self.shape) > 0:
                groups.setdefault(("unchecked_out_of_bounds", a.line, a.op), []).append(a)
        out = []
        for (kind, _, op), hits in groups.items():
            a = hits[0]
            trip = f", iteration {a.iteration} of line {a.line}" if a.iteration else ""
            more = f" ({len(hits)} accesses, first by block {self._b(a.block)}{trip})" \
                if len(hits) > 1 else f" (block {self._b(a.block)}{trip})"
            if kind == "tile_out_of_bounds" and not a.is_box:
                lanes = sum(h.out_of_bounds for h in hits)
                msg = (f"ct.{op}: every lane of the tile is outside {self.info.name} of "
                       f"shape {self.shape}: undefined behaviour in cuTile{more}")
                boxes, count = (), lanes
            elif kind == "tile_out_of_bounds":
                box = (tuple(a.box_start), tuple(a.box_stop))
                msg = (f"ct.{op} tile {a.tile_index} of shape {a.tile_shape} covers "
                       f"{format_box(self.info.name, box)}, entirely outside "
                       f"{self.info.name} of shape {self.shape}: undefined behaviour in "
                       f"cuTile{more}")
                boxes = tuple((tuple(h.box_start), tuple(h.box_stop)) for h in hits)
                count = sum(int(np.prod(h.tile_shape or ())) for h in hits)
            else:
                lanes = sum(h.outside_count(self.shape) for h in hits)
                msg = (f"ct.{op} with check_bounds=False touched {lanes} lane"
                       f"{'s' * (lanes != 1)} outside {self.info.name} of shape "
                       f"{self.shape}: undefined behaviour on a GPU{more}")
                boxes, count = (), lanes
            out.append(self._finding(kind, msg, a, boxes=boxes[:_MAX_BOXES], count=count,
                                     occurrences=len(hits)))
        return out

    def _boxes_entirely_outside(self) -> set[int]:
        """Trace positions of tile boxes with no element inside the array (vectorised over
        all boxes of this array at once)."""
        nd = len(self.shape)
        boxed = [i for i in self.idx if self.acc[i].is_box and len(self.acc[i].box_start) == nd]
        if not boxed or not self.shape:
            return set()
        starts = np.array([self.acc[i].box_start for i in boxed], dtype=np.int64)
        stops = np.array([self.acc[i].box_stop for i in boxed], dtype=np.int64)
        shape = np.array(self.shape, dtype=np.int64)
        empty = ((stops <= 0) | (starts >= shape) | (stops <= starts)).any(axis=1)
        return {boxed[k] for k in np.flatnonzero(empty).tolist()}

    # -- writes: races between blocks, collisions inside one scatter ---------------------------
    def write_findings(self) -> list[Finding]:
        shape = self.shape
        # plain_writer, per element: the one block writing it non-atomically (-1: none,
        # -2: several); read_findings and coverage_findings use it
        writes = [i for i in self.idx if self.acc[i].is_write]
        if not writes:
            return []
        last = np.full(shape, -1, dtype=np.int32)  # trace position of the last write
        multi = np.zeros(shape, dtype=bool)  # written by two or more blocks so far
        klass = np.full(shape, -1, dtype=np.int32)  # write class so far; -2: mixed
        self.plain_writer = np.full(shape, -1, dtype=np.int32)
        conflicts: dict[int, tuple[np.ndarray, list[int], set[int]]] = {}
        collisions: dict[int, list[MemoryAccess]] = {}
        for i in writes:
            a = self.acc[i]
            region = self._region(a)
            if region is None:
                continue
            b = self.blocks[i]
            # class: 0 plain, 1 atomic, 2+k plain under lock k; equal non-plain classes
            # from different blocks are synchronised, everything else races
            c = 1 if a.kind == "atomic" else (0 if self.locks[i] == 0 else 1 + self.locks[i])
            prev = last[region]
            if prev.max() < 0:  # fast path: nobody wrote these elements yet
                klass[region] = c
                last[region] = i
                if c != 1:
                    self.plain_writer[region] = b
                self._scatter_collision(a, collisions)
                continue
            prev_block = np.where(prev >= 0, self.blocks[np.maximum(prev, 0)], -1)
            other = ((prev_block >= 0) & (prev_block != b)) | multi[region]
            prev_class = klass[region]
            clash = other if c == 0 else other & (prev_class != c)
            if clash.any():
                mask, firsts, racing = conflicts.setdefault(
                    a.line, (np.zeros(shape, bool), [], set()))
                if not firsts:
                    firsts += [i, int(prev[clash].reshape(-1)[0])]
                # every write taking part counts once: this one and the last earlier write
                # of each clashing element (the ones before those were counted when they
                # clashed, the very first write of an element is the last before the second)
                racing.add(i)
                racing.update(int(p) for p in np.unique(prev[clash]) if p >= 0)
                _mark(mask, region, clash)
            multi[region] = multi[region] | ((prev_block >= 0) & (prev_block != b))
            klass[region] = np.where(prev_class == -1, c, np.where(prev_class == c, c, -2))
            last[region] = i
            if c != 1:
                pw = self.plain_writer[region]
                self.plain_writer[region] = np.where((pw == -1) | (pw == b), b, -2)
            self._scatter_collision(a, collisions)
        out = []
        for mask, (i, j), racing in conflicts.values():
            a, prior = self.acc[i], self.acc[j]
            if prior.block == a.block:  # the element's other writer came earlier still
                prior = self._other_writer(mask, a.block) or prior
            count = int(mask.sum())
            boxes = tuple(boxes_from_mask(mask, _MAX_BOXES))
            how = "one of them " if "atomic" in (a.kind, prior.kind) else ""
            msg = (f"block {self._b(a.block)} (ct.{a.op}, line {a.line}) and block "
                   f"{self._b(prior.block)} "
                   f"(ct.{prior.op}, line {prior.line}) both write {self.info.name}, "
                   f"{how}without atomics; "
                   f"{self._extent(count, len(racing), 'write', boxes)}: a race on a GPU, "
                   f"the final value depends on block scheduling")
            out.append(self._finding("write_race", msg, a, other_block=prior.block,
                                     other_line=prior.line, boxes=boxes, count=count,
                                     occurrences=len(racing)))
        for hits in collisions.values():
            a = hits[0]
            dup = sum(h.flat_indices.size - np.unique(h.flat_indices).size for h in hits)
            msg = (f"ct.scatter lanes write the same element of {self.info.name} more than "
                   f"once ({dup} extra lane{'s' * (dup != 1)}; first in block {self._b(a.block)}): "
                   f"which lane wins is unspecified on a GPU")
            out.append(self._finding("scatter_collision", msg, a, count=dup,
                                     occurrences=len(hits)))
        return out

    @staticmethod
    def _scatter_collision(a: MemoryAccess, collisions: dict[int, list[MemoryAccess]]) -> None:
        if a.kind == "scatter" and a.flat_indices is not None \
                and np.unique(a.flat_indices).size < a.flat_indices.size:
            collisions.setdefault(a.line, []).append(a)

    def _extent(self, count: int, accesses: int, what: str, boxes: tuple[Box, ...]) -> str:
        """"12 elements over 3 reads, at C[0:4], C[8:16]" (ranges shortened past 3)."""
        shown = ", ".join(format_box(self.info.name, b) for b in boxes[:3])
        if count > sum(box_size(b) for b in boxes[:3]):
            shown += ", …"
        plural = "s" * (accesses != 1)
        return (f"{count} element{'s' * (count != 1)} over {accesses} {what}{plural}, "
                f"at {shown}")

    def _other_writer(self, mask: np.ndarray, block: Block) -> MemoryAccess | None:
        index = np.unravel_index(int(np.flatnonzero(mask.reshape(-1))[0]), self.shape)
        for w in self.trace.writers(self.info.name, index):
            if w.block != block:
                return w
        return None

    # -- reads of elements another block writes --------------------------------------------------
    def read_findings(self) -> list[Finding]:
        if self.plain_writer is None or not (self.plain_writer != -1).any():
            return []  # nothing written without atomics: every read is order-independent
        groups: dict[int, tuple[np.ndarray, list[int]]] = {}
        for i in self.idx:
            a = self.acc[i]
            if a.kind not in ("load", "gather") or self.locks[i] != 0:
                continue
            region = self._region(a)
            if region is None:
                continue
            writer = self.plain_writer[region]
            b = self.blocks[i]
            clash = (writer != -1) & (writer != b)
            if clash.any():
                mask, first = groups.setdefault(a.line, (np.zeros(self.shape, bool), []))
                first.append(i)
                _mark(mask, region, clash)
        out = []
        for mask, (i, *rest) in groups.values():
            a = self.acc[i]
            index = np.unravel_index(int(np.flatnonzero(mask.reshape(-1))[0]), self.shape)
            writer = next((w for w in self.trace.writers(self.info.name, index)
                           if w.block != a.block and w.kind != "atomic"), None)
            count = int(mask.sum())
            if writer is None:
                continue  # cannot happen: plain_writer says another block wrote it
            when = "after" if writer.seq < a.seq else "before"
            boxes = tuple(boxes_from_mask(mask, _MAX_BOXES))
            msg = (f"block {self._b(a.block)} reads {self.info.name} (ct.{a.op}, line "
                   f"{a.line}) where block {self._b(writer.block)} writes in the same launch "
                   f"(ct.{writer.op}, line {writer.line}); "
                   f"{self._extent(count, 1 + len(rest), 'read', boxes)}; "
                   f"in the emulator the read came {when} the write, on a GPU the value read "
                   f"depends on block scheduling")
            out.append(self._finding("order_dependent_read", msg, a, other_block=writer.block,
                                     other_line=writer.line, boxes=boxes, count=count,
                                     occurrences=1 + len(rest)))
        return out

    # -- output elements no block wrote ----------------------------------------------------
    def coverage_findings(self, contract: Contract) -> list[Finding]:
        stores = [self.acc[i] for i in self.idx if self.acc[i].kind in ("store", "scatter")]
        if not stores or not self.shape:
            return []
        name = self.info.name
        required = name in contract.outputs
        if not required and (name in contract.partial or any(
                self.acc[i].kind in ("load", "gather") for i in self.idx)):
            return []  # pre-filled by the host, or an in-place update: partial is normal
        written = np.zeros(self.shape, dtype=bool) if self.plain_writer is None \
            else self.plain_writer != -1
        for i in self.idx:  # atomics count as writes too, they just don't make an output
            a = self.acc[i]
            if a.kind == "atomic":
                region = self._region(a)
                if region is not None:
                    written[region] = True
        missing = ~written
        count = int(missing.sum())
        if count == 0:
            return []
        boxes = boxes_from_mask(missing)
        shown = ", ".join(format_box(self.info.name, b) for b in boxes[:_MAX_BOXES])
        if len(boxes) > _MAX_BOXES:
            shown += f" and {len(boxes) - _MAX_BOXES} more ranges"
        a = stores[0]
        msg = (f"{count} of {self.size} elements of output {name} were never "
               f"written by any block: {shown} (is the grid too small, or a tile index "
               f"wrong?)")
        if required:
            msg += f"; {name} is in outputs=, so every element must be written"
        else:
            msg += (f"; reported because the kernel only writes {name}, never reads it. If "
                    f"the host fills the rest, pass partial=[{name!r}]; if every element "
                    f"must be written, outputs=[{name!r}] makes this an error")
        return [Finding(kind="uncovered_output", message=msg, arg=name,
                        line=a.line, filename=a.filename,
                        boxes=tuple(boxes[:_MAX_BOXES]), count=count,
                        severity="error" if required else "warning")]


@dataclass(frozen=True)
class Contract:
    """What the user said about outputs: fully written (``outputs``) or partial."""

    outputs: frozenset[str]
    partial: frozenset[str]

    @classmethod
    def of(cls, trace: Trace, outputs, partial) -> Contract:
        names = {a.name for a in trace.arrays}
        sets = []
        for what, given in (("outputs", outputs), ("partial", partial)):
            if isinstance(given, str):
                given = [given]
            chosen = frozenset(given or ())
            unknown = sorted(chosen - names)
            if unknown:
                raise ValueError(f"{what}={sorted(chosen)} names {', '.join(unknown)}, not an "
                                 f"array argument of {trace.kernel}; its arrays are: "
                                 f"{', '.join(sorted(names))}")
            sets.append(chosen)
        both = sets[0] & sets[1]
        if both:
            raise ValueError(f"{', '.join(sorted(both))} cannot be in both outputs= and "
                             "partial=")
        return cls(*sets)


def _mark(mask: np.ndarray, region, selected: np.ndarray) -> None:
    """``mask[region][selected] = True``, also for flat-index regions with repeated
    indices (where ``mask[region] |= selected`` would let a False lane undo a True one)."""
    if isinstance(region, tuple) and region and isinstance(region[0], slice):
        view = mask[region]
        view |= selected
    else:
        mask[tuple(ix[selected] for ix in region)] = True
