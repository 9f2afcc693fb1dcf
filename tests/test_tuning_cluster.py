"""Tuning on a Ray cluster (tile_lab.tuning.cluster), on a local Ray instance on this CPU.

The compile side is real (cuTile + tileiras in Ray tasks, cubins shipped back into this process's
cuTile cache); the measuring actors run a stand-in measure function (no GPU here).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'tile_lab[cluster]'")

from tune_fakes import FakeGPU  # noqa: E402
from tune_kernels import scale_copy  # noqa: E402

from tile_lab import _cutile_compat as compat  # noqa: E402
from tile_lab.compile.signature import signature_from_args  # noqa: E402
from tile_lab.tuning import Space, TuneOptions, tune  # noqa: E402
from tile_lab.tuning.cluster import (  # noqa: E402
    ClusterError,
    ClusterOptions,
    RayCompileExecutor,
    RayMeasurePool,
    connect,
    cross_check,
)
from tile_lab.tuning.measurer import FunctionMeasurer  # noqa: E402
from tile_lab.tuning.parallel_compile import (  # noqa: E402
    Precompiler,
    _compile_job,
    compile_recipe,
    portable_signature,
)
from tile_lab.tuning.store import config_key  # noqa: E402

TESTS = str(Path(__file__).parent)


# Each test is bounded by the suite's per-test timeout (pyproject.toml); these start Ray
# worker processes, which takes a while: 50 s for the slowest here on an idle 2-core
# machine, 90 s on a busy one.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    """A local Ray instance with 2 CPUs whose workers can import this folder's kernels,
    started here (a start that fails is this fixture's error, not a test's) and shut down
    whatever the tests did, within a bound: a stuck shutdown fails the run, it never hangs it.
    The options bound every wait: actor starts, compiles, measurements."""
    if ray.is_initialized():
        ray.shutdown()
    path = os.pathsep.join(p for p in (TESTS, os.environ.get("PYTHONPATH", "")) if p)
    options = ClusterOptions(
        start_timeout_s=240, compile_timeout_s=300, measure_timeout_s=240,
        init_kwargs={"num_cpus": 2, "num_gpus": 0})
    # The workers' environment is the one this process has when it starts the instance (its
    # raylet inherits it): a job runtime_env with env_vars would set up each worker process
    # apart and leave the prestarted ones idle, ~15 s more CPU for these ten tests.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PYTHONPATH", path)
        env.setenv("CUDA_TILE_CACHE_DIR", "off")
        connect(options)
    try:
        yield options
    finally:
        stopper = threading.Thread(target=ray.shutdown, name="ray-shutdown", daemon=True)
        stopper.start()
        stopper.join(timeout=120)
        assert not stopper.is_alive(), "ray.shutdown() did not return within 120 s"


def _space() -> Space:
    return Space(TILE=[64, 128, 256, 512], LAT=[1, 2, 3, 4])


def _args(cfg):
    x = np.zeros(4096, np.float32)
    return (x, x, cfg["TILE"], cfg["LAT"])


def _compile_space(tmp_path: Path, name: str, executor) -> tuple[dict, dict]:
    """Compile the 16-config space with the jobs the tuner's Precompiler sends (signatures
    computed here, on the CPU, as tile_lab.inspect does); returns (errors by config key,
    the cuTile cache rows this process then holds)."""
    cache = tmp_path / name
    space = _space()
    configs, _ = space.split("sm_90")
    recipe = compile_recipe(scale_copy)
    with compat.use_cache_dir(str(cache)):
        futures = {}
        for cfg in configs:
            sig = signature_from_args(scale_copy, tuple(_args(cfg))).kernel_signature
            job = (config_key(cfg), recipe, portable_signature(sig), "sm_90")
            futures[job[0]] = executor.submit(_compile_job, job)
        errors = {key: fut.result(timeout=600)[1] for key, fut in futures.items()}
        executor.shutdown()
    return errors, {key: blob for key, blob, _ in compat.cache_rows(str(cache))}


def test_ray_compiles_a_16_config_space_exactly_like_the_process_pool(cluster, tmp_path,
                                                                      monkeypatch):
    # The local pool's spawned workers read cuTile's cache dir from the environment.
    monkeypatch.setenv("CUDA_TILE_CACHE_DIR", str(tmp_path / "pool"))
    pool = ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn"))
    pool_errors, pool_rows = _compile_space(tmp_path, "pool", pool)
    executor = RayCompileExecutor(cluster)
    ray_errors, ray_rows = _compile_space(tmp_path, "ray", executor)

    assert len(pool_errors) == 16 and set(pool_errors.values()) == {None}
    assert ray_errors == pool_errors
    # Same cuTile cache keys, same cubins: a launch after a cluster compile finds its cubin.
    assert len(ray_rows) == 16
    assert ray_rows.keys() == pool_rows.keys()
    assert ray_rows == pool_rows
    # every compile ran on a node the executor names
    assert sum(executor.nodes.values()) == 16 and all(executor.nodes)


def _die_once(marker: str, value: int) -> tuple[int, int]:
    """A compile stand-in whose first run kills its worker process, as a crash or OOM would."""
    if not os.path.exists(marker):
        Path(marker).write_text("died once")
        os._exit(1)
    return value, os.getpid()


def test_a_compile_worker_that_dies_loses_only_its_job_which_ray_retries(cluster, tmp_path):
    executor = RayCompileExecutor(cluster)
    futures = [executor.submit(_die_once, str(tmp_path / f"m{i}"), i) for i in range(3)]
    results = [f.result(timeout=120) for f in futures]
    executor.shutdown()
    assert [v for v, _ in results] == [0, 1, 2]
    assert all((tmp_path / f"m{i}").exists() for i in range(3))  # each died once, then ran


def test_cluster_errors_without_ray_say_how_to_install():
    # In a process of its own: hiding Ray in this one would break the running Ray instance.
    code = ("import sys; sys.modules['ray'] = None\n"
            "from tile_lab.tuning.cluster import ClusterError, ray_module\n"
            "try:\n    ray_module()\nexcept ClusterError as e:\n    print('CLUSTER ERROR:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "CLUSTER ERROR:" in out.stdout, out.stderr[-2000:]
    assert 'pip install "tile_lab[cluster]"' in out.stdout


def _fake_measure_factory():
    def measure(cfg):
        if cfg["TILE"] == 512 and cfg["LAT"] == 4:
            os._exit(3)  # a config that kills its measuring process
        return 1e-5 * (1 + abs(cfg["TILE"] - 256) / 64) * (1 + abs(cfg["LAT"] - 3) / 10)
    return measure


def test_measuring_actors_take_disjoint_shares_and_a_fatal_config_is_only_its_failure(cluster):
    configs, _ = _space().split("sm_90")
    pool = RayMeasurePool(_fake_measure_factory,
                          replace(cluster, gpus=2, actor_restarts=4, gpus_per_actor=0))
    try:
        measured = list(pool.map(configs))
    finally:
        pool.close()
    assert sorted(m.config.label() for m in measured) == sorted(c.label() for c in configs)
    lost = [m for m in measured if m.error is not None]
    assert [(m.config["TILE"], m.config["LAT"]) for m in lost] == [(512, 4)]
    ok = [m for m in measured if m.error is None]
    assert len(ok) == 15
    # each outcome names the actor (node/GPU) that measured it; the work was shared
    assert {m.gpu.rsplit("/", 1)[1] for m in ok} == {"actor0", "actor1"}
    best = min(ok, key=lambda m: m.outcome)
    assert (best.config["TILE"], best.config["LAT"]) == (256, 3)


def test_cross_check_alternates_order_and_ranks_by_median():
    calls = []
    times = {"a": [3.0, 1.0, 3.0], "b": [2.0, 2.0, 2.0]}

    def measure(cfg):
        calls.append(cfg)
        return times[cfg].pop(0)

    ranked = cross_check(measure, ["a", "b", "c"], top=2, rounds=3)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert ranked == [("b", 2.0), ("a", 3.0)]


# ---- tile_lab.tune(..., options=TuneOptions(cluster=...)) ---------------------------------------
def _grid(cfg):
    return (4096 // cfg["TILE"],)


def _cpu_signature(kernel, args):
    return signature_from_args(kernel, args).kernel_signature


class CpuCompilingFake(FunctionMeasurer):
    """The fake GPU, plus compiles ahead with signatures made on the CPU (as tile_lab.inspect
    makes them; ct.launch's own signature code needs a GPU driver)."""

    def precompile(self, kernel, configs, args_fn, kinds, arch, workers):
        return Precompiler(kernel, configs, args_fn, kinds, arch, workers,
                           signature_fn=_cpu_signature)


def test_tune_on_a_cluster_shares_the_configs_between_gpus_and_cross_checks_the_top(
        cluster, tmp_path):
    local = tune(scale_copy, _space(), _grid, _args, measure=FakeGPU(),
                 options=TuneOptions(strategy="exhaustive", progress=False))
    opts = TuneOptions(strategy="exhaustive", progress=False, precompile=False,
                       cluster=replace(cluster, gpus=2, gpus_per_actor=0, cross_check_top=3))
    store = tmp_path / "tune.jsonl"
    r = tune(scale_copy, _space(), _grid, _args, measure=FakeGPU(), store=str(store),
             options=opts)
    assert r.best.config == local.best.config
    assert ({config_key(s.config): s.time_s for s in r.successes}
            == {config_key(s.config): s.time_s for s in local.successes})
    measured_on = r.placement["measured_on"]
    assert len(measured_on) == 16
    assert {gpu.rsplit("/", 1)[1] for gpu in measured_on.values()} == {"actor0", "actor1"}
    # the three fastest were re-timed on one GPU, alternating order, three rounds each
    checks = r.placement["cross_check"]
    assert len(checks) == 3 and all(c["gpu"].endswith("/actor0") and len(c["times_s"]) == 3
                                    for c in checks)
    # one writer: each config stored exactly once, by this process
    keys = [json.loads(line)["config"] for line in store.read_text().splitlines()]
    assert len(keys) == 16 and len({json.dumps(k, sort_keys=True) for k in keys}) == 16


def _kill_first_compile_task(stop: threading.Event, killed: list[int]) -> None:
    """Kill (SIGKILL) the first Ray worker process seen running a compile task, as an
    out-of-memory kill or a crashed node would. Only this process's descendants are looked
    at (Ray's workers are the raylet's children): scanning all of /proc every few ms took a
    core, and this process's GIL, from the tuning run it watches."""
    import psutil  # a dependency of Ray's

    me = psutil.Process()
    while not stop.is_set() and not killed:
        for proc in me.children(recursive=True):
            try:
                cmdline = proc.cmdline()
            except psutil.Error:
                continue
            if " ".join(cmdline).startswith("ray::compile_in_private_cache"):
                proc.kill()
                killed.append(proc.pid)
                return
        time.sleep(0.05)


def test_killing_a_compile_worker_mid_run_retries_its_configs_and_keeps_the_store_intact(
        cluster, tmp_path):
    store = tmp_path / "tune.jsonl"
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_first_compile_task, args=(stop, killed))
    killer.start()
    try:
        with compat.use_cache_dir(str(tmp_path / "cache")):
            r = tune(scale_copy, _space(), _grid, _args, measure=CpuCompilingFake(FakeGPU()),
                     store=str(store),
                     options=TuneOptions(strategy="exhaustive", progress=False, arch="sm_90",
                                         cluster=replace(cluster, gpus=0)))
    finally:
        stop.set()
        killer.join()
    assert killed, "no compile task was seen running (nothing was killed)"
    assert not r.failures and len(r.successes) == 16
    assert len(r.compile_s) == 16  # every config compiled, the killed one on its retry
    assert len(list(compat.cache_rows(str(tmp_path / "cache")))) == 16
    assert sum(r.placement["jobs_on"].values()) >= 16
    lines = store.read_text().splitlines()
    assert len(lines) == 16 and all(json.loads(line)["status"] == "ok" for line in lines)


def _hanging_measure_factory():
    def measure(cfg):
        if cfg["TILE"] == 128 and cfg["LAT"] == 2:
            time.sleep(3600)  # a config that never returns (a kernel that spins, say)
        return float(cfg["TILE"])
    return measure


def test_a_hanging_config_fails_with_where_it_hung_and_the_others_are_measured(cluster):
    # The pool reads its timeouts from this test's clock, which passes the 5 s only once every
    # other config is measured: a slow machine cannot make a quick config look hung.
    configs, _ = _space().split("sm_90")
    now = [0.0]
    pool = RayMeasurePool(_hanging_measure_factory,
                          replace(cluster, gpus=2, gpus_per_actor=0, measure_timeout_s=5),
                          clock=lambda: now[0])
    try:
        futures = [pool.submit(c) for c in configs]
        hangs = [(c["TILE"], c["LAT"]) == (128, 2) for c in configs]
        for fut, hang in zip(futures, hangs):
            if not hang:
                fut.result(timeout=300)  # (the bounds here only guard the test itself)
        assert hangs.count(True) == 1 and not futures[hangs.index(True)].done()
        now[0] = 5.5
        measured = [fut.result(timeout=300) for fut in futures]
    finally:
        pool.close()
    hung = [m for m in measured if m.error is not None]
    assert [(m.config["TILE"], m.config["LAT"]) for m in hung] == [(128, 2)]
    assert "no result after 5 s" in hung[0].error and "time.sleep(3600)" in hung[0].error
    assert sorted(m.outcome for m in measured if m.error is None) == sorted(
        float(c["TILE"]) for c in configs if (c["TILE"], c["LAT"]) != (128, 2))


def _sleep_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_a_compile_job_past_its_timeout_is_cancelled_and_fails_saying_so(cluster):
    # The executor reads its deadlines from this test's clock, which moves past the 20 s only
    # once the quick job is done: how fast this machine starts Ray workers changes nothing
    # (a job's time counts from its submission, a worker's start included).
    now = [0.0]
    executor = RayCompileExecutor(replace(cluster, compile_timeout_s=20), clock=lambda: now[0])
    stuck, quick = executor.submit(_sleep_for, 3600), executor.submit(_sleep_for, 0)
    assert quick.result(timeout=300) == 0  # (the bounds here only guard the test itself)
    assert not stuck.done()
    now[0] = 20.5
    with pytest.raises(ClusterError, match=r"no result after 20 s.*compile_timeout_s"):
        stuck.result(timeout=120)
    executor.shutdown()


def test_measuring_actors_ray_cannot_place_fail_their_configs_instead_of_waiting(cluster):
    # one GPU per actor on a cluster with none: Ray can never start them
    configs, _ = _space().split("sm_90")
    pool = RayMeasurePool(_fake_measure_factory,
                          replace(cluster, gpus=2, gpus_per_actor=1, start_timeout_s=3))
    try:
        measured = [f.result(timeout=120) for f in [pool.submit(c) for c in configs[:3]]]
    finally:
        pool.close()
    assert [m.gpu for m in measured] == ["lost"] * 3
    assert all("did not start within 3 s" in m.error for m in measured)
