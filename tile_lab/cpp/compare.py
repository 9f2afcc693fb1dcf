"""Python and C++ versions of one kernel, their Tile IR aligned op by op.

Both languages compile through Tile IR, so the same kernel written twice should show
the same core ops (``load_view_tko``, ``addf``, ``mmaf``, ``store_view_tko``); what
differs is bookkeeping (C++ computes extents with integer ops, Python adds ``assume``).
The alignment runs difflib over op names: first over the work ops (memory, arithmetic,
control flow), then over the bookkeeping ops in each gap between two aligned work ops.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..compile.artifacts import Inspection
from ..compile.stage_rows import Row, TileIRRow, entry_symbols, normalised_op_text
from ..errors import TileLabError
from . import source as src

# kinds of aligned rows, with the marker shown between the columns
KINDS = {
    "same": "=",  # same op, same operands/attributes/types up to SSA names
    "similar": "\u2248",  # same op, attributes or types differ
    "different": "\u2260",  # different ops at the same place
    "py_only": "\u2190",  # only in the Python kernel
    "cpp_only": "\u2192",  # only in the C++ kernel
}


@dataclass(frozen=True)
class OpLine:
    """One op of a kernel body: its name, its text and the source line it came from."""

    op: str
    text: str  # the op's line without its location, SSA names as printed
    source_line: int | None
    source_text: str | None  # that source line, for tooltips

    @property
    def normalised(self) -> str:
        """The text with SSA names and token operands erased, for comparing ops across
        languages (each front end threads memory-ordering tokens its own way)."""
        return normalised_op_text(self.text)


@dataclass(frozen=True)
class OpPair:
    """One row of the alignment: a Python op, a C++ op, or both."""

    kind: str  # one of KINDS: "same" = same op and same text up to SSA names and tokens
    py: OpLine | None
    cpp: OpLine | None


def _body_rows(rows: Sequence[Row], symbol: str | None) -> Sequence[Row]:
    """Rows of one entry's body (the first entry when ``symbol`` is None)."""
    start = next((r for r in rows if isinstance(r, TileIRRow) and r.symbol is not None
                  and (symbol is None or r.symbol == symbol)), None)
    if start is None:
        return ()
    indent = len(start.text) - len(start.text.lstrip())
    for r in rows[start.index + 1:]:
        if r.text.strip().startswith("}") and len(r.text) - len(r.text.lstrip()) == indent:
            return rows[start.index + 1:r.index]
    return rows[start.index + 1:]


def kernel_ops(insp: Inspection, symbol: str | None = None) -> list[OpLine]:
    """The ops of ``insp``'s kernel body in its Tile IR, in order."""
    stage = insp.stages.get("tileir")
    if stage is None or not stage.text.strip():
        raise TileLabError(f"the inspection of {insp.kernel_name} has no Tile IR stage")
    src_lines = dict(insp.source_lines)
    ops = []
    for row in _body_rows(stage.rows, symbol):
        stripped = row.code if isinstance(row, TileIRRow) else ""
        if not stripped or stripped.startswith(("}", "(", "//", "^")):
            continue  # region ends, region arguments, comments, block labels
        if not isinstance(row, TileIRRow) or row.op is None:
            continue
        text = src_lines.get(row.line) if row.line is not None else None
        ops.append(OpLine(row.op, stripped, row.line, text.strip() if text else None))
    return ops


# Ops that do index arithmetic and ordering rather than the kernel's work. They differ most
# between the languages (C++ computes extents, Python states assumptions), so the work ops
# are aligned first and these fill the gaps between them.
BOOKKEEPING_OPS = frozenset({
    "constant", "assume", "make_token", "join_tokens", "addi", "subi", "muli", "divi", "remi",
    "cmpi", "exti", "trunci", "andi", "ori", "xori", "select", "mini", "maxi"})


def _matched(p: OpLine, c: OpLine) -> OpPair:
    return OpPair("same" if p.normalised == c.normalised else "similar", p, c)


def _diff_pairs(py_ops: list[OpLine], cpp_ops: list[OpLine]) -> list[OpPair]:
    """Align by op name with difflib; unmatched runs become different/py_only/cpp_only."""
    matcher = difflib.SequenceMatcher(a=[o.op for o in py_ops], b=[o.op for o in cpp_ops],
                                      autojunk=False)
    pairs: list[OpPair] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for p, c in zip(py_ops[i1:i2], cpp_ops[j1:j2]):
                pairs.append(_matched(p, c))
            continue
        py_part, cpp_part = py_ops[i1:i2], cpp_ops[j1:j2]
        n = min(len(py_part), len(cpp_part)) if tag == "replace" else 0
        pairs += [OpPair("different", p, c) for p, c in zip(py_part[:n], cpp_part[:n])]
        pairs += [OpPair("py_only", p, None) for p in py_part[n:]]
        pairs += [OpPair("cpp_only", None, c) for c in cpp_part[n:]]
    return pairs


def align_ops(py_ops: list[OpLine], cpp_ops: list[OpLine]) -> tuple[OpPair, ...]:
    """Align two op sequences: work ops first (difflib on their names), then the
    bookkeeping ops between each pair of aligned work ops."""
    py_work = [i for i, o in enumerate(py_ops) if o.op not in BOOKKEEPING_OPS]
    cpp_work = [j for j, o in enumerate(cpp_ops) if o.op not in BOOKKEEPING_OPS]
    matcher = difflib.SequenceMatcher(a=[py_ops[i].op for i in py_work],
                                      b=[cpp_ops[j].op for j in cpp_work], autojunk=False)
    anchors = [(py_work[b.a + k], cpp_work[b.b + k])
               for b in matcher.get_matching_blocks() for k in range(b.size)]
    pairs: list[OpPair] = []
    pi = ci = 0
    for ai, aj in [*anchors, (len(py_ops), len(cpp_ops))]:
        pairs += _diff_pairs(py_ops[pi:ai], cpp_ops[ci:aj])
        if ai < len(py_ops):
            p, c = py_ops[ai], cpp_ops[aj]
            pairs.append(_matched(p, c))
        pi, ci = ai + 1, aj + 1
    return tuple(pairs)


@dataclass(frozen=True)
class Comparison:
    """The Tile IR of a Python kernel and of a C++ kernel, aligned op by op."""

    py_kernel: str
    cpp_kernel: str
    py_arch: str
    cpp_arch: str
    pairs: tuple[OpPair, ...]

    def count(self, kind: str) -> int:
        return sum(1 for p in self.pairs if p.kind == kind)

    @property
    def common_ops(self) -> tuple[str, ...]:
        """Op names aligned with each other (same or similar), in first-seen order."""
        names = [p.py.op for p in self.pairs if p.kind in ("same", "similar") and p.py]
        return tuple(dict.fromkeys(names))

    def matched(self, op: str) -> list[OpPair]:
        """The rows where op ``op`` of one side is aligned with the same op of the other."""
        return [p for p in self.pairs if p.kind in ("same", "similar") and p.py
                and p.py.op == op]

    def summary(self) -> str:
        parts = [f"{self.count(k)} {label}" for k, label in (
            ("same", "same"), ("similar", "similar"), ("different", "different"),
            ("py_only", "only in Python"), ("cpp_only", "only in C++")) if self.count(k)]
        return (f"{self.py_kernel} (Python, {self.py_arch}) vs {self.cpp_kernel} "
                f"(C++, {self.cpp_arch}): " + ", ".join(parts or ["no ops"]))

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __repr__(self) -> str:
        return f"Comparison({self.summary()})"

    def _repr_html_(self) -> str:
        from ..display import mimebundle

        return str(mimebundle(self).get("text/html", ""))


def _entry_symbol(insp: Inspection, cpp: bool) -> str | None:
    symbols = entry_symbols(insp.stages["tileir"].rows) if "tileir" in insp.stages else []
    if cpp:
        return src.match_symbol(symbols, insp.kernel_name)
    # cuTile Python names an entry after the function plus a signature suffix
    named = [s for s in symbols if s == insp.kernel_name or s.startswith(insp.kernel_name + "_")]
    return (named or symbols or [None])[0]


def compare(py: Any, cpp: Any, *, py_args: Any = None, arch: str | None = None) -> Comparison:
    """Align the Tile IR of a Python kernel and a C++ kernel op by op.

    ``py`` is an Inspection from ``tile_lab.inspect`` or a ``@ct.kernel`` (then
    ``py_args``, example args or a sig-spec string, is required). ``cpp`` is an
    Inspection from ``inspect_cpp``, or C++ source text / a ``.cu`` path with one kernel.
    Both are compiled for the same arch (``arch``, else the other side's, else the default).
    """
    from .build import inspect_cpp

    if not isinstance(py, Inspection) and isinstance(cpp, Inspection):
        arch = arch or cpp.arch
    if not isinstance(py, Inspection):
        if py_args is None:
            raise TileLabError("compare(kernel, cpp) needs py_args= (example args or a "
                               "sig-spec string) to compile the Python kernel")
        from ..compile.inspect import inspect as inspect_py

        py = inspect_py(py, py_args, arch=arch)
    if isinstance(cpp, (str, os.PathLike)):
        cpp = inspect_cpp(cpp, arch=arch or py.arch)
    if not isinstance(cpp, Inspection):
        raise TileLabError(f"compare: cpp must be an Inspection from inspect_cpp or C++ "
                           f"source text, not {type(cpp).__name__}")
    py_ops = kernel_ops(py, _entry_symbol(py, cpp=False))
    cpp_ops = kernel_ops(cpp, _entry_symbol(cpp, cpp=True))
    return Comparison(py.kernel_name, cpp.kernel_name, py.arch, cpp.arch,
                      align_ops(py_ops, cpp_ops))
