"""Tuning plots and tables: metric vs each knob, two-knob heatmaps, the best-vs-worst "why" view.

Renderers only render: they take a TuningResult (and, for the why view, two Inspections the API
compiled) and return figures or HTML.
"""

from __future__ import annotations

import difflib
import html
from collections.abc import Sequence
from typing import Any

import numpy as np

_METRICS = {
    "time": ("time (µs)", lambda s: s.time_s * 1e6, lambda s: s.ci95_s * 1e6),
    "gbps": ("GB/s", lambda s: s.gbps, lambda s: _scaled_ci(s, s.gbps)),
    "tflops": ("TFLOPS", lambda s: s.tflops, lambda s: _scaled_ci(s, s.tflops)),
}


def _scaled_ci(s: Any, value: float | None) -> float:
    # A rate's CI follows the time's relative CI.
    if value is None or not s.time_s:
        return 0.0
    return value * s.ci95_s / s.time_s


def _style(ax: Any) -> None:
    ax.grid(True, alpha=0.3)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)


def _new_axes(size: tuple[float, float]) -> Any:
    # A bare Figure (not pyplot): nothing is shown twice, nothing leaks between cells.
    from matplotlib.figure import Figure

    return Figure(figsize=size, dpi=100, layout="constrained").add_subplot()


def knob_plot(result: Any, knob: str, metric: str = "time", ax: Any = None) -> Any:
    """``metric`` vs ``knob`` with 95% CI bars, every other knob fixed at the best config.
    Returns a ``Chart`` (deterministic SVG; ``.figure`` is the matplotlib figure)."""
    from .plots import Chart

    label, value, err = _METRICS[metric]
    best = result.best
    if best is None:
        raise ValueError("no successful config to plot")
    others = {k: v for k, v in best.config.items if k != knob}
    rows = [s for s in result.successes
            if all(s.config.get(k) == v for k, v in others.items())]
    rows.sort(key=lambda s: _sort_key(s.config[knob]))
    if ax is None:
        ax = _new_axes((5, 3.2))
    xs = [str(s.config[knob]) for s in rows]
    ys = [value(s) or 0.0 for s in rows]
    es = [err(s) or 0.0 for s in rows]
    colors = ["#0072B2" if s.config == best.config else "#999999" for s in rows]
    ax.bar(xs, ys, yerr=es, color=colors, capsize=3)
    ax.set_xlabel(knob)
    ax.set_ylabel(label)
    mode = _mode(rows)
    fixed = ", ".join(f"{k}={v}" for k, v in others.items())
    ax.set_title(f"{result.kernel_name}: {label} vs {knob} [{mode}]\n{fixed}", fontsize=8)
    _style(ax)
    return Chart(ax.figure, "knob")


def heatmap(result: Any, knob_x: str, knob_y: str, metric: str = "time", ax: Any = None) -> Any:
    """``metric`` over two knobs (others at the best config); failed/missing cells left blank."""
    from .plots import Chart

    label, value, _ = _METRICS[metric]
    best = result.best
    if best is None:
        raise ValueError("no successful config to plot")
    others = {k: v for k, v in best.config.items if k not in (knob_x, knob_y)}
    rows = [s for s in result.successes
            if all(s.config.get(k) == v for k, v in others.items())]
    xs = sorted({s.config[knob_x] for s in rows}, key=_sort_key)
    ys = sorted({s.config[knob_y] for s in rows}, key=_sort_key)
    grid = np.full((len(ys), len(xs)), np.nan)
    for s in rows:
        grid[ys.index(s.config[knob_y]), xs.index(s.config[knob_x])] = value(s) or np.nan
    if ax is None:
        ax = _new_axes((4.5, 3.6))
    im = ax.imshow(grid, cmap="viridis_r" if metric == "time" else "viridis", aspect="auto")
    ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set_yticks(range(len(ys)), [str(y) for y in ys])
    ax.set_xlabel(knob_x)
    ax.set_ylabel(knob_y)
    for (i, j), v in np.ndenumerate(grid):
        if not np.isnan(v):
            ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7, color="white")
    ax.figure.colorbar(im, ax=ax, label=label)
    ax.set_title(f"{result.kernel_name}: {label} [{_mode(rows)}]", fontsize=8)
    return Chart(ax.figure, "heatmap")


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, v) if isinstance(v, (int, float)) else (1, str(v))


def _mode(rows: Sequence[Any]) -> str:
    modes = {getattr(s.measurement, "mode", "?") for s in rows}
    return "/".join(sorted(str(m) for m in modes))


def result_table_html(result: Any, top_k: int = 20) -> str:
    """The result as an HTML table: ranked successes, then failures with their errors."""
    e = html.escape
    head = (f"<div class='tl-tune'><b>{e(result.kernel_name)}</b>: {len(result.successes)} "
            f"succeeded, {len(result.failures)} failed, {len(result.rejected)} filtered out")
    rows = []
    for i, s in enumerate(result.ranked()[:top_k]):
        gb = "" if s.gbps is None else f"{s.gbps:.0f}"
        tf = "" if s.tflops is None else f"{s.tflops:.1f}"
        style = " style='font-weight:bold'" if i == 0 else ""
        rows.append(f"<tr{style}><td>{e(s.config.label())}</td><td>{s.time_s * 1e6:.1f}</td>"
                    f"<td>±{s.ci95_s * 1e6:.1f}</td><td>{gb}</td><td>{tf}</td>"
                    f"<td>{e(str(getattr(s.measurement, 'mode', '')))}</td></tr>")
    for f in result.failures:
        first = f.error.splitlines()[0] if f.error else ""
        rows.append(f"<tr style='color:#D55E00'><td>{e(f.config.label())}</td>"
                    f"<td colspan='5'>[{e(f.stage)}] {e(first)}</td></tr>")
    return (head + "<table><tr><th>config</th><th>mean µs</th><th>95% CI</th><th>GB/s</th>"
            "<th>TFLOPS</th><th>mode</th></tr>" + "".join(rows) + "</table></div>")


def why_html(best: Any, worst: Any, best_label: str, worst_label: str) -> str:
    """Best and worst configs' Tile IR and remarks side by side, with a unified diff of each.

    ``best``/``worst`` are Inspections (compiled by the API, not here)."""
    e = html.escape

    def ops(insp: Any) -> list[str]:
        return [_normalise_ir_line(t) for t in insp.tileir.splitlines() if " = " in t or
                t.strip().startswith(("store", "return", "for", "if", "yield"))]

    def remarks(insp: Any) -> list[str]:
        return [f"[{r.kind}/{r.category}] line {r.line}: {r.message}" for r in insp.remarks]

    ir_diff = "\n".join(difflib.unified_diff(ops(best), ops(worst), best_label, worst_label,
                                             lineterm="", n=1))
    rm_diff = "\n".join(difflib.unified_diff(remarks(best), remarks(worst), best_label,
                                             worst_label, lineterm="", n=0))
    pre = "style='max-height:24em;overflow:auto;font-size:11px'"
    return ("<div class='tl-why' style='display:grid;grid-template-columns:1fr 1fr;gap:8px'>"
            f"<div><b>best: {e(best_label)}</b><pre {pre}>{e(best.tileir)}</pre></div>"
            f"<div><b>worst: {e(worst_label)}</b><pre {pre}>{e(worst.tileir)}</pre></div>"
            f"<div><b>Tile IR diff (ops)</b><pre {pre}>{e(ir_diff) or '(same ops)'}</pre></div>"
            f"<div><b>remarks diff</b><pre {pre}>{e(rm_diff) or '(same remarks)'}</pre></div>"
            "</div>")


def _normalise_ir_line(line: str) -> str:
    # Drop SSA names and locations so the diff shows op/type changes, not renumbering.
    import re

    line = re.sub(r"loc\(#loc\d+\)", "", line)
    line = re.sub(r"%[\w.]+", "%", line)
    return " ".join(line.split())
