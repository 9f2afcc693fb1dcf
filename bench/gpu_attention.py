"""Attention forward (fp16, batch x heads x seq x 128) vs torch SDPA on its flash backend, per
regime. With ``tile_lab.examples.attention`` present (the flash attention tutorial kernel) each
row is ``compare_timed(ours, sdpa)`` (ABBA rounds, burst and sustained, ratio = SDPA time / ours
with its CI, clocks and power of each side); without it, SDPA alone is timed in both regimes
(the baseline harness).

    python bench/gpu_attention.py [--quick] [--out DIR]
"""

from __future__ import annotations

import math

from gpu_common import (
    compare_options,
    comparison_rows,
    environment,
    parse_args,
    print_comparisons,
    save_json,
)

SHAPES = (((4, 16, 2048, 128), False), ((4, 16, 4096, 128), True))


def main() -> None:
    opts = parse_args(__doc__)
    import torch

    from tile_lab.gpu import baselines, bench_work, compare_timed, kernel_work
    from tile_lab.gpu.options import TimingOptions

    try:
        from tile_lab.examples import attention as ours_mod
    except ImportError:
        ours_mod = None
    rows, alone = [], []
    for shape, causal in SHAPES[:1] if opts.quick else SHAPES:
        b, h, s, d = shape
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16, generator=g)
                   for _ in range(3))
        base = baselines.attention(q, k, v, causal=causal)
        label = f"attention {b}x{h}x{s}x{d}{' causal' if causal else ''}"
        if ours_mod is None:
            for regime in ("burst", "sustained"):
                m = bench_work(base, timing=TimingOptions(samples=20, regime=regime))
                alone.append(dict(row=label, regime=regime, baseline=base.baseline,
                                  tflops=m.tflops, sm_mhz=m.sm_mhz, power_w=m.power_w,
                                  throttled=m.throttled_samples))
            continue
        q3, k3, v3 = (t.reshape(b * h, s, d).contiguous() for t in (q, k, v))
        out = torch.empty_like(q3)
        bm, bn = 128, 64
        scale = 1.0 / math.sqrt(d) * math.log2(math.e)
        args = (q3, k3, v3, out, scale, bm, bn, d, int(causal))
        w = kernel_work(ours_mod.flash_attention, ours_mod.grid(tuple(q3.shape), bm), args)
        w.run()
        torch.cuda.synchronize()
        want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        err = float((out.reshape(shape) - want).abs().max())
        assert err < 2e-2, f"{label}: max abs err {err:.3g} vs SDPA"
        c = compare_timed(w, base, compare_options(opts.quick))
        rows += comparison_rows(label, c, ours_flops=base.flops)
    if rows:
        print_comparisons("attention forward fp16 vs torch SDPA", rows)
    for r in alone:
        print(f"{r['row']:36} {r['regime']:9} SDPA {r['tflops']:.0f} TFLOPS at SM "
              f"{r['sm_mhz']} MHz, {r['power_w']} W ({r['baseline']})")
    if alone:
        print("(no tile_lab.examples.attention here: the baseline harness alone)")
    save_json(dict(env=environment(), rows=rows, baseline_alone=alone), opts.out,
              "regimes_attention.json")


if __name__ == "__main__":
    main()
