"""Tuning over schedules (tile_lab.tuning.schedules): a categorical ``schedule`` knob picks the
kernel each config launches; the tuner keeps the schedule whose measurement is fastest."""

from __future__ import annotations

import json

import cuda.tile as ct
import numpy as np
import pytest
from tune_fakes import FakeMeasurement
from tune_kernels import scale_copy

from tile_lab.compile.signature import signature_from_args
from tile_lab.tuning import Schedules, Space, SpaceError, TuneOptions, tune
from tile_lab.tuning.parallel_compile import Precompiler
from tile_lab.tuning.space import Config

N = 1 << 10


@ct.kernel
def scale_copy_split(x, y, TILE: ct.Constant[int], SPLIT: ct.Constant[int]):
    # a second schedule with a constant the first does not take
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(y, index=(ct.bid(0),), tile=t * SPLIT)


SCHEDULES = Schedules(plain=scale_copy, split=scale_copy_split)


def _args(cfg):
    x = np.ones(N, np.float32)
    extra = cfg["LAT"] if cfg["schedule"] == "plain" else cfg["SPLIT"]
    return (x, np.empty_like(x), cfg["TILE"], extra)


def _grid(cfg):
    return (N // cfg["TILE"],)


class ByKernel:
    """Fake timings per kernel: ``times[(kernel name, TILE)]``; records what was launched."""

    def __init__(self, times):
        self.times, self.calls = times, []

    def __call__(self, kernel, grid, args, n):
        from tile_lab._cutile_compat import python_function

        name = python_function(kernel).__name__
        self.calls.append((name, args[2], getattr(kernel, "_tl_occ", None)))
        t = self.times[(name, args[2])]
        return FakeMeasurement(mean_s=t, ci95_s=t * 0.01, samples=n)


SPACE = Space(schedule=["plain", "split"], TILE=[128, 256], LAT=[2], SPLIT=[2],
              occupancy=[1, 2])


@pytest.mark.parametrize("fastest", [("scale_copy_split", 256), ("scale_copy", 128)])
def test_the_fastest_schedule_wins(fastest):
    times = {(k, t): 1e-5 for k in ("scale_copy", "scale_copy_split") for t in (128, 256)}
    times[fastest] = 4e-6
    gpu = ByKernel(times)
    r = tune(SCHEDULES, SPACE, _grid, _args, measure=gpu,
             options=TuneOptions(strategy="exhaustive", progress=False))
    assert len(r.successes) == 8 and not r.failures
    want = "split" if fastest[0] == "scale_copy_split" else "plain"
    assert r.best.config["schedule"] == want and r.best.config["TILE"] == fastest[1]
    # every config launched its own schedule's kernel, with its hints applied
    launched = {(name, tile) for name, tile, _ in gpu.calls}
    assert launched == set(times)
    assert r.context["kernel"] == "schedules(plain, split)"


def test_knob_kinds_name_the_schedule_and_each_kernels_constants():
    assert SCHEDULES.knob_kinds(SPACE) == {"schedule": "schedule", "TILE": "constant",
                                           "LAT": "constant", "SPLIT": "constant",
                                           "occupancy": "hint"}
    with pytest.raises(SpaceError, match=r"'TM'.*LAT, SPLIT, TILE"):
        SCHEDULES.knob_kinds(Space(schedule=["plain"], TM=[64]))
    with pytest.raises(SpaceError, match=r"\['streamk'\] name no kernel"):
        SCHEDULES.knob_kinds(Space(schedule=["plain", "streamk"], TILE=[64]))
    with pytest.raises(SpaceError, match="needs a 'schedule' knob"):
        SCHEDULES.knob_kinds(Space(TILE=[64]))


def test_hints_reach_the_picked_kernel():
    cfg = Config((("schedule", "split"), ("TILE", 128)))
    k = SCHEDULES.replace_hints(occupancy=2).for_config(cfg)
    assert k is not scale_copy_split and SCHEDULES.for_config(cfg) is scale_copy_split


class Recorder:
    """A compile executor that records the jobs (nothing compiles)."""

    def __init__(self):
        self.jobs = []

    def submit(self, fn, /, *args):
        from concurrent.futures import Future

        if args:
            self.jobs.append(args[0])
        f = Future()
        f.set_result((args[0][0], None, 0.0) if args else None)
        return f

    def shutdown(self, wait=True, *, cancel_futures=False):
        pass


def test_precompiles_compile_each_configs_own_kernel():
    configs = SPACE.configs("sm_90")
    rec = Recorder()
    pre = Precompiler(SCHEDULES, configs, _args, SCHEDULES.knob_kinds(SPACE), "sm_90", 1,
                      executor=rec,  # ct.launch's own signature code needs a GPU driver
                      signature_fn=lambda k, a: signature_from_args(k, a).kernel_signature)
    pre.close()
    assert len(rec.jobs) == len(configs)
    for key, recipe, _, _ in rec.jobs:
        want = "scale_copy_split" if json.loads(key)["schedule"] == "split" else "scale_copy"
        assert recipe.spec.name == want, key
