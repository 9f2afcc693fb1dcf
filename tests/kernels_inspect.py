"""Kernels the compile/inspect tests compile. They live in a real file because cuTile
reads kernel source with ``inspect.findsource``; tests look lines up by marker comments
(``# <-- name``) rather than by hard-coded numbers, so editing this file keeps them valid.
"""

from typing import Annotated

import cuda.tile as ct


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))  # <-- vadd load a
    y = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=x + y)  # <-- vadd store


@ct.kernel
def gather_scatter(src, idx, dst, TILE: ct.Constant[int]):
    # dst[idx[i]] = 2 * src[idx[i]] for the tile of indices this block owns
    bid = ct.bid(0)
    offsets = ct.load(idx, index=(bid,), shape=(TILE,))
    vals = ct.gather(src, offsets)  # <-- gather
    ct.scatter(dst, offsets, vals * 2)  # <-- scatter


@ct.kernel
def gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK))
        b = ct.load(B, index=(k, bn), shape=(TK, TN))
        acc = ct.mma(a, b, acc)  # <-- mma
    ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


@ct.kernel
def row_softmax(x, y, ROWS: ct.Constant[int], COLS: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(ROWS, COLS))
    m = ct.max(t, axis=1, keepdims=True)  # <-- softmax max
    e = ct.exp(t - m)  # <-- softmax exp
    s = ct.sum(e, axis=1, keepdims=True)  # <-- softmax sum
    ct.store(y, index=(bid, 0), tile=e / s)


@ct.kernel
def scale(x, y, alpha, TILE: ct.Constant[int]):
    # a non-constant scalar parameter: ``alpha`` becomes a kernel argument
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=t * alpha)


def _twice(t):
    return t + t  # <-- helper body


@ct.kernel
def with_helper(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=_twice(t))  # <-- helper call


@ct.kernel
def annotated(x: ct.Array, n: int, TILE: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(TILE,))
    ct.store(x, index=(0,), tile=t + n)


@ct.kernel
def static_shape(x: Annotated[ct.Array, ct.ArrayAnnotation(static_shape_dims=(0,))],
                 n: ct.ScalarInt64, TILE: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(TILE,))
    ct.store(x, index=(0,), tile=t + n)


@ct.kernel
def gemm_no_tma_for_b(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    # notebook 11's kernel that loses TMA: compiled for sm_90 with A f16[1024, 1020] (rows of
    # 2040 bytes) A's load is LDG, B's has TMA turned off, the store stays UTMASTG
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bx, k), shape=(TM, TK))  # <-- tma a
        b = ct.load(B, index=(k, by), shape=(TK, TN), allow_tma=False)  # <-- tma b
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))  # <-- tma c


# ---- kernels that must fail to compile, at a known line --------------------------------

@ct.kernel
def bad_mma_shapes(A, B, C):
    a = ct.load(A, index=(0, 0), shape=(64, 32))
    b = ct.load(B, index=(0, 0), shape=(64, 32))
    acc = ct.zeros((64, 32), dtype=ct.float32)
    acc = ct.mma(a, b, acc)  # <-- bad mma
    ct.store(C, index=(0, 0), tile=acc)


@ct.kernel
def bad_tile_shape(a, b):
    t = ct.load(a, index=(0,), shape=(100,))  # <-- bad shape
    ct.store(b, index=(0,), tile=t)
