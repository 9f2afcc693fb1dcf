"""HTML for the environment doctor's report (``tile_lab.doctor()``): one table row per piece
of software, then the findings with their fixes."""

from __future__ import annotations

import html

from .._doctor import DoctorReport
from ..display import renders

__all__ = ["doctor_report_html"]


@renders(DoctorReport)
def doctor_report_html(report: DoctorReport) -> str:
    """The report as an HTML fragment (``DoctorReport._repr_html_``)."""
    e = html.escape
    # left-aligned text (JupyterLab right-aligns table cells); names and versions on one
    # line, paths free to wrap
    td, th = "<td style='text-align:left;white-space:nowrap'>", "<th style='text-align:left'>"
    rows = "".join(f"<tr>{td}{e(c.name)}</td>{td}{e(c.version)}</td>"
                   f"<td style='text-align:left'><code>{e(c.where)}</code></td></tr>"
                   for c in report.components)
    gpu = (f"{e(report.gpu.name)} ({e(report.gpu.arch)}), driver {e(report.gpu.driver)}"
           if report.gpu else "none")
    rows += f"<tr>{td}GPU</td><td colspan='2' style='text-align:left'>{gpu}</td></tr>"
    items = "".join(
        f"<li><b>{e(f.level)}</b>: {e(f.message)}"
        + (f"<br><i>fix:</i> {e(f.fix)}" if f.fix else "") + "</li>"
        for f in report.findings) or "<li>No problems found.</li>"
    return (f"<div class='tile-lab-doctor'><table><thead><tr>{th}component</th>"
            f"{th}version</th>{th}where</th></tr></thead><tbody>{rows}</tbody></table>"
            f"<ul>{items}</ul></div>")
