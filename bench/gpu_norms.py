"""Row softmax, LayerNorm and RMSNorm (float32, rows of the last axis) vs torch, per regime.

Each row of the table is ``tile_lab.gpu.compare_timed(ours, torch)``: interleaved ABBA rounds
in the *burst* regime (the GPU recovered before every group) and the *sustained* regime
(after a warm-up of continuous load), cold L2 before every sample, with the ratio (torch's time
/ ours: above 1 we are faster) and its bootstrap 95% CI, the SM clock and board power each side
ran at, and our bandwidth next to the measured device-to-device copy roof.

"Ours" is the tuned kernel of ``norm_kernels.py`` when that module is present (the fastest of
a few configs, picked by a short interleaved race) and the tutorial kernel of
``gpu_kernels.py`` otherwise (which has no RMSNorm: that row then times torch alone).

    python bench/gpu_norms.py [--quick] [--out DIR]

Writes ``regimes_norms.json.gz`` (gzipped JSON, as notebooks/data keeps it) to --out.
"""

from __future__ import annotations

from gpu_common import (
    compare_options,
    comparison_rows,
    environment,
    parse_args,
    print_comparisons,
    save_json,
)

SHAPES = ((4096, 4096), (8192, 8192), (32768, 4096))


def candidates(kind, x, w, b, y, eps):
    """(name, kernel, grid, args) of our kernel(s) for ``kind`` on these arrays."""
    rows, n = x.shape
    tile_n = 1 << (n - 1).bit_length()
    try:
        import norm_kernels as nk
    except ImportError:
        nk = None
    if nk is None:
        from gpu_kernels import layernorm_rows, softmax_rows

        if kind == "softmax":
            return [("softmax_rows (tutorial)", softmax_rows, (rows,), (x, y, tile_n))]
        if kind == "layernorm":
            return [("layernorm_rows (tutorial)", layernorm_rows, (rows,),
                     (x, w, b, y, eps, n, tile_n))]
        return []
    from tile_lab.gpu.device import device_info

    sms = device_info().sm_count
    args = {"softmax": (x, y), "layernorm": (x, w, b, y, eps, n), "rmsnorm": (x, w, y, eps, n)}
    out = []
    for per in (1, 2):
        if per * tile_n > 16384 or rows % per:
            continue
        for tma in (0, 1):
            consts = (per, tile_n, 0, tma)
            out.append((f"{kind}_block ROWS={per} TMA={tma}", getattr(nk, f"{kind}_block"),
                        (rows // per,), (*args[kind], *consts)))
            # the grid-stride kernels: SMs x occupancy blocks, weights loaded once per block
            for occ in (1, 2):
                kernel = getattr(nk, f"{kind}_persistent").replace_hints(occupancy=occ)
                out.append((f"{kind}_persistent ROWS={per} TMA={tma} occupancy={occ}", kernel,
                            (min(rows // per, sms * occ),), (*args[kind], *consts)))
    return out


def reference(kind, torch, tx, tw, tb, eps):
    n = tx.shape[1]
    if kind == "softmax":
        return torch.softmax(tx, -1)
    if kind == "layernorm":
        return torch.nn.functional.layer_norm(tx, (n,), tw, tb, eps)
    return torch.nn.functional.rms_norm(tx, (n,), tw, eps)


def main() -> None:
    opts = parse_args(__doc__)
    import cupy
    import torch

    import tile_lab
    from tile_lab.gpu import baselines, bench_work, compare_timed, kernel_work
    from tile_lab.gpu.baselines import fastest
    from tile_lab.gpu.device import device_info
    from tile_lab.gpu.options import TimingOptions
    from tile_lab.gpu.sampling import CudaEventTimer

    cmp_opts = compare_options(opts.quick)
    shapes = SHAPES[:1] if opts.quick else SHAPES
    stream = cupy.cuda.Stream(non_blocking=True)
    race_timer = CudaEventTimer(cupy, stream, l2_bytes=device_info().l2_bytes)
    rows, roofs = [], []
    eps = 1e-5
    for shape in shapes:
        rng = cupy.random.default_rng(0)
        x = rng.standard_normal(shape, dtype=cupy.float32)
        w = rng.standard_normal(shape[1], dtype=cupy.float32)
        b = rng.standard_normal(shape[1], dtype=cupy.float32)
        y = cupy.empty_like(x)
        tx, tw, tb = (torch.from_dlpack(v) for v in (x, w, b))
        nbytes = 2 * x.nbytes
        roof = bench_work(baselines.copy_roof(x.nbytes), timing=TimingOptions(samples=20))
        roofs.append(dict(shape=shape, copy_gbps=roof.gbps, spec_gbps=roof.peak_gbps,
                          copy_sm_mhz=roof.sm_mhz))
        print(f"{shape}: device-to-device copy {roof.gbps:.0f} GB/s (spec {roof.peak_gbps:.0f})")
        for kind in ("softmax", "layernorm", "rmsnorm"):
            if kind == "softmax":
                base = baselines.softmax(x)
            elif kind == "layernorm":
                base = baselines.layer_norm(x, w, b, eps)
            else:
                base = baselines.rms_norm(x, w, eps)
            want = reference(kind, torch, tx, tw, tb, eps)
            works = []
            for name, kernel, grid, args in candidates(kind, x, w, b, y, eps):
                try:
                    tile_lab.launch(kernel, grid, args)
                    cupy.cuda.get_current_stream().synchronize()
                    err = float((torch.from_dlpack(y) - want).abs().max())
                except Exception as e:  # a config that does not compile is left out, named
                    print(f"  {name}: {type(e).__name__}: {str(e)[:120]}")
                    continue
                if err > 1e-3:
                    print(f"  {name}: wrong result (max abs err {err:.3g}); left out")
                    continue
                works.append(kernel_work(kernel, grid, args, name=name))
            label = f"{kind} {shape[0]}x{shape[1]}"
            if not works:
                m = bench_work(base, timing=TimingOptions(samples=20))
                print(f"  {label}: no tile_lab kernel; torch alone {m.gbps:.0f} GB/s = "
                      f"{m.gbps / roof.gbps:.3f} of the copy roof at SM {m.sm_mhz} MHz")
                rows.append(dict(row=label, regime="burst", baseline=base.name,
                                 baseline_version=base.baseline, ours=None,
                                 baseline_gbps=m.gbps, baseline_sm_mhz=m.sm_mhz))
                continue
            ours = fastest(works, race_timer) if len(works) > 1 else works[0]
            c = compare_timed(ours, base, cmp_opts)
            for r in comparison_rows(label, c, ours_bytes=nbytes):
                r["of_copy_roof"] = r["ours_gbps"] / roof.gbps
                r["baseline_gbps"] = nbytes / r["baseline_median_s"] / 1e9
                rows.append(r)
    compared = [r for r in rows if r.get("ours")]
    print_comparisons("softmax / LayerNorm / RMSNorm, float32, vs torch", compared)
    for r in compared:
        print(f"  {r['row']:24} {r['regime']:9} ours {r['ours_gbps']:.0f} GB/s = "
              f"{r['of_copy_roof']:.3f} of copy roof; torch {r['baseline_gbps']:.0f} GB/s")
    save_json(dict(env=environment(), roofs=roofs, rows=rows), opts.out, "regimes_norms.json.gz")


if __name__ == "__main__":
    main()
