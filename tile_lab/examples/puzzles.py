"""Tile Puzzles: seventeen small kernels to write, from a copy to flash attention.

Each ``Puzzle`` holds a spec (what to compute, in NumPy terms), the kernel's signature, the
launch (grid, shapes, constants) and a NumPy reference. ``check(n, kernel)`` runs the learner's
kernel on random inputs through ``tile_lab.check``: the verdict names the blocks that wrote wrong
elements, counts elements no block wrote, and draws the first bad block's footprint.

Solutions live in ``tile_lab.examples.puzzle_solutions`` so the notebook does not give them away.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .attention import attention_reference
from .norms import rms_norm_reference


@dataclass(frozen=True)
class Puzzle:
    number: int
    title: str
    spec: str  # what the kernel computes, in NumPy terms
    signature: str  # the kernel's def line, for the stub
    hint: str
    reference: Callable[..., np.ndarray]
    grid: tuple[int, ...]
    shapes: tuple[tuple[int, ...], ...]  # inputs, then the output
    constants: tuple[Any, ...] = ()
    dtype: Any = np.float32
    atol: float = 1e-5
    rtol: float = 1e-5

    def _repr_markdown_(self) -> str:
        shapes = ", ".join(str(s) for s in self.shapes)
        return (f"**Puzzle {self.number}: {self.title}**\n\n{self.spec}\n\n"
                f"`{self.signature}` — arrays {shapes} ({np.dtype(self.dtype).name}), "
                f"grid {self.grid}, constants {self.constants}\n\n*Hint:* {self.hint}")

    def __repr__(self) -> str:
        return f"Puzzle {self.number}: {self.title}"


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _unfold(x: np.ndarray, width: int, step: int) -> np.ndarray:
    n = (x.shape[0] - width) // step + 1
    return np.stack([x[j * step: j * step + width] for j in range(n)])


def _f32(f: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda *xs: f(*(np.asarray(x, np.float32) for x in xs))


_FA_SCALE = math.log2(math.e) / math.sqrt(32)

PUZZLES: tuple[Puzzle, ...] = (
    Puzzle(1, "Copy", "`y = x`, 1-D, one tile of `T` elements per block.",
           "def copy(x, y, T: ct.Constant[int])",
           "`ct.bid(0)` is this block's tile index; `ct.load` then `ct.store` that tile.",
           lambda x: x, (8,), ((512,), (512,)), (64,)),
    Puzzle(2, "Add", "`z = x + y`.",
           "def add(x, y, z, T: ct.Constant[int])",
           "Tiles add element-wise, like NumPy arrays.",
           lambda x, y: x + y, (8,), ((512,), (512,), (512,)), (64,)),
    Puzzle(3, "Ragged edge", "`y = 2 * x` for 1000 elements with `T = 128`: the last tile is "
           "partial.", "def double(x, y, T: ct.Constant[int])",
           "Launch covers `cdiv(1000, 128)` = 8 tiles; loads pad and stores drop lanes outside the "
           "array, so the same code works for the partial tile.",
           lambda x: 2 * x, (8,), ((1000,), (1000,)), (128,)),
    Puzzle(4, "Outer sum", "`z[i, j] = x[i] + y[j]`; block `(bi, bj)` writes one `TM×TN` tile.",
           "def outer_sum(x, y, z, TM: ct.Constant[int], TN: ct.Constant[int])",
           "Reshape the x tile to `(TM, 1)` and the y tile to `(1, TN)`: they broadcast.",
           lambda x, y: x[:, None] + y[None, :], (4, 2), ((128,), (64,), (128, 64)), (32, 32)),
    Puzzle(5, "Transpose", "`y = x.T` for a 64×128 `x`; block `(bi, bj)` writes tile `(bi, bj)` "
           "of y.", "def transpose(x, y, T: ct.Constant[int])",
           "Either `ct.transpose` a loaded tile, or load with `order=(1, 0)`.",
           lambda x: x.T, (4, 2), ((64, 128), (128, 64)), (32,)),
    Puzzle(6, "Row sums", "`y[i] = x[i, :].sum()`, `x` is 128×256, one block per `TM` rows.",
           "def row_sum(x, y, TM: ct.Constant[int], TN: ct.Constant[int])",
           "Loop over the column tiles, accumulate, `ct.sum(tile, axis=1)`.",
           lambda x: x.sum(axis=1), (4,), ((128, 256), (128,)), (32, 64), np.float32, 1e-4, 1e-4),
    Puzzle(7, "Column max", "`y[j] = x[:, j].max()`, `x` is 256×128, one block per `TN` columns.",
           "def col_max(x, y, TM: ct.Constant[int], TN: ct.Constant[int])",
           "Loop down the rows with `ct.maximum`; reduce with `ct.max(axis=0)`.",
           lambda x: x.max(axis=0), (4,), ((256, 128), (128,)), (64, 32)),
    Puzzle(8, "Softmax", "Row-wise softmax of a 64×128 `x`; a row fits one tile.",
           "def softmax(x, y, TM: ct.Constant[int], TN: ct.Constant[int])",
           "Subtract the row max before `ct.exp` (keepdims=True keeps the (TM, 1) shape).",
           _softmax, (4,), ((64, 128), (64, 128)), (16, 128)),
    Puzzle(9, "Prefix sums", "`y = np.cumsum(x, axis=1)` for a 64×128 `x`, rows in one tile.",
           "def row_cumsum(x, y, TM: ct.Constant[int], TN: ct.Constant[int])",
           "`ct.cumsum(tile, axis=1)`.",
           lambda x: np.cumsum(x, axis=1), (4,), ((64, 128), (64, 128)), (16, 128),
           np.float32, 1e-4, 1e-4),
    Puzzle(10, "Gather", "`y[i] = x[idx[i]]` (int32 arrays; `idx` in 0…99, `x` has 128).",
           "def gather(x, idx, y, T: ct.Constant[int])",
           "Load the index tile, then `ct.gather(x, indices)`.",
           lambda x, idx: x[idx], (4,), ((128,), (256,), (256,)), (64,), np.int32, 0, 0),
    Puzzle(11, "Shifted sum (Array.slice)", "`y[i] = x[i] + x[i+1] + x[i+2]` for `i < 512`; "
           "`x` has 514 elements.", "def shifted_sum(x, y, T: ct.Constant[int])",
           "`x.slice(0, start, stop)` is a view whose tile 0 starts at `start`.",
           lambda x: x[:-2] + x[1:-1] + x[2:], (8,), ((514,), (512,)), (64,),
           np.float32, 1e-5, 1e-5),
    Puzzle(12, "Unfold: overlapping windows", "Row `j` of `y` is the window "
           "`x[16*j : 16*j + 32]` (windows of 32, step 16; im2col for a 1-D convolution).",
           "def unfold(x, y, W: ct.Constant[int], S: ct.Constant[int])",
           "`x.tiled_view((W,), traversal_steps=(S,))` makes tile `j` the `j`-th window.",
           lambda x: _unfold(x, 32, 16), (15,), ((256,), (15, 32)), (32, 16)),
    Puzzle(13, "Lower triangle", "`y = np.tril(x)` for a 128×128 `x`.",
           "def tril(x, y, T: ct.Constant[int])",
           "Global row/column indices from `ct.arange`, then `ct.where(col <= row, tile, 0)`.",
           np.tril, (4, 4), ((128, 128), (128, 128)), (32,)),
    Puzzle(14, "Matrix–vector", "`y = A @ x` for a 128×256 `A`.",
           "def matvec(A, x, y, TM: ct.Constant[int], TK: ct.Constant[int])",
           "Loop over K tiles: `(TM, TK) * (1, TK)` broadcast, then `ct.sum(axis=1)`.",
           _f32(lambda a, x: a @ x), (4,), ((128, 256), (256,), (128,)), (32, 64),
           np.float32, 1e-4, 1e-4),
    Puzzle(15, "Matmul + bias + ReLU", "`C = relu(A @ B + bias)` in fp16 with fp32 "
           "accumulation; `A` 128×64, `B` 64×128, `bias` 128.",
           "def linear_relu(A, B, bias, C, TM: ct.Constant[int], TN: ct.Constant[int], "
           "TK: ct.Constant[int])",
           "`ct.mma` into a float32 accumulator over the K loop; the epilogue (bias, "
           "`ct.maximum(acc, 0)`) runs once per output tile before the store.",
           _f32(lambda a, b, bias: np.maximum(a @ b + bias, 0)), (2, 2),
           ((128, 64), (64, 128), (128,), (128, 128)), (64, 64, 32), np.float16, 2e-2, 1e-2),
    Puzzle(16, "RMSNorm", "`y = x / sqrt(mean(x², axis=1) + 1e-6) * w`, `x` 64×128.",
           "def rmsnorm(x, w, y, eps: float, TM: ct.Constant[int], TN: ct.Constant[int])",
           "Compute in float32; `ct.rsqrt`; `w` reshaped to `(1, TN)` broadcasts.",
           lambda x, w: rms_norm_reference(x, w, 1e-6), (4,), ((64, 128), (128,), (64, 128)),
           (1e-6, 16, 128), np.float32, 1e-4, 1e-4),
    Puzzle(17, "Flash attention", "`Out = softmax(Q Kᵀ / √32) V` per batch-head, `Q, K, V` "
           "4×128×32 fp16, without materialising the 128×128 scores: walk K/V in tiles of "
           "`BN` with a running max and sum.",
           "def attention(Q, K, V, Out, qk_scale_log2: float, BM: ct.Constant[int], "
           "BN: ct.Constant[int], D: ct.Constant[int])",
           "`qk_scale_log2` is log2(e)/√D so `ct.exp2` does the exponent; when the running max "
           "grows, rescale the accumulator and sum by `exp2(m_old - m_new)`.",
           lambda q, k, v: attention_reference(q, k, v), (4, 4),
           ((4, 128, 32),) * 4, (_FA_SCALE, 32, 32, 32), np.float16, 1e-2, 1e-2),
)


def puzzle(n: int) -> Puzzle:
    """Puzzle number ``n`` (1-based)."""
    if not 1 <= n <= len(PUZZLES):
        raise ValueError(f"there are puzzles 1 to {len(PUZZLES)}, not {n}")
    return PUZZLES[n - 1]


def check(n: int, kernel: Any, *, device: str = "emulator") -> Any:
    """Run ``kernel`` as the answer to puzzle ``n``; returns ``tile_lab.check``'s verdict."""
    import tile_lab

    p = puzzle(n)
    return tile_lab.check(kernel, spec=p.reference, grid=p.grid, shapes=p.shapes,
                          constants=p.constants, dtype=p.dtype, tol=(p.rtol, p.atol),
                          device=device, seed=n)
