"""Flash attention forward vs the strongest torch SDPA, per regime, after tuning on the GPU.

For each row (dtype, batch x heads x seq x head_dim, causal or not):

1. **Baseline.** ``F.scaled_dot_product_attention`` as torch dispatches it and pinned to each
   backend that takes the inputs (cuDNN, flash, memory-efficient), ranked in interleaved rounds;
   the fastest is the baseline, and every candidate's time is recorded.
2. **Tuning** (once per head_dim x causal class, on that class's first row): every config of
   ``tile_lab.examples.attention.flash_attention_tuned`` in ``SPACE`` (tiles BM x BN, worker
   warps, occupancy) with latency hint 2 on the K loads (4 on V), ranked in two interleaved
   rounds of 5 cold-L2 samples; then the best three with other latency hints. Configs whose SASS
   spills to local memory are skipped before any launch (compiled on this host's CPU, about a
   second each) and listed with their LDL/STL count.
3. **Check.** The tuned kernel and the tutorial's ``flash_attention`` (128 x 64 tiles, as
   notebook 15 builds it) against the baseline's output (max |difference| < 2e-2).
4. **Compare.** ``tile_lab.compare_timed`` of each kernel against the baseline: burst and
   sustained regimes, ABBA rounds, L2 flushed before every sample, samples enqueued behind a
   stream hold (host launch overhead outside the spans), ratio = baseline time / ours
   (above 1: ours is faster) with a bootstrap 95% CI, and the SM clock and power of each side.

    python bench/gpu_attention.py [--quick] [--out DIR]    # writes DIR/attention.json
"""

from __future__ import annotations

import itertools
import math
import time
from concurrent.futures import ThreadPoolExecutor

from gpu_common import (
    compare_options,
    comparison_rows,
    environment,
    parse_args,
    print_comparisons,
    save_json,
)

ROWS = (  # (dtype, (batch, heads, seq, head_dim), causal)
    ("fp16", (4, 16, 2048, 128), False),
    ("fp16", (4, 16, 2048, 128), True),
    ("bf16", (4, 16, 2048, 128), False),
    ("bf16", (4, 16, 2048, 128), True),
    ("fp16", (4, 16, 4096, 64), False),
    ("fp16", (1, 16, 8192, 128), False),
)
# BM x BN tiles, worker warps, occupancy (blocks per SM): the search before the spill screen
SPACE = [dict(BM=bm, BN=bn, num_worker_warps=w, occupancy=o)
         for bm, bn, w, o in itertools.product((64, 128, 256), (64, 128, 256), (4, 8), (1, 2))]
LATENCIES = (2, 1, 4)  # the K loads' latency hint (V gets twice it); the first in stage 1
TUTORIAL_TILES = (128, 64)


def spills(cfg: dict, d: int, causal: bool) -> int | str:
    """LDL + STL instructions in the config's sm_90 SASS (compiled on the CPU, no launch), or
    why it did not compile."""
    import numpy as np

    import tile_lab
    from tile_lab.examples.attention import flash_attention_tuned

    q = np.zeros((1, 1024, d), np.float16)
    try:
        insp = tile_lab.inspect(
            flash_attention_tuned, (q, q, q, q, 0.1, cfg["BM"], cfg["BN"], d, int(causal), 2),
            arch="sm_90", hints={k: cfg[k] for k in ("num_worker_warps", "occupancy")})
        return sum(insp.spill_instructions().values())
    except Exception as e:  # no nvdisasm here, or the config does not compile
        return f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"


def tuned_work(q3, k3, v3, out, d: int, causal: bool, cfg: dict):
    from tile_lab.examples.attention import LOG2_E, flash_attention_tuned, grid
    from tile_lab.gpu import kernel_work

    args = (q3, k3, v3, out, LOG2_E / math.sqrt(d), cfg["BM"], cfg["BN"], d, int(causal),
            cfg.get("latency", LATENCIES[0]))
    return kernel_work(flash_attention_tuned, grid(tuple(q3.shape), cfg["BM"]), args,
                       hints={k: cfg[k] for k in ("num_worker_warps", "occupancy")},
                       name="flash_attention_tuned " + " ".join(f"{k}={v}"
                                                                for k, v in cfg.items()))


def tutorial_work(q3, k3, v3, out, d: int, causal: bool):
    from tile_lab.examples.attention import LOG2_E, flash_attention, grid
    from tile_lab.gpu import kernel_work

    bm, bn = TUTORIAL_TILES
    return kernel_work(flash_attention, grid(tuple(q3.shape), bm),
                       (q3, k3, v3, out, LOG2_E / math.sqrt(d), bm, bn, d, int(causal)),
                       name=f"flash_attention (tutorial, {bm}x{bn})")


def tune(arrays, d: int, causal: bool, timer, quick: bool) -> dict:
    """Screen, compile, rank: the record of one class's tuning, with the best config."""
    import torch

    from tile_lab.gpu import baselines

    space = SPACE[:4] if quick else SPACE
    with ThreadPoolExecutor(8) as pool:  # tileiras runs in a subprocess: threads overlap it
        screened = list(pool.map(lambda c: (c, spills(c, d, causal)), space))
    keep = [c for c, s in screened if s == 0 or isinstance(s, str)]  # unknown: let the GPU say
    record: dict = dict(d=d, causal=causal, screened=[dict(config=c, spills=s)
                                                       for c, s in screened], trials=[])

    def ranked(configs: list[dict], stage: str) -> list[tuple[dict, float]]:
        works, by_name = [], {}
        for cfg in configs:
            w = tuned_work(*arrays, d, causal, cfg)
            try:
                t0 = time.perf_counter()
                w.run()  # compiles
                torch.cuda.synchronize()
                compile_s = time.perf_counter() - t0
            except Exception as e:  # a config the compiler or the GPU refuses: record it
                record["trials"].append(dict(stage=stage, config=cfg,
                                             error=f"{type(e).__name__}: {str(e)[:200]}"))
                continue
            works.append(w)
            by_name[w.name] = (cfg, compile_s)
        result = baselines.rank(works, timer, rounds=2, samples=5)
        for w, t in result:
            cfg, compile_s = by_name[w.name]
            record["trials"].append(dict(stage=stage, config=cfg, median_us=t * 1e6,
                                         first_launch_s=compile_s))
        return [(by_name[w.name][0], t) for w, t in result]

    stage1 = ranked([dict(c, latency=LATENCIES[0]) for c in keep], "tiles")
    top = [c for c, _ in stage1[: 1 if quick else 3]]
    stage2 = ranked([dict(c, latency=lat) for c in top for lat in LATENCIES[1:]], "latency")
    best_cfg, best_t = min(stage1 + stage2, key=lambda ct: ct[1])
    record["best"] = dict(config=best_cfg, median_us=best_t * 1e6)
    print(f"tuned D={d} causal={causal}: {len(keep)}/{len(space)} configs pass the spill "
          f"screen; best {best_cfg} at {best_t * 1e6:.1f} us", flush=True)
    return record


def main() -> None:
    opts = parse_args(__doc__)
    import cupy
    import torch

    from tile_lab.gpu import baselines, compare_timed
    from tile_lab.gpu.device import device_info
    from tile_lab.gpu.sampling import CudaEventTimer

    stream = cupy.cuda.Stream(non_blocking=True)
    timer = CudaEventTimer(cupy, stream, l2_bytes=device_info().l2_bytes)
    rows, baseline_records, tunings, failures = [], [], {}, []
    env = dict(environment(), stream_hold="on" if timer.hold else f"off ({timer.hold_error})")
    for dtype_name, shape, causal in ROWS[:2] if opts.quick else ROWS:
        b, h, s, d = shape
        label = f"{dtype_name} {b}x{h}x{s}x{d}{' causal' if causal else ''}"
        try:
            dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
            g = torch.Generator(device="cuda").manual_seed(0)
            q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, generator=g)
                       for _ in range(3))
            q3, k3, v3 = (t.reshape(b * h, s, d) for t in (q, k, v))
            out = torch.empty_like(q3)
            cands, skipped = baselines.attention_candidates(q, k, v, causal=causal)
            ranked = baselines.rank(cands, timer, rounds=3, samples=5)
            base = baselines.best_of(ranked)
            baseline_records.append(dict(row=label, picked=base.name, baseline=base.baseline,
                                         candidates_us={w.name: t * 1e6 for w, t in ranked},
                                         skipped=skipped))
            print(f"{label}: baseline {base.name}; "
                  + ", ".join(f"{w.name} {t * 1e6:.1f} us" for w, t in ranked), flush=True)
            key = f"D={d} causal={causal}"
            if key not in tunings:
                tunings[key] = tune((q3, k3, v3, out), d, causal, timer, opts.quick)
            want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            kernels = [tuned_work(q3, k3, v3, out, d, causal, tunings[key]["best"]["config"])]
            if dtype_name == "fp16" and s == 2048:
                kernels.append(tutorial_work(q3, k3, v3, out, d, causal))
            for w in kernels:
                w.run()
                torch.cuda.synchronize()
                err = float((out.reshape(shape).float() - want.float()).abs().max())
                if not err < 2e-2:
                    raise AssertionError(f"{w.name}: max |diff| {err:.3g} vs SDPA")
                c = compare_timed(w, base, compare_options(opts.quick))
                for r in comparison_rows(label, c, ours_flops=base.flops):
                    rows.append(dict(r, dtype=dtype_name, shape=list(shape), causal=causal,
                                     kernel="tutorial" if "tutorial" in w.name else "tuned",
                                     max_abs_err=err))
        except Exception as e:  # keep the other rows; the failure is recorded, not hidden
            failures.append(dict(row=label, error=f"{type(e).__name__}: {str(e)[:400]}"))
            print("FAILED", failures[-1], flush=True)
        torch.cuda.empty_cache()
        save_json(dict(env=env, protocol=__doc__.strip(), rows=rows, tuning=tunings,
                       baselines=baseline_records, failures=failures),
                  opts.out, "attention.json")  # after every row: a timeout keeps what ran
    print_comparisons("flash attention forward vs the fastest torch SDPA", rows)


if __name__ == "__main__":
    main()
