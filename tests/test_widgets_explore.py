"""The explore widget, driven headlessly: set slider values, check what was redrawn."""

from __future__ import annotations

import numpy as np
import pytest
from tune_fakes import FakeGPU
from tune_kernels import scale_copy

from tile_lab.tuning import Space, TuneOptions, TuningStore, tune
from tile_lab.widgets.explore import ExploreOptions, explore

N = 1 << 10
SPACE = Space(TILE=[64, 128, 256], LAT=[1, 3])


def _args(c):
    return (np.arange(N, dtype=np.float32), np.zeros(N, np.float32), c["TILE"], c["LAT"])


def _grid(c):
    return (N // c["TILE"],)


def test_moving_a_slider_measures_and_redraws_the_new_config():
    gpu = FakeGPU()
    ex = explore(scale_copy, SPACE, _grid, _args, measure=gpu, options=ExploreOptions(use_gpu=True))
    before = ex.redraws
    assert gpu.calls[-1][:2] == (64, 1)
    ex.sliders["TILE"].value = 256  # what a user's slider release does
    assert ex.redraws == before + 1
    assert gpu.calls[-1][:2] == (256, 1)
    assert "TILE=256, LAT=1" in ex.status.value and "µs" in ex.status.value
    assert "<svg" in ex.perf.value and "TILE" in ex.perf.value  # the knob plot was redrawn
    # going back to a measured config re-uses the cached measurement
    n = len(gpu.calls)
    ex.sliders["TILE"].value = 64
    assert len(gpu.calls) == n and "TILE=64" in ex.status.value
    assert all(s.continuous_update is False for s in ex.sliders.values())


def test_sweep_then_apply_best_binds_the_tuned_kernel():
    ex = explore(scale_copy, SPACE, _grid, _args, measure=FakeGPU(),
                 options=ExploreOptions(use_gpu=True))
    result = ex.sweep(TuneOptions(strategy="exhaustive", progress=False))
    assert result.best.config.as_dict() == {"TILE": 256, "LAT": 3}
    assert ex.config.as_dict() == {"TILE": 256, "LAT": 3}  # sliders moved to the best
    assert ex.swept == 6
    ns: dict = {}
    snippet = ex.apply_best(ns)
    assert ns["scale_copy_best"] == {"TILE": 256, "LAT": 3}
    assert ns["scale_copy_tuned"] is not None and "scale_copy_tuned" in snippet


def test_without_gpu_sliders_show_recorded_results_and_drive_the_emulator(tmp_path):
    path = tmp_path / "rec.jsonl"
    tune(scale_copy, SPACE, _grid, _args, measure=FakeGPU(), store=str(path),
         options=TuneOptions(strategy="exhaustive", progress=False))
    ex = explore(scale_copy, SPACE, _grid, _args, store=TuningStore(path),
                 options=ExploreOptions(use_gpu=False))
    ex.sliders["LAT"].value = 3
    assert "recorded" in ex.status.value and "TILE=64, LAT=3" in ex.status.value
    pytest.importorskip("tile_lab.emulator")
    # the diagram pane comes from the emulator's trace at the selected config
    assert "<svg" in ex.diagram.value, ex.diagram.value[:300]
    old = ex.diagram.value
    ex.sliders["TILE"].value = 128
    assert ex.diagram.value != old


def test_a_gzipped_store_shows_recorded_results_and_a_sweep_leaves_it_alone(tmp_path):
    """Notebook 9's explorer reads the shipped store ``.jsonl.gz``: the sliders show its
    records, and a sweep on a GPU measures afresh instead of appending to the read-only file."""
    import gzip

    plain = tmp_path / "rec.jsonl"
    tune(scale_copy, SPACE, _grid, _args, measure=FakeGPU(), store=str(plain),
         options=TuneOptions(strategy="exhaustive", progress=False))
    packed = tmp_path / "rec.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes(), 9, mtime=0))
    shown = explore(scale_copy, SPACE, _grid, _args, store=str(packed),
                    options=ExploreOptions(use_gpu=False))
    shown.sliders["LAT"].value = 3
    assert "recorded" in shown.status.value and "TILE=64, LAT=3" in shown.status.value

    gpu = FakeGPU()
    ex = explore(scale_copy, SPACE, _grid, _args, measure=gpu, store=str(packed),
                 options=ExploreOptions(use_gpu=True))
    before = packed.read_bytes()
    result = ex.sweep(TuneOptions(strategy="exhaustive", progress=False))
    assert ex.swept == 6 and not any(s.from_store for s in result.successes)
    assert result.best.config.as_dict() == {"TILE": 256, "LAT": 3}
    assert packed.read_bytes() == before
