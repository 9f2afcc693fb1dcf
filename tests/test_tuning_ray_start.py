"""Starting Ray within bounds (tile_lab.tuning.ray_start), with a stand-in ``ray`` module:
Ray gives a local raylet a fixed 30 s to register, which a busy machine can miss, and such a
failed start leaves its processes running."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tile_lab.tuning.ray_start import ClusterError, start_ray


class FakeRay:
    """``init`` fails like Ray's timed-out start ``failures`` times, each time leaving a
    process behind, as a half-started GCS and raylet are."""

    def __init__(self, failures: int, error: str = "The current node timed out during "
                 "startup. This could happen because some of the raylet failed to startup"):
        self.failures, self.error = failures, error
        self.left: list[subprocess.Popen] = []
        self.inits: list[dict] = []
        self.up = False

    def is_initialized(self) -> bool:
        return self.up

    def init(self, **kwargs) -> None:
        self.inits.append(kwargs)
        if len(self.inits) <= self.failures:
            self.left.append(subprocess.Popen([sys.executable, "-c",
                                               "import time; time.sleep(600)"]))
            raise Exception(self.error)
        self.up = True


@pytest.fixture
def fake_ray(monkeypatch):
    def install(ray: FakeRay) -> FakeRay:
        monkeypatch.setitem(sys.modules, "ray", ray)
        return ray
    yield install


def _reaped(proc: subprocess.Popen) -> bool:
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return False
    return True


def test_a_start_that_timed_out_is_cleaned_up_and_tried_again(fake_ray):
    ray = fake_ray(FakeRay(failures=1))
    assert start_ray(None, {"num_cpus": 2}) is ray
    assert ray.up and len(ray.inits) == 2
    assert ray.inits[1] == {"include_dashboard": False, "log_to_driver": False, "num_cpus": 2}
    assert _reaped(ray.left[0])  # the first attempt's process was stopped


def test_a_start_that_keeps_timing_out_is_a_cluster_error_leaving_nothing(fake_ray):
    ray = fake_ray(FakeRay(failures=5))
    with pytest.raises(ClusterError, match=r"did not start \(3 attempts.*very busy"):
        start_ray(None, {})
    assert len(ray.inits) == 3 and all(_reaped(p) for p in ray.left)


def test_other_start_errors_and_a_running_instance_are_left_alone(fake_ray):
    ray = fake_ray(FakeRay(failures=1, error="bad argument"))
    with pytest.raises(Exception, match="bad argument"):
        start_ray(None, {})
    assert len(ray.inits) == 1
    ray.left[0].kill()
    ray.left[0].wait()
    up = fake_ray(FakeRay(failures=0))
    up.up = True
    assert start_ray(None, {}) is up and up.inits == []
