"""The HTML the widgets (``widgets/diagram_browser.py``, ``widgets/explore.py``) put around
their pictures: headers, status lines, notes and errors, escaped and deterministic."""

from __future__ import annotations

import html
from typing import Any

from ..tuning.result import Failure
from ..tuning.space import Config

__all__ = ["diagram_skipped_html", "error_html", "header_html", "rejected_html",
           "static_browser_html", "status_html"]

WARN = "#D55E00"  # vermillion (Okabe-Ito): an error or a rejected config


def error_html(text: str) -> str:
    """An error shown in a widget instead of its picture (preformatted: hints keep their
    lines)."""
    return f"<pre style='color:{WARN}'>{html.escape(text)}</pre>"


def static_browser_html(selection: str, picture_html: str) -> str:
    """What a diagram browser shows where no widget can run (nbconvert's HTML, a notebook
    viewer): the picture its controls were set to, and a line saying the sliders need a
    kernel. ``picture_html``: the diagram's own (already escaped) HTML."""
    return ("<div class='tile-lab-browse-static'><p style='margin:0 0 4px 0'><i>"
            f"tile_lab.browse: {html.escape(selection)}; the sliders need a running "
            f"kernel (open the notebook in Jupyter to move them)</i></p>{picture_html}</div>")


def header_html(name: str, mode: str) -> str:
    """The explorer's title line: the kernel, and where it runs."""
    return f"<b>{html.escape(name)}</b> — {html.escape(mode)}"


def rejected_html(label: str) -> str:
    """The status of a config the space's constraints filter out."""
    return (f"<span style='color:{WARN}'>{html.escape(label)}: "
            "rejected by the space's constraints</span>")


def diagram_skipped_html(elements: int) -> str:
    """Why the explorer draws no partition diagram for a GPU-sized problem."""
    return (f"<i>diagram skipped: the arguments have {elements:,} elements; pass "
            "diagram_args_fn= with a small problem (and diagram_grid_fn=) to draw it</i>")


def status_html(cfg: Config, outcome: Any, *, recorded: bool) -> str:
    """The explorer's status line for ``cfg``: its time ± CI and rates, why it failed, or
    that nothing is known (``recorded``: the results come from a store, not this GPU)."""
    label = html.escape(cfg.label())
    if outcome is None:
        why = "no recorded result for this config" if recorded else "not measured"
        return f"{label}: <i>{why}</i>"
    if isinstance(outcome, Failure):
        return (f"<span style='color:{WARN}'>{label}: failed at {html.escape(outcome.stage)}: "
                f"{html.escape(outcome.error)}</span>")
    m = outcome.measurement
    if getattr(m, "n", None) == 1:  # stopped early: a clear loser, timed once
        parts = [f"{outcome.time_s * 1e6:.1f} µs (1 sample: slower than a redraw allows)"]
    else:
        parts = [f"{outcome.time_s * 1e6:.1f} µs ± {outcome.ci95_s * 1e6:.1f}"]
    if outcome.gbps is not None:
        parts.append(f"{outcome.gbps:.0f} GB/s")
    if outcome.tflops is not None:
        parts.append(f"{outcome.tflops:.1f} TFLOPS")
    gpu = getattr(getattr(m, "provenance", None), "gpu", None) or getattr(m, "gpu_name", None)
    src = ""
    if outcome.from_store:
        src = f" (recorded on {html.escape(str(gpu))})" if gpu else " (recorded)"
    return f"{label}: {' · '.join(parts)}{src}"
