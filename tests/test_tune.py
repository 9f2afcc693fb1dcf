"""Tuning: spaces and filtering, strategies, failures as data, the resumable store."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tune_fakes import FakeGPU
from tune_kernels import scale_copy

from tile_lab.tune import Config, Space, SpaceError, TuneError, TuningStore, tune
from tile_lab.tune.store import StoredRecord, config_key

N = 1 << 12


def _args(cfg):
    x = np.ones(N, np.float32)
    return (x, np.empty_like(x), cfg["TILE"], cfg["LAT"])


def _grid(cfg):
    return (N // cfg["TILE"],)


# ---- spaces ----------------------------------------------------------------------------------
def test_space_classifies_constants_and_hints():
    space = Space(TILE=[64, 128], LAT=[1, 3], num_ctas=[1, 2], occupancy=[1, 4])
    assert space.classify(scale_copy) == {"TILE": "constant", "LAT": "constant",
                                          "num_ctas": "hint", "occupancy": "hint"}
    assert len(space) == 16


def test_space_rejects_unknown_knob_by_name():
    with pytest.raises(SpaceError, match=r"'tile_m'.*Constant parameters: TILE, LAT"):
        Space(tile_m=[64]).classify(scale_copy)


def test_space_rejects_out_of_range_hint_values():
    with pytest.raises(SpaceError, match=r"num_ctas.*3"):
        Space(num_ctas=[1, 3])
    with pytest.raises(SpaceError, match=r"latency.*11"):
        Space(latency=[11])


def test_arch_filter_drops_multi_cta_on_sm80_and_keeps_it_on_sm90():
    space = Space(TILE=[128], num_ctas=[1, 2, 4])
    kept, rejected = space.split("sm_80")
    assert [c["num_ctas"] for c in kept] == [1]
    assert all("sm_80" in r.reason for r in rejected) and len(rejected) == 2
    assert [c["num_ctas"] for c in space.configs("sm_90")] == [1, 2, 4]


def test_smem_filter_and_constraints():
    space = Space(TILE=[64, 128, 256, 512], LAT=[1, 2],
                  smem_bytes=lambda c: c["TILE"] * 512,  # 256 KiB at TILE=512
                  constraints=[lambda c: c["LAT"] == 1 or c["TILE"] >= 128])
    kept, rejected = space.split("sm_90")
    labels = {c.label() for c in kept}
    assert "TILE=512, LAT=1" not in labels  # 256 KiB > 227 KiB
    assert "TILE=64, LAT=2" not in labels  # constraint
    assert "TILE=256, LAT=2" in labels
    reasons = " ".join(r.reason for r in rejected)
    assert "shared memory" in reasons and "rejected by" in reasons


# ---- strategies ------------------------------------------------------------------------------
SPACE = Space(TILE=[64, 128, 256, 512], LAT=[1, 3, 6])


def test_exhaustive_measures_everything_and_finds_the_minimum():
    gpu = FakeGPU()
    r = tune(scale_copy, SPACE, _grid, _args, strategy="exhaustive", measure=gpu,
             progress=False, samples=7)
    assert len(r.successes) == 12 and not r.failures
    assert r.best.config.as_dict() == {"TILE": 256, "LAT": 3}
    assert all(n == 7 for _, _, n in gpu.calls)


def test_race_finds_the_same_best_with_fewer_full_measurements():
    gpu = FakeGPU()
    r = tune(scale_copy, SPACE, _grid, _args, strategy="race", measure=gpu, progress=False,
             samples=20, race_samples=3, race_keep=1.3)
    assert r.best.config.as_dict() == {"TILE": 256, "LAT": 3}
    full = [c for c in gpu.calls if c[2] == 20]
    assert 1 <= len(full) < 12  # only contenders are re-measured in full
    assert len(r.successes) == 12  # losers keep their short measurement


def test_random_respects_budget_and_seed():
    a, b = FakeGPU(), FakeGPU()
    ra = tune(scale_copy, SPACE, _grid, _args, strategy="random", budget=4, seed=1,
              measure=a, progress=False)
    tune(scale_copy, SPACE, _grid, _args, strategy="random", budget=4, seed=1,
         measure=b, progress=False)
    assert len(ra.successes) == 4 and a.calls == b.calls
    with pytest.raises(TuneError, match="budget"):
        tune(scale_copy, SPACE, _grid, _args, strategy="random", measure=a, progress=False)


def test_coordinate_search_reaches_the_optimum_of_a_separable_cost():
    gpu = FakeGPU()
    r = tune(scale_copy, SPACE, _grid, _args, strategy="coordinate", measure=gpu,
             progress=False)
    assert r.best.config.as_dict() == {"TILE": 256, "LAT": 3}
    assert len(gpu.calls) < 12


def test_failures_are_data_and_the_sweep_continues():
    gpu = FakeGPU(fail_tiles=(128,))
    r = tune(scale_copy, SPACE, _grid, _args, strategy="exhaustive", measure=gpu,
             progress=False)
    assert len(r.failures) == 3 and len(r.successes) == 9
    assert all("ILLEGAL_ADDRESS" in f.error and f.stage == "launch" for f in r.failures)
    assert "FAIL" in r.summary() and "TILE=128" in r.summary()


def test_unknown_strategy_is_an_error():
    with pytest.raises(TuneError, match="unknown strategy 'greedy'"):
        tune(scale_copy, SPACE, _grid, _args, strategy="greedy", measure=FakeGPU())


# ---- the store ---------------------------------------------------------------------------------
def test_store_round_trip_and_rerun_skips_stored(tmp_path):
    path = tmp_path / "tune.jsonl"
    first = tune(scale_copy, SPACE, _grid, _args, strategy="exhaustive", measure=FakeGPU(),
                 store=str(path), progress=False)
    lines = path.read_text().splitlines()
    assert len(lines) == 12
    rec = json.loads(lines[0])
    assert rec["status"] == "ok" and rec["context"]["kernel"] == "scale_copy"
    assert rec["context"]["source_sha"] and rec["context"]["arrays"]

    again = FakeGPU()
    second = tune(scale_copy, SPACE, _grid, _args, strategy="exhaustive", measure=again,
                  store=str(path), progress=False)
    assert again.calls == []  # everything came from the store
    assert second.best.config == first.best.config
    assert all(s.from_store for s in second.successes)


def test_resume_after_a_crash_loses_at_most_the_config_in_flight(tmp_path):
    path = tmp_path / "tune.jsonl"
    with pytest.raises(KeyboardInterrupt):
        tune(scale_copy, SPACE, _grid, _args, strategy="exhaustive",
             measure=FakeGPU(crash_after=5), store=str(path), progress=False)
    assert len(path.read_text().splitlines()) == 5
    # a torn write at the end (the process died mid-line) is ignored and repaired
    with open(path, "a") as f:
        f.write('{"v": 1, "status": "o')
    assert len(TuningStore(path).records()) == 5
    gpu = FakeGPU()
    r = tune(scale_copy, SPACE, _grid, _args, strategy="exhaustive", measure=gpu,
             store=str(path), progress=False)
    assert len(gpu.calls) == 7  # only the 7 configs not stored
    assert len(r.successes) == 12
    assert all(line.endswith("}") for line in path.read_text().splitlines())


def test_store_context_separates_different_shapes(tmp_path):
    path = tmp_path / "t.jsonl"
    tune(scale_copy, SPACE, _grid, _args, strategy="exhaustive", measure=FakeGPU(),
         store=str(path), progress=False)

    def other_args(cfg):
        x = np.ones(2 * N, np.float32)
        return (x, np.empty_like(x), cfg["TILE"], cfg["LAT"])

    gpu = FakeGPU()
    tune(scale_copy, SPACE, _grid, other_args, strategy="exhaustive", measure=gpu,
         store=str(path), progress=False)
    assert len(gpu.calls) == 12  # a new shape is a new context: nothing reused


def test_stored_record_json_round_trip():
    rec = StoredRecord({"kernel": "k"}, Config((("TILE", 64),)), "failed", None, "boom",
                       "compile")
    back = StoredRecord.from_json(rec.to_json())
    assert back == rec and config_key(back.config) == config_key(rec.config)


def test_compile_failures_from_the_precompiler_are_recorded_and_not_measured():
    class FakePrecompiler:
        closed = False

        def error(self, cfg):
            return "tileiras: out of shared memory" if cfg["TILE"] == 512 else None

        def close(self):
            FakePrecompiler.closed = True

    gpu = FakeGPU()
    gpu.start_precompile = lambda *a: FakePrecompiler()
    r = tune(scale_copy, SPACE, _grid, _args, strategy="exhaustive", measure=gpu,
             progress=False)
    assert {f.config["TILE"] for f in r.failures} == {512}
    assert all(f.stage == "compile" and "shared memory" in f.error for f in r.failures)
    assert all(tile != 512 for tile, _, _ in gpu.calls)
    assert FakePrecompiler.closed


def test_stored_results_of_another_space_are_not_mixed_in(tmp_path):
    path = tmp_path / "t.jsonl"
    tune(scale_copy, SPACE, _grid, _args, strategy="exhaustive", measure=FakeGPU(),
         store=str(path), progress=False)
    narrow = Space(TILE=[128, 256], LAT=[3])
    gpu = FakeGPU()
    r = tune(scale_copy, narrow, _grid, _args, strategy="exhaustive", measure=gpu,
             store=str(path), progress=False)
    assert gpu.calls == []  # both configs were stored by the wider run
    assert sorted(s.config["TILE"] for s in r.successes) == [128, 256]
