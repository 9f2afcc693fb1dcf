"""RMSNorm and rotary position embedding (RoPE), the two small kernels around every attention.

``rms_norm``: block ``i`` normalises rows ``i*BM … i*BM+BM-1`` of ``X[M, N]``:
``y = x / sqrt(mean(x²) + eps) * w``, with the row of ``N`` elements in one tile (``TN ≥ N``,
a power of two; the padding lanes load as zeros and so add nothing to the sum of squares).

``rope``: block ``(s, bh)`` rotates positions ``s*BS …`` of ``X[batch*heads, seq, D]`` by the
angles in ``COS``/``SIN[seq, D/2]``, in the "rotate half" form (GPT-NeoX, Llama): the first and
second halves of the head dimension are the two coordinates of ``D/2`` planar rotations.
"""

from __future__ import annotations

import cuda.tile as ct
import numpy as np


@ct.kernel
def rms_norm(X, W, Y, eps: float, BM: ct.Constant[int], TN: ct.Constant[int]):
    i = ct.bid(0)
    x = ct.load(X, index=(i, 0), shape=(BM, TN), padding_mode=ct.PaddingMode.ZERO)
    xf = x.astype(ct.float32)
    mean_sq = ct.sum(xf * xf, axis=1, keepdims=True) / X.shape[1]  # (BM, 1)
    w = ct.load(W, index=(0,), shape=(TN,), padding_mode=ct.PaddingMode.ZERO)
    y = xf * ct.rsqrt(mean_sq + eps) * w.astype(ct.float32).reshape((1, TN))  # broadcasts
    ct.store(Y, index=(i, 0), tile=y.astype(Y.dtype))


@ct.kernel
def rope(X, COS, SIN, Y, BS: ct.Constant[int], D: ct.Constant[int]):
    s, bh = ct.bid(0), ct.bid(1)
    HALF = D // 2
    x = ct.load(X, index=(bh, s, 0), shape=(1, BS, D)).reshape((BS, D)).astype(ct.float32)
    x1 = ct.extract(x, index=(0, 0), shape=(BS, HALF))  # first half of the head dim
    x2 = ct.extract(x, index=(0, 1), shape=(BS, HALF))  # second half
    cos = ct.load(COS, index=(s, 0), shape=(BS, HALF)).astype(ct.float32)
    sin = ct.load(SIN, index=(s, 0), shape=(BS, HALF)).astype(ct.float32)
    y = ct.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), axis=1)
    ct.store(Y, index=(bh, s, 0), tile=y.astype(Y.dtype).reshape((1, BS, D)))


def rms_norm_reference(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    x64 = np.asarray(x, dtype=np.float64)
    return x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps) * w.astype(np.float64)


def rope_angles(seq: int, dim: int, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """``cos`` and ``sin`` tables ``[seq, dim/2]``: position p, pair f turns by p·base^(-2f/dim)."""
    inv_freq = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    angles = np.outer(np.arange(seq, dtype=np.float64), inv_freq)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def rope_reference(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    x64 = np.asarray(x, dtype=np.float64)
    half = x.shape[-1] // 2
    x1, x2 = x64[..., :half], x64[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
