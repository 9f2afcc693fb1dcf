"""Tuning plots and tables: metric vs each knob, two-knob heatmaps, every config on the roofline,
the best-vs-worst "why" view.

Renderers only render: they take a TuningResult (and, for the why view, two Inspections the API
compiled) and return figures or HTML.
"""

from __future__ import annotations

import difflib
import html
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..compile.stage_rows import without_ssa_names
from ..display import renders
from ..tuning.result import TuningResult

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


def knob_bars_svg(result: Any, knob: str, metric: str = "time", around: Any = None) -> str:
    """``metric`` vs ``knob`` as a small SVG bar chart (95% CI whiskers), every other knob fixed
    at ``around`` (a Config; default: the best) whose own bar is highlighted. Drawn without
    matplotlib, so a slider redraw costs milliseconds; deterministic text."""
    from .svg import INK, Path, Rect, Scene, Style, Text, text_width, to_svg

    label, value, err = _METRICS[metric]
    if around is None:
        if result.best is None:
            raise ValueError("no successful config to plot")
        around = result.best.config
    others = {k: v for k, v in around.items if k != knob}
    rows = {s.config[knob]: s for s in result.successes
            if all(s.config.get(k) == v for k, v in others.items())}
    values = sorted(rows, key=_sort_key)
    width, height, left, right, top, bottom = 380, 240, 58, 12, 50, 42
    plot_w, plot_h = width - left - right, height - top - bottom
    tops = [(value(rows[v]) or 0.0) + (err(rows[v]) or 0.0) for v in values]
    step = _nice_step(max(tops, default=0.0) / 4 or 1.0)
    y_max = step * max(1, -(-max(tops, default=0.0) // step))
    items: list[Any] = []

    def y_of(v: float) -> float:
        return top + plot_h * (1 - v / y_max)

    k = 0
    while k * step <= y_max * (1 + 1e-9):  # y ticks and grid lines
        y = y_of(k * step)
        items.append(Path((((left, y), (left + plot_w, y)),),
                          Style(stroke=INK, stroke_opacity=0.15)))
        items.append(Text(left - 6, y + 4, f"{k * step:g}", size=10, anchor="end"))
        k += 1
    slot = plot_w / max(len(values), 1)
    for i, v in enumerate(values):
        s = rows[v]
        x = left + slot * (i + 0.2)
        bar_w = slot * 0.6
        val, e = value(s) or 0.0, err(s) or 0.0
        here = s.config == around
        color = "#0072B2" if here else "#999999"
        items.append(Rect(x, y_of(val), bar_w, y_of(0) - y_of(val), Style(fill=color)))
        if e:
            cx = x + bar_w / 2
            items.append(Path((((cx, y_of(val - e)), (cx, y_of(val + e))),
                               ((cx - 4, y_of(val + e)), (cx + 4, y_of(val + e))),
                               ((cx - 4, y_of(val - e)), (cx + 4, y_of(val - e)))),
                              Style(stroke=INK, stroke_width=1.2)))
        items.append(Text(x + bar_w / 2, y_of(val + e) - 4, f"{val:.3g}", size=9,
                          anchor="middle", bold=here))
        items.append(Text(x + bar_w / 2, top + plot_h + 15, str(v), size=10, anchor="middle",
                          bold=here))
    items.append(Path((((left, top), (left, top + plot_h), (left + plot_w, top + plot_h)),),
                      Style(stroke=INK)))
    items.append(Text(left + plot_w / 2, height - 6, knob, size=11, anchor="middle"))
    mode = _mode([rows[v] for v in values]) if values else "-"
    items.append(Text(left, 14, f"{result.kernel_name}: {label} vs {knob} [{mode}]", size=11,
                      bold=True))
    parts = [f"{k}={v}" for k, v in others.items()] or ["no other knob"]
    lines = [f"fixed: {', '.join(parts)}"]
    if text_width(lines[0], 9) > width - left - 4:  # two lines rather than run off the edge
        half = (len(parts) + 1) // 2
        lines = [f"fixed: {', '.join(parts[:half])},", "       " + ", ".join(parts[half:])]
    for j, line in enumerate(lines):
        items.append(Text(left, 27 + 10 * j, line, size=9, opacity=0.75))
    if not values:
        items.append(Text(left + plot_w / 2, top + plot_h / 2, "no result for these configs yet",
                          size=10, anchor="middle", opacity=0.75))
    return to_svg(Scene(width, height, tuple(items),
                        label=f"{label} vs {knob} for {result.kernel_name}"))


def _nice_step(raw: float) -> float:
    """The smallest of 1, 2, 5 x 10^k that is >= ``raw`` (axis tick spacing)."""
    import math

    exp = math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * 10 ** exp >= raw:
            return float(m * 10 ** exp)
    return float(10 ** (exp + 1))


def config_roofline(result: Any, peaks: Any = None, ax: Any = None) -> Any:
    """Every successful config on the device's roofline: arithmetic intensity (FLOP/byte) vs
    attained TFLOPS, the best in blue and labelled, the worst labelled. Configs that move the
    same bytes and FLOPs stack at one intensity: their spread is what tuning bought, their gap
    to the roof what is left. Needs measurements with FLOPs (``tune(..., flops=)``)."""
    from .plots import Chart, draw_roofs, roofs_of

    rows = [s for s in result.successes
            if getattr(s.measurement, "arithmetic_intensity", None) and s.tflops]
    if not rows:
        raise ValueError("no config has both a FLOP and a byte count to place on a roofline; "
                         "pass flops= (and bytes=) to tune()")
    roofs = roofs_of([s.measurement for s in rows], peaks)
    best = max(rows, key=lambda s: s.tflops)
    worst = min(rows, key=lambda s: s.tflops)
    if ax is None:
        ax = _new_axes((7.2, 4.0))
    draw_roofs(ax, roofs, [s.measurement.arithmetic_intensity for s in rows])
    others = [s for s in rows if s is not best and s is not worst]
    ax.plot([s.measurement.arithmetic_intensity for s in others], [s.tflops for s in others],
            "o", color="#999999", ms=5, ls="none", label=f"other configs ({len(others)})")
    marks = [(best, "#0072B2", "best")] + ([(worst, "#D55E00", "worst")]
                                           if worst is not best else [])
    for s, color, name in marks:
        ai = s.measurement.arithmetic_intensity
        ax.plot([ai], [s.tflops], "o", color=color, ms=7, ls="none",
                label=f"{name}: {s.config.label()}")
        ax.annotate(f"{s.tflops:.0f} TFLOPS", (ai, s.tflops), textcoords="offset points",
                    xytext=(8, -3), fontsize=7, color=color)
    mode = _mode(rows)
    ax.set_title(f"{result.kernel_name}: {len(rows)} configs on the {roofs.gpu} roofline "
                 f"[{mode}]", fontsize=8)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    _style(ax)
    return Chart(ax.figure, "roofline")


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


@renders(TuningResult)
def result_table_html(result: TuningResult, top_k: int = 20) -> str:
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
                    f"<td>{_ci_cell(s)}</td><td>{gb}</td><td>{tf}</td>"
                    f"<td>{e(str(getattr(s.measurement, 'mode', '')))}</td></tr>")
    for f in result.failures:
        first = f.error.splitlines()[0] if f.error else ""
        rows.append(f"<tr style='color:#D55E00'><td>{e(f.config.label())}</td>"
                    f"<td colspan='5'>[{e(f.stage)}] {e(first)}</td></tr>")
    return (head + "<table><tr><th>config</th><th>mean µs</th><th>95% CI</th><th>GB/s</th>"
            "<th>TFLOPS</th><th>mode</th></tr>" + "".join(rows) + "</table></div>")


def _ci_cell(success: Any) -> str:
    """The 95% CI column: a config timed once has no interval ("± 0.0" would read as no
    uncertainty), so it says so."""
    m = success.measurement
    n = getattr(m, "n", None)
    if n is None and getattr(m, "samples_s", None) is not None:  # a recorded measurement
        n = len(m.samples_s)
    if n is not None and n < 2:
        return "n/a (1 sample)"
    return f"±{success.ci95_s * 1e6:.1f}"


def why_html(best: Any, worst: Any, best_label: str, worst_label: str) -> str:
    """Best and worst configs' Tile IR and remarks side by side, with a unified diff of each.

    ``best``/``worst`` are Inspections (compiled by the API, not here)."""
    e = html.escape

    def ops(insp: Any) -> list[str]:
        # SSA names and locations erased: the diff shows op/type changes, not renumbering
        return [without_ssa_names(t) for t in insp.tileir.splitlines() if " = " in t or
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

