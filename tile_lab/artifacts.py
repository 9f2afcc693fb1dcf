"""Compile artifacts: what the compiler made of a kernel, with line maps back to source.

Plain, frozen, JSON-serialisable data (no HTML here). ``Inspection`` is what
``tile_lab.inspect`` returns; its rich display hands off to ``tile_lab.render.html``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field
from typing import Any

MIME_TYPE = "application/vnd.tile-lab.v1+json"

# Stage names, in the order the panes are shown.
STAGES = ("source", "cutile", "tileir", "ptx", "sass", "remarks")


@dataclass(frozen=True)
class Remark:
    """One compiler remark (tileiras ``--remarks``), attached to a source line if known."""

    kind: str  # "passed" | "missed" | "failed" | "analysis"
    category: str  # e.g. "memory", "tensorcore"
    message: str
    line: int | None = None
    col: int | None = None
    pass_name: str = ""


@dataclass(frozen=True)
class StageText:
    """The text of one IR stage and, per text line, the source line it came from.

    ``line_map[i]`` is the 1-based source line (in ``Inspection.filename`` numbering) of
    text line ``i`` (0-based), or None for lines with no location (headers, labels).
    """

    name: str
    text: str
    line_map: tuple[int | None, ...]

    def lines(self) -> list[str]:
        return self.text.splitlines()


@dataclass(frozen=True)
class Inspection:
    """Everything tile_lab knows about one compiled kernel.

    ``source`` is the kernel function's source text; its first line is line
    ``first_line`` of ``filename`` (for a ``%%tile`` cell, numbered as the user sees the
    cell, the ``%%tile`` line being line 1).
    """

    kernel_name: str
    filename: str
    first_line: int
    source: str
    arch: str
    signature: str  # human-readable, e.g. "f32[4096], f32[4096], f32[4096], TILE=128"
    hints: dict[str, Any]
    stages: dict[str, StageText]  # keys among STAGES other than "source"/"remarks"
    cubin: bytes = b""
    remarks: tuple[Remark, ...] = ()
    versions: dict[str, str] = field(default_factory=dict)  # cuda.tile, tileiras, ...
    show: tuple[str, ...] = ("source", "tileir", "sass", "remarks")

    # -- the attributes the issue names ------------------------------------------------
    @property
    def cutile_ir(self) -> str:
        return self.stages["cutile"].text if "cutile" in self.stages else ""

    @property
    def tileir(self) -> str:
        return self.stages["tileir"].text if "tileir" in self.stages else ""

    @property
    def ptx(self) -> str | None:
        """PTX text, or None where unobtainable. tileiras has no PTX output option; tile_lab
        reads the PTX tileiras embeds in a ``--lineinfo`` cubin (``.nv_debug_ptx_txt``),
        so this is None only for a cubin without that section."""
        return self.stages["ptx"].text if "ptx" in self.stages else None

    @property
    def sass(self) -> str:
        return self.stages["sass"].text if "sass" in self.stages else ""

    @property
    def line_map(self) -> dict[str, tuple[int | None, ...]]:
        """For each stage: text line index -> source line (None where unknown)."""
        return {name: st.line_map for name, st in self.stages.items()}

    @property
    def source_lines(self) -> list[tuple[int, str]]:
        """(line number, text) for each line of the kernel source."""
        return [(self.first_line + i, t) for i, t in enumerate(self.source.splitlines())]

    # -- serialisation -----------------------------------------------------------------
    def to_json_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cubin"] = base64.b64encode(self.cubin).decode("ascii")
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Inspection:
        d = json.loads(text)
        d["cubin"] = base64.b64decode(d["cubin"])
        d["stages"] = {k: StageText(v["name"], v["text"], tuple(v["line_map"]))
                       for k, v in d["stages"].items()}
        d["remarks"] = tuple(Remark(**r) for r in d["remarks"])
        d["show"] = tuple(d["show"])
        return cls(**d)

    def with_show(self, show: tuple[str, ...]) -> Inspection:
        from dataclasses import replace
        return replace(self, show=tuple(show))

    # -- display: hand off to the renderer ---------------------------------------------
    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        from .render.html import inspection_mimebundle
        return inspection_mimebundle(self)

    def __repr__(self) -> str:
        n = {k: len(v.lines()) for k, v in self.stages.items()}
        return (f"Inspection({self.kernel_name} for {self.arch}: {self.signature}; "
                f"stage lines {n}; {len(self.remarks)} remarks)")
