"""Tuning plots and tables render from a recorded result file (no GPU, no measuring)."""

from __future__ import annotations

import numpy as np
from tune_fakes import FakeGPU
from tune_kernels import scale_copy

from tile_lab.render.tune_plots import heatmap, knob_plot, result_table_html
from tile_lab.tuning import Space, tune

N = 1 << 12
SPACE = Space(TILE=[64, 128, 256, 512], LAT=[1, 3, 6])


def _recorded_result(tmp_path):
    path = tmp_path / "rec.jsonl"
    args = lambda c: (np.ones(N, np.float32), np.empty(N, np.float32), c["TILE"], c["LAT"])  # noqa: E731
    grid = lambda c: (N // c["TILE"],)  # noqa: E731
    tune(scale_copy, SPACE, grid, args, strategy="exhaustive", measure=FakeGPU(),
         store=str(path), progress=False)
    # replay purely from the file: this measure must never be called
    def never(*a):
        raise AssertionError("replay must not measure")
    return tune(scale_copy, SPACE, grid, args, strategy="exhaustive", measure=never,
                store=str(path), progress=False)


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
    r = tune(scale_copy, SPACE, lambda c: (N // c["TILE"],), args, strategy="exhaustive",
             measure=FakeGPU(fail_tiles=(64,)), store=str(path), progress=False)
    h = result_table_html(r)
    assert h.count("<tr") == 1 + 12
    assert "ILLEGAL_ADDRESS" in h and "<script" not in h
    assert result_table_html(r) == h  # deterministic
