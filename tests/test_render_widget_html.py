"""render/widget_html.py: the widgets' status lines, notes and errors, escaped."""

from __future__ import annotations

from types import SimpleNamespace

from tile_lab.render.widget_html import (
    diagram_skipped_html,
    error_html,
    header_html,
    rejected_html,
    status_html,
)
from tile_lab.tuning import Space
from tile_lab.tuning.result import Failure, Success

CFG = Space(TILE=[64, 128], LAT=[1, 3]).configs()[0]


def test_status_says_when_a_config_was_timed_once():
    once = SimpleNamespace(mean_s=2e-3, ci95_s=0.0, gbps=None, tflops=None, n=1)
    full = SimpleNamespace(mean_s=2e-3, ci95_s=1e-5, gbps=None, tflops=None, n=20)
    assert "1 sample" in status_html(CFG, Success(CFG, once), recorded=False)
    text = status_html(CFG, Success(CFG, full), recorded=False)
    assert "1 sample" not in text and "± 10.0" in text


def test_status_of_a_recorded_failed_or_unknown_config():
    m = SimpleNamespace(mean_s=2e-3, ci95_s=1e-5, gbps=12.0, tflops=1.5, n=20,
                        provenance=SimpleNamespace(gpu="H100 <SXM>"))
    text = status_html(CFG, Success(CFG, m, from_store=True), recorded=True)
    assert text == ("TILE=64, LAT=1: 2000.0 µs ± 10.0 · 12 GB/s · 1.5 TFLOPS "
                    "(recorded on H100 &lt;SXM&gt;)")
    failed = status_html(CFG, Failure(CFG, "compile", "bad <hint>"), recorded=False)
    assert failed == ("<span style='color:#D55E00'>TILE=64, LAT=1: failed at compile: "
                      "bad &lt;hint&gt;</span>")
    assert status_html(CFG, None, recorded=True).endswith("<i>no recorded result for this "
                                                          "config</i>")
    assert status_html(CFG, None, recorded=False).endswith("<i>not measured</i>")


def test_notes_and_errors_are_escaped():
    assert error_html("TileLabError: a <b>\nhint: x") == (
        "<pre style='color:#D55E00'>TileLabError: a &lt;b&gt;\nhint: x</pre>")
    assert header_html("k<1>", "GPU") == "<b>k&lt;1&gt;</b> — GPU"
    assert rejected_html("A<B") == ("<span style='color:#D55E00'>A&lt;B: rejected by the "
                                    "space's constraints</span>")
    assert "have 4,194,305 elements" in diagram_skipped_html(4_194_305)
