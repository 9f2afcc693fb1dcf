"""render/doctor_view.py: the doctor's report as an escaped HTML table and finding list."""

from __future__ import annotations

import re

from tile_lab._doctor import Component, DoctorReport, Finding, GPUInfo
from tile_lab.render.doctor_view import doctor_report_html


def test_one_row_per_component_then_the_gpu_and_the_findings_with_fixes():
    report = DoctorReport((Component("cuda.tile", "1.7 <dev>", "/opt/x&y"),
                           Component("node", "22")),
                          GPUInfo("H100 <SXM>", "sm_90", "580.65"),
                          (Finding("error", "tileiras <fails>", "unset CUDA_HOME"),
                           Finding("info", "no Chromium")))
    page = doctor_report_html(report)
    rows = re.findall(r"<tr>(.*?)</tr>", page)
    assert len(rows) == 1 + 2 + 1  # header, two components, the GPU
    assert "1.7 &lt;dev&gt;" in rows[1] and "<code>/opt/x&amp;y</code>" in rows[1]
    assert "H100 &lt;SXM&gt; (sm_90), driver 580.65" in rows[3]
    items = re.findall(r"<li>(.*?)</li>", page)
    assert items == ["<b>error</b>: tileiras &lt;fails&gt;<br><i>fix:</i> unset CUDA_HOME",
                     "<b>info</b>: no Chromium"]
    assert report._repr_html_() == page  # the rich display is this, through tile_lab.display


def test_a_clean_report_without_a_gpu_says_so():
    page = doctor_report_html(DoctorReport((Component("python", "3.12"),), None, ()))
    assert "<td colspan='2' style='text-align:left'>none</td>" in page
    assert "<li>No problems found.</li>" in page
