"""cuTile Python twins of the C++ examples in this folder: the same kernels, the same tile
sizes, so ``tile_lab.compare`` can line up their Tile IR. Real file: cuTile reads kernel
source with ``inspect.findsource``.
"""

import cuda.tile as ct


@ct.kernel
def vector_add(a, b, c):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(1024,))
    tb = ct.load(b, index=(bid,), shape=(1024,))
    ct.store(c, index=(bid,), tile=ta + tb)


@ct.kernel
def vector_add_masked(a, b, c):
    # loads past the end of the array read zeros; stores past it are dropped
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(256,), padding_mode=ct.PaddingMode.ZERO)
    tb = ct.load(b, index=(bid,), shape=(256,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(c, index=(bid,), tile=ta + tb)


@ct.kernel
def gather(x, idx, out):
    bid = ct.bid(0)
    offsets = ct.load(idx, index=(bid,), shape=(128,))
    ct.store(out, index=(bid,), tile=ct.gather(x, offsets))


@ct.kernel
def tile_sum(x, out):
    bid = ct.bid(0)
    acc = ct.zeros((16, 64), dtype=ct.float32)
    for j in range(ct.num_tiles(x, axis=1, shape=(16, 64))):
        acc = acc + ct.load(x, index=(bid, j), shape=(16, 64))
    ct.store(out, index=(bid,), tile=ct.sum(acc, axis=1))


@ct.kernel
def gemm(A, B, C):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.zeros((64, 64), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(64, 32))):
        a = ct.load(A, index=(bm, k), shape=(64, 32))
        b = ct.load(B, index=(k, bn), shape=(32, 64))
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc)


@ct.kernel
def block_sum(x, total):
    bid = ct.bid(0)
    partial = ct.sum(ct.load(x, index=(bid,), shape=(1024,), padding_mode=ct.PaddingMode.ZERO))
    ct.atomic_add(total, 0, partial)
