"""TMA badges in the inspect view: the verdicts of :func:`tile_lab.tma.tma_report` drawn on
the source lines, the TMA opcodes boxed in the SASS pane and a summary under the header.

The analysis (which loads and stores became TMA bulk tensor copies, and why the others did
not) lives in ``tile_lab.tma``; its names are re-exported here for existing callers.
"""

from __future__ import annotations

import html
import re

from ..artifacts import Inspection
from ..tma import PLAIN_OPCODES, TMA_OPCODES, TmaLine, TmaReport, tma_report

__all__ = ["PLAIN_OPCODES", "TMA_OPCODES", "TmaLine", "TmaReport", "annotate_inspection_html",
           "tma_report"]


# Inline styles: they survive JupyterLab's sanitizer for untrusted output (classes stay too).
_STYLE_YES = ("margin-left:1.5em;padding:0 4px;border-radius:3px;font-size:85%;"
              "background:color-mix(in srgb,#009E73 25%,transparent);border:1px solid #009E73")
_STYLE_NO = ("margin-left:1.5em;padding:0 4px;border-radius:3px;font-size:85%;"
             "background:color-mix(in srgb,#D55E00 18%,transparent);border:1px solid #D55E00")
_STYLE_OP = "outline:1px solid #009E73;border-radius:2px"
_SASS_PANE = re.compile(r'(<section class="tl-pane tl-pane-sass".*?</section>)', re.S)
_TMA_OP = re.compile(r'<span class="(tl-t\w+)">(' + "|".join(TMA_OPCODES) + r')</span>')
_SOURCE_PANE = re.compile(r'(<section class="tl-pane tl-pane-source".*?</section>)', re.S)


def annotate_inspection_html(insp: Inspection, view_html: str) -> str:
    """The inspect view's HTML with a TMA badge at the end of every source line that holds
    a tile-space load/store, TMA opcodes boxed in the SASS pane, and a one-line-per-op
    summary under the header. Unchanged when
    the view shows no SASS or Tile IR (the verdict needs both), or they map no such line."""
    shown = set(insp.show)
    if not {"sass", "tileir"} <= shown or not {"sass", "tileir"} <= set(insp.stages):
        return view_html
    report = tma_report(insp)
    if not report.lines:
        return view_html
    badges = {t.line: _badge(t) for t in report.lines}

    def in_source(m: re.Match) -> str:
        pane = m.group(1)
        for line, badge in badges.items():
            pane = re.sub(rf'(<span class="tl-ln tl-l{line}[ "][^>]*>.*?)(\n</span>)',
                          lambda mm, b=badge: mm.group(1) + b + mm.group(2), pane, count=1,
                          flags=re.S)
        return pane

    out = _SOURCE_PANE.sub(in_source, view_html, count=1)
    out = _SASS_PANE.sub(lambda m: _TMA_OP.sub(_mark_op, m.group(1)), out, count=1)
    rows = "".join(f'<div class="tl-tma-row tl-ln tl-l{t.line}" data-line="{t.line}">'
                   f'line {t.line} ({t.kind}): {_badge(t, margin=False)} '
                   f'{html.escape(t.reason)}</div>' for t in report.lines)
    summary = (f'<details open class="tl-tma-summary" style="margin:0 0 6px"><summary>'
               f'{html.escape(report.summary())}</summary>{rows}</details>')
    return out.replace('<div class="tl-panes"', summary + '<div class="tl-panes"', 1)


def _mark_op(m: re.Match) -> str:
    """A TMA opcode in the SASS pane, boxed in the badge colour (and titled)."""
    return (f'<span class="{m.group(1)} tl-tma-op" style="{_STYLE_OP}" '
            f'title="TMA: bulk tensor copy">{m.group(2)}</span>')


def _badge(t: TmaLine, margin: bool = True) -> str:
    style = _STYLE_YES if t.tma else _STYLE_NO
    if not margin:
        style = style.replace("margin-left:1.5em;", "")
    cls = "tl-tma-yes" if t.tma else "tl-tma-no"
    text = ("TMA " + "/".join(o for o in t.sass_ops if o in TMA_OPCODES) if t.tma
            else "no TMA")
    return (f'<span class="tl-tma {cls}" style="{style}" '
            f'title="{html.escape(t.reason, quote=True)}">{html.escape(text)}</span>')
