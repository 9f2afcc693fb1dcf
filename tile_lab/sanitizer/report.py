"""What the sanitizer finds: :class:`Finding` and :class:`SanitizerReport` (plain records,
JSON, text), apart from the checks in ``checks.py`` that produce them. The report's HTML is
drawn by ``render/sanitizer_view.py`` (looked up through ``tile_lab.display``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..tracing.trace import ArrayInfo, Block, format_grid

__all__ = ["KINDS", "SEVERITIES", "Box", "Finding", "SanitizerReport", "box_size", "format_box"]

Box = tuple[tuple[int, ...], tuple[int, ...]]  # (start, stop) per axis, stop exclusive

KINDS = ("tile_out_of_bounds", "unchecked_out_of_bounds", "write_race", "scatter_collision",
         "order_dependent_read", "undetermined_value", "uncovered_output")
SEVERITIES = ("error", "warning")


@dataclass(frozen=True)
class Finding:
    """One problem found in a trace.

    ``kind`` is one of :data:`KINDS`. ``block``/``line`` are the access that exhibits the
    problem (for races and order-dependent reads: the later one in emulation order);
    ``other_block``/``other_line`` the access it conflicts with, when there is one.
    ``boxes`` are element ranges of ``arg`` (start, stop per axis; at most 8 are kept,
    ``count`` is the total number of elements involved) and ``occurrences`` how many
    accesses this finding groups (findings are grouped per kind, argument and line).
    """

    kind: str
    message: str
    arg: str
    line: int | None = None
    block: Block | None = None
    other_block: Block | None = None
    other_line: int | None = None
    boxes: tuple[Box, ...] = ()
    count: int = 0
    occurrences: int = 1
    filename: str = ""
    iteration: int | None = None  # of ``line`` in ``block`` (the loop trip), when known
    severity: str = "error"  # "error" | "warning"
    load_line: int | None = None  # undetermined_value: the load that padded
    mix_line: int | None = None  # undetermined_value: the op that mixed padding into kept lanes

    def ranges(self) -> str:
        """The element ranges as ``arg[a:b, c:d]`` text (``…`` when some were left off)."""
        text = ", ".join(format_box(self.arg, b) for b in self.boxes)
        return text + (", …" if self.count > sum(box_size(b) for b in self.boxes) else "")

    def to_json(self) -> dict:
        return {"kind": self.kind, "message": self.message, "arg": self.arg,
                "line": self.line, "block": self.block, "other_block": self.other_block,
                "other_line": self.other_line,
                "boxes": [[list(s), list(e)] for s, e in self.boxes],
                "count": self.count, "occurrences": self.occurrences,
                "filename": self.filename, "iteration": self.iteration,
                "severity": self.severity, "load_line": self.load_line,
                "mix_line": self.mix_line}


@dataclass(frozen=True)
class SanitizerReport:
    """The findings of one sanitizer run (empty when the kernel is clean)."""

    kernel: str
    grid: Block
    findings: tuple[Finding, ...] = ()
    accesses: int = 0  # how many memory operations were checked
    arrays: tuple[ArrayInfo, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """No errors (warnings may remain: see ``warnings``)."""
        return not self.errors

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def of_kind(self, kind: str) -> list[Finding]:
        if kind not in KINDS:
            raise ValueError(f"unknown finding kind {kind!r}; kinds are: {', '.join(KINDS)}")
        return [f for f in self.findings if f.kind == kind]

    def summary(self) -> str:
        """One line: kernel, grid, and how many findings of each kind."""
        head = (f"sanitizer: {self.kernel} grid={format_grid(self.grid)}: {self.accesses} "
                "memory ops checked")
        if not self.findings:
            return head + ", no problems found"
        counts: dict[str, int] = {}
        for f in self.findings:
            counts[f.kind] = counts.get(f.kind, 0) + 1
        parts = ", ".join(f"{n} {k}" for k, n in counts.items())
        return f"{head}, {len(self.findings)} finding{'s' * (len(self.findings) != 1)}: {parts}"

    def __str__(self) -> str:
        lines = [self.summary()]
        for f in self.findings:
            where = f"line {f.line}" if f.line is not None else "no line"
            tag = f.kind if f.severity == "error" else f"{f.kind}, {f.severity}"
            lines.append(f"- [{tag}] {where}, {f.arg}: {f.message}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from ..display import mimebundle  # drawn by render/sanitizer_view.py

        return str(mimebundle(self).get("text/html", ""))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # text/plain is str(self), the readable report (a terminal IPython shows only that;
        # without this it showed the dataclass repr); text/html is _repr_html_'s
        from ..display import mimebundle

        return mimebundle(self)

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "grid": list(self.grid), "accesses": self.accesses,
                "findings": [f.to_json() for f in self.findings]}


def format_box(arg: str, box: Box) -> str:
    """``C[0:64, 128:192]`` (a single element prints as ``C[3, 5]``)."""
    parts = [str(s) if e == s + 1 else f"{s}:{e}" for s, e in zip(*box)]
    return f"{arg}[{', '.join(parts)}]"


def box_size(box: Box) -> int:
    """How many elements ``box`` holds (a 0-d box holds one)."""
    return int(np.prod([e - s for s, e in zip(*box)])) if box[0] else 1
