"""HTML for a :class:`~tile_lab.sanitizer.report.SanitizerReport`: the summary line and one
table row per finding (escaped, deterministic)."""

from __future__ import annotations

import html

from ..display import renders
from ..sanitizer.report import SanitizerReport
from ..tracing.trace import format_block

__all__ = ["sanitizer_report_html"]


@renders(SanitizerReport)
def sanitizer_report_html(report: SanitizerReport) -> str:
    """The report as an HTML fragment (``SanitizerReport._repr_html_``)."""
    esc = html.escape
    status = "ok" if not report.findings else "problems"
    out = [f'<div class="tile-lab-sanitizer tile-lab-sanitizer-{status}">',
           f"<p><b>{esc(report.summary())}</b></p>"]
    if report.findings:
        # text columns left-aligned (JupyterLab right-aligns table cells), short columns
        # on one line: a block tuple never wraps
        th = "<th style='text-align:left'>"
        out.append(f"<table><thead><tr>{th}kind</th>{th}line</th>{th}argument</th>"
                   f"{th}block</th>{th}elements</th>{th}message</th></tr></thead><tbody>")
        td = "<td style='text-align:left;white-space:nowrap'>"
        for f in report.findings:
            block = "" if f.block is None else esc(format_block(f.block, report.grid))
            line = "" if f.line is None else str(f.line)
            kind = f.kind if f.severity == "error" else f"{f.kind} ({f.severity})"
            out.append(f"<tr>{td}{esc(kind)}</td>{td}{line}</td>{td}{esc(f.arg)}</td>"
                       f"{td}{block}</td>{td}{esc(f.ranges())}</td>"
                       f"<td style='text-align:left'>{esc(f.message)}</td></tr>")
        out.append("</tbody></table>")
    out.append("</div>")
    return "\n".join(out)
