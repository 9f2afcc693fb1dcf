"""fp16 GEMM kernels for the GPU benchmarks. The tutorial's three (``gemm_naive``,
``gemm_grouped``, ``gemm_persistent``) and their helpers live in ``tile_lab.examples.gemm``,
shared with the notebooks; this module re-exports them under the benchmarks' import name and
adds the benchmark-only variants.

``gemm_persistent_acc`` / ``gemm_grouped_acc`` add two knobs (latency left to the compiler,
fp16 accumulator). On an H100, ``gemm_persistent_acc`` with 256x256x64 tiles, GROUP 8, LAT 4,
hints ``num_ctas=2, num_worker_warps=8, occupancy=1`` and a grid of SMs/2 blocks ran at
1.013x (rested) and 1.026x (power-capped) the faster of torch/cupy matmul at 8192³ fp16; a
128x256 fp32 accumulator needs ``num_worker_warps=8`` or it spills (see KERNELS.md)."""

import cuda.tile as ct

from tile_lab.examples.gemm import gemm_grouped, gemm_naive, gemm_persistent, grouped_tile, k_loop
from tile_lab.examples.gemm_schedules import (
    gemm_dp_streamk,
    gemm_splitk_wide,
    gemm_splitk_ws,
    gemm_streamk,
    gemm_streamk_wide,
    streamk_fixup,
)

__all__ = ["gemm_dp_streamk", "gemm_grouped", "gemm_grouped_acc", "gemm_naive", "gemm_persistent",
           "gemm_persistent_acc", "gemm_splitk", "gemm_splitk_wide", "gemm_splitk_ws",
           "gemm_streamk", "gemm_streamk_wide",
           "grouped_tile", "k_loop", "k_loop_acc", "streamk_fixup"]


def k_loop_acc(A, B, bm, bn, TM, TN, TK, LAT, acc_dtype):
    # k_loop with the accumulator type as a parameter (fp16 halves the accumulator's registers;
    # LAT <= 0 leaves the load latency to the compiler).
    acc = ct.full((TM, TN), 0, dtype=acc_dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        if LAT > 0:
            a = ct.load(A, index=(bm, k), shape=(TM, TK), latency=LAT)
            b = ct.load(B, index=(k, bn), shape=(TK, TN), latency=LAT)
        else:
            a = ct.load(A, index=(bm, k), shape=(TM, TK))
            b = ct.load(B, index=(k, bn), shape=(TK, TN))
        acc = ct.mma(a, b, acc)
    return acc


@ct.kernel
def gemm_persistent_acc(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int],
                        TK: ct.Constant[int], GROUP: ct.Constant[int], LAT: ct.Constant[int],
                        ACC16: ct.Constant[int]):
    # gemm_persistent with two more knobs: LAT=0 (compiler-inferred latency) and ACC16=1
    # (fp16 accumulator: not like-for-like with cuBLAS's fp32 accumulation; reported apart).
    num_m = ct.cdiv(A.shape[0], TM)
    num_n = ct.cdiv(B.shape[1], TN)
    for tile in range(ct.bid(0), num_m * num_n, ct.num_blocks(0)):
        bm, bn = grouped_tile(tile, num_m, num_n, GROUP)
        if ACC16 > 0:
            acc = k_loop_acc(A, B, bm, bn, TM, TN, TK, LAT, ct.float16)
        else:
            acc = k_loop_acc(A, B, bm, bn, TM, TN, TK, LAT, ct.float32)
        ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


@ct.kernel
def gemm_grouped_acc(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                     GROUP: ct.Constant[int], LAT: ct.Constant[int], ACC16: ct.Constant[int]):
    # gemm_grouped (one block per output tile, 1-D grid) with the gemm_persistent_acc knobs.
    bm, bn = grouped_tile(ct.bid(0), ct.cdiv(A.shape[0], TM), ct.cdiv(B.shape[1], TN), GROUP)
    if ACC16 > 0:
        acc = k_loop_acc(A, B, bm, bn, TM, TN, TK, LAT, ct.float16)
    else:
        acc = k_loop_acc(A, B, bm, bn, TM, TN, TK, LAT, ct.float32)
    ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


@ct.kernel
def gemm_splitk(A, B, C, W, ARRIVED, TM: ct.Constant[int], TN: ct.Constant[int],
                TK: ct.Constant[int], GROUP: ct.Constant[int], LAT: ct.Constant[int],
                SPLIT: ct.Constant[int]):
    # The persistent grouped GEMM with the K loop of each output tile cut into SPLIT slices:
    # work unit u is slice u % SPLIT of tile u // SPLIT, so a shape with few output tiles
    # (tall-skinny M, or K much longer than M and N) still fills every SM. SPLIT=1 is
    # gemm_persistent_acc (fp32 accumulator, zero padding for a ragged K). With SPLIT > 1 each
    # slice adds its fp32 partial into the workspace W (M x N float32, zero between launches)
    # and counts itself in ARRIVED[tile] (int32, zero between launches); the slice that
    # arrives last takes the sum out of W with an atomic exchange against zeros (leaving W
    # zeroed for the next launch), stores it to C and resets the counter: one launch, no
    # separate reduction or memset kernel.
    num_m = ct.cdiv(A.shape[0], TM)
    num_n = ct.cdiv(B.shape[1], TN)
    k_tiles = ct.num_tiles(A, axis=1, shape=(TM, TK))
    per_slice = ct.cdiv(k_tiles, SPLIT)
    for unit in range(ct.bid(0), num_m * num_n * SPLIT, ct.num_blocks(0)):
        tile = unit // SPLIT
        bm, bn = grouped_tile(tile, num_m, num_n, GROUP)
        first = (unit % SPLIT) * per_slice
        acc = ct.full((TM, TN), 0, dtype=ct.float32)
        for k in range(first, ct.minimum(first + per_slice, k_tiles)):
            if LAT > 0:
                a = ct.load(A, index=(bm, k), shape=(TM, TK), latency=LAT,
                            padding_mode=ct.PaddingMode.ZERO)
                b = ct.load(B, index=(k, bn), shape=(TK, TN), latency=LAT,
                            padding_mode=ct.PaddingMode.ZERO)
            else:
                a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
                b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(a, b, acc)
        if SPLIT == 1:
            ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))
        else:
            rows = bm * TM + ct.arange(TM, dtype=ct.int32).reshape((TM, 1))
            cols = bn * TN + ct.arange(TN, dtype=ct.int32).reshape((1, TN))
            ct.atomic_add(W, (rows, cols), acc, memory_order=ct.MemoryOrder.RELAXED)
            # acq_rel: this slice's partial is visible before its arrival counts, and the last
            # slice sees every partial after reading the count
            if ct.atomic_add(ARRIVED, tile, 1) == SPLIT - 1:
                total = ct.atomic_xchg(W, (rows, cols), ct.full((TM, TN), 0.0, ct.float32))
                ct.store(C, index=(bm, bn), tile=total.astype(C.dtype))
                ct.atomic_xchg(ARRIVED, tile, 0)
