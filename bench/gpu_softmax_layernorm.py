"""Row softmax and LayerNorm (one row per block) vs their CuPy equivalents, in one run."""

from __future__ import annotations

from gpu_common import parse_args, print_table, save


def main() -> None:
    opts = parse_args(__doc__)
    import cupy
    from gpu_kernels import layernorm_rows, softmax_rows

    import tile_lab
    from tile_lab.gpu.benchmark import bench_function

    rows_n, cols = (2048, 4096) if opts.quick else (32768, 4096)  # 512 MiB float32 input
    rng = cupy.random.default_rng(0)
    x = rng.standard_normal((rows_n, cols), dtype=cupy.float32)
    y = cupy.full_like(x, cupy.nan)
    w = rng.standard_normal(cols, dtype=cupy.float32)
    bias = rng.standard_normal(cols, dtype=cupy.float32)
    out = cupy.empty_like(x)
    nbytes = 2 * x.nbytes  # read x once, write y once
    eps = 1e-5

    def cupy_softmax():
        e = cupy.exp(x - x.max(axis=1, keepdims=True))
        cupy.divide(e, e.sum(axis=1, keepdims=True), out=out)

    def cupy_layernorm():
        mean = x.mean(axis=1, keepdims=True)
        var = x.var(axis=1, keepdims=True)
        cupy.add((x - mean) / cupy.sqrt(var + eps) * w, bias, out=out)

    results, table = [], []
    sm = tile_lab.bench(softmax_rows, (rows_n,), (x, y, cols), bytes=nbytes, mode="cold",
                        samples=opts.samples, label="tile_lab softmax")
    cupy_softmax()
    sm_err = float(cupy.abs(y - out).max())
    sm_ref = bench_function(cupy_softmax, bytes=nbytes, mode="cold", samples=opts.samples,
                            label="cupy softmax")
    ln = tile_lab.bench(layernorm_rows, (rows_n,), (x, w, bias, y, eps, cols, cols),
                        bytes=nbytes + 2 * w.nbytes, mode="cold", samples=opts.samples,
                        label="tile_lab layernorm")
    cupy_layernorm()
    ln_err = float(cupy.abs(y - out).max())
    ln_ref = bench_function(cupy_layernorm, bytes=nbytes + 2 * w.nbytes, mode="cold",
                            samples=opts.samples, label="cupy layernorm")
    assert sm_err < 1e-5 and ln_err < 1e-3, (sm_err, ln_err)
    results += [sm, sm_ref, ln, ln_ref]
    table.append(("tile_lab softmax", sm, f"{sm_ref.mean_s / sm.mean_s:.3f}x cupy "
                  f"(max abs err {sm_err:.1e})"))
    table.append(("cupy softmax", sm_ref, f"{sm_ref.gbps / sm_ref.peak_gbps:.3f} of peak"))
    table.append(("tile_lab layernorm", ln, f"{ln_ref.mean_s / ln.mean_s:.3f}x cupy "
                  f"(max abs err {ln_err:.1e})"))
    table.append(("cupy layernorm", ln_ref, f"{ln_ref.gbps / ln_ref.peak_gbps:.3f} of peak"))
    print_table(f"softmax / layernorm, float32 {rows_n}x{cols}", table)
    save(results, opts.out, "gpu_softmax_layernorm.json")


if __name__ == "__main__":
    main()
