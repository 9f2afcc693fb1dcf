"""fp16 GEMM (fp32 accumulate, 8192³) vs the strongest cuBLAS baseline, per regime.

The baseline is the faster of ``torch.matmul`` and ``cupy.matmul`` (both cuBLAS; picked by a
short interleaved race, named with its version in the output). Each kernel config is compared
with it by ``tile_lab.gpu.compare_timed``: ABBA rounds in the burst regime (the GPU recovered
before every group) and in the sustained regime (after a warm-up of continuous load), cold L2,
ratio = baseline time / ours (above 1 we are faster) with its 95% CI, and the SM clock and
power each side ran at. The configs are the best ones ``bench/tune_gemm.py`` found (pass
``--configs`` with a tune_gemm summary JSON to use another run's).

    python bench/gpu_gemm.py [--quick] [--out DIR] [--configs SUMMARY.json]
"""

from __future__ import annotations

import json

from gpu_common import (
    compare_options,
    comparison_rows,
    environment,
    parse_args,
    print_comparisons,
    save_json,
)

# the best configs of the last tune_gemm.py run (notebooks/data/tuning_gemm_8192_summary.json.gz)
CONFIGS = {
    "naive": {"TM": 128, "TN": 128, "TK": 64, "num_ctas": 1},
    "grouped": {"TM": 128, "TN": 128, "TK": 64, "GROUP": 8, "LAT": 4, "num_ctas": 1},
    "persistent": {"TM": 128, "TN": 128, "TK": 64, "GROUP": 8, "LAT": 4, "occupancy": 1,
                   "num_ctas": 1},
    # bench/KERNELS.md: 256x256 output tiles split over a 2-CTA cluster, 8 worker warps (the
    # 128x256 fp32 accumulator per CTA spills with the default 4), one block per SM pair
    "persistent_acc": {"TM": 256, "TN": 256, "TK": 64, "GROUP": 8, "LAT": 4, "ACC16": 0,
                       "occupancy": 1, "num_ctas": 2, "num_worker_warps": 8},
}


def kernel_args(variant, cfg, a, b, c, size):
    """(kernel with its hints, grid, args) of one config of one variant."""
    from gemm_kernels import gemm_grouped, gemm_naive, gemm_persistent, gemm_persistent_acc

    from tile_lab.gpu.device import device_info

    hints = {k: cfg[k] for k in ("num_ctas", "occupancy", "num_worker_warps") if k in cfg}
    tiles_m, tiles_n = -(-size // cfg["TM"]), -(-size // cfg["TN"])
    if variant == "naive":
        kernel, grid = gemm_naive, (tiles_m, tiles_n)
        consts = (cfg["TM"], cfg["TN"], cfg["TK"])
    else:
        kernel = {"persistent": gemm_persistent, "persistent_acc": gemm_persistent_acc}.get(
            variant, gemm_grouped)
        grid = (tiles_m * tiles_n,)
        if variant.startswith("persistent"):
            sms = device_info().sm_count
            grid = (min(tiles_m * tiles_n, sms * cfg.get("occupancy", 1) // cfg["num_ctas"]),)
        consts = (cfg["TM"], cfg["TN"], cfg["TK"], cfg["GROUP"], cfg["LAT"])
        if variant == "persistent_acc":
            consts = (*consts, cfg["ACC16"])
    return kernel.replace_hints(**hints) if hints else kernel, grid, (a, b, c, *consts)


def compare_configs(size: int, configs: dict, *, quick: bool = False):
    """Every config vs the strongest cuBLAS baseline, per regime: (rows, comparisons, the
    baseline's name and version)."""
    import cupy

    import tile_lab
    from tile_lab.gpu import baselines, compare_timed, kernel_work
    from tile_lab.gpu.device import device_info
    from tile_lab.gpu.metrics import matmul_flops
    from tile_lab.gpu.sampling import CudaEventTimer

    rng = cupy.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=cupy.float32).astype(cupy.float16)
    b = rng.standard_normal((size, size), dtype=cupy.float32).astype(cupy.float16)
    c = cupy.empty((size, size), cupy.float16)
    ref = cupy.empty((size, size), cupy.float16)
    flops = matmul_flops(size, size, size)
    stream = cupy.cuda.Stream(non_blocking=True)
    timer = CudaEventTimer(cupy, stream, l2_bytes=device_info().l2_bytes)
    base = baselines.fastest(baselines.gemm_candidates(a, b, ref), timer)
    print(f"GEMM baseline: {base.baseline}")
    cupy.matmul(a, b, out=ref)
    expected = ref.astype(cupy.float32)
    rows, comparisons = [], {}
    for variant, cfg in configs.items():
        kernel, grid, args = kernel_args(variant, cfg, a, b, c, size)
        tile_lab.launch(kernel, grid, args)
        err = float(cupy.linalg.norm(c.astype(cupy.float32) - expected)
                    / cupy.linalg.norm(expected))
        assert err < 1e-2, f"{variant} {cfg}: relative error {err:.3g} vs cuBLAS"
        ours = kernel_work(kernel, grid, args, name=f"gemm_{variant}")
        cmp = compare_timed(ours, base, compare_options(quick))
        comparisons[variant] = dict(config=cfg, comparison=cmp.to_json_dict())
        rows += comparison_rows(f"gemm_{variant}", cmp, ours_flops=flops)
    return rows, comparisons, base


def main() -> None:
    import argparse
    import sys

    extra = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    extra.add_argument("--configs", default=None)
    known, rest = extra.parse_known_args()
    sys.argv = [sys.argv[0], *rest]
    opts = parse_args(__doc__)
    configs = dict(CONFIGS)
    if known.configs:
        with open(known.configs, encoding="utf-8") as fh:
            summary = json.load(fh)
        for r in summary:
            if r.get("phase", "").startswith("tile_lab.tune/") and "best" in r:
                configs[r["phase"].split("/")[1]] = r["best"]
    size = 2048 if opts.quick else 8192
    rows, comparisons, base = compare_configs(size, configs, quick=opts.quick)
    print_comparisons(f"GEMM fp16 {size}³ (fp32 accumulate) vs {base.name}", rows)
    save_json(dict(env=environment(), size=size, baseline=base.baseline, rows=rows,
                   comparisons=comparisons), opts.out, "regimes_gemm.json")


if __name__ == "__main__":
    main()
