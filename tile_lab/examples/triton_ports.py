"""Three Triton kernels and their cuTile ports (notebook 19, ``bench/triton_vs_cutile.py``).

Each pair computes the same thing the way its language wants it written:

* vector add with a ragged end: Triton masks the lanes past ``n``; cuTile loads a tile at a
  tile index and the array's bounds do the masking (out-of-bounds lanes are padded on load and
  dropped on store);
* row softmax: Triton loads with ``other=-inf`` under a mask; cuTile asks for
  ``padding_mode=NEG_INF``;
* tiled GEMM: Triton walks pointer grids ``a_ptrs += BK`` and calls ``tl.dot``;
  cuTile loads tile ``(bm, k)`` of ``A`` and calls ``ct.mma``.

The array arguments come in the same order on both sides of a pair (``tile_lab.compare`` pairs
them by position). :func:`pair_inputs` makes the inputs of each pair for a size. Needs Triton
(``pip install "tile_lab[triton]"``).
"""

from __future__ import annotations

from typing import Any

import cuda.tile as ct
import numpy as np
import triton
import triton.language as tl

__all__ = ["PAIRS", "add_kernel", "matmul_kernel", "matmul_tiles", "pair_inputs",
           "softmax_kernel", "softmax_rows", "vector_add"]


# ---- 1. vector add with a mask ------------------------------------------------------------

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@ct.kernel
def vector_add(x, y, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    a = ct.load(x, index=(bid,), shape=(TILE,))
    b = ct.load(y, index=(bid,), shape=(TILE,))
    ct.store(out, index=(bid,), tile=a + b)


# ---- 2. row softmax -----------------------------------------------------------------------

@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * row_stride + cols, num / den, mask=mask)


@ct.kernel
def softmax_rows(x, out, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
    t = t - ct.max(t, axis=1, keepdims=True)
    num = ct.exp(t)
    den = ct.sum(num, axis=1, keepdims=True)
    ct.store(out, index=(row, 0), tile=num / den)


# ---- 3. tiled GEMM ------------------------------------------------------------------------

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # row-major, contiguous: a row of A is K elements apart, a row of B and of C N apart
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        k_left = K - k
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@ct.kernel
def matmul_tiles(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.full((BM, BN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(BM, BK))):
        ta = ct.load(a, index=(bm, k), shape=(BM, BK), padding_mode=ct.PaddingMode.ZERO)
        tb = ct.load(b, index=(k, bn), shape=(BK, BN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=acc)


PAIRS = ("vector_add", "softmax", "gemm")


def pair_inputs(name: str, size: int, *, seed: int = 0, xp: Any = np) -> dict[str, Any]:
    """The Triton kernel, the cuTile kernel, their args and grids for pair ``name`` at
    ``size`` (elements for vector add; rows = cols for softmax; M = N = K for GEMM).

    ``xp``: the array module to allocate with (NumPy on a CPU; a torch-like ``xp`` on a GPU
    is the caller's, see ``bench/triton_vs_cutile.py``)."""
    rng = np.random.default_rng(seed)
    if name == "vector_add":
        x, y = (xp.asarray(rng.random(size, dtype=np.float32)) for _ in range(2))
        out = xp.asarray(np.zeros(size, np.float32))
        tile = 1024
        grid = (-(-size // tile),)
        return {"triton": add_kernel, "cutile": vector_add, "grid": grid,
                "args": (x, y, out, size, tile), "cutile_args": (x, y, out, tile),
                "bytes": 3 * 4 * size, "flops": size}
    if name == "softmax":
        cols = size
        x = xp.asarray(rng.standard_normal((size, cols), dtype=np.float32))
        out = xp.asarray(np.zeros((size, cols), np.float32))
        block = 1 << (cols - 1).bit_length()
        return {"triton": softmax_kernel, "cutile": softmax_rows, "grid": (size,),
                "args": (x, out, cols, cols, block), "cutile_args": (x, out, block),
                "bytes": 2 * 4 * size * cols, "flops": 5 * size * cols}
    if name == "gemm":
        a = xp.asarray(rng.standard_normal((size, size)).astype(np.float16))
        b = xp.asarray(rng.standard_normal((size, size)).astype(np.float16))
        c = xp.asarray(np.zeros((size, size), np.float32))
        bm, bn, bk = 64, 64, 32
        grid = (-(-size // bm), -(-size // bn))
        return {"triton": matmul_kernel, "cutile": matmul_tiles, "grid": grid,
                "args": (a, b, c, size, size, size, bm, bn, bk),
                "cutile_args": (a, b, c, bm, bn, bk),
                "bytes": 2 * 2 * size * size + 4 * size * size, "flops": 2 * size ** 3}
    raise ValueError(f"pair {name!r}: choose from {', '.join(PAIRS)}")
