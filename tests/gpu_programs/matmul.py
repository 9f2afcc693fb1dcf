"""A float16 GEMM with float32 accumulation: a grouped (swizzled) grid and a persistent one
sized from the SM count, checked against torch.matmul and timed in TFLOPS."""

import argparse

import cuda.tile as ct
import torch
from gpu_timing import time_ms

GROUP_M = 8


def tile_of(bid, M, N, tm: ct.Constant[int], tn: ct.Constant[int]):
    """Output tile (row, column) of block ``bid``, GROUP_M rows of tiles at a time."""
    tiles_n = ct.cdiv(N, tn)
    per_group = GROUP_M * tiles_n
    first_m = (bid // per_group) * GROUP_M
    rows_here = min(ct.cdiv(M, tm) - first_m, GROUP_M)
    return first_m + (bid % rows_here), (bid % per_group) // rows_here


@ct.kernel
def matmul(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bm, bn = tile_of(ct.bid(0), A.shape[0], B.shape[1], tm, tn)
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bm, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, bn), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


@ct.kernel
def matmul_persistent(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int],
                      tk: ct.Constant[int]):
    M, N = A.shape[0], B.shape[1]
    tiles = ct.cdiv(M, tm) * ct.cdiv(N, tn)
    for bid in range(ct.bid(0), tiles, ct.num_blocks(0)):
        bm, bn = tile_of(bid, M, N, tm, tn)
        acc = ct.full((tm, tn), 0, dtype=ct.float32)
        for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
            a = ct.load(A, index=(bm, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
            b = ct.load(B, index=(k, bn), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(a, b, acc)
        ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


def run(kernel, A, B, C, tiles=(128, 128, 64), persistent=False):
    tm, tn, tk = tiles
    blocks = ct.cdiv(A.shape[0], tm) * ct.cdiv(B.shape[1], tn)
    if persistent:
        blocks = min(blocks, torch.cuda.get_device_properties(A.device).multi_processor_count)
    ct.launch(torch.cuda.current_stream(), (blocks,), kernel, (A, B, C, tm, tn, tk))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=512)
    parser.add_argument("--n", type=int, default=384)
    parser.add_argument("--k", type=int, default=320)
    opts = parser.parse_args()
    major, minor = torch.cuda.get_device_capability()
    print(f"{torch.cuda.get_device_name()} (sm_{major}{minor})")
    torch.manual_seed(0)
    A = torch.randn(opts.m, opts.k, dtype=torch.float16).cuda()
    B = torch.randn(opts.k, opts.n, dtype=torch.float16).to("cuda")
    expected = (A.float() @ B.float()).half()
    for name, kernel, persistent in (("matmul", matmul, False),
                                     ("matmul_persistent", matmul_persistent, True)):
        C = torch.zeros(opts.m, opts.n, dtype=torch.float16, device="cuda")
        run(kernel, A, B, C, persistent=persistent)
        torch.cuda.synchronize()
        torch.testing.assert_close(C, expected, atol=1e-2, rtol=1e-2)
        ms = time_ms(run, kernel, A, B, C, (128, 128, 64), persistent, iters=2)
        tflops = 2 * opts.m * opts.n * opts.k / (ms * 1e-3) / 1e12
        print(f"{name} {opts.m}x{opts.n}x{opts.k}: {ms:.3f} ms, {tflops:.3g} TFLOPS")


if __name__ == "__main__":
    main()
