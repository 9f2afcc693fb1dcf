"""tile_lab.tune on the lent GPU: workers compile, the race measures in compile order, clear
losers stop after one sample, every result is a real measurement, and the store resumes."""

from __future__ import annotations

import pytest
from tune_kernels import scale_copy

import tile_lab
from tile_lab.gpu.options import TimingOptions
from tile_lab.tuning import RaceOptions, Space, TuneOptions, TuningStore

N = 1 << 24  # 64 MiB of float32 per array


@pytest.mark.gpu
def test_race_on_the_gpu_stores_real_measurements_and_resumes(tmp_path):
    import cupy

    x = cupy.ones(N, cupy.float32)
    y = cupy.empty_like(x)
    # TILE=16 is far slower than TILE=1024 for a 64 MiB copy: the race must stop it early
    space = Space(TILE=[16, 1024, 4096], LAT=[1, 4])
    path = tmp_path / "store.jsonl"

    def grid(c):
        return (N // c["TILE"],)

    def args(c):
        return (x, y, c["TILE"], c["LAT"])

    r = tile_lab.tune(scale_copy, space, grid, args, store=str(path),
                      options=TuneOptions(progress=False, bytes=2 * 4 * N,
                                          race=RaceOptions(samples=5),
                                          timing=TimingOptions(samples=10)))
    assert len(r.successes) == 6 and not r.failures
    assert r.best.config["TILE"] != 16
    for s in r.successes:
        m = s.measurement
        assert m.provenance is not None and m.provenance.gpu and m.mean_s > 0
        assert m.n in (1, 5, 10)
    slowest = max(r.successes, key=lambda s: s.time_s)
    assert slowest.config["TILE"] == 16
    assert r.timings["compile_wait"] >= 0 and r.timings["measure"] > 0
    assert len(r.compile_s) == 6 and all(sec > 0 for sec in r.compile_s.values())
    cupy.testing.assert_array_equal(y, 2 * x)  # the last launch left a right answer
    assert len(TuningStore(str(path)).done(r.context)) == 6
    again = tile_lab.tune(scale_copy, space, grid, args, store=str(path),
                          options=TuneOptions(progress=False))
    assert all(s.from_store for s in again.successes)
    assert again.best.config == r.best.config


@pytest.mark.gpu
def test_explore_on_the_gpu_measures_each_new_config_once():
    import cupy

    from tile_lab.widgets.explore import ExploreOptions, explore

    x = cupy.ones(N, cupy.float32)
    y = cupy.empty_like(x)
    space = Space(TILE=[1024, 4096], LAT=[1, 4])
    ex = explore(scale_copy, space, lambda c: (N // c["TILE"],),
                 lambda c: (x, y, c["TILE"], c["LAT"]), options=ExploreOptions(use_gpu=True),
                 diagram_args_fn=lambda c: (x[:8192].get(), y[:8192].get(), c["TILE"], c["LAT"]),
                 diagram_grid_fn=lambda c: (8192 // c["TILE"],))
    assert len(ex.measured) == 1 and "µs" in ex.status.value
    ex.sliders["TILE"].value = 4096
    assert len(ex.measured) == 2
    m = ex.measured[next(reversed(ex.measured))].measurement
    assert m.provenance.gpu and m.n in (1, ex.SAMPLES)
    assert "TILE=4096" in ex.status.value and "<svg" in ex.perf.value
    cupy.testing.assert_array_equal(y, 2 * x)
