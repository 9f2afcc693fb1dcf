"""A tuning run's measuring side (tile_lab.tuning.run_measurer): the options pick this machine or
a cluster, and the cluster's rules hold without Ray (its ClusterRun is replaced by a fake that
fails when started)."""

from __future__ import annotations

import pytest
from strategy_trace import SPACE, RecordingMeasurer, scale_args, scale_grid
from tune_kernels import scale_copy

from tile_lab.tuning import Config, TuneError, TuneOptions, tune
from tile_lab.tuning import cluster as cluster_module
from tile_lab.tuning.cluster import ClusterOptions
from tile_lab.tuning.run_measurer import (
    ClusterMeasuring,
    LocalMeasuring,
    TuneTarget,
    run_measurer,
)


def _target(kernel=scale_copy) -> TuneTarget:
    return TuneTarget(kernel, {"TILE": "constant", "LAT": "constant"}, scale_grid, scale_args,
                      None)


class NoCluster:
    def __init__(self, *a, **kw):
        raise AssertionError("a cluster was started")


def test_the_options_pick_where_configs_are_measured():
    local = run_measurer(RecordingMeasurer(), TuneOptions(), _target())
    on_ray = run_measurer(RecordingMeasurer(), TuneOptions(cluster=ClusterOptions(gpus=2)),
                          _target())
    assert type(local) is LocalMeasuring and type(on_ray) is ClusterMeasuring


def test_a_kernel_with_its_own_knobs_is_refused_before_the_cluster_starts(monkeypatch):
    class CppLike:
        def knob_kinds(self, space):
            return {"TILE": "define"}

    monkeypatch.setattr(cluster_module, "ClusterRun", NoCluster)
    measuring = run_measurer(RecordingMeasurer(), TuneOptions(cluster=ClusterOptions()),
                             _target(CppLike()))
    with pytest.raises(TuneError, match="cluster tuning takes cuTile Python kernels"):
        measuring.start([Config((("TILE", 64),))])


def test_a_fully_stored_run_starts_no_cluster_and_measures_nothing(monkeypatch, tmp_path):
    store = str(tmp_path / "tune.jsonl")
    tune(scale_copy, SPACE, scale_grid, scale_args, store=store, measure=RecordingMeasurer(),
         options=TuneOptions(strategy="exhaustive", progress=False))
    monkeypatch.setattr(cluster_module, "ClusterRun", NoCluster)
    gpu = RecordingMeasurer()
    r = tune(scale_copy, SPACE, scale_grid, scale_args, store=store, measure=gpu,
             options=TuneOptions(progress=False, cluster=ClusterOptions(gpus=2)))
    assert gpu.log == [] and len(r.successes) == 12 and r.placement == {}
