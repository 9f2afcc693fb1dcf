"""tile_lab GEMM (fp16 operands, fp32 accumulate, fp16 out, 8192³) vs ``cupy.matmul``
(cuBLAS), in one run, with a few tile shapes of the plain (untuned) cuTile kernel."""

from __future__ import annotations

from gpu_common import parse_args, print_table, save


def main() -> None:
    opts = parse_args(__doc__)
    import cupy
    from gpu_kernels import gemm

    import tile_lab
    from tile_lab.gpu.benchmark import bench_function
    from tile_lab.gpu.metrics import matmul_flops

    size = 2048 if opts.quick else 8192
    m = n = k = size
    rng = cupy.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=cupy.float32).astype(cupy.float16)
    b = rng.standard_normal((k, n), dtype=cupy.float32).astype(cupy.float16)
    c = cupy.full((m, n), cupy.nan, dtype=cupy.float16)
    ref_out = cupy.empty((m, n), dtype=cupy.float16)
    flops = matmul_flops(m, n, k)
    nbytes = (m * k + k * n + m * n) * 2
    samples = max(5, opts.samples // 2)

    cublas = bench_function(lambda: cupy.matmul(a, b, out=ref_out), bytes=nbytes, flops=flops,
                            mode="cold", samples=samples, label="cupy.matmul (cuBLAS)")
    expected = ref_out.astype(cupy.float32)
    ours = []
    for tm, tn, tk in ((128, 128, 64), (128, 256, 64), (256, 128, 64), (128, 128, 32)):
        grid = (m // tm, n // tn)
        meas = tile_lab.bench(gemm, grid, (a, b, c, tm, tn, tk), mode="cold", samples=samples,
                              flops=flops, label=f"tile_lab gemm {tm}x{tn}x{tk}",
                              params={"tm": tm, "tn": tn, "tk": tk})
        err = float(cupy.linalg.norm(c.astype(cupy.float32) - expected)
                    / cupy.linalg.norm(expected))
        assert err < 1e-2, f"gemm {tm}x{tn}x{tk} relative error {err:.3g} vs cuBLAS"
        ours.append((meas, err))
    rows = [(mm.label.replace("tile_lab gemm ", "tile_lab "), mm,
             f"{cublas.mean_s / mm.mean_s:.3f}x cuBLAS (rel err {err:.1e})") for mm, err in ours]
    rows.append(("cupy.matmul (cuBLAS)", cublas,
                 f"{cublas.tflops / cublas.peak_tflops:.3f} of tensor peak"))
    print_table(f"GEMM fp16 {m}x{n}x{k} (fp32 accumulate)", rows)
    best = min((mm for mm, _ in ours), key=lambda x: x.mean_s)
    print(f"best tile_lab GEMM: {best.tflops:.0f} TFLOPS = {cublas.mean_s / best.mean_s:.3f}x "
          f"cuBLAS ({cublas.tflops:.0f} TFLOPS); tensor roof {best.peak_tflops:.0f} TFLOPS")
    save([mm for mm, _ in ours] + [cublas], opts.out, "gpu_gemm.json")


if __name__ == "__main__":
    main()
