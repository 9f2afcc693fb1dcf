"""GPU state with every sample: throttle flags, recovery waits, policies (simulated and recorded
NVML traces; no GPU needed)."""

from __future__ import annotations

import pytest
from gpu_sim import SimGPU, Work

from tile_lab.gpu.sampling import ramp_up, sample_with_state
from tile_lab.gpu.state import (
    GpuState,
    SampleState,
    ThrottlePolicy,
    TraceReader,
    reason_names,
    wait_for_recovery,
)

POLICY = ThrottlePolicy()
MAX = 1980.0


def state(t, sm, reasons=0, power=100.0):
    return GpuState(t, sm, 2619.0, power, 50.0, reasons, 700.0)


# ---- flags --------------------------------------------------------------------------------------
def test_power_cap_and_thermal_reasons_flag_a_sample_whatever_the_clock():
    assert POLICY.throttled(state(0, 1980, reasons=0x4), MAX)  # software power cap
    assert POLICY.throttled(state(0, 1980, reasons=0x20), MAX)  # software thermal slowdown
    assert POLICY.throttled(state(0, 1980, reasons=0x80), MAX)  # power brake
    assert not POLICY.throttled(state(0, 1980, reasons=0x1), MAX)  # idle is not throttling
    assert reason_names(0x5) == ("gpu_idle", "sw_power_cap")


def test_clock_below_the_threshold_of_the_max_clock_is_throttled():
    assert POLICY.threshold == 0.75 and POLICY.recovery_delay_s == 0.05  # nvbench's defaults
    assert POLICY.throttled(state(0, 1400), MAX)  # 1400 < 0.75 * 1980 = 1485
    assert not POLICY.throttled(state(0, 1500), MAX)
    assert POLICY.throttled(state(0, 1700), MAX) is False
    assert ThrottlePolicy(threshold=0.9).throttled(state(0, 1700), MAX)
    assert not POLICY.throttled(None, MAX)  # no NVML: nothing is flagged
    assert not POLICY.throttled(state(0, 1000), None)  # unknown max clock: clock test skipped


def test_an_idle_gpu_clocked_down_is_not_throttled():
    assert not POLICY.throttled(state(0, 345, reasons=0x1), MAX)  # idle: clocks down, no cap


def test_policy_rejects_unknown_actions_and_thresholds():
    with pytest.raises(ValueError, match="throttle action 'retry'"):
        ThrottlePolicy(action="retry")
    with pytest.raises(ValueError, match="threshold"):
        ThrottlePolicy(threshold=1.5)


# ---- recovery waits on a recorded cool-down -----------------------------------------------------
COOLING = [state(0.0, 1305, 0x4, 700.0), state(0.3, 1500, 0x4, 650.0),
           state(0.6, 1980, 0x0, 420.0), state(0.9, 1980, 0x0, 110.0)]


def test_wait_for_recovery_waits_for_boost_clock_and_idle_power_then_the_delay():
    reader = TraceReader(COOLING, max_sm_mhz=MAX)
    ok, waited = wait_for_recovery(reader, POLICY)
    # 0.6 s: clocks back but power still above half the limit; 0.9 s: recovered, + 50 ms delay
    assert ok and waited == pytest.approx(0.9 + 0.05, abs=POLICY.poll_s)
    assert reader.now == pytest.approx(waited, abs=POLICY.poll_s)


def test_wait_for_recovery_without_the_power_condition_stops_at_boost_clock():
    reader = TraceReader(COOLING, max_sm_mhz=MAX)
    ok, waited = wait_for_recovery(reader, ThrottlePolicy(idle_power_fraction=None))
    assert ok and waited == pytest.approx(0.6 + 0.05, abs=POLICY.poll_s)


def test_wait_gives_up_after_max_wait_and_says_so():
    reader = TraceReader([state(0.0, 1305, 0x4, 700.0)], max_sm_mhz=MAX)
    ok, waited = wait_for_recovery(reader, ThrottlePolicy(max_wait_s=0.2))
    assert not ok and waited == pytest.approx(0.2, abs=0.021)


# ---- policies over a simulated power cap ---------------------------------------------------------
def hot_gpu():
    gpu = SimGPU({"k": 1e-3}, heat_s=0.01)
    gpu.heat = gpu.heat_s  # already at the power cap
    return gpu


def test_burst_wait_recovers_before_timing_and_every_sample_carries_its_state():
    gpu = hot_gpu()
    got = sample_with_state(gpu, Work("k"), 5, gpu, ThrottlePolicy(action="wait"))
    assert got.waited_s > 0 and len(got.times_s) == len(got.states) == 5
    assert got.states[0].sm_mhz == 1980 and not got.states[0].throttled
    assert got.times_s[0] == pytest.approx(1e-3)
    assert all(isinstance(s, SampleState) for s in got.states)


def test_discard_drops_throttled_samples_and_replaces_them():
    gpu = SimGPU({"k": 4e-3}, heat_s=0.01)  # heats up within three samples
    got = sample_with_state(gpu, Work("k"), 6, gpu, ThrottlePolicy(action="discard"))
    assert got.discarded > 0 and got.throttled == got.discarded
    assert not any(s.throttled for s in got.states)
    assert any("discarded" in n for n in got.notes)


def test_keep_flags_throttled_samples_and_keeps_their_slower_times():
    gpu = SimGPU({"k": 4e-3}, heat_s=0.01)
    got = sample_with_state(gpu, Work("k"), 6, gpu, ThrottlePolicy(action="keep"))
    flagged = [t for t, s in zip(got.times_s, got.states) if s.throttled]
    assert len(got.times_s) == 6 and got.throttled == len(flagged) > 0
    # every sample that ran at the capped clock is flagged (the reading is taken right after a
    # sample, so the one that tipped the card over is flagged too)
    assert all(s.throttled for t, s in zip(got.times_s, got.states) if t > 4e-3 * 1.01)
    assert max(flagged) == pytest.approx(4e-3 * 1980 / 1305)
    assert got.states[-1].reasons == 0x4 and got.states[-1].power_w == 700.0


def test_sustained_regime_never_waits_whatever_the_policy():
    gpu = hot_gpu()
    got = sample_with_state(gpu, Work("k"), 4, gpu, ThrottlePolicy(action="wait"),
                            regime="sustained")
    assert got.waited_s == 0 and all(s.throttled for s in got.states)


def test_unknown_regime_is_an_error():
    gpu = hot_gpu()
    with pytest.raises(ValueError, match="regime 'steady'"):
        sample_with_state(gpu, Work("k"), 1, gpu, POLICY, regime="steady")


class IdleThenBusy:
    """NVML of a rested GPU: idle clocks (345 MHz, reason gpu_idle) until work has run for a
    few samples, then boost. Also the timer (it counts the samples it ran)."""

    def __init__(self, ramp_samples):
        self.ramp, self.ran = ramp_samples, 0

    def time(self, work, samples, *, first):
        self.ran += samples
        return [1e-5] * samples

    def read(self):
        up = self.ran >= self.ramp
        return state(0, 1980 if up else 345, reasons=0 if up else 0x1)

    def max_sm_mhz(self):
        return MAX

    def sleep(self, seconds):
        pass


def test_a_burst_ramps_an_idle_gpu_up_before_its_timed_samples():
    gpu = IdleThenBusy(ramp_samples=7)
    assert ramp_up(gpu, Work("k"), gpu, POLICY, first=True) is False
    assert gpu.ran == 7  # untimed samples until NVML showed the boost clock
    gpu = IdleThenBusy(ramp_samples=4)
    got = sample_with_state(gpu, Work("k"), 3, gpu, POLICY)
    assert gpu.ran == 4 + 3 and all(s.sm_mhz == 1980 for s in got.states)
    # the sustained regime measures what it finds: no ramp
    gpu = IdleThenBusy(ramp_samples=4)
    sample_with_state(gpu, Work("k"), 3, gpu, POLICY, regime="sustained")
    assert gpu.ran == 3


# ---- the recorded H100 trace ---------------------------------------------------------------------
def test_recorded_h100_cublas_trace_is_flagged_under_load_and_recovers_after():
    from pathlib import Path

    from tile_lab.gpu.state import load_trace

    states, top, device = load_trace(Path(__file__).parent.parent / "notebooks" / "data"
                                     / "nvml_trace_h100_cublas.json.gz")
    assert device == "NVIDIA H100 80GB HBM3" and top == 1980.0
    flags = [POLICY.throttled(s, top) for s in states]
    capped = [s for s, f in zip(states, flags) if f]
    # every reading at the 700 W cap is flagged (reason 0x4), none of the idle ones before it
    assert all(s.reasons & 0x4 for s in capped) and len(capped) > len(states) // 2
    assert not any(flags[:10]) and all(f for s, f in zip(states, flags) if s.power_w > 650)
    assert min(s.sm_mhz for s in capped) < 0.75 * top  # below nvbench's threshold too
    # replayed from the first capped reading, the wait ends when the card has cooled down
    start = next(i for i, f in enumerate(flags) if f)
    reader = TraceReader(states[start:], max_sm_mhz=top)
    ok, waited = wait_for_recovery(reader, POLICY)
    cool = next(s for s in states[start:] if not s.reasons & 0x4 and s.power_w < 350)
    assert cool.t_s - states[start].t_s > 3.0  # the load lasted 4 s; the card needs it all
    assert ok and waited == pytest.approx(cool.t_s - states[start].t_s + 0.05,
                                          abs=POLICY.poll_s + 1e-9)


def test_a_trace_saved_as_gz_loads_back(tmp_path):
    from tile_lab.gpu.state import load_trace, save_trace

    states = [state(1.0 + i, 1980.0 - 100 * i, 0x4 * (i > 1), 300.0 + 50 * i) for i in range(4)]
    save_trace(states, tmp_path / "t.json.gz", max_sm_mhz=1980.0, device="dev")
    save_trace(states, tmp_path / "t.json", max_sm_mhz=1980.0, device="dev")
    assert load_trace(tmp_path / "t.json.gz") == load_trace(tmp_path / "t.json")
    back, top, device = load_trace(tmp_path / "t.json.gz")
    assert (top, device, len(back)) == (1980.0, "dev", 4) and back[0].t_s == 0.0
