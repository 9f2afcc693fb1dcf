"""The tutorial's persistent GEMM space tuned on this machine, locally and through Ray.

Two phases, each in a process of its own with an empty cuTile cubin cache:

* ``local``: ``tile_lab.tune`` as usual (compiles in a local process pool, measures here);
* ``ray``: ``tile_lab.tune(..., options=TuneOptions(cluster=ClusterOptions(...)))`` on a local
  Ray instance: compiles in Ray tasks (cubins shipped back into the tuning process's cache) and
  measures in one actor per GPU, each building the kernel and its arrays on its own GPU;
* ``ray1``: the same on Ray with one measuring actor (``ClusterOptions(gpus=1)``), so the wall
  time of one GPU and of every GPU compare under the same scheduler.

Both rank in the burst regime; every config's output is checked against cuBLAS before its
time counts. Prints a table (wall time, best config, TFLOPS, which node compiled and which GPU
measured each config) and writes JSON to --out. With one GPU the top-k cross-check (which
needs two GPUs to mean anything) does not run: the table says so.

    python bench/tune_gemm_cluster.py [--size 8192] [--out DIR] [--phases local,ray1,ray]

The last lines say whether every phase chose the same winner (configs within the timing noise
of each other can swap places between GPUs: the cross-check's re-timing on one GPU is printed
beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

SPACE = dict(TM=[128], TN=[128, 256], TK=[64], GROUP=[8], LAT=[3, 4], occupancy=[1, 2],
             num_ctas=[1, 2])  # 16 configs: the persistent space of bench/tune_gemm.py
NAMES = ["TM", "TN", "TK", "GROUP", "LAT"]
SMALL_SPACE = dict(TM=[128], TN=[128], TK=[64], GROUP=[8], LAT=[4], occupancy=[1, 2],
                   num_ctas=[1])  # --small: 2 configs


class GemmProblem:
    """Arrays made on first use in whichever process calls it (the tuner here, or a Ray actor
    on its own GPU), so no GPU array is ever pickled; grid and arguments as the tuner wants."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._arrays = None

    def arrays(self):
        if self._arrays is None:
            import cupy as cp

            rng = cp.random.default_rng(0)
            a = rng.standard_normal((self.size, self.size), dtype=cp.float32).astype(cp.float16)
            b = rng.standard_normal((self.size, self.size), dtype=cp.float32).astype(cp.float16)
            # the cuBLAS product, on the host, for check= (tile_lab.bench compares host copies)
            self._arrays = (a, b, cp.empty((self.size, self.size), cp.float16),
                            cp.asnumpy(cp.matmul(a, b)))
        return self._arrays

    def __getstate__(self):
        return {"size": self.size, "_arrays": None}

    def grid(self, cfg):
        from tile_lab.gpu.device import device_info

        tiles = -(-self.size // cfg["TM"]) * -(-self.size // cfg["TN"])
        return (min(tiles, device_info().sm_count * cfg["occupancy"] // cfg["num_ctas"]),)

    def args(self, cfg):
        a, b, c, _ = self.arrays()
        return (a, b, c, *[cfg[n] for n in NAMES])

    def check(self, a, b, c, *_):
        """The expected C (tile_lab.bench calls this with host copies of the arguments)."""
        return self.arrays()[3]


def phase(name: str, size: int, small: bool = False, timeout_s: float = 600.0) -> dict:
    from gemm_kernels import gemm_persistent

    import tile_lab
    from tile_lab.gpu.metrics import matmul_flops
    from tile_lab.gpu.options import TimingOptions
    from tile_lab.tuning import RaceOptions, TuneOptions

    problem = GemmProblem(size)
    cluster = None
    if name in ("ray", "ray1"):
        from tile_lab.tuning.cluster import ClusterOptions

        path = os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")])
        cluster = ClusterOptions(gpus=1 if name == "ray1" else None,
                                 measure_timeout_s=timeout_s, init_kwargs={
            "log_to_driver": True, "runtime_env": {"env_vars": {"PYTHONPATH": path}}})
    options = TuneOptions(progress=False, flops=matmul_flops(size, size, size),
                          race=RaceOptions(samples=5), cluster=cluster,
                          timing=TimingOptions(samples=20, regime="burst"))
    problem.arrays()
    t0 = time.perf_counter()
    space = tile_lab.Space(**(SMALL_SPACE if small else SPACE))
    result = tile_lab.tune(gemm_persistent, space, problem.grid, problem.args,
                           check=problem.check, options=options)
    wall = time.perf_counter() - t0
    best = result.best
    return dict(phase=name, wall_s=wall, configs=len(result.successes) + len(result.failures),
                successes=len(result.successes), failures=[
                    f"{f.config.label()}: {f.stage}: {f.error[:200]}" for f in result.failures],
                best=None if best is None else best.config.as_dict(),
                best_tflops=None if best is None else best.tflops,
                regime=result.regime, timings=result.timings, placement=result.placement,
                gpu=None if best is None else best.measurement.provenance.gpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--out", default=None)
    parser.add_argument("--phases", default="local,ray1,ray")
    parser.add_argument("--small", action="store_true", help="2 configs instead of 16")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds before a config's measurement counts as hung (ray)")
    parser.add_argument("--phase", help=argparse.SUPPRESS)  # the child process's own phase
    opts = parser.parse_args()
    if opts.phase:
        print("RESULT " + json.dumps(phase(opts.phase, opts.size, opts.small, opts.timeout)))
        return
    rows = []
    for name in opts.phases.split(","):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, CUDA_TILE_CACHE_DIR=cache)
            cmd = [sys.executable, __file__, "--phase", name, "--size", str(opts.size),
                   "--timeout", str(opts.timeout), *(["--small"] if opts.small else [])]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=540)
        line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            print(f"{name}: failed (rc {out.returncode})\n{out.stderr[-3000:]}")
            continue
        rows.append(json.loads(line[7:]))
    if opts.out:
        Path(opts.out).mkdir(parents=True, exist_ok=True)
        (Path(opts.out) / "tune_gemm_cluster.json").write_text(json.dumps(rows, indent=1))
    print(f"\npersistent GEMM {opts.size}³ fp16, {2 if opts.small else 16} configs, burst regime")
    for r in rows:
        place = r["placement"]
        measured = sorted(set(place.get("measured_on", {}).values())) or ["this process"]
        print(f"{r['phase']:<6} wall {r['wall_s']:6.1f} s  ok {r['successes']:>2}/"
              f"{r['configs']}  best {r['best']}  {r['best_tflops'] or 0:.1f} TFLOPS  "
              f"gpu {r['gpu']}")
        if place:
            print(f"       compile jobs per node {place.get('jobs_on')}; measured on {measured}; "
                  f"cross-check: {place.get('cross_check') or 'not run (one GPU)'}")
        for f in r["failures"]:
            print(f"       failed: {f}")
    winners = {r["phase"]: json.dumps(r["best"], sort_keys=True) for r in rows}
    if len(winners) > 1:
        same = len(set(winners.values())) == 1
        print(f"\nsame winner in every phase: {'yes' if same else 'no'}")
        if not same:
            for phase_name, best in winners.items():
                print(f"  {phase_name}: {best}")


if __name__ == "__main__":
    main()
