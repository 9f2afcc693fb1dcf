"""HTML for a :class:`~tile_lab.cpp.compare.Comparison` (``tile_lab.compare``): the two Tile IR
bodies side by side, row by aligned row.

Deterministic (no ids, no timestamps) and escaped; styles are scoped to the
``tl-compare`` class so several comparisons can sit in one notebook.
"""

from __future__ import annotations

import html

from ..cpp.compare import KINDS, Comparison, OpLine
from ..display import renders

__all__ = ["comparison_html"]

_STYLE = """<style>
.tl-compare table{border-collapse:collapse;font-family:var(--jp-code-font-family,monospace);
 font-size:12px}
.tl-compare td,.tl-compare th{padding:1px 6px;vertical-align:top;text-align:left;
 white-space:pre}
.tl-compare td.ln{color:#888;text-align:right}
.tl-compare td.mark{text-align:center;font-weight:bold}
.tl-compare tr.same td.ir{background:rgba(46,160,67,.15)}
.tl-compare tr.similar td.ir{background:rgba(210,153,34,.18)}
.tl-compare tr.different td.ir{background:rgba(248,81,73,.15)}
.tl-compare tr.py_only td.py,.tl-compare tr.cpp_only td.cpp{background:rgba(130,80,223,.12)}
.tl-compare .legend span{margin-right:1em}
</style>"""

_LEGEND = (("same", "= same op"), ("similar", "\u2248 same op, other attributes or types"),
           ("different", "\u2260 different ops"), ("py_only", "\u2190 only in Python"),
           ("cpp_only", "\u2192 only in C++"))


def _cells(op: OpLine | None, side: str) -> str:
    if op is None:
        return f"<td class='ln'></td><td class='ir {side}'></td>"
    line = f"L{op.source_line}" if op.source_line is not None else ""
    title = html.escape(op.source_text or "", quote=True)
    return (f"<td class='ln' title='{title}'>{html.escape(line)}</td>"
            f"<td class='ir {side}' title='{title}'>{html.escape(op.text)}</td>")


@renders(Comparison)
def comparison_html(cmp: Comparison) -> str:
    """The comparison as an HTML table: Python's op, the verdict mark, C++'s op, per row."""
    rows = "".join(
        f"<tr class='{p.kind}'>{_cells(p.py, 'py')}"
        f"<td class='mark'>{html.escape(KINDS[p.kind])}</td>{_cells(p.cpp, 'cpp')}</tr>"
        for p in cmp.pairs)
    legend = "".join(f"<span>{html.escape(text)}</span>" for _, text in _LEGEND)
    return (f"<div class='tl-compare'>{_STYLE}"
            f"<div class='summary'>{html.escape(cmp.summary())}</div>"
            f"<div class='legend'>{legend}</div>"
            "<table><thead><tr><th></th>"
            f"<th>Python: {html.escape(cmp.py_kernel)} ({html.escape(cmp.py_arch)})</th><th></th>"
            f"<th></th><th>C++: {html.escape(cmp.cpp_kernel)} ({html.escape(cmp.cpp_arch)})</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></div>")
