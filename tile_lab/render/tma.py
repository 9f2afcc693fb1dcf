"""Which loads and stores became TMA bulk tensor copies, and why the others did not.

Read from an :class:`~tile_lab.artifacts.Inspection` (no compiling here): the Tile IR holds
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

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..artifacts import Inspection, sass_opcode

__all__ = ["TMA_OPCODES", "TmaLine", "TmaReport", "tma_badge_html", "tma_badge_text", "tma_field",
           "tma_op_html", "tma_report", "tma_summary_html"]

TMA_OPCODES = ("UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UBLKCP", "UBLKRED", "UBLKPF")
PLAIN_OPCODES = ("LDG", "STG", "LDGSTS", "LDGDEPBAR")
_ELEM_BYTES = {"i1": 1, "i8": 1, "f8E4M3FN": 1, "f8E5M2": 1, "i16": 2, "f16": 2, "bf16": 2,
               "i32": 4, "f32": 4, "tf32": 4, "i64": 8, "f64": 8}

_VIEW_OP = re.compile(r"=\s*(load|store)_view_tko\b.*?(%[\w.]+)\[")
_MAKE_PVIEW = re.compile(r"(%[\w.]+)\s*=\s*make_partition_view\s+(%[\w.]+)")
_MAKE_TVIEW = re.compile(r"(%[\w.]+)\s*=\s*make_tensor_view\s+(%[\w.]+),\s*shape\s*=\s*"
                         r"\[([^\]]*)\],\s*strides\s*=\s*\[([^\]]*)\]\s*:.*?tensor_view<"
                         r"([^,>]*)")
_ASSUME_DIV = re.compile(r"(%[\w.]+)\s*=\s*assume\s+div_by<(\d+)>,\s*(%[\w.]+)")
_ASSUME_ANY = re.compile(r"(%[\w.]+)\s*=\s*assume\s+\w+<[^>]*>,\s*(%[\w.]+)")
_TILE_SHAPE = re.compile(r"partition_view<tile=\(([\dx]+)\)")


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
    tir = insp.stages["tileir"]
    sass_ops = _sass_ops(insp)
    facts = _Facts(tir.text)
    by_line: dict[int, list[tuple[str, str]]] = {}
    for text, line in zip(tir.text.split("\n"), tir.line_map):
        m = _VIEW_OP.search(text)
        if m is None or line is None:
            continue
        by_line.setdefault(line, []).append((m.group(1), facts.problem(text, m.group(2))
                                             or ""))
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
    st = insp.stages["sass"]
    out: dict[int, dict[str, None]] = {}
    for text, line in zip(st.text.split("\n"), st.line_map):
        base = sass_opcode(text)
        if line is None or base is None:
            continue
        if base in TMA_OPCODES or base in PLAIN_OPCODES:
            out.setdefault(line, {})[base] = None
    return {k: tuple(v) for k, v in out.items()}


class _Facts:
    """The tensor views of a Tile IR function and the divisibility assumed of each value."""

    def __init__(self, text: str) -> None:
        self.pview = dict(_MAKE_PVIEW.findall(text))
        self.tview = {m.group(1): m.groups()[1:] for m in _MAKE_TVIEW.finditer(text)}
        self.div: dict[str, int] = {}
        self.alias: dict[str, str] = {}
        for name, n, _src in _ASSUME_DIV.findall(text):
            self.div[name] = max(self.div.get(name, 1), int(n))
        for name, src in _ASSUME_ANY.findall(text):
            self.alias[name] = src

    def divisor(self, value: str) -> int:
        """Largest divisor assumed for ``value`` along its chain of assumes."""
        best, seen = 1, set()
        while value and value not in seen:
            seen.add(value)
            best = max(best, self.div.get(value, 1))
            value = self.alias.get(value, "")
        return best

    def problem(self, op_text: str, pview: str) -> str | None:
        tview = self.pview.get(pview)
        if "allow_tma = false" in op_text:
            return "allow_tma=False on this load/store"
        if tview is None or tview not in self.tview:
            return None
        base, _shape, strides, elem_type = self.tview[tview]
        dtype = elem_type.split("x")[-1].strip()
        size = _ELEM_BYTES.get(dtype, 0)
        parts = [s.strip() for s in strides.split(",")]
        if parts and parts[-1] != "1":
            return "the innermost axis is not contiguous (stride ≠ 1): TMA needs it unit-stride"
        for ax, s in enumerate(parts[:-1]):
            stride_bytes = (int(s) * size if s.lstrip("-").isdigit()
                            else self.divisor(s) * size)
            if size and stride_bytes % 16:
                return (f"the stride of axis {ax} is not known to be a multiple of 16 bytes "
                        f"(TMA's rule; with {dtype} the array's row length must divide by "
                        f"{16 // size if 16 % size == 0 else 16})")
        if self.divisor(base) % 16:
            return "the base address is not known to be 16-byte aligned"
        m = _TILE_SHAPE.search(op_text)
        if m and size and int(m.group(1).split("x")[-1]) * size < 16:
            return "the tile's rows are narrower than 16 bytes"
        return None


# -- drawing: the verdict as the inspect view's ``tma`` field, and its HTML -----------------

# Inline styles: they survive JupyterLab's sanitizer for untrusted output (classes stay too).
# The extension draws the same classes with the same colours (labextension/style/base.css).
_STYLE_YES = ("margin-left:1.5em;padding:0 4px;border-radius:3px;font-size:85%;"
              "background:color-mix(in srgb,#009E73 25%,transparent);border:1px solid #009E73")
_STYLE_NO = ("margin-left:1.5em;padding:0 4px;border-radius:3px;font-size:85%;"
             "background:color-mix(in srgb,#D55E00 18%,transparent);border:1px solid #D55E00")
_STYLE_OP = "outline:1px solid #009E73;border-radius:2px"


def tma_field(insp: Inspection) -> dict[str, Any] | None:
    """The inspect view's ``tma`` field (``mime_schema.json``, ``$defs/tma``): the verdict of
    every source line holding a tile-space load/store, as plain data. None when the view does
    not show both SASS and Tile IR (the verdict reads both), or no line holds such an op.
    ``inspection_json`` writes it; ``render/html.py`` and the extension draw it."""
    need = {"sass", "tileir"}
    if not need <= set(insp.show) or not need <= set(insp.stages):
        return None
    report = tma_report(insp)
    if not report.lines:
        return None
    return {"arch": report.arch, "summary": report.summary(),
            "lines": [{"line": t.line, "kind": t.kind, "tma": t.tma,
                       "sass_ops": list(t.sass_ops), "reason": t.reason}
                      for t in report.lines]}


def tma_badge_html(line: Mapping[str, Any], margin: bool = True) -> str:
    """One line's badge ("TMA UTMALDG" / "no TMA", the reason as its title), from an entry of
    the field's ``lines``."""
    style = _STYLE_YES if line["tma"] else _STYLE_NO
    if not margin:
        style = style.replace("margin-left:1.5em;", "")
    cls = "tl-tma-yes" if line["tma"] else "tl-tma-no"
    return (f'<span class="tl-tma {cls}" style="{style}" '
            f'title="{html.escape(line["reason"], quote=True)}">'
            f'{html.escape(tma_badge_text(line))}</span>')


def tma_badge_text(line: Mapping[str, Any]) -> str:
    """What a badge says: "TMA" and the line's TMA opcodes, or "no TMA"."""
    if not line["tma"]:
        return "no TMA"
    return "TMA " + "/".join(o for o in line["sass_ops"] if o in TMA_OPCODES)


def tma_summary_html(field: Mapping[str, Any]) -> str:
    """The block under the view's header: the summary, then one row per line (its badge and
    the reason in words), each row linked to its source line."""
    rows = "".join(f'<div class="tl-tma-row tl-ln tl-l{t["line"]}" data-line="{t["line"]}">'
                   f'line {t["line"]} ({t["kind"]}): {tma_badge_html(t, margin=False)} '
                   f'{html.escape(t["reason"])}</div>' for t in field["lines"])
    return (f'<details open class="tl-tma-summary" style="margin:0 0 6px"><summary>'
            f'{html.escape(field["summary"])}</summary>{rows}</details>')


def tma_op_html(token_class: str, opcode: str) -> str:
    """A TMA opcode in the SASS pane, boxed in the badge colour (and titled)."""
    return (f'<span class="tl-t{token_class} tl-tma-op" style="{_STYLE_OP}" '
            f'title="TMA: bulk tensor copy">{html.escape(opcode)}</span>')
