"""Timing statistics (pure functions): mean/median/min and the 95% confidence interval."""

from __future__ import annotations

import math
import statistics

import pytest

from tile_lab.gpu.timing import summarize, t_critical_95


@pytest.mark.parametrize(("df", "t"), [(1, 12.706), (2, 4.303), (10, 2.228), (30, 2.042),
                                       (40, 2.021), (60, 2.000), (120, 1.980), (1000, 1.962)])
def test_t_critical_values_match_the_student_t_table(df, t):
    assert t_critical_95(df) == pytest.approx(t, abs=1.5e-3)


def test_t_critical_rejects_zero_degrees_of_freedom():
    with pytest.raises(ValueError):
        t_critical_95(0)


def test_summary_of_known_samples():
    xs = [10e-6, 12e-6, 11e-6, 13e-6, 9e-6]
    s = summarize(xs)
    assert s.n == 5
    assert s.mean == pytest.approx(11e-6)
    assert s.median == pytest.approx(11e-6)
    assert s.min == 9e-6 and s.max == 13e-6
    assert s.std == pytest.approx(statistics.stdev(xs))
    # t(0.975, 4) = 2.776; stdev = 1.5811e-6; n = 5
    assert s.ci95 == pytest.approx(2.776 * 1.5811388e-6 / math.sqrt(5), rel=1e-4)


def test_ci_shrinks_with_more_samples_of_the_same_spread():
    few = summarize([1.0, 2.0] * 3)
    many = summarize([1.0, 2.0] * 50)
    assert many.ci95 < few.ci95 / 4


def test_single_sample_has_zero_ci_and_constant_samples_zero_spread():
    assert summarize([5e-6]).ci95 == 0.0
    s = summarize([2e-6] * 10)
    assert s.std == 0.0 and s.ci95 == 0.0


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [-1.0], [float("inf")]])
def test_bad_samples_are_rejected(bad):
    with pytest.raises(ValueError):
        summarize(bad)


# ---- the enqueue protocol, with a recording fake of CuPy (no GPU) ---------------------------
class _Log(list):
    pass


class _FakeEvent:
    count = 0

    def __init__(self, log):
        self.log, self.t = log, None
        _FakeEvent.count += 1
        self.id = _FakeEvent.count

    def record(self, stream):
        self.log.append("event")
        self.t = len(self.log)


class _FakeStream:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        self.log.append("sync")


class _FakeCupy:
    def __init__(self, log):
        log_ = log

        class cuda:  # mirrors cupy.cuda
            @staticmethod
            def Event():
                return _FakeEvent(log_)

            @staticmethod
            def get_elapsed_time(start, end):
                return float(end.t - start.t)  # "ms": positions in the log

        self.cuda = cuda


class _FakeHold:
    def __init__(self, log, *, gives_up=False):
        self.log, self.gives_up, self.timed_out = log, gives_up, False

    def hold(self, stream):
        self.log.append("hold")

    def release(self):
        self.log.append("release")

    def check(self):
        self.timed_out = self.gives_up
        return self.gives_up


class _FakeFlush:
    def __init__(self, log):
        self.log = log

    def fill(self, value):
        self.log.append("flush")


def _run(samples, hold, log):
    from tile_lab.gpu.timing import time_samples

    return time_samples(_FakeCupy(log), _FakeStream(log), lambda: log.append("launch"),
                        mode="cold", samples=samples, flush_buffer=_FakeFlush(log), hold=hold)


def test_samples_are_enqueued_behind_the_hold_and_released_together():
    log = _Log()
    times = _run(3, _FakeHold(log), log)
    sample = ["flush", "event", "launch", "event"]
    # the discarded first sample runs unheld (a first launch may compile for seconds)
    assert log[:4] == sample and log[4] == "hold" and log[-2:] == ["release", "sync"]
    assert log[5:-2] == sample * 3
    assert len(times) == 3 and all(t > 0 for t in times)


def test_many_samples_go_in_batches_each_behind_its_own_hold():
    from tile_lab.gpu.timing import HOLD_BATCH

    log = _Log()
    _run(HOLD_BATCH + 5, _FakeHold(log), log)
    holds = [i for i, x in enumerate(log) if x == "hold"]
    assert len(holds) == 2
    # the flag is reused: the first batch must have run (sync) before the second hold
    between = log[holds[0]:holds[1]]
    assert between.count("launch") == HOLD_BATCH and between[-2:] == ["release", "sync"]


def test_a_hold_that_gave_up_says_the_samples_may_include_host_overhead():
    from tile_lab.gpu.timing import HoldTimeoutWarning

    log = _Log()
    with pytest.warns(HoldTimeoutWarning, match="host launch overhead"):
        _run(2, _FakeHold(log, gives_up=True), log)


def test_without_a_hold_nothing_waits_for_a_release():
    log = _Log()
    _run(2, None, log)
    assert "hold" not in log and "release" not in log and log[-1] == "sync"


def test_a_launch_that_raises_still_releases_the_stream():
    from tile_lab.gpu.timing import time_samples

    log = _Log()

    def fails_on_third_call():
        log.append("launch")
        if log.count("launch") == 3:
            raise RuntimeError("launch failed")

    with pytest.raises(RuntimeError, match="launch failed"):
        time_samples(_FakeCupy(log), _FakeStream(log), fails_on_third_call, mode="cold",
                     samples=3, flush_buffer=_FakeFlush(log), hold=_FakeHold(log))
    assert "hold" in log and log[-1] == "release"


def test_a_timer_whose_hold_cannot_be_built_times_unheld_and_says_why():
    from tile_lab.gpu.sampling import CudaEventTimer

    class NoMappedMemory:
        class cuda:  # mirrors cupy.cuda
            class runtime:
                @staticmethod
                def hostAlloc(size, flags):  # mirrors cupy.cuda.runtime
                    raise RuntimeError("cudaErrorInvalidValue: mapped memory unsupported")

    timer = CudaEventTimer(NoMappedMemory, None, mode="warm")
    assert timer.hold is None
    assert timer.hold_error == "RuntimeError: cudaErrorInvalidValue: mapped memory unsupported"
    assert CudaEventTimer(NoMappedMemory, None, mode="warm", hold=False).hold_error is None
