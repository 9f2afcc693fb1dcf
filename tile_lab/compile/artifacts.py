"""Compile artifacts: what the compiler made of a kernel, with line maps back to source.

Plain, frozen, JSON-serialisable data (no HTML here). ``Inspection`` is what
``tile_lab.inspect`` returns; its rich display hands off to ``tile_lab.render.html``.
"""

from __future__ import annotations

import base64
import json
import weakref
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any

from .stage_rows import Row, SassRow, parse_rows, sass_opcode

__all__ = ["MIME_TYPE", "STAGES", "Inspection", "LazyStages", "Remark", "StageText",
           "sass_opcode"]

MIME_TYPE = "application/vnd.tile-lab.v1+json"

# Stage names, in the order the panes are shown. "ttir"/"ttgir": Triton IR and TritonGPU IR of
# a @triton.jit kernel (tile_lab.triton), which compiles through them instead of Tile IR.
STAGES = ("source", "cutile", "ttir", "ttgir", "tileir", "ptx", "sass", "remarks")


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

    @cached_property
    def rows(self) -> tuple[Row, ...]:
        """The text parsed once into typed rows, one per line (``tile_lab.compile.stage_rows``:
        SassRow for "sass", TileIRRow for "tileir", Row otherwise), made on first use."""
        return parse_rows(self.name, self.text, self.line_map)

    def __getstate__(self) -> dict[str, Any]:
        # pickles (Inspections shipped to other processes) carry the text, not its rows
        return {"name": self.name, "text": self.text, "line_map": self.line_map}


class LazyStages(Mapping[str, StageText]):
    """Stages of which some are still being made in the background.

    ``ready`` stages are there now; the ``pending`` names (known up front, so iterating,
    ``len`` and ``in`` never wait) come from ``future``, whose result is a mapping holding
    at least those names; each ``own`` stage comes from a future of its own (Tile IR from
    tileirdisasm, which a compile that never shows it, e.g. a timing run, never needs).
    Reading a pending stage waits for its future once; an error it raised (e.g. nvdisasm's
    ToolchainError) is raised on every read of that stage. Copies and
    pickles are plain dicts of the finished stages, so an Inspection round-trips
    unchanged. Compares equal to any mapping with the same stages. Garbage-collected
    before the future started, it cancels the future.
    """

    def __init__(self, ready: Mapping[str, StageText], pending: Sequence[str],
                 future: Future[Mapping[str, StageText]], *,
                 own: Mapping[str, Future[StageText]] | None = None) -> None:
        self._own = dict(own or {})
        names = [*ready, *self._own, *pending]
        if len(set(names)) < len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"stages both ready and pending: {twice}")
        self._ready = dict(ready)
        self._pending = tuple(pending)
        self._future = future
        self._done: dict[str, StageText] | None = None
        # dropped before the work started (e.g. queued behind other disassemblies): the
        # work is for nobody, so it never starts
        weakref.finalize(self, _cancel_all, (future, *self._own.values()))

    def is_ready(self) -> bool:
        """True once every stage can be read without waiting."""
        return self._done is not None or (
            self._future.done() and all(f.done() for f in self._own.values()))

    def resolved(self) -> dict[str, StageText]:
        """All stages as a plain dict, waiting for the pending ones."""
        if self._done is None:
            made = self._made()
            self._done = {**self._ready, **{n: f.result() for n, f in self._own.items()},
                          **{n: made[n] for n in self._pending}}
        return self._done

    def _made(self) -> Mapping[str, StageText]:
        made = self._future.result()  # raises the background error, if any
        missing = [n for n in self._pending if n not in made]
        if missing:
            raise KeyError(f"background stage work did not produce {missing}")
        return made

    def __getitem__(self, name: str) -> StageText:
        if name in self._ready:
            return self._ready[name]
        if name in self._own:
            return self._own[name].result()
        if name in self._pending:  # not resolved(): an own stage's failure is not this one's
            return self._done[name] if self._done is not None else self._made()[name]
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:  # Mapping's default would wait
        return name in self._ready or name in self._own or name in self._pending

    def __iter__(self) -> Iterator[str]:
        yield from self._ready
        yield from self._own
        yield from self._pending

    def __len__(self) -> int:
        return len(self._ready) + len(self._own) + len(self._pending)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, StageText]:
        return dict(self.resolved())  # StageTexts are frozen: sharing them is a deep copy

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.resolved(),))

    def __repr__(self) -> str:
        state = "ready" if self.is_ready() else "pending"
        return (f"LazyStages(ready={list(self._ready)}, "
                f"{state}={[*self._own, *self._pending]})")


def _cancel_all(futures: tuple[Future[Any], ...]) -> None:
    for future in futures:
        future.cancel()


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
    # keys among STAGES other than "source"/"remarks"; ``tile_lab.inspect`` gives a
    # LazyStages whose SASS/PTX are still being disassembled when it returns
    stages: Mapping[str, StageText]
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

    def spill_instructions(self) -> dict[str, int]:
        """How many local-memory loads (``LDL``) and stores (``STL``) the SASS holds: where the
        kernel's tiles do not fit in registers the compiler spills them there (both are 0 when
        they fit). Counted on the compiled code, so no GPU is needed."""
        counts = {"LDL": 0, "STL": 0}
        for row in self.stages["sass"].rows if "sass" in self.stages else ():
            op = row.opcode if isinstance(row, SassRow) else None
            if op in counts:
                counts[op] += 1
        return counts

    @property
    def source_lines(self) -> list[tuple[int, str]]:
        """(line number, text) for each line of the kernel source."""
        return [(self.first_line + i, t) for i, t in enumerate(self.source.splitlines())]

    # -- serialisation -----------------------------------------------------------------
    def to_json_dict(self) -> dict[str, Any]:
        # asdict only recurses into real dicts: hand it the stages as one (this waits for
        # lazy stages, which JSON must hold)
        d = asdict(replace(self, stages=dict(self.stages)))
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
        return replace(self, show=tuple(show))

    # -- display: the renderer is looked up (tile_lab.display), never imported here -------
    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        from ..display import mimebundle
        return mimebundle(self)

    def __repr__(self) -> str:
        n = {k: len(v.lines()) for k, v in self.stages.items()}
        return (f"Inspection({self.kernel_name} for {self.arch}: {self.signature}; "
                f"stage lines {n}; {len(self.remarks)} remarks)")
