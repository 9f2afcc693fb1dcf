"""bench/sweep_common.py, the driver of the GPU sweeps, on the CPU: a simulated GPU times the
comparisons (tests/gpu_sim.py) and a scripted clock stands for the wall time, so row selection,
the budget, reruns, floors, clock re-runs and the JSON / markdown output are checked without
timing anything."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from gpu_sim import SimGPU, Work

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

import sweep_common as sc  # noqa: E402

from tile_lab.gpu import compare_timed  # noqa: E402
from tile_lab.gpu.state import GpuState  # noqa: E402


@dataclass(frozen=True)
class Row:
    name: str

    def as_json(self):
        return {"name": self.name}


class Clock:
    """Wall time that moves only when the fake backend says a step took so long."""

    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class DriftingReader:
    """NVML over a SimGPU whose baseline groups read ``hot_mhz`` on the listed reads (counted
    over the baseline's groups), to make rounds whose two sides' clocks disagree."""

    def __init__(self, gpu, hot_reads, hot_mhz=1900.0):
        self.gpu, self.hot, self.hot_mhz, self.n = gpu, set(hot_reads), hot_mhz, 0

    def read(self):
        mhz = 1980.0
        if self.gpu.last_work == "cublas":
            mhz = self.hot_mhz if self.n in self.hot else 1980.0
            self.n += 1
        return GpuState(0.0, mhz, 2619.0, 300.0, 50.0, 0, 700.0)

    def max_sm_mhz(self):
        return 1980.0

    def sleep(self, seconds):
        pass


class FakeBackend:
    """Scripted per row: the tuned config, how long tuning and a comparison take on the clock,
    and the simulated speeds of ours and the baseline for each successive comparison."""

    def __init__(self, clock, script, hot_reads=()):
        self.clock, self.script, self.hot_reads = clock, script, hot_reads
        self.calls: list[tuple[str, str]] = []
        self.started = None

    def start(self, rows, options):
        self.started = [r.name for r in rows]

    def amount(self, row):
        return {"ours_flops": 2 * 10**12}

    def tune(self, row, options):
        self.calls.append(("tune", row.name))
        s = self.script[row.name]
        self.clock.t += s["tune_s"]
        if s.get("fail"):
            raise RuntimeError("every config failed to compile")
        return {"config": s["config"], "trials": []}

    def compare(self, row, tuned, options):
        self.calls.append(("compare", row.name))
        s = self.script[row.name]
        ours_s, base_s = s["speeds"][sum(1 for c in self.calls if c == ("compare", row.name))
                                     - 1]
        self.clock.t += s["compare_s"]
        gpu = SimGPU({"ours": ours_s, "cublas": base_s}, heat_s=1e9)
        reader = DriftingReader(gpu, self.hot_reads) if self.hot_reads else gpu
        return compare_timed(Work("ours"), Work("cublas", baseline="cuBLAS 13"),
                             options.compare_options(), timer=gpu, reader=reader)


def _script(**rows):
    return {name: dict(dict(tune_s=5.0, compare_s=10.0, config={"TM": 256},
                            speeds=[(1.0e-3, 1.02e-3), (1.0e-3, 0.99e-3), (1.0e-3, 1.01e-3)]),
                       **extra) for name, extra in rows.items()}


OPTS = sc.SweepOptions(budget_s=200.0, reserve_s=10.0, reruns=2, rounds=2,
                       samples_per_round=2, sustain_s=0.0, first_row_s=20.0)


def test_every_row_is_tuned_then_every_row_compared_again_and_the_floor_is_the_lowest():
    clock = Clock()
    rows = [Row("a"), Row("b")]
    be = FakeBackend(clock, _script(a={}, b={}))
    saved = []
    payload = sc.run_sweep(rows, be, OPTS, clock=clock, save=lambda p: saved.append(
        json.loads(json.dumps(p))), log=lambda s: None)
    assert be.started == ["a", "b"]
    # pass 1 tunes and compares each row, pass 2 only compares (no tuning)
    assert be.calls == [("tune", "a"), ("compare", "a"), ("tune", "b"), ("compare", "b"),
                        ("compare", "a"), ("compare", "b")]
    for rec in payload["rows"]:
        assert rec["status"] == "ok" and len(rec["runs"]) == 2
        for regime in ("burst", "sustained"):
            f = rec["floor"][regime]
            assert f["ratio"] == pytest.approx(0.99)  # the second comparison's, not the best
            assert sorted(f["ratios"]) == pytest.approx([0.99, 1.02])
            assert f["runs"] == 2 and f["ci_low"] <= f["ratio"] <= f["ci_high"]
    assert len(saved) == 5  # after each row and each rerun, and once at the end
    assert saved[0]["rows"][1]["status"] == "pending"  # written before row b ran
    assert payload["elapsed_s"] == pytest.approx(5 + 10 + 5 + 10 + 10 + 10)


def test_rows_that_do_not_fit_the_budget_are_skipped_with_the_reason():
    clock = Clock()
    rows = [Row(n) for n in "abcd"]
    script = _script(a=dict(tune_s=60.0), b=dict(tune_s=60.0), c={}, d={})
    be = FakeBackend(clock, script)
    payload = sc.run_sweep(rows, be, sc.SweepOptions(budget_s=200.0, reserve_s=10.0, reruns=3,
                                                     rounds=2, samples_per_round=2,
                                                     sustain_s=0.0), clock=clock,
                           log=lambda s: None)
    status = {r["name"]: r["status"] for r in payload["rows"]}
    # a and b take 70 s each: 140 of 190 s spent, 50 s left < the 70 s a row takes
    assert status == {"a": "ok", "b": "ok", "c": "skipped", "d": "skipped"}
    skipped = payload["rows"][2]
    assert skipped["reason"].startswith("budget: 50 s left") and skipped["floor"] == {}
    # the reruns got what was left: 50 s = five 10 s comparisons, so both rows were
    # compared three times (the pass limit) and nothing more
    assert [len(r["runs"]) for r in payload["rows"][:2]] == [3, 3]
    assert ("tune", "c") not in be.calls


def test_reruns_stop_when_the_budget_is_spent_and_say_so():
    clock = Clock()
    rows = [Row("a"), Row("b")]
    be = FakeBackend(clock, _script(a=dict(compare_s=60.0), b=dict(compare_s=60.0)))
    payload = sc.run_sweep(rows, be, OPTS, clock=clock, log=lambda s: None)
    # pass 1: 130 s of 190; a rerun takes 60 s: a's fits (190 - 130 = 60), b's does not
    a, b = payload["rows"]
    assert len(a["runs"]) == 2 and len(b["runs"]) == 1
    assert b["reruns_skipped"].startswith("budget") and "reruns_skipped" not in a
    assert b["floor"]["burst"]["runs"] == 1


def test_a_failing_row_is_recorded_and_the_others_go_on():
    clock = Clock()
    be = FakeBackend(clock, _script(a=dict(fail=True), b={}))
    payload = sc.run_sweep([Row("a"), Row("b")], be, OPTS, clock=clock, log=lambda s: None)
    a, b = payload["rows"]
    assert a["status"] == "failed" and "every config failed" in a["error"]
    assert b["status"] == "ok" and ("compare", "a") not in be.calls


def test_rounds_whose_clocks_disagree_are_re_run_and_the_table_shows_the_gap():
    clock = Clock()
    # the baseline's 1st and 3rd groups of the first comparison read 1900 MHz: 4% apart
    be = FakeBackend(clock, _script(a={}), hot_reads={0, 2})
    payload = sc.run_sweep([Row("a")], be, sc.SweepOptions(
        budget_s=100.0, reruns=1, rounds=2, samples_per_round=1, sustain_s=0.0,
        clock_bound=0.011, clock_retries=3), clock=clock, log=lambda s: None)
    run = payload["rows"][0]["runs"][0]["rows"]
    burst = next(r for r in run if r["regime"] == "burst")
    assert burst["clock_rerun_rounds"] >= 1 and burst["clock_disagreeing_rounds"] == 0
    assert burst["clock_bound"] == 0.011 and not burst["clock_mismatch"]
    assert burst["clock_gap"] == 0.0
    text = sc.text_table(payload, lambda t: str(t["config"]))
    assert "0.0%" in text and "CLOCKS DIFFER" not in text


def test_markdown_table_has_every_row_with_floor_ci_clocks_and_why_rows_are_missing(tmp_path):
    clock = Clock()
    rows = [Row("fp16 8192x8192x8192"), Row("bf16 128x8192x8192"), Row("fp16 4000x4000x4000")]
    be = FakeBackend(clock, _script(**{rows[0].name: {}, rows[1].name: dict(fail=True),
                                       rows[2].name: {}}))
    payload = sc.run_sweep(rows, be, OPTS, clock=clock, log=lambda s: None)
    path = str(tmp_path / "sweep.json")
    sc.save_payload(payload, path)
    md = sc.markdown_table(sc.load_payloads([path]), lambda t: f"cfg {t['config']['TM']}")
    lines = md.splitlines()
    assert len(lines) == 2 + 3 and all(ln.count("|") == 9 for ln in lines)
    ok = lines[2]
    assert ok.startswith("| fp16 8192x8192x8192 | cfg 256 | cublas | **0.990** (")
    assert "at 1980/1980 MHz" in ok and "2000 vs 2020 TFLOPS" in ok and ok.endswith(
        "| 2 | 0.0% |")
    assert "| failed: RuntimeError: every config failed" in lines[3]
    assert sc.summary_counts(payload).startswith("0 of 2 measured rows")


def test_runs_of_the_same_config_in_two_files_merge_into_one_floor(tmp_path):
    clock = Clock()
    script = _script(a={})
    first = sc.run_sweep([Row("a")], FakeBackend(clock, script), OPTS, clock=clock,
                         log=lambda s: None)
    script["a"]["speeds"] = [(1.0e-3, 0.97e-3)]
    second = sc.run_sweep([Row("a")], FakeBackend(clock, script),
                          sc.SweepOptions(budget_s=100.0, reruns=1, rounds=2,
                                          samples_per_round=2, sustain_s=0.0),
                          clock=clock, log=lambda s: None)
    paths = []
    for i, p in enumerate((first, second)):
        paths.append(str(tmp_path / f"{i}.json"))
        sc.save_payload(p, paths[-1])
    merged = sc.load_payloads(paths)
    f = merged["rows"][0]["floor"]["burst"]
    assert f["runs"] == 3 and f["ratio"] == pytest.approx(0.97)
    # a row retuned to another config replaces the older runs instead of pooling with them
    script["a"]["config"] = {"TM": 128}
    third = sc.run_sweep([Row("a")], FakeBackend(clock, script),
                         sc.SweepOptions(budget_s=100.0, reruns=1, rounds=2,
                                         samples_per_round=2, sustain_s=0.0),
                         clock=clock, log=lambda s: None)
    paths.append(str(tmp_path / "2.json"))
    sc.save_payload(third, paths[-1])
    assert sc.load_payloads(paths)["rows"][0]["floor"]["burst"]["runs"] == 1


def test_select_rows_by_index_range_and_name_fragment():
    rows = [Row(n) for n in ("fp16 4096", "bf16 4096", "fp16 128x8192", "bf16 128x8192")]
    assert sc.select(rows, "all") == rows and sc.select(rows, None) == rows
    assert [r.name for r in sc.select(rows, "0,2-3")] == ["fp16 4096", "fp16 128x8192",
                                                          "bf16 128x8192"]
    assert [r.name for r in sc.select(rows, "bf16")] == ["bf16 4096", "bf16 128x8192"]
    assert [r.name for r in sc.select(rows, "128x8192,0")] == ["fp16 4096", "fp16 128x8192",
                                                               "bf16 128x8192"]
    with pytest.raises(ValueError, match="only 4 rows"):
        sc.select(rows, "7")
    with pytest.raises(ValueError, match="no row name contains 'fp8'"):
        sc.select(rows, "fp8")


def test_options_are_checked():
    with pytest.raises(ValueError, match="budget_s"):
        sc.SweepOptions(budget_s=5.0, reserve_s=10.0)
    with pytest.raises(ValueError, match="reruns"):
        sc.SweepOptions(reruns=0)


def test_sweep_measurer_times_the_kernel_with_the_prepare_step_outside_the_span(monkeypatch):
    import tile_lab.gpu as tg
    from tile_lab.tuning.measurer import MeasureRequest
    from tile_lab.tuning.space import Config

    got = {}
    launched = []

    class FakeKernelWork:
        name = "gemm_splitk"

        def run(self):
            launched.append("run")

    def fake_bench_work(work, *, flops, timing, params):
        got.update(work=work, flops=flops, timing=timing, params=params)
        return "measurement"

    monkeypatch.setattr(tg, "bench_work", fake_bench_work)
    monkeypatch.setattr(tg, "kernel_work", lambda kernel, grid, args: FakeKernelWork())
    zeroed = []
    m = sc.SweepMeasurer(123, prepare=lambda: zeroed.append(1))
    cfg = Config((("TM", 128), ("SPLIT", 2)))
    assert m.measure("k", cfg, (4,), (), MeasureRequest(3, stop_above_s=0.5)) == "measurement"
    work = got["work"]
    work.prepare()
    work.run()
    assert zeroed == [1] and launched == ["run"] and work.name == "gemm_splitk"
    assert got["flops"] == 123 and got["params"] == {"TM": 128, "SPLIT": 2}
    t = got["timing"]
    assert (t.samples, t.regime, t.stop_above_s, t.warmup) == (3, "burst", 0.5, 1)
    # without a prepare step the kernel's own work is timed as it is
    sc.SweepMeasurer(1).measure("k", cfg, (4,), (), MeasureRequest(3))
    assert isinstance(got["work"], FakeKernelWork)


def test_a_gz_payload_round_trips_and_the_same_content_gives_the_same_bytes(tmp_path):
    """The spill screens are kept gzipped in bench/results: saving the same document twice must
    not make a git diff (gzip's header would hold the time)."""
    doc = {"configs": [{"key": "a", "spills": 0}, {"key": "b", "spills": 12}]}
    path = str(tmp_path / "screen.json.gz")
    sc.save_payload(doc, path)
    first = Path(path).read_bytes()
    assert first[:2] == b"\x1f\x8b" and sc.read_payload(path) == doc
    os.utime(path, (0, 0))
    sc.save_payload(doc, path)
    assert Path(path).read_bytes() == first
