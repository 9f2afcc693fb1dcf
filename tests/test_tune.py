"""Tuning: spaces and filtering, strategies, failures as data, the resumable store."""

from __future__ import annotations

import json
from typing import ClassVar

import numpy as np
import pytest
from tune_fakes import FakeGPU, FakeMeasurement
from tune_kernels import scale_copy

from tile_lab.gpu.options import TimingOptions
from tile_lab.tuning import (
    Config,
    MeasureRequest,
    RaceOptions,
    ReadOnlyStoreError,
    Space,
    SpaceError,
    TuneError,
    TuneOptions,
    TuningStore,
    tune,
)
from tile_lab.tuning.store import StoredRecord, config_key

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
    r = tune(scale_copy, SPACE, _grid, _args, measure=gpu,
             options=TuneOptions(strategy="exhaustive", progress=False,
                                 timing=TimingOptions(samples=7)))
    assert len(r.successes) == 12 and not r.failures
    assert r.best.config.as_dict() == {"TILE": 256, "LAT": 3}
    assert all(n == 7 for _, _, n in gpu.calls)


def test_race_finds_the_same_best_with_fewer_full_measurements():
    gpu = FakeGPU()
    r = tune(scale_copy, SPACE, _grid, _args, measure=gpu,
             options=TuneOptions(strategy="race", progress=False,
                                 race=RaceOptions(samples=3, keep=1.3),
                                 timing=TimingOptions(samples=20)))
    assert r.best.config.as_dict() == {"TILE": 256, "LAT": 3}
    full = [c for c in gpu.calls if c[2] == 20]
    assert 1 <= len(full) < 12  # only contenders are re-measured in full
    assert len(r.successes) == 12  # losers keep their short measurement


def test_random_respects_budget_and_seed():
    a, b = FakeGPU(), FakeGPU()
    ra = tune(scale_copy, SPACE, _grid, _args, measure=a,
              options=TuneOptions(strategy="random", budget=4, seed=1, progress=False))
    tune(scale_copy, SPACE, _grid, _args, measure=b,
         options=TuneOptions(strategy="random", budget=4, seed=1, progress=False))
    assert len(ra.successes) == 4 and a.calls == b.calls
    with pytest.raises(TuneError, match="budget"):
        tune(scale_copy, SPACE, _grid, _args, measure=a,
             options=TuneOptions(strategy="random", progress=False))


def test_coordinate_search_reaches_the_optimum_of_a_separable_cost():
    gpu = FakeGPU()
    r = tune(scale_copy, SPACE, _grid, _args, measure=gpu,
             options=TuneOptions(strategy="coordinate", progress=False))
    assert r.best.config.as_dict() == {"TILE": 256, "LAT": 3}
    assert len(gpu.calls) < 12


def test_failures_are_data_and_the_sweep_continues():
    gpu = FakeGPU(fail_tiles=(128,))
    r = tune(scale_copy, SPACE, _grid, _args, measure=gpu,
             options=TuneOptions(strategy="exhaustive", progress=False))
    assert len(r.failures) == 3 and len(r.successes) == 9
    assert all("ILLEGAL_ADDRESS" in f.error and f.stage == "launch" for f in r.failures)
    assert "FAIL" in r.summary() and "TILE=128" in r.summary()


def test_unknown_strategy_is_an_error():
    with pytest.raises(TuneError, match="unknown strategy 'greedy'"):
        tune(scale_copy, SPACE, _grid, _args, measure=FakeGPU(),
             options=TuneOptions(strategy="greedy"))


# ---- the store ---------------------------------------------------------------------------------
def test_store_round_trip_and_rerun_skips_stored(tmp_path):
    path = tmp_path / "tune.jsonl"
    first = tune(scale_copy, SPACE, _grid, _args, measure=FakeGPU(), store=str(path),
                 options=TuneOptions(strategy="exhaustive", progress=False))
    lines = path.read_text().splitlines()
    assert len(lines) == 12
    rec = json.loads(lines[0])
    assert rec["status"] == "ok" and rec["context"]["kernel"] == "scale_copy"
    assert rec["context"]["source_sha"] and rec["context"]["arrays"]

    again = FakeGPU()
    second = tune(scale_copy, SPACE, _grid, _args, measure=again, store=str(path),
                  options=TuneOptions(strategy="exhaustive", progress=False))
    assert again.calls == []  # everything came from the store
    assert second.best.config == first.best.config
    assert all(s.from_store for s in second.successes)


def test_resume_after_a_crash_loses_at_most_the_config_in_flight(tmp_path):
    path = tmp_path / "tune.jsonl"
    with pytest.raises(KeyboardInterrupt):
        tune(scale_copy, SPACE, _grid, _args, measure=FakeGPU(crash_after=5), store=str(path),
             options=TuneOptions(strategy="exhaustive", progress=False))
    assert len(path.read_text().splitlines()) == 5
    # a torn write at the end (the process died mid-line) is ignored and repaired
    with open(path, "a") as f:
        f.write('{"v": 1, "status": "o')
    assert len(TuningStore(path).records()) == 5
    gpu = FakeGPU()
    r = tune(scale_copy, SPACE, _grid, _args, measure=gpu, store=str(path),
             options=TuneOptions(strategy="exhaustive", progress=False))
    assert len(gpu.calls) == 7  # only the 7 configs not stored
    assert len(r.successes) == 12
    assert all(line.endswith("}") for line in path.read_text().splitlines())


def test_a_gzipped_store_is_read_and_refuses_appends(tmp_path):
    """A store shipped with a notebook (``.jsonl.gz``): read as the plain store it came from,
    a rerun skips what it holds, and anything that would append says why it cannot."""
    import gzip

    plain = tmp_path / "tune.jsonl"
    first = tune(scale_copy, SPACE, _grid, _args, measure=FakeGPU(), store=str(plain),
                 options=TuneOptions(strategy="exhaustive", progress=False))
    packed = tmp_path / "tune.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes(), 9, mtime=0))
    store = TuningStore(packed)
    assert store.read_only and not TuningStore(plain).read_only
    assert [r.to_json() for r in store.records()] == \
        [r.to_json() for r in TuningStore(plain).records()]
    before = packed.read_bytes()

    again = FakeGPU()  # everything is stored: nothing to append, so the store is fine
    second = tune(scale_copy, SPACE, _grid, _args, measure=again, store=str(packed),
                  options=TuneOptions(strategy="exhaustive", progress=False))
    assert again.calls == [] and second.best.config == first.best.config

    with pytest.raises(ReadOnlyStoreError, match=r"tune\.jsonl\.gz is a compressed tuning "
                       r"store, which is read-only.*gunzip -k tune\.jsonl\.gz.*tune\.jsonl"):
        store.append(store.records()[0])
    bigger = Space(TILE=[64, 128, 256, 512, 1024], LAT=[1, 3, 6])
    fresh = FakeGPU()  # configs to measure: refused before anything is measured
    with pytest.raises(ReadOnlyStoreError, match="read-only"):
        tune(scale_copy, bigger, _grid, _args, measure=fresh, store=store,
             options=TuneOptions(strategy="exhaustive", progress=False))
    assert fresh.calls == [] and packed.read_bytes() == before


def test_store_context_separates_different_shapes(tmp_path):
    path = tmp_path / "t.jsonl"
    tune(scale_copy, SPACE, _grid, _args, measure=FakeGPU(), store=str(path),
         options=TuneOptions(strategy="exhaustive", progress=False))

    def other_args(cfg):
        x = np.ones(2 * N, np.float32)
        return (x, np.empty_like(x), cfg["TILE"], cfg["LAT"])

    gpu = FakeGPU()
    tune(scale_copy, SPACE, _grid, other_args, measure=gpu, store=str(path),
         options=TuneOptions(strategy="exhaustive", progress=False))
    assert len(gpu.calls) == 12  # a new shape is a new context: nothing reused


def test_stored_record_json_round_trip():
    rec = StoredRecord({"kernel": "k"}, Config((("TILE", 64),)), "failed", None, "boom",
                       "compile")
    back = StoredRecord.from_json(rec.to_json())
    assert back == rec and config_key(back.config) == config_key(rec.config)


def test_compile_failures_from_the_precompiler_are_recorded_and_not_measured():
    class FakePrecompiler:
        closed = False
        futures: ClassVar[dict] = {}

        def error(self, cfg):
            return "tileiras: out of shared memory" if cfg["TILE"] == 512 else None

        def close(self):
            FakePrecompiler.closed = True

    class PrecompilingGPU(StoppableGPU):
        def precompile(self, *a):
            return FakePrecompiler()

    gpu = PrecompilingGPU()
    r = tune(scale_copy, SPACE, _grid, _args, measure=gpu,
             options=TuneOptions(strategy="exhaustive", progress=False))
    assert {f.config["TILE"] for f in r.failures} == {512}
    assert all(f.stage == "compile" and "shared memory" in f.error for f in r.failures)
    assert all(tile != 512 for tile, _, _ in gpu.calls)
    assert FakePrecompiler.closed


def test_stored_results_of_another_space_are_not_mixed_in(tmp_path):
    path = tmp_path / "t.jsonl"
    tune(scale_copy, SPACE, _grid, _args, measure=FakeGPU(), store=str(path),
         options=TuneOptions(strategy="exhaustive", progress=False))
    narrow = Space(TILE=[128, 256], LAT=[3])
    gpu = FakeGPU()
    r = tune(scale_copy, narrow, _grid, _args, measure=gpu, store=str(path),
             options=TuneOptions(strategy="exhaustive", progress=False))
    assert gpu.calls == []  # both configs were stored by the wider run
    assert sorted(s.config["TILE"] for s in r.successes) == [128, 256]


# ---- the race's early stop, compile order, and the measuring process's warm-up ----------------
class StoppableGPU(FakeGPU):
    """A Measurer that, like the GPU one, stops after one sample above ``stop_above_s``."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.limits = []
        self.precompiled = []
        self.warmed = 0

    def precompile(self, kernel, configs, args_fn, kinds, arch, workers):
        self.precompiled.extend(configs)
        return None

    def warm_up(self):
        self.warmed += 1

    def measure(self, kernel, config, grid, args, request: MeasureRequest):
        m = self(kernel, grid, args, request.samples)
        self.limits.append((config["TILE"], config["LAT"], request.stop_above_s))
        if request.stop_above_s is not None and m.mean_s > request.stop_above_s:
            return FakeMeasurement(mean_s=m.mean_s, ci95_s=0.0, gbps=m.gbps, samples=1)
        return m


def test_race_stops_clear_losers_after_one_sample_and_keeps_the_best():
    gpu = StoppableGPU()
    race = RaceOptions(samples=5, keep=1.2, prune=2.0)
    r = tune(scale_copy, SPACE, _grid, _args, measure=gpu,
             options=TuneOptions(progress=False, race=race, timing=TimingOptions(samples=20)))
    assert r.best.config.as_dict() == {"TILE": 256, "LAT": 3}
    assert gpu.warmed == 1 and len(gpu.precompiled) == len(SPACE)
    assert r.regime == "burst" and "burst regime" in r.summary()
    first, *later = gpu.limits
    assert first[2] is None and all(lim[2] is not None for lim in later[:11])  # quick round
    stopped = {(s.config["TILE"], s.config["LAT"]) for s in r.successes
               if s.measurement.samples == 1}
    # the space is measured in order, TILE=64 first: a config stops only once something twice
    # as fast was seen before it; TILE=512 (5x slower than TILE=256) always comes after it
    assert {(512, 1), (512, 3), (512, 6)} <= stopped
    assert not any(tile in (64, 256) for tile, _ in stopped)


def test_race_prune_must_not_undercut_race_keep():
    with pytest.raises(TuneError, match="keep <= prune"):
        RaceOptions(keep=2.0, prune=1.5)


def test_measures_follow_compile_completion_and_prepare_runs_before_the_first():
    from concurrent.futures import Future

    order = [("TILE", 512), ("TILE", 64), ("TILE", 256), ("TILE", 128)]
    events = []

    class FinishingPrecompiler:
        """Compiles 'finish' one at a time, in an order that differs from the space's: the
        next one finishes when the tuner has taken the previous one's result."""

        def __init__(self, configs):
            self.futures = {config_key(c): Future() for c in configs}
            self.queue = [next(c for c in configs if c["TILE"] == tile) for _, tile in order]
            self._finish_next()

        def _finish_next(self):
            if self.queue:
                key = config_key(self.queue.pop(0))
                self.futures[key].set_result((key, None))

        def error(self, cfg):
            result = self.futures[config_key(cfg)].result()[1]
            self._finish_next()
            return result

        def close(self):
            pass

    class OrderedGPU(StoppableGPU):
        def precompile(self, kernel, configs, args_fn, kinds, arch, workers):
            return FinishingPrecompiler(configs)

        def warm_up(self):
            events.append("prepare")

        def measure(self, kernel, config, grid, args, request):
            events.append(args[2])
            return super().measure(kernel, config, grid, args, request)

    tune(scale_copy, Space(TILE=[64, 128, 256, 512], LAT=[3]), _grid, _args,
         measure=OrderedGPU(), options=TuneOptions(strategy="exhaustive", progress=False))
    assert events == ["prepare", 512, 64, 256, 128]


def test_random_compiles_only_the_drawn_configs():
    gpu = StoppableGPU()
    r = tune(scale_copy, SPACE, _grid, _args, measure=gpu,
             options=TuneOptions(strategy="random", budget=3, seed=2, progress=False))
    sent = gpu.precompiled
    assert len(sent) == 3
    assert {config_key(c) for c in sent} == {config_key(s.config) for s in r.successes}


def test_compile_size_orders_big_tiles_first_and_counts_ctas():
    from tile_lab.tuning.parallel_compile import compile_size

    kinds = {"TM": "constant", "TN": "constant", "num_ctas": "hint", "GROUP": "constant"}
    big = Space(TM=[256], TN=[256], num_ctas=[1]).configs()[0]
    split = Space(TM=[256], TN=[256], num_ctas=[2]).configs()[0]
    small = Space(TM=[128], TN=[128], num_ctas=[1]).configs()[0]
    assert compile_size(big, kinds) > compile_size(split, kinds) > compile_size(small, kinds)


def test_in_completion_order_yields_configs_as_their_futures_finish():
    import time
    from concurrent.futures import ThreadPoolExecutor

    from tile_lab.tuning.parallel_compile import in_completion_order

    cfgs = Space(TILE=[1, 2, 3], LAT=[3]).configs()
    delay = {2: 0.3, 3: 0.0}
    with ThreadPoolExecutor(3) as pool:
        futures = {config_key(c): pool.submit(time.sleep, delay[c["TILE"]]) for c in cfgs[1:]}
        got = [c["TILE"] for c in in_completion_order(futures, cfgs)]
    assert got == [1, 3, 2]  # TILE=1 has no future: first; then 3 (0 s), then 2 (0.3 s)


def test_a_crafted_store_line_cannot_replace_a_recorded_measurements_methods(tmp_path):
    """Store lines that Measurement cannot rebuild load into known fields only: keys naming
    methods or dunders stay data, the object keeps its own behaviour."""
    from tile_lab.tuning.store import recorded_measurement as _recorded

    crafted = {"mean_s": 2e-6, "ci95_s": 1e-8, "gbps": 10.0, "to_json_dict": "boom",
               "__class__": "x", "__getattr__": 1, "_data": {"mean_s": 9.0},
               "not_a_field": 3}
    m = _recorded(crafted)
    assert m.mean_s == 2e-6 and m.gbps == 10.0
    assert m.to_json_dict() == crafted  # nothing lost, and still the method
    assert type(m).__name__ == "RecordedMeasurement"
    with pytest.raises(AttributeError):
        _ = m.not_a_field
    with pytest.raises(AttributeError):
        m.mean_s = 1.0
    with pytest.raises(TypeError, match="JSON object"):
        _recorded(["mean_s", 1.0])
    import copy
    import pickle

    for back in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert back.mean_s == 2e-6 and back.to_json_dict() == crafted


def test_a_store_with_crafted_keys_resumes_with_the_recorded_times(tmp_path):
    """End to end through the store file: records whose measurements carry method and dunder
    names as keys are read back as successes with their recorded times, nothing re-measured,
    and the result summary and table still render."""
    from tile_lab.render.tune_plots import result_table_html

    path = tmp_path / "tune.jsonl"
    first = tune(scale_copy, SPACE, _grid, _args, measure=FakeGPU(), store=str(path),
                 options=TuneOptions(strategy="exhaustive", progress=False))
    lines = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        rec["measurement"].update({"to_json_dict": None, "__class__": "x", "summary": 1})
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")
    again = FakeGPU()
    second = tune(scale_copy, SPACE, _grid, _args, measure=again, store=str(path),
                  options=TuneOptions(strategy="exhaustive", progress=False))
    assert again.calls == []
    assert second.best.config == first.best.config
    assert second.best.time_s == first.best.time_s
    assert second.best.measurement.to_json_dict()["to_json_dict"] is None
    assert "TILE" in second.summary()
    assert result_table_html(second).count("<tr") == 1 + 12
