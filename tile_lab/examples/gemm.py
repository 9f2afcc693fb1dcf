"""fp16 GEMM kernels for the tuning benchmark: the tutorial's naive K-loop, a grouped
(L2-friendly) tile order with per-load latency hints, and a persistent grouped kernel — the
variants a performance engineer would try when the naive kernel falls short of cuBLAS. The
grouped ones share two helper functions (cuTile inlines them into each kernel)."""

import cuda.tile as ct


@ct.kernel
def gemm_naive(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bx, k), shape=(TM, TK))
        b = ct.load(B, index=(k, by), shape=(TK, TN))
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))


def grouped_tile(tile, num_m, num_n, GROUP):
    # Output tiles walked in groups of GROUP tile-rows: consecutive tiles share B's column
    # panels and a few A row panels, so they hit in L2 instead of re-reading DRAM.
    per_group = GROUP * num_n
    first_m = (tile // per_group) * GROUP
    rows = ct.minimum(num_m - first_m, GROUP)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


def k_loop(A, B, bm, bn, TM, TN, TK, LAT):
    # One output tile's sum over K, with the per-load latency hint LAT.
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK), latency=LAT)
        b = ct.load(B, index=(k, bn), shape=(TK, TN), latency=LAT)
        acc = ct.mma(a, b, acc)
    return acc


@ct.kernel
def gemm_grouped(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                 GROUP: ct.Constant[int], LAT: ct.Constant[int]):
    # A 1-D grid: block i computes the i-th output tile in the grouped order.
    bm, bn = grouped_tile(ct.bid(0), ct.cdiv(A.shape[0], TM), ct.cdiv(B.shape[1], TN), GROUP)
    acc = k_loop(A, B, bm, bn, TM, TN, TK, LAT)
    ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


@ct.kernel
def gemm_persistent(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                    GROUP: ct.Constant[int], LAT: ct.Constant[int]):
    # One block per SM (times occupancy) walks the output tiles in the grouped order, so the
    # grid never has a partial last wave of launches and each block's setup is paid once.
    num_m = ct.cdiv(A.shape[0], TM)
    num_n = ct.cdiv(B.shape[1], TN)
    for tile in range(ct.bid(0), num_m * num_n, ct.num_blocks(0)):
        bm, bn = grouped_tile(tile, num_m, num_n, GROUP)
        acc = k_loop(A, B, bm, bn, TM, TN, TK, LAT)
        ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))
