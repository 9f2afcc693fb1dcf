"""Seeded-bug corpus: valid cuTile kernels (they compile) with one memory bug each.

Every case documents its bug (``bug=``) and the sanitizer findings it must produce
(``expect=``: kind, argument, and a snippet of the source line reported).
"""

from __future__ import annotations

import cuda.tile as ct
import numpy as np

from . import Case, Expect, cdiv

ZERO = ct.PaddingMode.ZERO


def _vec_args(rng, n=1024, tile=128):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return (a, b, np.zeros(n, np.float32), tile)


# 1. one block too many: its tiles lie entirely past the end of every array

@ct.kernel
def extra_block(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, (bid,), (TILE,))  # load a
    y = ct.load(b, (bid,), (TILE,))  # load b
    ct.store(c, (bid,), x + y)


# 2. two blocks per tile (grid y = 2, never used): both blocks store the same tile

@ct.kernel
def duplicated_blocks(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, (bid,), (TILE,))
    y = ct.load(b, (bid,), (TILE,))
    ct.store(c, (bid,), x + y)


# 3. grid = n // TILE instead of cdiv(n, TILE): the ragged tail is never written

@ct.kernel
def missing_tail(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, (bid,), ct.load(a, (bid,), (TILE,)) + ct.load(b, (bid,), (TILE,)))


# 4. K-loop loads A at k + 1: the last iteration's A tile is entirely outside A

@ct.kernel
def gemm_shifted_k(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (bm, k + 1), (TM, TK), padding_mode=ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc)


def _gemm_args(rng, m=64, n=64, k=64):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return (a, b, np.zeros((m, n), np.float32), 32, 32, 16)


# 5. gather with check_bounds=False on a ragged size: the last block reads past the end

@ct.kernel
def unchecked_gather(a, c, TILE: ct.Constant[int]):
    idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    x = ct.gather(a, idx, check_bounds=False)
    ct.scatter(c, idx, x * 2.0)


# 6. histogram with scatter instead of atomic_add: colliding bins within and across blocks

@ct.kernel
def histogram_scatter(data, bins, TILE: ct.Constant[int]):
    values = ct.load(data, (ct.bid(0),), (TILE,))
    counts = ct.gather(bins, values)
    ct.scatter(bins, values, counts + 1)


def _histogram_args(rng, n=512, nbins=16):
    return (rng.integers(0, nbins, n).astype(np.int32), np.zeros(nbins, np.int32), 128)


# 7. a "carry" read from the previous block's output: depends on block order

@ct.kernel
def carry_from_previous(a, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, (bid,), (TILE,))
    ct.store(c, (bid,), x)
    if bid > 0:
        carry = ct.load(c, (bid - 1,), (TILE,))
        ct.store(c, (bid,), x + ct.sum(carry))


# 8. in-place shift left: block i reads tile i + 1, which block i + 1 overwrites

@ct.kernel
def inplace_shift(x, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    idx = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    shifted = ct.gather(x, idx + 1)
    ct.scatter(x, idx, shifted)


# 9. off-by-one tile index: stores to tile bid + 1 (last one outside, tile 0 never written)

@ct.kernel
def store_off_by_one(a, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, (bid,), (TILE,))
    ct.store(c, (bid + 1,), x)


# 10. wrong grid axis: launched with grid (1, n_tiles) but indexes with bid(0)

@ct.kernel
def wrong_axis(a, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, (bid,), ct.load(a, (bid,), (TILE,)) * 2.0)


# 11. stencil over overlapping windows (1-element halo) that stores the halo ring too

@ct.kernel
def stencil_writes_halo(X, Y, T: ct.Constant[int]):
    # window i starts at i * (T - 2) - 1, so neighbouring windows overlap by two rows/cols
    r0 = ct.bid(0) * (T - 2) - 1
    c0 = ct.bid(1) * (T - 2) - 1
    rows = (r0 + ct.arange(T, dtype=ct.int32)).reshape((T, 1))
    cols = (c0 + ct.arange(T, dtype=ct.int32)).reshape((1, T))
    x = ct.gather(X, (rows, cols))
    out = 4.0 * x - ct.gather(X, (rows - 1, cols)) - ct.gather(X, (rows + 1, cols)) \
        - ct.gather(X, (rows, cols - 1)) - ct.gather(X, (rows, cols + 1))
    ct.scatter(Y, (rows, cols), out)  # should mask out the halo ring


def _stencil_args(rng, m=62, n=46):
    return (rng.standard_normal((m, n)).astype(np.float32), np.zeros((m, n), np.float32), 16)


# 12. halo from neighbour *tiles*: for block 0 the tile above has index -1 (entirely outside)

@ct.kernel
def stencil_tile_halo(X, Y, T: ct.Constant[int]):
    bm = ct.bid(0)
    center = ct.load(X, (bm, 0), (T, T), padding_mode=ZERO)
    above = ct.load(X, (bm - 1, 0), (T, T), padding_mode=ZERO)
    ct.store(Y, (bm, 0), center - above)


# 13. cross-block sum with load + store instead of atomic_add

@ct.kernel
def plain_accumulate(X, Out, TILE: ct.Constant[int]):
    s = ct.sum(ct.load(X, (ct.bid(0),), (TILE,), padding_mode=ZERO))
    total = ct.load(Out, (0,), (1,)) + s
    ct.store(Out, (0,), total)


# 14. LayerNorm-backward style partial dW without the lock: rows of a group race

@ct.kernel
def unlocked_partial_sums(DY, DWp, TN: ct.Constant[int]):
    row = ct.bid(0)
    group = row % DWp.shape[0]
    dy = ct.load(DY, (row, 0), (1, TN), padding_mode=ZERO)
    dw = ct.load(DWp, (group, 0), (1, TN), padding_mode=ZERO) + dy
    ct.store(DWp, (group, 0), dw)


def _partial_args(rng, m=16, n=100, groups=4):
    return (rng.standard_normal((m, n)).astype(np.float32), np.zeros((groups, n), np.float32),
            128)


# 15. check_bounds=False on tile-space load/store with a ragged size: the last tile is
#     partly outside, which check_bounds=False promises never happens

@ct.kernel
def unchecked_tail_tile(a, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, (bid,), (TILE,), check_bounds=False)
    ct.store(c, (bid,), x + 1.0, check_bounds=False)


def _n_tiles(args, n_index=0, tile_index=-1):
    return cdiv(len(args[n_index]), args[tile_index])


CASES = [
    Case("extra_block", extra_block, lambda a: (_n_tiles(a) + 1,), _vec_args,
         bug="grid has one block more than there are tiles",
         expect=(Expect("tile_out_of_bounds", "a", "# load a"),
                 Expect("tile_out_of_bounds", "b", "# load b"),
                 Expect("tile_out_of_bounds", "c", "ct.store(c"))),
    Case("duplicated_blocks", duplicated_blocks, lambda a: (_n_tiles(a), 2), _vec_args,
         bug="grid (n_tiles, 2) for a 1-D kernel: blocks (i, 0) and (i, 1) store the same tile",
         expect=(Expect("write_race", "c", "ct.store(c"),)),
    Case("missing_tail", missing_tail, lambda a: (len(a[0]) // a[3],),
         lambda rng: _vec_args(rng, n=1000),
         bug="grid = n // TILE: the last 1000 - 7*128 = 104 elements are never written",
         expect=(Expect("uncovered_output", "c", "ct.store(c"),)),
    Case("gemm_shifted_k", gemm_shifted_k, lambda a: (2, 2), _gemm_args,
         bug="A is loaded at tile k + 1: the last K iteration reads a tile past A's end",
         expect=(Expect("tile_out_of_bounds", "A", "ct.load(A"),)),
    Case("unchecked_gather", unchecked_gather, lambda a: (_n_tiles(a),),
         lambda rng: (rng.standard_normal(1000).astype(np.float32),
                      np.zeros(1000, np.float32), 128),
         bug="check_bounds=False with n = 1000 not a multiple of 128",
         expect=(Expect("unchecked_out_of_bounds", "a", "ct.gather(a"),)),
    Case("histogram_scatter", histogram_scatter, lambda a: (_n_tiles(a),), _histogram_args,
         bug="read-modify-write of bins with gather/scatter instead of atomic_add",
         expect=(Expect("write_race", "bins", "ct.scatter(bins"),
                 Expect("scatter_collision", "bins", "ct.scatter(bins"),
                 Expect("order_dependent_read", "bins", "ct.gather(bins"))),
    Case("carry_from_previous", carry_from_previous, lambda a: (_n_tiles(a, 0),),
         lambda rng: (rng.standard_normal(512).astype(np.float32),
                      np.zeros(512, np.float32), 128),
         bug="block i reads block i-1's output in the same launch (no ordering between blocks)",
         expect=(Expect("order_dependent_read", "c", "carry = ct.load(c"),)),
    Case("inplace_shift", inplace_shift, lambda a: (_n_tiles(a, 0),),
         lambda rng: (rng.standard_normal(512).astype(np.float32), 128),
         bug="in-place x[i] = x[i + 1]: the last lane of each block reads the next block's tile",
         expect=(Expect("order_dependent_read", "x", "ct.gather(x"),)),
    Case("store_off_by_one", store_off_by_one, lambda a: (_n_tiles(a, 0),),
         lambda rng: (rng.standard_normal(512).astype(np.float32),
                      np.zeros(512, np.float32), 128),
         bug="stores to tile bid + 1",
         expect=(Expect("tile_out_of_bounds", "c", "ct.store(c"),
                 Expect("uncovered_output", "c", "ct.store(c"))),
    Case("wrong_axis", wrong_axis, lambda a: (1, _n_tiles(a, 0)),
         lambda rng: (rng.standard_normal(512).astype(np.float32),
                      np.zeros(512, np.float32), 128),
         bug="grid is (1, n_tiles) but the kernel reads ct.bid(0), always 0",
         expect=(Expect("write_race", "c", "ct.store(c"),
                 Expect("uncovered_output", "c", "ct.store(c"))),
    Case("stencil_writes_halo", stencil_writes_halo,
         lambda a: (cdiv(a[0].shape[0], a[2] - 2), cdiv(a[0].shape[1], a[2] - 2)),
         _stencil_args,
         bug="overlapping windows store their halo ring, which neighbours also store",
         expect=(Expect("write_race", "Y", "ct.scatter(Y"),)),
    Case("stencil_tile_halo", stencil_tile_halo, lambda a: (cdiv(a[0].shape[0], a[2]),),
         lambda rng: (rng.standard_normal((64, 16)).astype(np.float32),
                      np.zeros((64, 16), np.float32), 16),
         bug="block 0 loads the tile above it, index -1: entirely outside X",
         expect=(Expect("tile_out_of_bounds", "X", "above = ct.load(X"),)),
    Case("plain_accumulate", plain_accumulate, lambda a: (_n_tiles(a),),
         lambda rng: (rng.standard_normal(1000).astype(np.float32),
                      np.zeros(1, np.float32), 256),
         bug="load + add + store on one shared element instead of atomic_add",
         expect=(Expect("write_race", "Out", "ct.store(Out"),
                 Expect("order_dependent_read", "Out", "ct.load(Out"))),
    Case("unlocked_partial_sums", unlocked_partial_sums, lambda a: (a[0].shape[0],),
         _partial_args,
         bug="rows sharing a group read-modify-write the partial row without the lock",
         expect=(Expect("write_race", "DWp", "ct.store(DWp"),
                 Expect("order_dependent_read", "DWp", "ct.load(DWp"))),
    Case("unchecked_tail_tile", unchecked_tail_tile, lambda a: (_n_tiles(a, 0),),
         lambda rng: (rng.standard_normal(1000).astype(np.float32),
                      np.zeros(1000, np.float32), 128),
         bug="check_bounds=False although n = 1000 is not a multiple of 128",
         expect=(Expect("unchecked_out_of_bounds", "a", "ct.load(a"),
                 Expect("unchecked_out_of_bounds", "c", "ct.store(c"))),
]
