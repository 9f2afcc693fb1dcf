"""Compile throughput of a tuning space: local process pool vs a Ray cluster, 1 and 2 workers.

Each run compiles the same GEMM tuning space (the grouped-order K-loop GEMM of
bench/gemm_kernels.py, sm_90, the tuner's jobs) into an empty cuTile cache. Workers are started
and warmed first (each imports cuTile and runs tileiras' version queries), as the tuner does
while it prepares; "start s" is
that part, "configs/s" counts from the first compile job to the last result.

    python bench/cluster_compile.py [--configs 16] [--workers 1,2] [--arch sm_90]

Runs on a CPU machine (no GPU needed). On a machine with N cores, more than N workers only
queue; Ray adds its own start-up (a local instance: raylet, GCS) and per-task overhead.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

SPACE = dict(TM=[64, 128], TN=[64, 128], TK=[32, 64], LAT=[2, 4])  # 16 configs, GROUP=8


def _jobs(count: int, arch: str):
    import numpy as np
    from gemm_kernels import gemm_grouped

    from tile_lab.compile.signature import signature_from_args
    from tile_lab.tuning.parallel_compile import compile_recipe, portable_signature

    a = np.zeros((1024, 1024), np.float16)
    recipe = compile_recipe(gemm_grouped)
    jobs = []
    for values in itertools.islice(itertools.product(*SPACE.values()), count):
        cfg = dict(zip(SPACE, values))
        args = (a, a, a, cfg["TM"], cfg["TN"], cfg["TK"], 8, cfg["LAT"])
        sig = signature_from_args(gemm_grouped, args).kernel_signature
        jobs.append((str(cfg), recipe, portable_signature(sig), arch))
    return jobs


def _run(executor, jobs, workers: int) -> tuple[float, int]:
    from tile_lab.tuning.parallel_compile import _compile_job, _warm_worker

    for f in [executor.submit(_warm_worker) for _ in range(workers)]:
        f.result()
    t = time.perf_counter()
    results = [f.result() for f in [executor.submit(_compile_job, j) for j in jobs]]
    elapsed = time.perf_counter() - t
    failed = sum(err is not None for _, err, _ in results)
    return elapsed, failed


def _pool(jobs, workers: int, cache: str) -> tuple[float, float, int]:
    os.environ["CUDA_TILE_CACHE_DIR"] = cache  # spawned workers read it at import
    t = time.perf_counter()
    pool = ProcessPoolExecutor(max_workers=workers,
                               mp_context=multiprocessing.get_context("spawn"))
    try:
        start = time.perf_counter() - t
        elapsed, failed = _run(pool, jobs, workers)
    finally:
        pool.shutdown()
    return start, elapsed, failed


def _ray(jobs, workers: int, cache: str) -> tuple[float, float, int]:
    import ray

    from tile_lab import _cutile_compat as compat
    from tile_lab.tuning.cluster import ClusterOptions, RayCompileExecutor

    path = os.pathsep.join(p for p in (str(HERE), str(HERE.parent),
                                       os.environ.get("PYTHONPATH", "")) if p)
    options = ClusterOptions(compile_workers=workers, init_kwargs={
        "num_cpus": workers, "num_gpus": 0,
        "runtime_env": {"env_vars": {"PYTHONPATH": path, "CUDA_TILE_CACHE_DIR": "off"}}})
    t = time.perf_counter()
    with compat.use_cache_dir(cache):
        executor = RayCompileExecutor(options)
        try:
            start = time.perf_counter() - t
            elapsed, failed = _run(executor, jobs, workers)
        finally:
            executor.shutdown()
            ray.shutdown()
    return start, elapsed, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--configs", type=int, default=16)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--arch", default="sm_90")
    opts = parser.parse_args()
    jobs = _jobs(opts.configs, opts.arch)
    rows = []
    for workers in (int(w) for w in opts.workers.split(",")):
        for name, run in (("process pool", _pool), ("ray (local)", _ray)):
            with tempfile.TemporaryDirectory() as cache:
                start, elapsed, failed = run(jobs, workers, cache)
            rows.append((name, workers, start, elapsed, len(jobs) / elapsed, failed))
    print(f"\ncompile throughput, {len(jobs)} GEMM configs for {opts.arch}, "
          f"{os.cpu_count()} CPUs on this machine")
    print(f"{'backend':<14}{'workers':>8}{'start s':>9}{'compile s':>11}{'configs/s':>11}"
          f"{'failed':>8}")
    for name, workers, start, elapsed, rate, failed in rows:
        print(f"{name:<14}{workers:>8}{start:>9.1f}{elapsed:>11.1f}{rate:>11.2f}{failed:>8}")


if __name__ == "__main__":
    main()
