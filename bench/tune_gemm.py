"""Tune the fp16 GEMM at 8192³ on the GPU and compare, in one run:

* tile_lab.tune vs ct.tune.exhaustive_search over the same space: wall time and best config
  (each in its own process with an empty cuTile cubin cache, so neither reuses the other's
  compiles);
* the best tuned kernel of each variant (naive K-loop; grouped tile order with latency hints;
  persistent grouped with occupancy) vs the strongest cuBLAS baseline (the faster of
  ``torch.matmul`` and ``cupy.matmul``), per regime: ``tile_lab.gpu.compare_timed`` in ABBA
  rounds, burst (the GPU recovered before every group) and sustained (after a warm-up of
  continuous load), ratio with its 95% CI and the SM clock/power of each side — in a process of
  its own after the tuning, so no tuner's heat lands on one side only;
* every successful config re-launched once and checked against cuBLAS.

    python bench/tune_gemm.py [--size 8192] [--out DIR] [--profile]
                              [--phases naive,cutile,grouped,persistent,persistent_acc]

Before the phases, the installed packages are byte-compiled (``compileall``), as ``pip install``
leaves them: the lent GPU's bundle installs with ``--no-compile``, and whichever phase ran
first would otherwise pay for compiling cuda.tile's modules in every worker. ``--profile``
writes a cProfile summary of each tile_lab phase to --out.

Needs a CUDA GPU with CuPy. Prints a table; writes the tuning store (JSON lines, gzipped at the
end: ``tuning_gemm_SIZE.jsonl.gz``, which ``TuningStore`` reads read-only) and a summary JSON
(gzipped: ``tuning_gemm_SIZE_summary.json.gz``) to --out (default: notebooks/data) for the
tutorial notebook's recorded results.
"""

from __future__ import annotations

import argparse
import compileall
import itertools
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

NAIVE_SPACE = dict(TM=[128, 256], TN=[128, 256], TK=[32, 64], num_ctas=[1, 2])
GROUPED_SPACE = dict(TM=[128, 256], TN=[128, 256], TK=[64], GROUP=[8], LAT=[2, 4],
                     num_ctas=[1, 2])
PERSISTENT_SPACE = dict(TM=[128], TN=[128, 256], TK=[64], GROUP=[8], LAT=[3, 4],
                        occupancy=[1, 2], num_ctas=[1, 2])
# The persistent kernel with the knobs of bench/KERNELS.md: 256-wide tiles over a 2-CTA
# cluster, worker warps (the fp32 accumulator spills with 4), latency; 8 configs.
PERSISTENT_ACC_SPACE = dict(TM=[128, 256], TN=[256], TK=[64], GROUP=[8], LAT=[4, 6], ACC16=[0],
                            occupancy=[1], num_ctas=[2], num_worker_warps=[4, 8])
# A wider space for the grouped kernel (96 configs), searched with the same racing tuner.
WIDE_SPACE = dict(TM=[128], TN=[128, 256], TK=[64, 128], GROUP=[8, 16], LAT=[3, 4, 6],
                  num_ctas=[1, 2], occupancy=[1, 2])


def _data(size):
    import cupy as cp

    rng = cp.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=cp.float32).astype(cp.float16)
    b = rng.standard_normal((size, size), dtype=cp.float32).astype(cp.float16)
    return a, b, cp.empty((size, size), cp.float16)


def _warm_gpu(a, b, seconds: float = 3.0) -> None:
    """Bring the GPU to its working clocks before a tuner starts its clock: an idle H200 sits
    at 345 MHz, and whichever tuner ran first on a cold GPU paid for the ramp."""
    import cupy as cp

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        cp.matmul(a, b)
        cp.cuda.get_current_stream().synchronize()


def _grid_naive(size):
    return lambda c: ((size + c["TM"] - 1) // c["TM"], (size + c["TN"] - 1) // c["TN"])


def _grid_grouped(size):
    return lambda c: (((size + c["TM"] - 1) // c["TM"]) * ((size + c["TN"] - 1) // c["TN"]),)


def _grid_persistent(size):
    from tile_lab.gpu.device import device_info

    sms = device_info().sm_count

    def grid(c):
        tiles = ((size + c["TM"] - 1) // c["TM"]) * ((size + c["TN"] - 1) // c["TN"])
        # a block of num_ctas CTAs takes num_ctas SMs; occupancy blocks fit on each
        return (min(tiles, sms * c["occupancy"] // c["num_ctas"]),)
    return grid


def _args(a, b, c, names):
    return lambda cfg: (a, b, c, *[cfg[n] for n in names])


class _StackSampler:
    """Where the main thread is, every 20 ms (cProfile's attributions break inside torch's
    import machinery, and it cannot see time a thread spends blocked). Each sample is keyed by
    the chain of tile_lab / cuda.tile / cupy / torch frames on the stack."""

    def __init__(self, interval=0.02):
        import collections
        import threading

        self.counts = collections.Counter()
        self.interval, self.main = interval, threading.main_thread().ident
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done.wait(self.interval):
            frame = sys._current_frames().get(self.main)
            chain = []
            while frame is not None:
                path = frame.f_code.co_filename
                for mark in ("tile_lab/", "cuda/tile/", "cupy/", "torch/", "concurrent/"):
                    if mark in path:
                        chain.append(f"{path.split(mark)[-1]}:{frame.f_code.co_name}")
                        break
                frame = frame.f_back
            self.counts[" < ".join(chain[:6]) or "(other)"] += 1

    def stop(self):
        self.done.set()
        self.thread.join()
        lines = [f"{n * self.interval:7.2f} s  {key}" for key, n in self.counts.most_common(40)]
        return "\n".join(lines) + "\n"


def phase_tile_lab(size, variant, store, profile_to=None):
    import cupy as cp
    from gemm_kernels import gemm_grouped, gemm_naive, gemm_persistent

    import tile_lab
    from tile_lab.gpu.metrics import matmul_flops
    from tile_lab.gpu.options import TimingOptions
    from tile_lab.tuning import RaceOptions, TuneOptions

    a, b, c = _data(size)
    if variant == "naive":
        kernel, space, grid_fn = gemm_naive, NAIVE_SPACE, _grid_naive(size)
        names = ["TM", "TN", "TK"]
    elif variant == "persistent":
        kernel, space, grid_fn = gemm_persistent, PERSISTENT_SPACE, _grid_persistent(size)
        names = ["TM", "TN", "TK", "GROUP", "LAT"]
    elif variant == "persistent_acc":
        from gemm_kernels import gemm_persistent_acc

        kernel, space = gemm_persistent_acc, PERSISTENT_ACC_SPACE
        grid_fn = _grid_persistent(size)
        names = ["TM", "TN", "TK", "GROUP", "LAT", "ACC16"]
    else:
        space = WIDE_SPACE if variant == "wide" else GROUPED_SPACE
        kernel, grid_fn = gemm_grouped, _grid_grouped(size)
        names = ["TM", "TN", "TK", "GROUP", "LAT"]
    args_fn = _args(a, b, c, names)
    flops = matmul_flops(size, size, size)
    _warm_gpu(a, b)
    sampler = _StackSampler() if profile_to else None
    t0 = time.perf_counter()
    options = TuneOptions(progress=False, flops=flops, race=RaceOptions(samples=5),
                          timing=TimingOptions(samples=20, regime="burst"))
    result = tile_lab.tune(kernel, tile_lab.Space(**space), grid_fn, args_fn, store=store,
                           options=options)
    wall = time.perf_counter() - t0
    if sampler is not None:
        Path(profile_to).write_text(sampler.stop())
    if result.best is None:
        raise SystemExit("every config failed:\n" + result.summary())
    ref = cp.matmul(a, b)
    verified = 0
    for s in result.successes:  # every accepted config computes the right product
        cfg = s.config
        c.fill(0)
        tile_lab.launch(kernel.replace_hints(**cfg.hints()) if cfg.hints() else kernel,
                        grid_fn(cfg), args_fn(cfg))
        err = float(cp.abs(c.astype(cp.float32) - ref.astype(cp.float32)).max())
        verified += err < 0.5  # fp16 output of K=8192 fp32-accumulated sums of N(0,1)·N(0,1)
    best = result.best.config
    pruned = sum(1 for s in result.successes if s.measurement.n == 1)
    return dict(phase=f"tile_lab.tune/{variant}", wall_s=wall, timings=result.timings,
                configs=len(result.successes) + len(result.failures),
                best=best.as_dict(), best_tflops=result.best.tflops, regime=result.regime,
                successes=len(result.successes), failures=len(result.failures),
                stopped_after_one_sample=pruned, verified=verified,
                compile_max_s=max(result.compile_s.values(), default=None),
                compile_sum_s=sum(result.compile_s.values()),
                gpu=result.successes[0].measurement.provenance.gpu,
                worst=result.worst.config.as_dict(),
                worst_tflops=result.worst.tflops)


def phase_cutile(size):
    import cuda.tile as ct
    import cupy as cp
    from gemm_kernels import gemm_naive

    a, b, c = _data(size)
    names = ["TM", "TN", "TK"]
    keys = list(NAIVE_SPACE)
    space = [dict(zip(keys, v)) for v in itertools.product(*NAIVE_SPACE.values())]
    grid_fn = _grid_naive(size)
    _warm_gpu(a, b)
    t0 = time.perf_counter()
    res = ct.tune.exhaustive_search(space, cp.cuda.get_current_stream(), grid_fn, gemm_naive,
                                    _args(a, b, c, names),
                                    lambda cfg: {"num_ctas": cfg["num_ctas"]}, quiet=True)
    wall = time.perf_counter() - t0
    mean_us = res.best.mean_us
    return dict(phase="ct.tune.exhaustive_search/naive", wall_s=wall, best=res.best.config,
                best_tflops=2 * size**3 / (mean_us * 1e-6) / 1e12,
                successes=len(res.successes), failures=len(res.failures))


def phase_compare(size, picks):
    """The two tuners' best naive configs, compared per regime (``compare_timed``: ABBA rounds,
    burst and sustained): is the difference between the picks more than noise?"""
    from gemm_kernels import gemm_naive
    from gpu_common import comparison_rows, print_comparisons

    from tile_lab.gpu import compare_timed, kernel_work
    from tile_lab.gpu.metrics import matmul_flops

    a, b, c = _data(size)
    works = []
    for who, cfg in zip(("tile_lab's pick", "cuTile's pick"), picks):
        k = gemm_naive.replace_hints(num_ctas=cfg["num_ctas"])
        works.append(kernel_work(k, _grid_naive(size)(cfg),
                                 (a, b, c, cfg["TM"], cfg["TN"], cfg["TK"]), name=who))
    cmp = compare_timed(works[0], works[1])
    rows = comparison_rows("tile_lab pick vs cuTile pick", cmp,
                           ours_flops=matmul_flops(size, size, size))
    print_comparisons("the two tuners' picks", rows)
    return dict(phase="compare picks", picks=picks, rows=rows)


def phase_regimes(size, picks):
    """The best config of each variant vs the strongest cuBLAS baseline, per regime."""
    from gpu_common import print_comparisons
    from gpu_gemm import compare_configs

    rows, comparisons, base = compare_configs(size, picks)
    print_comparisons(f"GEMM fp16 {size}³ vs {base.name}", rows)
    return dict(phase="regimes", baseline=base.baseline, rows=rows, comparisons=comparisons)


def _run_phase(size, phase, store=None, extra=()):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CUDA_TILE_CACHE_DIR=cache)
        cmd = [sys.executable, __file__, "--size", str(size), "--phase", phase]
        if store is not None:
            cmd += ["--store", str(store)]
        proc = subprocess.run([*cmd, *extra], env=env, capture_output=True, text=True)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not line:
        print(f"phase {phase} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return None
    return json.loads(line[0][7:])


def main():
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--out", default=str(HERE.parent / "notebooks" / "data"))
    ap.add_argument("--phases", default="naive,cutile,grouped,persistent,persistent_acc",
                    help="comma-separated: naive, cutile, grouped, persistent, "
                         "persistent_acc, wide")
    ap.add_argument("--profile", action="store_true",
                    help="write a cProfile summary of each tile_lab phase to --out")
    ap.add_argument("--profile-to", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--store", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--picks", default=None, help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.phase:
        if ns.phase == "cutile":
            out = phase_cutile(ns.size)
        elif ns.phase == "compare":
            out = phase_compare(ns.size, json.loads(ns.picks))
        elif ns.phase == "regimes":
            out = phase_regimes(ns.size, json.loads(ns.picks))
        else:
            out = phase_tile_lab(ns.size, ns.phase, ns.store, ns.profile_to)
        print("RESULT " + json.dumps(out))
        return
    out_dir = Path(ns.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    store = out_dir / f"tuning_gemm_{ns.size}.jsonl"
    if store.exists():
        store.unlink()
    _byte_compile()
    results = []
    seen = set()
    for i, phase in enumerate(ns.phases.split(",")):
        # a repeated phase (to see a second run on a warm machine) must not find the first
        # run's results in the store
        phase_store = store if phase not in seen else out_dir / f"repeat_{i}_{phase}.jsonl"
        seen.add(phase)
        extra = []
        if ns.profile and phase != "cutile":
            extra = ["--profile-to", str(out_dir / f"profile_{i}_{phase}.txt")]
        result = _run_phase(ns.size, phase, phase_store, extra)
        if result is not None:
            results.append(result)
    by = {r["phase"]: r for r in results}
    ours, theirs = by.get("tile_lab.tune/naive"), by.get("ct.tune.exhaustive_search/naive")
    compared = None
    if ours and theirs:
        compared = _run_phase(ns.size, "compare", None,
                              ["--picks", json.dumps([ours["best"], theirs["best"]])])
        if compared is not None:
            results.append(compared)
    picks = {r["phase"].split("/")[1]: r["best"] for r in results
             if r["phase"].startswith("tile_lab.tune/")}
    regimes = None
    if picks:
        regimes = _run_phase(ns.size, "regimes", None, ["--picks", json.dumps(picks)])
        if regimes is not None:
            results.append(regimes)
    from tile_lab.record_files import write_record

    # the summary gzipped too (the same content gives the same bytes)
    write_record(out_dir / f"tuning_gemm_{ns.size}_summary.json.gz",
                 json.dumps(results, indent=1))
    if store.exists():  # the notebooks read the store gzipped (read-only, deterministic bytes)
        write_record(store.with_name(store.name + ".gz"), store.read_text(encoding="utf-8"))
        store.unlink()
    print(f"\nfp16 GEMM {ns.size}³ tuning on {results[0].get('gpu') if results else '?'}")
    print(f"{'run':36} {'wall s':>8} {'best TFLOPS':>12}  best config (tuner's measurement)")
    for r in results:
        if "wall_s" not in r:
            continue
        print(f"{r['phase']:36} {r['wall_s']:8.1f} {r['best_tflops']:12.1f}  {r['best']}")
    for a in (r for r in results if r["phase"] == "tile_lab.tune/naive"):
        if theirs:
            print(f"tuner wall time ratio tile_lab/cuTile: {a['wall_s'] / theirs['wall_s']:.2f} "
                  f"(goal ≤ 0.5); best configs {a['best']} vs {theirs['best']}")
    if compared:
        same = "the same config" if compared["picks"][0] == compared["picks"][1] else \
            "different configs"
        for r in compared["rows"]:
            print(f"the two picks ({same}), {r['regime']}: tile_lab's pick is {r['ratio']:.3f}x "
                  f"cuTile's (95% CI {r['ci_low']:.3f}-{r['ci_high']:.3f})")
    for r in results:
        if "verified" in r:
            print(f"{r['phase']}: verified {r['verified']}/{r['successes']} configs; "
                  f"{r['stopped_after_one_sample']} stopped after one sample; compiles in "
                  f"workers: slowest {r['compile_max_s']:.1f} s, sum {r['compile_sum_s']:.1f} s; "
                  f"time split {({k: round(v, 1) for k, v in r['timings'].items()})}; worst "
                  f"config {r['worst']} at {r['worst_tflops']:.1f} TFLOPS")
    if regimes:
        from gpu_common import print_comparisons

        print_comparisons(f"best configs vs {regimes['baseline']}", regimes["rows"])
        for regime in ("burst", "sustained"):
            mine = [r for r in regimes["rows"] if r["regime"] == regime]
            if mine:
                top = max(mine, key=lambda r: r["ratio"])
                print(f"best tuned kernel, {regime}: {top['row']} at {top['ratio']:.3f}x the "
                      f"strongest cuBLAS (95% CI {top['ci_low']:.3f}-{top['ci_high']:.3f}; "
                      f"SM {top['ours_sm_mhz']} vs {top['baseline_sm_mhz']} MHz; goal >= 1.0)")


def _byte_compile():
    """Byte-compile cuda.tile and tile_lab, as pip install leaves an installed package."""
    import cuda.tile

    import tile_lab

    for pkg in (cuda.tile, tile_lab):
        compileall.compile_dir(os.path.dirname(pkg.__file__), quiet=1, workers=0)


if __name__ == "__main__":
    main()
