"""Measurement plots: roofline, bar chart and line chart with 95% CI error bars.

Renderers only: they read :class:`~tile_lab.gpu.measurement.Measurement` fields (live or
loaded from recorded JSON) and never launch or compile. Figures are made with
``matplotlib.figure.Figure`` (no pyplot state, nothing shown twice) under fixed rcParams, and
returned wrapped in a :class:`Chart` whose SVG is byte-for-byte deterministic (fixed hash
salt, no date metadata).

Honesty rules: every plot names the timing mode of each point; a rate above the device's
roof is drawn as a red cross labelled "above roof", never as an ordinary point or bar.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TileLabError

STYLE: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "svg.hashsalt": "tile_lab",
    "svg.fonttype": "none",
    "path.simplify": False,
}
MODE_MARKERS = {"cold": "o", "warm": "s", "graph": "^"}
COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
          "#000000")  # Okabe–Ito
ROOF_COLOR = "#555555"
ABOVE_COLOR = "#D55E00"
METRICS = {"gbps": "GB/s", "tflops": "TFLOPS"}


@dataclass(frozen=True, eq=False)
class Chart:
    """A rendered figure: ``figure`` (matplotlib), ``svg`` (deterministic text), PNG export."""

    figure: Any
    kind: str

    @property
    def svg(self) -> str:
        import matplotlib

        buf = io.StringIO()
        with matplotlib.rc_context(STYLE):
            # tight: a title wider than the axes or a legend beside them stays in the picture
            self.figure.savefig(buf, format="svg", metadata={"Date": None},
                                bbox_inches="tight")
        # the class marks it as a tile_lab view for `tile-lab export` of a saved notebook
        return buf.getvalue().replace("<svg ", '<svg class="tile-lab-chart" ', 1)

    def _repr_svg_(self) -> str:
        return self.svg

    def to_png(self, path: str | Path, dpi: int = 150) -> Path:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        self.figure.savefig(out, format="png", dpi=dpi, metadata={"Software": None},
                            bbox_inches="tight")
        return out


# ---- roofline -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Roofs:
    gpu: str
    dram_gbps: float
    top_tflops: float | None
    fp32_tflops: float | None

    @property
    def ridge(self) -> float | None:
        """Arithmetic intensity (FLOP/byte) where the memory roof meets the top roof."""
        return None if not self.top_tflops else self.top_tflops * 1e3 / self.dram_gbps


def roofs_of(measurements: Sequence[Any], peaks: Any = None) -> Roofs:
    """Roofs from ``peaks`` (a ``tile_lab.gpu.peaks.Peaks``) or from the measurements' own
    recorded peaks, which must agree (one GPU per roofline)."""
    if peaks is not None:
        return Roofs(peaks.gpu, peaks.dram_gbps, peaks.top_tflops, peaks.fp32_tflops)
    found = {(_gpu(m), m.peak_gbps, m.peak_tflops, m.peak_fp32_tflops) for m in measurements
             if m.peak_gbps}
    if not found:
        raise TileLabError("no device peaks recorded in these measurements",
                           hint="pass peaks=tile_lab.gpu.peaks.device_peaks() (or a Peaks)")
    if len(found) > 1:
        gpus = ", ".join(sorted(str(f[0]) for f in found))
        raise TileLabError(f"these measurements come from devices with different roofs "
                           f"({gpus}); plot one GPU at a time or pass peaks=")
    gpu, gbps, top, fp32 = found.pop()
    return Roofs(gpu, gbps, top, fp32)


def roofline(measurements: Sequence[Any] | Any, peaks: Any = None, *, title: str | None = None,
             ax: Any = None) -> Chart:
    """Arithmetic intensity (FLOP/byte) vs attainable TFLOPS, with the device's roofs, and
    each measurement that has both bytes and FLOPs placed on it."""
    ms = _as_list(measurements)
    roofs = roofs_of(ms, peaks)
    placed = [m for m in ms if m.arithmetic_intensity and m.tflops]
    skipped = [m.name for m in ms if m not in placed]
    if not placed:
        raise TileLabError("no measurement has both bytes and FLOPs, so none can be placed on "
                           "a roofline", hint="pass flops= (and bytes=) to tile_lab.bench")
    fig, ax = _figure(ax, (8.4, 4.2))
    with _style():
        draw_roofs(ax, roofs, [m.arithmetic_intensity for m in placed])
        for i, m in enumerate(placed):
            _place(ax, m, COLORS[i % len(COLORS)], m.arithmetic_intensity)
        ax.set_title(title or f"roofline: {roofs.gpu}")
        if skipped:
            ax.text(0.01, 0.01, "not placed (no FLOP or byte count): " + ", ".join(skipped),
                    transform=ax.transAxes, fontsize=7, color=ROOF_COLOR)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return Chart(fig, "roofline")


def draw_roofs(ax: Any, roofs: Roofs, intensities: Sequence[float]) -> None:
    """The DRAM slope and the compute roofs on log axes spanning ``intensities`` (FLOP/byte)
    and the ridge point, 8x either side."""
    lo = min([*intensities, roofs.ridge or intensities[0]]) / 8
    hi = max([*intensities, roofs.ridge or intensities[0]]) * 8
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    top = roofs.top_tflops or math.inf
    ax.plot(xs, [min(top, x * roofs.dram_gbps / 1e3) for x in xs], color=ROOF_COLOR,
            lw=1.6, label=f"roof: DRAM {roofs.dram_gbps:.0f} GB/s")
    if roofs.top_tflops:
        ax.axhline(roofs.top_tflops, color=ROOF_COLOR, lw=0.8, ls="--",
                   label=f"tensor roof {roofs.top_tflops:.0f} TFLOPS")
    if roofs.fp32_tflops and roofs.fp32_tflops != roofs.top_tflops:
        ax.axhline(roofs.fp32_tflops, color=ROOF_COLOR, lw=0.8, ls=":",
                   label=f"FP32 roof {roofs.fp32_tflops:.1f} TFLOPS")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable TFLOPS")


def _place(ax: Any, m: Any, color: str, x: float) -> None:
    if _above(m, "tflops") or _above(m, "gbps"):
        ax.plot([x], [m.tflops], marker="x", ms=9, mew=2, color=ABOVE_COLOR, ls="none",
                label=f"{m.name} [{m.mode}]: ABOVE ROOF")
        ax.annotate("above roof", (x, m.tflops), textcoords="offset points", xytext=(6, 4),
                    color=ABOVE_COLOR, fontsize=7)
        return
    low, high = m.rate_interval("tflops")
    ax.errorbar([x], [m.tflops], yerr=[[m.tflops - low], [high - m.tflops]],
                marker=MODE_MARKERS.get(m.mode, "o"), color=color, ls="none", capsize=3,
                label=f"{m.name} [{m.mode}]")


# ---- bar and line charts ------------------------------------------------------------------------
def bar_chart(measurements: Sequence[Any] | Any, *, metric: str = "gbps",
              title: str | None = None, ax: Any = None) -> Chart:
    """One bar per measurement: ``metric`` ("gbps" or "tflops") with its 95% CI, the mode in
    each label, and the device roof as a dashed line."""
    unit = _metric(metric)
    ms = [m for m in _as_list(measurements) if getattr(m, metric) is not None]
    if not ms:
        raise TileLabError(f"no measurement has {unit}",
                           hint=f"pass {'bytes' if metric == 'gbps' else 'flops'}= to bench")
    fig, ax = _figure(ax, (max(4.0, 0.9 * len(ms) + 2), 3.6))
    with _style():
        for i, m in enumerate(ms):
            value = getattr(m, metric)
            if _above(m, metric):
                ax.bar(i, value, color="white", edgecolor=ABOVE_COLOR, hatch="//")
                ax.text(i, value, "above roof", ha="center", va="bottom", color=ABOVE_COLOR,
                        fontsize=7)
                continue
            low, high = m.rate_interval(metric)
            ax.bar(i, value, yerr=[[value - low], [high - value]], capsize=3,
                   color=COLORS[i % len(COLORS)])
        # steep enough that neighbouring two-line labels clear each other (bars 0.9 in apart)
        ax.set_xticks(range(len(ms)), [f"{m.name}\n[{m.mode}]" for m in ms], rotation=35,
                      ha="right", rotation_mode="anchor")
        if _roof_line(ax, ms, metric):  # beside the bars, never over them
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        ax.set_ylabel(unit)
        ax.set_title(title or f"{unit} (mean, 95% CI)")
    return Chart(fig, "bar")


def line_chart(measurements: Sequence[Any] | Any, *, x: str, metric: str = "gbps",
               title: str | None = None, ax: Any = None) -> Chart:
    """``metric`` vs the parameter ``x`` (from each measurement's ``params``), one line per
    kernel and mode, with 95% CI error bars."""
    unit = _metric(metric)
    ms = [m for m in _as_list(measurements) if getattr(m, metric) is not None]
    missing = [m.name for m in ms if x not in m.params]
    if missing:
        raise TileLabError(f"parameter {x!r} is not in the params of: {', '.join(missing)}",
                           hint="bench(..., params={...}) records the parameters")
    if not ms:
        raise TileLabError(f"no measurement has {unit}")
    series: dict[tuple[str, str], list[Any]] = {}
    for m in ms:
        series.setdefault((m.kernel, m.mode), []).append(m)
    fig, ax = _figure(ax, (5.6, 3.6))
    with _style():
        for i, ((kernel, mode), group) in enumerate(sorted(series.items())):
            group.sort(key=lambda m: m.params[x])
            color = COLORS[i % len(COLORS)]
            ok = [m for m in group if not _above(m, metric)]
            xs = [m.params[x] for m in ok]
            ys = [getattr(m, metric) for m in ok]
            lows = [y - m.rate_interval(metric)[0] for m, y in zip(ok, ys)]
            highs = [m.rate_interval(metric)[1] - y for m, y in zip(ok, ys)]
            ax.errorbar(xs, ys, yerr=[lows, highs], marker=MODE_MARKERS.get(mode, "o"),
                        color=color, capsize=3, label=f"{kernel} [{mode}]")
            for m in group:
                if _above(m, metric):
                    ax.plot([m.params[x]], [getattr(m, metric)], marker="x", color=ABOVE_COLOR,
                            ms=9, mew=2, ls="none")
                    ax.annotate("above roof", (m.params[x], getattr(m, metric)),
                                textcoords="offset points", xytext=(6, 4), color=ABOVE_COLOR,
                                fontsize=7)
        if all(isinstance(m.params[x], (int, float)) and m.params[x] > 0 for m in ms):
            values = sorted({m.params[x] for m in ms})
            if len(values) > 2 and values[-1] / values[0] >= 8:
                ax.set_xscale("log", base=2)
        _roof_line(ax, ms, metric)
        ax.set_xlabel(x)
        ax.set_ylabel(unit)
        ax.set_title(title or f"{unit} vs {x} (mean, 95% CI)")
        ax.legend()
    return Chart(fig, "line")


# ---- helpers ------------------------------------------------------------------------------------
def _as_list(measurements: Any) -> list[Any]:
    if hasattr(measurements, "samples_s"):
        return [measurements]
    return list(measurements)


def _metric(metric: str) -> str:
    if metric not in METRICS:
        raise TileLabError(f"metric={metric!r}: choose 'gbps' or 'tflops'")
    return METRICS[metric]


def _gpu(m: Any) -> str:
    return m.provenance.gpu if m.provenance is not None else "unknown GPU"


def _above(m: Any, metric: str) -> bool:
    value = getattr(m, metric)
    peak = m.peak_gbps if metric == "gbps" else m.peak_tflops
    return bool(m.above_roof and value is not None and peak and value > peak)


def _roof_line(ax: Any, ms: Sequence[Any], metric: str) -> bool:
    """Draw the device roof when all measurements share one; True if drawn."""
    peaks = {m.peak_gbps if metric == "gbps" else m.peak_tflops for m in ms} - {None}
    if len(peaks) != 1:
        return False
    peak = peaks.pop()
    ax.axhline(peak, color=ROOF_COLOR, ls="--", lw=0.9,
               label=f"peak {peak:.0f} {METRICS[metric]}")
    return True


def _style() -> Any:
    import matplotlib

    return matplotlib.rc_context(STYLE)


def _figure(ax: Any, size: tuple[float, float]) -> tuple[Any, Any]:
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure

    with _style():
        fig = Figure(figsize=size, layout="constrained")
        return fig, fig.add_subplot()
