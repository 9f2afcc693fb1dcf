"""compare_timed: burst and sustained regimes, ABBA interleaving, ratio with a bootstrap CI, and
the loud warning when the two sides ran at different clocks (simulated GPU; no GPU needed)."""

from __future__ import annotations

import json
import random
import warnings

import pytest
from gpu_sim import SimGPU, Work

from tile_lab.gpu import ClockMismatchWarning, CompareOptions, Comparison, compare_timed
from tile_lab.gpu.regimes import abba_order, bootstrap_ci
from tile_lab.gpu.state import GpuState

A, B = Work("ours"), Work("cublas", baseline="cupy.matmul (cuBLAS), CuPy 14.2")


def test_abba_order():
    assert abba_order(4) == [("A", "B"), ("B", "A"), ("A", "B"), ("B", "A")]


def test_rounds_interleave_abba_in_every_regime_and_each_side_gets_the_same_samples():
    gpu = SimGPU({"ours": 1.0e-3, "cublas": 1.2e-3})
    opts = CompareOptions(rounds=4, samples_per_round=3, sustain_s=0.01)
    c = compare_timed(A, B, opts, timer=gpu, reader=gpu)
    for r in c.regimes:
        assert "".join(r.order) == "ABBAABBA"
        assert len(r.a.times_s) == len(r.b.times_s) == 12
        assert len(r.round_ratios) == 4
    assert [r.regime for r in c.regimes] == ["burst", "sustained"]
    assert c.baseline == "cupy.matmul (cuBLAS), CuPy 14.2"


def test_burst_waits_for_recovery_so_both_sides_run_at_boost():
    gpu = SimGPU({"ours": 1.0e-3, "cublas": 1.2e-3}, heat_s=0.004)
    c = compare_timed(A, B, CompareOptions(regimes=("burst",), rounds=6, samples_per_round=3),
                      timer=gpu, reader=gpu)
    r = c["burst"]
    assert r.a.sm_mhz == r.b.sm_mhz == 1980
    assert r.ratio == pytest.approx(1.2) and not r.clock_mismatch
    assert r.ci_low <= 1.2 <= r.ci_high


def test_sustained_runs_hot_after_the_warm_up_and_reports_the_capped_clocks():
    gpu = SimGPU({"ours": 1.0e-3, "cublas": 1.2e-3}, heat_s=0.05)
    c = compare_timed(A, B, CompareOptions(regimes=("sustained",), rounds=4,
                                           samples_per_round=5, sustain_s=0.1),
                      timer=gpu, reader=gpu)
    r = c["sustained"]
    # the warm-up ran both alternately for 0.1 s of GPU time before the first timed round
    warm = [name for name, *_ in gpu.log[:-8]]
    assert sum(gpu.base_s[n] * 5 for n in warm) >= 0.1 * 1980 / 1305 * 0.5
    assert r.a.sm_mhz == r.b.sm_mhz == 1305 and r.a.throttled == len(r.a.times_s)
    assert r.a.power_w == 700.0
    assert r.ratio == pytest.approx(1.2)  # both slowed alike: the ratio survives


def test_ratio_is_the_geometric_mean_of_round_ratios_with_a_reproducible_bootstrap_ci():
    rng = random.Random(1)
    ratios = [1.1 * (1 + rng.gauss(0, 0.02)) for _ in range(12)]
    low, high = bootstrap_ci(ratios, n=2000, seed=0)
    assert low < 1.1 < high and high - low < 0.05
    assert bootstrap_ci(ratios, n=2000, seed=0) == (low, high)  # same data, same interval
    wide = bootstrap_ci([r ** 4 for r in ratios], n=2000, seed=0)
    assert wide[1] - wide[0] > high - low


class SwitchingReader:
    """NVML as the issue saw it: the card at 1980 MHz for one side, power-capped at 1305 MHz for
    the other (a warm-up right before it)."""

    def __init__(self, timer, hot_side):
        self.timer, self.hot_side = timer, hot_side

    def read(self):
        hot = self.timer.last_work == self.hot_side
        return GpuState(0.0, 1305.0 if hot else 1980.0, 2619.0, 690.0 if hot else 300.0, 55.0,
                        0x4 if hot else 0, 700.0)

    def max_sm_mhz(self):
        return 1980.0

    def sleep(self, seconds):
        pass


def test_clocks_more_than_a_few_percent_apart_warn_loudly_and_are_flagged():
    gpu = SimGPU({"ours": 1.0e-3, "cublas": 1.2e-3})
    opts = CompareOptions(regimes=("sustained",), rounds=4, samples_per_round=2, sustain_s=0)
    with pytest.warns(ClockMismatchWarning, match=r"1980 vs 1305 MHz .*34\.\d% apart"):
        c = compare_timed(A, B, opts, timer=gpu, reader=SwitchingReader(gpu, "cublas"))
    r = c["sustained"]
    assert r.clock_mismatch and c.clock_mismatch and r.clock_gap == pytest.approx(0.341, abs=1e-3)
    assert "CLOCKS DIFFER" in c.summary()


def test_matching_clocks_do_not_warn():
    gpu = SimGPU({"ours": 1.0e-3, "cublas": 1.2e-3})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClockMismatchWarning)
        c = compare_timed(A, B, CompareOptions(regimes=("burst",), rounds=2), timer=gpu,
                          reader=gpu)
    assert not c.clock_mismatch and "CLOCKS DIFFER" not in c.summary()


def test_comparison_json_round_trip():
    gpu = SimGPU({"ours": 1.0e-3, "cublas": 1.2e-3})
    c = compare_timed(A, B, CompareOptions(rounds=2, samples_per_round=2, sustain_s=0.001),
                      timer=gpu, reader=gpu)
    back = Comparison.from_json_dict(json.loads(json.dumps(c.to_json_dict())))
    assert back == c


def test_options_are_checked():
    with pytest.raises(ValueError, match="regimes"):
        CompareOptions(regimes=("idle",))
    with pytest.raises(ValueError, match="rounds >= 2"):
        CompareOptions(rounds=1)


class FlakyClockReader:
    """NVML where the baseline's group of some rounds lands in a power-capped dip (1305 MHz):
    the n-th reading taken after a "cublas" group is hot when n is in ``hot``."""

    def __init__(self, timer, hot):
        self.timer, self.hot, self.cublas_reads = timer, set(hot), 0

    def read(self):
        hot = False
        if self.timer.last_work == "cublas":
            hot = self.cublas_reads in self.hot
            self.cublas_reads += 1
        return GpuState(0.0, 1305.0 if hot else 1980.0, 2619.0, 300.0, 55.0, 0, 700.0)

    def max_sm_mhz(self):
        return 1980.0

    def sleep(self, seconds):
        pass


def test_a_round_whose_sides_ran_at_different_clocks_is_re_run_and_the_bound_recorded():
    gpu = SimGPU({"ours": 1.0e-3, "cublas": 1.2e-3})
    # sustained: one reading per group; the 2nd and 3rd cublas groups read hot
    opts = CompareOptions(regimes=("sustained",), rounds=4, samples_per_round=2, sustain_s=0,
                          clock_tolerance=0.011, clock_retries=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClockMismatchWarning)
        c = compare_timed(A, B, opts, timer=gpu, reader=FlakyClockReader(gpu, hot={1, 2}))
    r = c["sustained"]
    # round 2 (BA) drew a hot cublas group twice: timed three times in all
    assert r.rerun_rounds == 2 and r.disagreeing_rounds == 0
    assert "".join(r.order) == "AB" + "BA" * 3 + "AB" + "BA"
    assert len(r.a.times_s) == len(r.b.times_s) == 8  # the re-run groups replace, not add
    assert r.b.sm_mhz == r.a.sm_mhz == 1980 and not r.clock_mismatch
    assert r.clock_tolerance == 0.011
    assert "2 round(s) re-run" in r.summary()
    back = Comparison.from_json_dict(json.loads(json.dumps(c.to_json_dict())))
    assert back == c


def test_clock_retries_give_up_after_the_limit_and_count_the_round():
    gpu = SimGPU({"ours": 1.0e-3, "cublas": 1.2e-3})
    opts = CompareOptions(regimes=("sustained",), rounds=2, samples_per_round=2, sustain_s=0,
                          clock_tolerance=0.011, clock_retries=1)
    with pytest.warns(ClockMismatchWarning, match="more than 1.1%"):
        c = compare_timed(A, B, opts, timer=gpu, reader=FlakyClockReader(gpu, hot={1, 2, 3}))
    r = c["sustained"]
    assert r.rerun_rounds == 1 and r.disagreeing_rounds == 1 and r.clock_mismatch
    # without retries nothing is re-run, and nothing is counted as given up on
    gpu = SimGPU({"ours": 1.0e-3, "cublas": 1.2e-3})
    with pytest.warns(ClockMismatchWarning):
        c = compare_timed(A, B, CompareOptions(regimes=("sustained",), rounds=2,
                                               samples_per_round=2, sustain_s=0,
                                               clock_tolerance=0.011),
                          timer=gpu, reader=FlakyClockReader(gpu, hot={0}))
    assert c["sustained"].rerun_rounds == 0 and c["sustained"].disagreeing_rounds == 0


def test_clock_options_are_checked():
    with pytest.raises(ValueError, match="clock_tolerance"):
        CompareOptions(clock_tolerance=-0.1)
    with pytest.raises(ValueError, match="clock_retries"):
        CompareOptions(clock_retries=-1)
