"""Tuning plots and tables render from a recorded result file (no GPU, no measuring)."""

from __future__ import annotations

import numpy as np
from tune_fakes import FakeGPU
from tune_kernels import scale_copy

from tile_lab.render.tune_plots import heatmap, knob_plot, result_table_html
from tile_lab.tuning import Space, TuneOptions, tune

N = 1 << 12
SPACE = Space(TILE=[64, 128, 256, 512], LAT=[1, 3, 6])


def _recorded_result(tmp_path):
    path = tmp_path / "rec.jsonl"
    args = lambda c: (np.ones(N, np.float32), np.empty(N, np.float32), c["TILE"], c["LAT"])  # noqa: E731
    grid = lambda c: (N // c["TILE"],)  # noqa: E731
    tune(scale_copy, SPACE, grid, args, measure=FakeGPU(), store=str(path),
         options=TuneOptions(strategy="exhaustive", progress=False))
    # replay purely from the file: this measure must never be called
    def never(*a):
        raise AssertionError("replay must not measure")
    return tune(scale_copy, SPACE, grid, args, measure=never, store=str(path),
                options=TuneOptions(strategy="exhaustive", progress=False))


def test_knob_plot_has_one_bar_per_value_with_ci(tmp_path):
    r = _recorded_result(tmp_path)
    fig = knob_plot(r, "TILE", "time").figure
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["64", "128", "256", "512"]
    heights = [p.get_height() for p in ax.patches]
    assert len(heights) == 4 and int(np.argmin(heights)) == 2  # TILE=256 is fastest
    assert "LAT=3" in ax.get_title() and "cold" in ax.get_title()
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    assert bars and bars[0].errorbar is not None  # CI error bars drawn


def test_heatmap_cells_match_the_results(tmp_path):
    r = _recorded_result(tmp_path)
    fig = heatmap(r, "TILE", "LAT", "time").figure
    data = fig.axes[0].images[0].get_array()
    assert data.shape == (3, 4)
    best_cell = np.unravel_index(np.nanargmin(data), data.shape)
    assert best_cell == (1, 2)  # LAT=3 row, TILE=256 column


def test_plots_render_to_deterministic_svg(tmp_path):
    r = _recorded_result(tmp_path)
    a, b = knob_plot(r, "LAT", "gbps").svg, knob_plot(r, "LAT", "gbps").svg
    assert a == b and "<svg" in a and "GB/s" in a


def test_result_table_lists_successes_and_failures_escaped(tmp_path):
    path = tmp_path / "f.jsonl"
    args = lambda c: (np.ones(N, np.float32), np.empty(N, np.float32), c["TILE"], c["LAT"])  # noqa: E731
    r = tune(scale_copy, SPACE, lambda c: (N // c["TILE"],), args,
             measure=FakeGPU(fail_tiles=(64,)), store=str(path),
             options=TuneOptions(strategy="exhaustive", progress=False))
    h = result_table_html(r)
    assert h.count("<tr") == 1 + 12
    assert "ILLEGAL_ADDRESS" in h and "<script" not in h
    assert result_table_html(r) == h  # deterministic


def _recorded_gemm(kernel="gemm_persistent"):
    from pathlib import Path

    from tile_lab.gpu.measurement import Measurement
    from tile_lab.tuning import TuningStore
    from tile_lab.tuning.result import Success, TuningResult

    store = TuningStore(str(Path(__file__).parent.parent / "notebooks" / "data"
                            / "tuning_gemm_8192.jsonl.gz"))
    rows = [r for r in store.records() if r.context["kernel"] == kernel and r.status == "ok"]
    return TuningResult(kernel, tuple(Success(r.config, Measurement.from_json_dict(r.measurement),
                                              from_store=True) for r in rows), ())


def test_config_roofline_places_every_recorded_config():
    from tile_lab.render.tune_plots import config_roofline

    result = _recorded_gemm()
    assert len(result.successes) == 16
    chart = config_roofline(result)
    ax = chart.figure.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    best = max(result.successes, key=lambda s: s.tflops)
    best_line = lines[f"best: {best.config.label()}"]
    assert list(best_line.get_ydata()) == [best.tflops]
    worst = min(result.successes, key=lambda s: s.tflops)
    assert list(lines[f"worst: {worst.config.label()}"].get_ydata()) == [worst.tflops]
    others = lines["other configs (14)"]
    assert sorted(others.get_ydata()) == sorted(s.tflops for s in result.successes
                                                if s is not best and s is not worst)
    ai = best.measurement.arithmetic_intensity  # same GEMM shape: one intensity for all
    assert set(others.get_xdata()) == {ai} and ai > 1000
    assert any("roof" in label for label in lines)
    assert "NVIDIA H200" in ax.get_title()
    assert chart.svg == config_roofline(result).svg  # deterministic


def test_config_roofline_needs_flops():
    import pytest

    from tile_lab.render.tune_plots import config_roofline

    r = tune(scale_copy, Space(TILE=[64, 128], LAT=[3]), lambda c: (4096 // c["TILE"],),
             lambda c: (np.ones(4096, np.float32), np.zeros(4096, np.float32), c["TILE"],
                        c["LAT"]),
             measure=FakeGPU(), options=TuneOptions(progress=False))
    with pytest.raises(ValueError, match="flops="):
        config_roofline(r)


def test_knob_bars_svg_draws_one_bar_per_value_around_a_config():
    import re

    from tile_lab.render.tune_plots import knob_bars_svg

    result = _recorded_gemm()
    around = next(s.config for s in result.successes
                  if s.config.as_dict() == {"TM": 128, "TN": 128, "TK": 64, "GROUP": 8,
                                            "LAT": 3, "occupancy": 2, "num_ctas": 1})
    svg = knob_bars_svg(result, "LAT", "tflops", around=around)
    assert svg == knob_bars_svg(result, "LAT", "tflops", around=around)  # deterministic
    bars = re.findall(r'<rect [^>]*fill:(#[0-9A-F]{6})', svg)
    assert sorted(bars) == ["#0072B2", "#999999"]  # LAT 3 (here, highlighted) and LAT 4
    lat4 = next(s for s in result.successes
                if s.config.as_dict() == {**around.as_dict(), "LAT": 4})
    assert f">{lat4.tflops:.3g}<" in svg  # the other bar's value label
    assert "fixed: TM=128, TN=128, TK=64," in svg and "GROUP=8, occupancy=2, num_ctas=1" in svg
    assert "TFLOPS vs LAT" in svg


def test_a_config_timed_once_has_no_interval():
    from types import SimpleNamespace

    from tile_lab.tuning.result import Success, TuningResult
    from tile_lab.tuning.space import Config

    def success(n: int) -> Success:
        m = SimpleNamespace(mean_s=1e-5 * n, ci95_s=0.0 if n == 1 else 2e-7, gbps=None,
                            tflops=None, mode="cold", n=n)
        return Success(config=Config((("TILE", 64 * n),)), measurement=m)

    r = TuningResult(kernel_name="k", successes=(success(1), success(5)), failures=())
    table = result_table_html(r)
    assert "n/a (1 sample)" in table and "±0.2" in table and "±0.0" not in table
    text = r.summary()
    assert "(1 sample)" in text and "± 0.2" in text and "± 0.0" not in text
    # a terminal IPython (text/plain only) shows that summary, not the dataclass repr
    from IPython.core.formatters import DisplayFormatter

    assert DisplayFormatter().format(r, include={"text/plain"})[0] == {"text/plain": text}
