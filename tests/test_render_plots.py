"""Roofline, bar and line charts from measurements (Agg, no GPU): geometry and honesty."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from pathlib import Path

import numpy as np
import pytest
from fixed_measurements import fixed_measurement as _measurement

from tile_lab import roofline
from tile_lab.errors import TileLabError
from tile_lab.gpu.measurement import Provenance
from tile_lab.gpu.peaks import compute_peaks
from tile_lab.render.plots import bar_chart, line_chart, roofs_of

H100 = compute_peaks(gpu="NVIDIA H100 80GB HBM3", arch="sm_90", sm_count=132,
                     sm_clock_mhz=1980, mem_clock_mhz=2619, bus_width_bits=5120)
PROV = Provenance(gpu=H100.gpu, arch="sm_90", sm_count=132, driver=None, cuda_driver_api=None,
                  cuda_tile="1.7.0", tileiras=None, cupy=None, sm_clock_mhz=None,
                  mem_clock_mhz=None, max_sm_clock_mhz=1980.0, clocks_locked="unknown")


def meas(label, *, nbytes, flops=None, time_s=1e-3, mode="cold", params=None, spread=0.02):
    times = [time_s * (1 - spread), time_s, time_s * (1 + spread)]
    return _measurement(label, mode, (1,), times, 1, (), bytes=nbytes, flops=flops, trace=None,
                        label=label, params=params or {}, fresh=False, notes=[], peaks=H100,
                        provenance=PROV)


VADD = meas("vector_add", nbytes=3 * 2**28 * 4, flops=2**28, time_s=1.25e-3)
GEMM = meas("gemm", nbytes=3 * 8192**2 * 2, flops=2 * 8192**3, time_s=2.0e-3)
FAKE = meas("too fast", nbytes=3 * 2**28 * 4, flops=2**28, time_s=0.1e-3, mode="warm")


def _lines_with_label(ax, text):
    return [line for line in ax.get_lines() if text in (line.get_label() or "")]


def _errorbar_series(ax):
    """label -> (x data, y data) of every errorbar drawn."""
    return {c.get_label(): c.lines[0].get_data() for c in ax.containers
            if type(c).__name__ == "ErrorbarContainer"}


def test_roofline_draws_the_roofs_and_places_each_measurement():
    chart = roofline([VADD, GEMM])
    ax = chart.figure.axes[0]
    roof = _lines_with_label(ax, "roof: DRAM")[0]
    xs, ys = roof.get_data()
    # memory-bound part: TFLOPS = AI x GB/s / 1000; then flat at the tensor roof
    assert ys[0] == pytest.approx(xs[0] * H100.dram_gbps / 1e3)
    assert max(ys) == pytest.approx(H100.tensor_tflops)
    ridge = roofs_of([VADD]).ridge
    assert ridge == pytest.approx(H100.tensor_tflops * 1e3 / H100.dram_gbps)
    placed = _errorbar_series(ax)
    assert set(placed) == {"vector_add [cold]", "gemm [cold]"}
    x, y = placed["vector_add [cold]"]
    assert x[0] == pytest.approx(VADD.arithmetic_intensity)
    assert y[0] == pytest.approx(VADD.tflops)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert H100.gpu in ax.get_title()


def test_above_roof_points_are_flagged_not_plotted_as_ordinary_points():
    assert FAKE.above_roof
    ax = roofline([VADD, FAKE]).figure.axes[0]
    flagged = _lines_with_label(ax, "ABOVE ROOF")
    assert len(flagged) == 1 and flagged[0].get_marker() == "x"
    assert any(t.get_text() == "above roof" for t in ax.texts)
    assert set(_errorbar_series(ax)) == {"vector_add [cold]"}  # no error bar for the fake


def test_measurements_without_flops_are_listed_as_not_placed():
    bw_only = meas("copy", nbytes=2**30)
    ax = roofline([VADD, bw_only]).figure.axes[0]
    assert any("not placed" in t.get_text() and "copy" in t.get_text() for t in ax.texts)
    with pytest.raises(TileLabError, match="none can be placed"):
        roofline([bw_only])


def test_roofline_refuses_to_mix_gpus_without_explicit_peaks():
    from dataclasses import replace

    other = replace(VADD, peak_gbps=4800.0)
    with pytest.raises(TileLabError, match="different roofs"):
        roofline([VADD, other])
    roofline([VADD, other], peaks=H100)  # explicit roofs are fine


def test_bar_chart_has_ci_error_bars_mode_labels_and_the_peak_line():
    ms = [VADD, meas("cupy add", nbytes=3 * 2**28 * 4, time_s=1.3e-3), FAKE]
    ax = bar_chart(ms, metric="gbps").figure.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["vector_add\n[cold]", "cupy add\n[cold]", "too fast\n[warm]"]
    bars = ax.patches
    assert bars[0].get_height() == pytest.approx(VADD.gbps)
    assert bars[2].get_hatch() == "//"  # the above-roof one
    assert any(t.get_text() == "above roof" for t in ax.texts)
    err = [c for c in ax.collections if c.get_segments()]
    (lo, hi) = VADD.rate_interval("gbps")
    seg = err[0].get_segments()[0]
    assert seg[0][1] == pytest.approx(lo) and seg[1][1] == pytest.approx(hi)
    peak = _lines_with_label(ax, "peak")[0]
    assert peak.get_ydata()[0] == pytest.approx(H100.dram_gbps)


def test_line_chart_one_series_per_kernel_and_mode_sorted_by_the_parameter():
    ms = [meas("vadd", nbytes=2**30, time_s=t, params={"tile": tile})
          for tile, t in ((1024, 1.0e-3), (256, 1.2e-3), (4096, 0.9e-3), (512, 1.1e-3))]
    ms += [meas("vadd", nbytes=2**30, time_s=0.5e-3, mode="graph", params={"tile": 1024})]
    ax = line_chart(ms, x="tile").figure.axes[0]
    series = _errorbar_series(ax)
    assert set(series) == {"vadd [cold]", "vadd [graph]"}
    xs, ys = series["vadd [cold]"]
    assert list(xs) == [256, 512, 1024, 4096]
    assert ys[0] == pytest.approx(2**30 / 1.2e-3 / 1e9)
    assert ax.get_xscale() == "log"
    with pytest.raises(TileLabError, match="'block' is not in the params"):
        line_chart(ms, x="block")


def test_svg_is_deterministic_and_png_export_works(tmp_path):
    a = roofline([VADD, GEMM]).svg
    b = roofline([VADD, GEMM]).svg
    assert a == b and a.lstrip().startswith("<?xml")
    assert "Date" not in a and str(tmp_path) not in a
    out = bar_chart([VADD]).to_png(tmp_path / "bar.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_single_measurement_and_recorded_files_plot(tmp_path):
    from tile_lab import load_measurements
    from tile_lab.gpu.measurement import save_measurements

    save_measurements([VADD, GEMM], tmp_path / "rec.json")
    chart = roofline(load_measurements(tmp_path / "rec.json"))
    assert chart.kind == "roofline" and chart._repr_svg_().count("<svg") == 1
    assert bar_chart(VADD).figure.axes[0].patches[0].get_height() == pytest.approx(VADD.gbps)
    assert np.isfinite(VADD.gbps)


RECORDED = sorted((Path(__file__).parent.parent / "notebooks" / "data").glob("gpu_*.json.gz"))


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_recorded_gpu_measurements_load_and_plot_without_a_gpu(path):
    from tile_lab import load_measurements

    ms = load_measurements(path)
    assert ms
    for m in ms:
        assert m.provenance is not None and m.provenance.gpu and m.provenance.driver
        assert m.mode in ("cold", "warm", "graph") and m.n == len(m.samples_s) > 1
        if m.bytes:  # the recorded rate is the arithmetic of the recorded time and bytes
            assert m.gbps == pytest.approx(m.bytes / m.mean_s / 1e9)
    assert bar_chart(ms).figure.axes[0].patches
    if any(m.flops for m in ms):
        assert roofline(ms).kind == "roofline"
