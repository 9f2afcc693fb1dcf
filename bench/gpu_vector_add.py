"""tile_lab vector add vs CuPy ``a + b`` vs the theoretical DRAM bandwidth, in one run.

Also: a tile-size sweep (for the notebooks' bar/line charts) and the host overhead of
``tile_lab.launch`` over a bare ``ct.launch`` (target: <= 5 µs per launch).
"""

from __future__ import annotations

import time

from gpu_common import parse_args, print_table, save


def launch_overhead_us(cupy, ct, kernel, x) -> tuple[float, float]:
    """Host µs per call of ct.launch and of tile_lab.launch on a 1-block kernel."""
    import tile_lab

    stream = cupy.cuda.get_current_stream()
    args = (x, x, x, 256)
    n = 500  # fewer than the launch queue holds, so the host never waits for the GPU

    def per_call(fn) -> float:
        for _ in range(200):
            fn()
        stream.synchronize()
        best = float("inf")
        for _ in range(10):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best = min(best, (time.perf_counter() - t0) / n * 1e6)
            stream.synchronize()
        return best

    bare = per_call(lambda: ct.launch(stream, (1,), kernel, args))
    ours = per_call(lambda: tile_lab.launch(kernel, (1,), args))
    return bare, ours


def main() -> None:
    opts = parse_args(__doc__)
    import cuda.tile as ct
    import cupy
    from gpu_kernels import vector_add

    import tile_lab
    from tile_lab.gpu.benchmark import bench_function

    n = 1 << (24 if opts.quick else 28)  # 2^28 float32: 1 GiB per array
    rng = cupy.random.default_rng(0)
    a = rng.standard_normal(n, dtype=cupy.float32)
    b = rng.standard_normal(n, dtype=cupy.float32)
    c = cupy.full(n, cupy.nan, dtype=cupy.float32)
    nbytes = 3 * n * 4

    results, rows = [], []
    sweep = []
    for tile in (256, 512, 1024, 2048, 4096):
        m = tile_lab.bench(vector_add, (n // tile,), (a, b, c, tile), mode="cold",
                           samples=opts.samples, flops=n, label=f"tile_lab vector_add tile={tile}",
                           params={"tile": tile})
        assert bool(cupy.array_equal(c, a + b)), "vector_add result is wrong"
        sweep.append(m)
    best = min(sweep, key=lambda m: m.mean_s)
    ref = bench_function(lambda: cupy.add(a, b, out=c), bytes=nbytes, flops=n, mode="cold",
                         samples=opts.samples, label="cupy a + b")
    warm = tile_lab.bench(vector_add, (n // best.params["tile"],), (a, b, c, best.params["tile"]),
                          mode="graph", samples=opts.samples // 2 or 1, flops=n,
                          label=f"tile_lab vector_add tile={best.params['tile']}",
                          params=best.params)
    results += [*sweep, ref, warm]
    for m in sweep:
        rows.append((m.label.replace("tile_lab vector_add ", "tile_lab "), m,
                     f"{ref.mean_s / m.mean_s:.3f}x cupy, {m.gbps / m.peak_gbps:.3f} of peak"))
    rows.append(("cupy a + b", ref, f"{ref.gbps / ref.peak_gbps:.3f} of peak"))
    rows.append((f"tile_lab tile={best.params['tile']} (graph)", warm,
                 f"{ref.mean_s / warm.mean_s:.3f}x cupy cold"))
    print_table(f"vector add, float32, 3 x {n * 4 >> 20} MiB", rows)
    print(f"theoretical DRAM peak: {best.peak_gbps:.0f} GB/s; best tile_lab: "
          f"{best.gbps:.0f} GB/s = {best.gbps / best.peak_gbps:.3f} of peak, "
          f"{ref.mean_s / best.mean_s:.3f}x CuPy")
    tile = best.params["tile"]
    tuned = ct.tune.exhaustive_search([tile], cupy.cuda.get_current_stream(),
                                      lambda t: (n // t,), vector_add, lambda t: (a, b, c, t),
                                      quiet=True).best
    print(f"cold mean, tile={tile}: tile_lab {best.mean_us:.1f} ± {best.ci95_us:.1f} µs, "
          f"ct.tune.exhaustive_search {tuned.mean_us:.1f} ± {tuned.error_margin_us:.1f} µs "
          f"(ratio {best.mean_us / tuned.mean_us:.3f})")
    bare, ours = launch_overhead_us(cupy, ct, vector_add, a[:256])
    print(f"host time per launch: ct.launch {bare:.2f} µs, tile_lab.launch {ours:.2f} µs "
          f"(overhead {ours - bare:+.2f} µs)")
    save(results, opts.out, "gpu_vector_add.json")


if __name__ == "__main__":
    main()
