"""The sanitizer: checks an access :class:`~tile_lab.tracing.trace.Trace` for memory bugs.

``sanitize(kernel, grid, args)`` emulates the kernel (``tile_lab.trace``) and checks the
trace; ``check_trace(trace)`` checks a trace you already have. Findings, each with the
block, source line, argument and element ranges involved:

``tile_out_of_bounds``
    a ``ct.load``/``ct.store`` tile lying entirely outside its array (undefined behaviour
    in cuTile; a *partly* outside tile is fine: its lanes are padded or discarded).
``unchecked_out_of_bounds``
    an access made with ``check_bounds=False`` that touched lanes outside the array.
``write_race``
    an element written by two different blocks where the writes are not both atomics
    (or both inside critical sections of the same ``atomic_cas`` spin-lock).
``scatter_collision``
    one ``scatter`` whose lanes write the same element more than once (which lane wins
    is unspecified on a GPU).
``order_dependent_read``
    a block reads an element that *another* block writes (non-atomically) in the same
    launch: the value read depends on block scheduling, whether the write came first in
    the emulator's order or not.
``uncovered_output``
    an output has elements no block wrote. Only *write-only* arguments (stored or
    scattered to, never read by the kernel) count as outputs: an array the kernel also
    reads is an in-place update, where a partial write is normal (a RoPE kernel rotating
    the first quarter of ``head_dim``). ``partial=[...]`` names write-only outputs the host
    pre-fills (never reported); ``outputs=[...]`` names outputs the kernel's contract says
    are fully written: for those the finding is an ``error``, for other write-only arrays a
    ``warning`` that says how it was decided.
``undetermined_value``
    an undetermined value reaches an output: lanes a load padded under
    ``PaddingMode.UNDETERMINED`` (cuTile's default) were written to in-bounds elements,
    directly or after an op mixed them into kept lanes (e.g. a ``ct.sum`` over a ragged
    row). The finding names the load, the mixing op, the store and the elements. Padded
    lanes masked out by ``ct.where``, discarded by the store, or never mixed into kept
    lanes are not reported.

Every finding has a ``severity``: ``error`` (undefined behaviour, a race, a value that can
be garbage on a GPU, or a broken contract you stated) or ``warning`` (suspicious but correct
for some kernels). ``SanitizerReport.ok`` is True when there are no errors.

Every check is vectorised: per array, an int32 "last writer" array updated box by box
(or with the flat indices of gathers/scatters/atomics), never a Python loop over elements.

Spin-locks: an ``atomic_cas`` on a lock element starts a critical section of that block;
a later non-CAS atomic (``atomic_xchg``, ``atomic_add``...) on the same element ends it.
Plain accesses inside hold the lock; two blocks writing an element under the same lock do
not race, and reads under a lock are not order-dependent. This is a heuristic (the trace
does not record whether a CAS succeeded), sound for the usual acquire-loop/release shape.

Known limitation: other synchronisation through atomics is not modelled. A "last block
reduces" pattern (each block stores a partial, takes a ticket with ``atomic_add``, and the
block drawing the last ticket reads every partial) is reported as order-dependent reads.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .sanitizer_report import (
    KINDS,
    Box,
    Finding,
    SanitizerReport,
    box_size,
    format_box,
)
from .sanitizer_report import SEVERITIES as SEVERITIES  # the report's types, importable here too
from .tracing.trace import ArrayInfo, Block, MemoryAccess, Trace, format_block

# ops whose tile entirely outside the array is undefined (partly outside is fine); for
# these the trace records lanes, not a box
_ADVANCED_INDEXING = frozenset({"load_advanced_indexing", "store_advanced_indexing"})
PROGRESS_MIN_ACCESSES = 50_000  # smaller traces check in well under a second: no bar
_MAX_BOXES = 8  # element ranges kept per finding; ``count`` always has the full total


# ---- public entry points --------------------------------------------------------------

def sanitize(kernel, grid, args, *, outputs: Iterable[str] | None = None,
             partial: Iterable[str] | None = None) -> SanitizerReport:
    """Emulate ``kernel`` on ``grid`` with ``args`` (like ``tile_lab.trace``: NumPy arrays
    are updated in place) and check every memory access it made.

    ``outputs``: argument names the kernel must write completely (an unwritten element is
    an error); ``partial``: write-only arguments it may write in part (the host fills the
    rest). See the module docstring for every check."""
    from .emulator.runtime import trace as run_trace

    return check_trace(run_trace(kernel, grid, args), outputs=outputs, partial=partial)


def check_trace(trace: Trace, *, outputs: Iterable[str] | None = None,
                partial: Iterable[str] | None = None) -> SanitizerReport:
    """Check a trace you already have; see the module docstring for the checks."""
    contract = _Contract.of(trace, outputs, partial)
    with _progress(trace) as bar:
        blocks = _block_ids(trace)
        locks = _locksets(trace)
        bar.update(1)
        by_arg: dict[str, list[int]] = {}
        for i, a in enumerate(trace.accesses):
            by_arg.setdefault(a.arg, []).append(i)
        findings: list[Finding] = []
        for info in trace.arrays:
            accesses = by_arg.get(info.name)
            if not accesses:
                bar.update(4)
                continue
            checker = _ArrayChecker(trace, info, accesses, blocks, locks)
            for check in (checker.bounds_findings, checker.write_findings,
                          checker.read_findings, lambda c=checker: c.coverage_findings(contract)):
                bar.set_postfix_str(info.name)
                findings += check()
                bar.update(1)
        findings += undetermined_findings(trace)
    order = {k: i for i, k in enumerate(KINDS)}
    findings.sort(key=lambda f: (order[f.kind], f.line or 0, f.arg))
    return SanitizerReport(kernel=trace.kernel, grid=trace.grid, findings=tuple(findings),
                           accesses=len(trace.accesses), arrays=trace.arrays)


def _progress(trace: Trace):
    """A bar over the checks (one per array and check) for traces big enough to take a
    while; a no-op otherwise (tqdm is not even imported)."""
    if len(trace.accesses) < PROGRESS_MIN_ACCESSES:
        return contextlib.nullcontext(_NoBar())
    from .progress import progress

    return progress(1 + 4 * len(trace.arrays), f"sanitize {trace.kernel}", unit="check")


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass


# ---- helpers on boxes -------------------------------------------------------------------

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


def _block_ids(trace: Trace) -> np.ndarray:
    """Linear block id of every access (x fastest), as an int32 array indexed by position."""
    gx, gy, _ = trace.grid
    return np.array([b[0] + gx * (b[1] + gy * b[2]) for b in (a.block for a in trace.accesses)],
                    dtype=np.int32)


def _locksets(trace: Trace) -> list[int]:
    """For every access, an id of the lock its block holds (0: none). A block holds lock
    (arg, element) from an ``atomic_cas`` on that element until a later non-CAS atomic on
    it. Nested locks get the id of the innermost one."""
    def lock_key(a: MemoryAccess) -> tuple[str, int] | None:
        if a.kind == "atomic" and a.flat_indices is not None and a.flat_indices.size:
            return (a.arg, int(a.flat_indices.min()))
        return None

    # a CAS only starts a critical section if the same block later releases that element
    # (a CAS used as a compare-and-swap update, with no release, is just an atomic)
    acquired: set[tuple[Block, tuple[str, int]]] = set()
    released: set[tuple[Block, tuple[str, int]]] = set()
    for a in trace.accesses:
        key = lock_key(a)
        if key is None:
            continue
        if a.op == "atomic_cas":
            acquired.add((a.block, key))
        elif (a.block, key) in acquired:
            released.add((a.block, key))
    ids: dict[tuple[str, int], int] = {}
    held: dict[Block, list[tuple[str, int]]] = {}
    out: list[int] = []
    for a in trace.accesses:
        stack = held.setdefault(a.block, [])
        key = lock_key(a)
        if a.op == "atomic_cas" and key is not None and (a.block, key) in released:
            if key not in stack:
                stack.append(key)
            out.append(0)  # the CAS itself is an atomic, never checked as plain access
            continue
        if a.kind == "atomic" and key is not None and key in stack:
            stack.remove(key)
            out.append(0)
            continue
        out.append(ids.setdefault(stack[-1], len(ids) + 1) if stack else 0)
    return out


class _ArrayChecker:
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
    def coverage_findings(self, contract: _Contract) -> list[Finding]:
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
class _Contract:
    """What the user said about outputs: fully written (``outputs``) or partial."""

    outputs: frozenset[str]
    partial: frozenset[str]

    @classmethod
    def of(cls, trace: Trace, outputs, partial) -> _Contract:
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


def undetermined_findings(trace: Trace) -> list[Finding]:
    """One finding per (output, store line, load line, mixing line), over all blocks."""
    groups: dict[tuple, list] = {}
    for u in trace.undetermined:
        groups.setdefault((u.arg, u.line, u.load_line, u.mix_line), []).append(u)
    out = []
    for (arg, line, load_line, mix_line), us in groups.items():
        first = us[0]
        nd = len(first.box_start)
        box = (tuple(min(u.box_start[k] for u in us) for k in range(nd)),
               tuple(max(u.box_stop[k] for u in us) for k in range(nd)))
        count = sum(u.elements for u in us)
        blocks = len({u.block for u in us})
        how = (f", mixed into kept lanes by ct.{first.mix_op} at line {mix_line}"
               if mix_line is not None else ", stored as they are")
        msg = (f"undetermined value reaches output {arg}: lanes padded by the {first.load_op} "
               f"of {first.load_arg} at line {load_line} (PaddingMode.UNDETERMINED, the "
               f"default){how}, written by {first.op} at line {line} to "
               f"{format_box(arg, box)} ({count} element{'s' * (count != 1)} in {blocks} "
               f"block{'s' * (blocks != 1)}); on a GPU these can be garbage. Mask the padded "
               f"lanes (ct.where) or load with padding_mode=ct.PaddingMode.ZERO")
        out.append(Finding(kind="undetermined_value", message=msg, arg=arg, line=line,
                           block=first.block, boxes=(box,), count=count, occurrences=len(us),
                           filename=first.filename, load_line=load_line, mix_line=mix_line))
    return out


def _mark(mask: np.ndarray, region, selected: np.ndarray) -> None:
    """``mask[region][selected] = True``, also for flat-index regions with repeated
    indices (where ``mask[region] |= selected`` would let a False lane undo a True one)."""
    if isinstance(region, tuple) and region and isinstance(region[0], slice):
        view = mask[region]
        view |= selected
    else:
        mask[tuple(ix[selected] for ix in region)] = True
