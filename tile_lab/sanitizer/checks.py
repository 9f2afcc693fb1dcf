"""The sanitizer: checks an access :class:`~tile_lab.tracing.trace.Trace` for memory bugs.

``sanitize_kernel(kernel, grid, args)`` (under ``tile_lab.sanitize``) emulates the kernel
(``tile_lab.trace``) and checks the trace; ``check_trace(trace)`` checks a trace you already
have. Findings, each with the block, source line, argument and element ranges involved:

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

import numpy as np

from ..tracing.trace import Block, MemoryAccess, Trace
from .array_checks import ArrayChecker, Contract
from .report import (
    KINDS,
    Finding,
    SanitizerReport,
    format_box,
)
from .report import SEVERITIES as SEVERITIES  # the report's types, importable here too

PROGRESS_MIN_ACCESSES = 50_000  # smaller traces check in well under a second: no bar



# ---- public entry points --------------------------------------------------------------

def sanitize_kernel(kernel, grid, args, *, outputs: Iterable[str] | None = None,
                    partial: Iterable[str] | None = None) -> SanitizerReport:
    """The sanitizer under ``tile_lab.sanitize`` (whose docstring says what it does): the
    kernel's trace, checked (``outputs``, ``partial`` as for :func:`check_trace`)."""
    from ..emulator.runtime import trace_kernel as run_trace

    return check_trace(run_trace(kernel, grid, args), outputs=outputs, partial=partial)


def check_trace(trace: Trace, *, outputs: Iterable[str] | None = None,
                partial: Iterable[str] | None = None) -> SanitizerReport:
    """Check a trace you already have; see the module docstring for the checks."""
    contract = Contract.of(trace, outputs, partial)
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
            checker = ArrayChecker(trace, info, accesses, blocks, locks)
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
    from ..progress import progress

    return progress(1 + 4 * len(trace.arrays), f"sanitize {trace.kernel}", unit="check")


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass


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
