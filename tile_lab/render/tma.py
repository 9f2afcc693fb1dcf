"""TMA badges in the inspect view: the verdicts of :func:`tile_lab.analysis.tma.tma_report` drawn on
the source lines, the TMA opcodes boxed in the SASS pane and a summary under the header.

The analysis (which loads and stores became TMA bulk tensor copies, and why the others did
not) lives in ``tile_lab.analysis.tma``; its names are re-exported here for existing callers.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from ..analysis.tma import PLAIN_OPCODES, TMA_OPCODES, TmaLine, TmaReport, tma_report
from ..compile.artifacts import Inspection

__all__ = ["PLAIN_OPCODES", "TMA_OPCODES", "TmaLine", "TmaReport", "tma_badge_html",
           "tma_badge_text", "tma_field", "tma_op_html", "tma_report", "tma_summary_html"]


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
