"""Vector add vs the measured copy roof, per regime; and the host overhead of tile_lab.launch.

The roof a streaming kernel can reach is what a device-to-device copy of the same number of
bytes reaches (``cudaMemcpyAsync``), measured here, beside the spec peak. The table row is
``compare_timed(vector add, copy of the same bytes)``: in each regime the ratio (copy time /
ours) *is* the fraction of the measured roof we reach (goal >= 0.92). "Ours" is the fastest of a
few tile sizes of ``gpu_kernels.vector_add`` (and of ``norm_kernels.vector_add_tuned`` when that
module is present), picked by a short interleaved race; CuPy's ``a + b`` is timed beside it.

    python bench/gpu_vector_add.py [--quick] [--out DIR]
"""

from __future__ import annotations

import time

from gpu_common import (
    compare_options,
    comparison_rows,
    environment,
    parse_args,
    print_comparisons,
    save_json,
)


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


def candidates(a, b, c, n):
    from gpu_kernels import vector_add

    from tile_lab.gpu import kernel_work

    out = [kernel_work(vector_add, (n // t,), (a, b, c, t), name=f"vector_add tile={t}")
           for t in (1024, 2048, 4096)]
    try:
        import norm_kernels as nk
    except ImportError:
        return out
    for tile in (2048, 4096, 8192):
        for tma in (0, 1):
            out.append(kernel_work(nk.vector_add_tuned, (n // tile,), (a, b, c, tile, 0, tma),
                                   name=f"vector_add_tuned tile={tile} TMA={tma}"))
    return out


def main() -> None:
    opts = parse_args(__doc__)
    import cuda.tile as ct
    import cupy
    from gpu_kernels import vector_add

    import tile_lab
    from tile_lab.gpu import TimedWork, baselines, bench_work, compare_timed
    from tile_lab.gpu.device import device_info
    from tile_lab.gpu.options import TimingOptions
    from tile_lab.gpu.sampling import CudaEventTimer

    n = 1 << (24 if opts.quick else 28)  # 2^28 float32: 1 GiB per array
    rng = cupy.random.default_rng(0)
    a = rng.standard_normal(n, dtype=cupy.float32)
    b = rng.standard_normal(n, dtype=cupy.float32)
    c = cupy.full(n, cupy.nan, dtype=cupy.float32)
    nbytes = 3 * n * 4
    works = []
    for w in candidates(a, b, c, n):
        c.fill(cupy.nan)
        try:
            tile_lab.launch(w.kernel, w.grid, w.args)
        except Exception as e:  # a config that does not compile is left out, named
            print(f"{w.name}: {type(e).__name__}: {str(e)[:120]}")
            continue
        if bool(cupy.array_equal(c, a + b)):
            works.append(w)
        else:
            print(f"{w.name}: wrong result, left out")
    stream = cupy.cuda.Stream(non_blocking=True)
    ours = baselines.fastest(works, CudaEventTimer(cupy, stream,
                                                    l2_bytes=device_info().l2_bytes))
    copy = baselines.copy_roof(nbytes // 2)  # reads and writes nbytes // 2: the same traffic
    c_roof = compare_timed(ours, copy, compare_options(opts.quick))
    rows = comparison_rows(f"{ours.name} vs copy", c_roof, ours_bytes=nbytes)
    cupy_add = bench_work(TimedWork("cupy a + b", lambda: cupy.add(a, b, out=c), bytes=nbytes,
                                    baseline=baselines.cupy_version()),
                          timing=TimingOptions(samples=20))
    roof = bench_work(copy, timing=TimingOptions(samples=20))
    print_comparisons(f"vector add, float32, 3 x {n * 4 >> 20} MiB: fraction of the copy roof",
                      rows)
    print(f"copy roof {roof.gbps:.0f} GB/s (spec peak {roof.peak_gbps:.0f} GB/s, "
          f"{roof.gbps / roof.peak_gbps:.3f} of spec); cupy a + b {cupy_add.gbps:.0f} GB/s "
          f"= {cupy_add.gbps / roof.gbps:.3f} of the copy roof (burst)")
    bare, mine = launch_overhead_us(cupy, ct, vector_add, a[:256])
    print(f"host time per launch: ct.launch {bare:.2f} µs, tile_lab.launch {mine:.2f} µs "
          f"(overhead {mine - bare:+.2f} µs)")
    save_json(dict(env=environment(), rows=rows, comparison=c_roof.to_json_dict(),
                   copy_roof=roof.to_json_dict(), cupy_add=cupy_add.to_json_dict(),
                   launch_us=dict(ct_launch=bare, tile_lab_launch=mine)),
              opts.out, "regimes_vector_add.json")


if __name__ == "__main__":
    main()
