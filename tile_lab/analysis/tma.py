"""Which loads and stores became TMA bulk tensor copies, and why the others did not.

Read from an :class:`~tile_lab.compile.artifacts.Inspection` (no compiling here): the Tile IR holds
one ``load_view_tko`` / ``store_view_tko`` per tile-space load/store with the tensor view it
reads (base pointer, shape, strides and the ``assume div_by<N>`` facts cuTile derived from
the arguments), and the SASS, line-mapped, shows what the source line became: TMA
instructions (``UTMALDG``, ``UTMASTG``, ``UBLKCP``, ...) or plain ``LDG``/``STG``.

What tile_lab's own compiles show (cuda-tile 1.7.0, tileiras 13.4, sm_90): a GEMM's K-loop
loads and its store become ``UTMALDG.2D`` / ``UTMASTG.2D``; the same loads with
``allow_tma=False`` or with a row stride that is not a multiple of 16 bytes do not; and a
plain 2-D copy stays ``LDG``/``STG`` even when every TMA precondition holds — the view ops
(``*_view_tko``) look the same in Tile IR either way, so only the SASS tells.

The reasons, in order: the architecture (TMA needs sm_90 or newer); the compiler's own
remark when it gives one ("Failed to select TMA load instruction: stride not 16-byte
aligned"), followed by what the Tile IR shows; the op's ``allow_tma = false`` hint, a
non-contiguous innermost axis, strides and base address not known to be multiples of 16
bytes, a tile row narrower than 16 bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..compile.artifacts import Inspection
from ..compile.stage_rows import SassRow, TileIRRow, TileViews, ViewAccess, tile_views

__all__ = ["PLAIN_OPCODES", "TMA_OPCODES", "TmaLine", "TmaReport", "tma_report"]

TMA_OPCODES = ("UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UBLKCP", "UBLKRED", "UBLKPF")
PLAIN_OPCODES = ("LDG", "STG", "LDGSTS", "LDGDEPBAR")
_ELEM_BYTES = {"i1": 1, "i8": 1, "f8E4M3FN": 1, "f8E5M2": 1, "i16": 2, "f16": 2, "bf16": 2,
               "i32": 4, "f32": 4, "tf32": 4, "i64": 8, "f64": 8}


@dataclass(frozen=True)
class TmaLine:
    """One source line holding a tile-space load or store."""

    line: int
    kind: str  # "load" | "store"
    tma: bool  # its SASS holds a TMA instruction
    sass_ops: tuple[str, ...]  # the memory opcodes its SASS holds, e.g. ("UTMALDG",)
    reason: str  # why it is / is not TMA, in words

    @property
    def verdict(self) -> str:
        return "TMA" if self.tma else "no TMA"


@dataclass(frozen=True)
class TmaReport:
    arch: str
    lines: tuple[TmaLine, ...]

    def line(self, line: int) -> TmaLine:
        for t in self.lines:
            if t.line == line:
                return t
        raise KeyError(f"line {line} holds no tile-space load/store; lines: "
                       f"{', '.join(str(t.line) for t in self.lines) or '(none)'}")

    def summary(self) -> str:
        n = sum(t.tma for t in self.lines)
        return f"{n} of {len(self.lines)} tile loads/stores became TMA copies ({self.arch})"


def tma_report(insp: Inspection) -> TmaReport:
    """Per source line with a tile-space load/store: TMA or not (from the SASS), and why
    (from the Tile IR's view and the facts cuTile assumed about the arguments)."""
    rows = insp.stages["tileir"].rows
    sass_ops = _sass_ops(insp)
    views = tile_views(rows)
    by_line: dict[int, list[tuple[str, str]]] = {}
    for row in rows:
        if not isinstance(row, TileIRRow) or row.access is None or row.line is None:
            continue
        by_line.setdefault(row.line, []).append((row.access.kind,
                                                 _problem(views, row.access) or ""))
    arch_ok = _sm(insp.arch) >= 90
    out = []
    for line, ops in sorted(by_line.items()):
        have = sass_ops.get(line, ())
        tma = any(op in TMA_OPCODES for op in have)
        problems = [p for _, p in ops if p]
        said = _compiler_says(insp, line)
        if tma:
            reason = f"bulk tensor copy: {', '.join(o for o in have if o in TMA_OPCODES)}"
        elif not arch_ok:
            reason = f"{insp.arch} has no TMA (Hopper sm_90 or newer)"
        elif said and problems:
            reason = f"compiler: {said}; {problems[0]}"
        elif said:
            reason = f"compiler: {said}"
        elif problems:
            reason = problems[0]
        elif have:
            reason = (f"all TMA preconditions hold; the compiler chose "
                      f"{'/'.join(o for o in have if o not in TMA_OPCODES)} (seen on sm_90: "
                      "a GEMM's K-loop loads and store become TMA, a plain copy does not)")
        else:
            reason = "no memory instruction of this line left in the SASS"
        out.append(TmaLine(line, ops[0][0], tma, have, reason))
    return TmaReport(insp.arch, tuple(out))


def _compiler_says(insp: Inspection, line: int) -> str | None:
    """The compiler's own reason for not using TMA on ``line`` (a "failed" memory remark,
    e.g. "stride not 16-byte aligned"), if it gave one."""
    for r in insp.remarks:
        if r.line == line and r.kind in ("failed", "missed") and "TMA" in r.message:
            return r.message.split(": ", 1)[-1]
    return None


def _sm(arch: str) -> int:
    m = re.search(r"(\d+)", arch)
    return int(m.group(1)) if m else 0


def _sass_ops(insp: Inspection) -> dict[int, tuple[str, ...]]:
    if "sass" not in insp.stages:
        return {}
    out: dict[int, dict[str, None]] = {}
    for row in insp.stages["sass"].rows:
        base = row.opcode if isinstance(row, SassRow) else None
        if row.line is None or base is None:
            continue
        if base in TMA_OPCODES or base in PLAIN_OPCODES:
            out.setdefault(row.line, {})[base] = None
    return {k: tuple(v) for k, v in out.items()}


def _problem(views: TileViews, access: ViewAccess) -> str | None:
    """Why the view ``access`` reads or writes cannot be a TMA copy, if the Tile IR shows
    a reason."""
    if access.allow_tma_false:
        return "allow_tma=False on this load/store"
    tview = views.tensor_view_of(access.view)
    if tview is None:
        return None
    dtype = tview.elem
    size = _ELEM_BYTES.get(dtype, 0)
    parts = list(tview.strides)
    if parts and parts[-1] != "1":
        return "the innermost axis is not contiguous (stride ≠ 1): TMA needs it unit-stride"
    for ax, s in enumerate(parts[:-1]):
        stride_bytes = (int(s) * size if s.lstrip("-").isdigit()
                        else views.divisor(s) * size)
        if size and stride_bytes % 16:
            return (f"the stride of axis {ax} is not known to be a multiple of 16 bytes "
                    f"(TMA's rule; with {dtype} the array's row length must divide by "
                    f"{16 // size if 16 % size == 0 else 16})")
    if views.divisor(tview.base) % 16:
        return "the base address is not known to be 16-byte aligned"
    if access.tile and size and access.tile[-1] * size < 16:
        return "the tile's rows are narrower than 16 bytes"
    return None
