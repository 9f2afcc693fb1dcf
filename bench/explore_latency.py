"""How long a slider move in ``tile_lab.explore`` takes, from the value change to the redraw.

Goal: <= 0.3 s when the config is already compiled. The explorer is set up as in notebook 9:
the tutorial's naive fp16 GEMM over a 16-config space, the partition diagram drawn by the CPU
emulator on a 512x512 problem, and

* without ``--gpu``: the performance pane from the recorded tuning store (no GPU needed);
* with ``--gpu``: the 8192^3 problem on the GPU. Every config is compiled first (in worker
  processes, into cuTile's cubin cache); each slider move then launches and times its config
  (20 cold samples; a config slower than its share of the redraw budget is timed once).

A move sets one slider's value, exactly what a user's release does (the widget's observer
redraws synchronously). The walk visits every config, changing one knob per move, then walks
back (revisits are served from the explorer's cache).

    python bench/explore_latency.py [--gpu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

SPACE = dict(TM=[128, 256], TN=[128, 256], TK=[32, 64], num_ctas=[1, 2])
GOAL_S = 0.3


def gray_walk(space: dict) -> list[dict]:
    """Every config, consecutive ones differing in one knob (a reflected Gray code)."""
    names = list(space)
    walk: list[list[int]] = [[]]
    for name in names:
        n = len(space[name])
        walk = [[*prefix, i] for j, prefix in enumerate(walk)
                for i in (range(n) if j % 2 == 0 else reversed(range(n)))]
    return [{name: space[name][i] for name, i in zip(names, idx)} for idx in walk]


def build(use_gpu: bool):
    import numpy as np
    from gemm_kernels import gemm_naive

    import tile_lab

    m = 512
    rng = np.random.default_rng(0)
    small = (rng.random((m, m)).astype(np.float16), rng.random((m, m)).astype(np.float16),
             np.zeros((m, m), np.float16))
    if use_gpu:
        import cupy as cp

        size = 8192
        a = cp.random.random((size, size)).astype(cp.float16)
        b = cp.random.random((size, size)).astype(cp.float16)
        c = cp.empty((size, size), cp.float16)
    else:
        size, (a, b, c) = m, small
    space = tile_lab.Space(**SPACE)

    def args_fn(cfg):
        return (a, b, c, cfg["TM"], cfg["TN"], cfg["TK"])

    def grid_fn(cfg):
        return (size // cfg["TM"], size // cfg["TN"])

    if use_gpu:  # "already compiled": every config's cubin in cuTile's cache before moving
        from tile_lab.gpu.device import local_arch
        from tile_lab.tuning.parallel_compile import precompile_configs

        t0 = time.perf_counter()
        errors = precompile_configs(gemm_naive, space.configs(local_arch()), args_fn,
                                    space.classify(gemm_naive), local_arch(), None)
        print(f"precompiled {len(space)} configs in {time.perf_counter() - t0:.1f} s "
              f"({len(errors)} failed)")
    from tile_lab.widgets.explore import ExploreOptions

    store = str(HERE.parent / "notebooks" / "data" / "tuning_gemm_8192.jsonl.gz")
    explorer = tile_lab.explore(
        gemm_naive, space, grid_fn, args_fn, options=ExploreOptions(use_gpu=use_gpu),
        diagram_args_fn=lambda cfg: (*small, cfg["TM"], cfg["TN"], cfg["TK"]),
        diagram_grid_fn=lambda cfg: (m // cfg["TM"], m // cfg["TN"]),
        store=None if use_gpu else store)
    return explorer


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--gpu", action="store_true", help="measure on the GPU (8192^3)")
    ns = ap.parse_args()
    explorer = build(ns.gpu)
    walk = gray_walk(SPACE)
    walk = walk[1:] + walk[::-1][1:]  # start is the explorer's first config: already drawn
    first, again = [], []
    seen = {tuple(sorted(explorer.config.as_dict().items()))}
    for cfg in walk:
        changed = [k for k, v in cfg.items() if explorer.sliders[k].value != v]
        assert len(changed) == 1, changed
        key = tuple(sorted(cfg.items()))
        before = explorer.redraws
        t0 = time.perf_counter()
        explorer.sliders[changed[0]].value = cfg[changed[0]]
        dt = time.perf_counter() - t0
        assert explorer.redraws == before + 1
        (again if key in seen else first).append((dt, cfg))
        seen.add(key)
    where = "GPU (measured on each first visit)" if ns.gpu else "CPU (recorded results)"
    print(f"explore slider moves, {where}: {len(first)} first visits, {len(again)} revisits")
    worst_ok = True
    for label, rows in (("first visit", first), ("revisit", again)):
        if not rows:
            continue
        times = [dt for dt, _ in rows]
        slow = [(dt, c) for dt, c in rows if dt > GOAL_S]
        worst_ok &= not slow
        print(f"  {label:11}: median {statistics.median(times) * 1e3:6.1f} ms, max "
              f"{max(times) * 1e3:6.1f} ms; over {GOAL_S} s: {len(slow)}"
              + "".join(f"\n    {dt * 1e3:.0f} ms at {c}" for dt, c in slow))
    if ns.gpu:
        from tile_lab.tuning.result import Success

        one = [k for k, o in explorer.measured.items()
               if isinstance(o, Success) and o.measurement.n == 1]
        print(f"  configs timed once (slower than the redraw budget allows): {len(one)}")
    print(f"goal <= {GOAL_S} s per move: {'met' if worst_ok else 'MISSED'}")
    return 0 if worst_ok else 1


if __name__ == "__main__":
    sys.exit(main())
