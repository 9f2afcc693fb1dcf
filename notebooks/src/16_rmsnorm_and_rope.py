# %% [markdown]
# # 16 · RMSNorm and RoPE: the small kernels around attention
#
# Every transformer layer normalises its activations before attention (**RMSNorm**:
# `y = x / sqrt(mean(x²) + ε) · w`, one row at a time) and rotates queries and keys by their
# position (**RoPE**: pairs of features turned by an angle that grows with the position). Both
# are memory-bound: one read, one write per element, a little arithmetic. The kernels are in
# `tile_lab.examples.norms`; here we look at how they are tiled and check them against NumPy.

# %%
import matplotlib.pyplot as plt
import numpy as np
import cuda.tile as ct
import tile_lab
from tile_lab.examples.norms import (rms_norm, rms_norm_reference, rope, rope_angles,
                                     rope_reference)

rng = np.random.default_rng(0)

# %% [markdown]
# ## RMSNorm: a row per tile
#
# Block `i` loads `BM` whole rows (`TN`, a power of two, ≥ the row length; the padding lanes
# load as zero so they add nothing to the sum of squares), reduces along the row, and scales
# by the weight `w`, which broadcasts from `(1, TN)` over the rows.

# %%
tile_lab.inspect(rms_norm, "f16[4096,4096], f16[4096], f16[4096,4096], 1e-6, 4, 4096",
                 arch="sm_90", show="source,tileir")

# %%
# NBVAL_CHECK_OUTPUT
M, N = 64, 80                           # rows of 80: the 128-wide tile is padded
x = rng.standard_normal((M, N)).astype(np.float32) * 3
w = (1 + 0.1 * rng.standard_normal(N)).astype(np.float32)
y = np.zeros_like(x)
tr = tile_lab.trace(rms_norm, (M // 8,), (x, w, y, 1e-6, 8, 128))
print("matches NumPy:", np.allclose(y, rms_norm_reference(x, w, 1e-6), rtol=1e-5, atol=1e-5))
print("X loads:", len(tr.select(arg="X", kind="load")), "(one tile per block);",
      "lanes outside the array:", tr.select(arg="X")[0].outside_count(x.shape), "per load")

# %% [markdown]
# Block 2's footprint: 8 full rows of `x` (the tile reaches past the 80 columns: padded), the
# whole of `w`, 8 rows of `y`.

# %%
tile_lab.diagram(tr, block=(2,))

# %% [markdown]
# What it does to the rows: every row comes out with root-mean-square ≈ 1 (times `w`):

# %%
fig, ax = plt.subplots(figsize=(7, 2.3))
ax.plot(np.sqrt((x ** 2).mean(axis=1)), "o", ms=3, label="RMS of x rows")
ax.plot(np.sqrt(((y / w) ** 2).mean(axis=1)), "o", ms=3, label="RMS of y / w rows")
ax.set(xlabel="row", ylim=(0, None))
ax.legend(fontsize=8)
plt.tight_layout()

# %% [markdown]
# ## RoPE: rotate half
#
# Head dimension `D` splits into two halves `x1, x2`; feature pair `f` at position `p` turns by
# `θ = p · base^(−2f/D)`: `(x1, x2) → (x1 cos θ − x2 sin θ, x2 cos θ + x1 sin θ)`. The kernel
# loads a `(BS, D)` tile, cuts it with `ct.extract` into the two halves, rotates, and joins
# them with `ct.cat`. The angle tables, one row per position:

# %%
cos, sin = rope_angles(64, 32)
fig, axes = plt.subplots(1, 2, figsize=(9, 2.6), sharey=True, layout="constrained")
for ax, table, name in zip(axes, (cos, sin), ("cos θ", "sin θ")):
    im = ax.imshow(table.T, aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
    ax.set(xlabel="position p", title=name)
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))  # positions and pairs are
    ax.yaxis.set_major_locator(plt.MaxNLocator(integer=True))  # whole numbers
axes[0].set_ylabel("pair f")  # shared by both panels
_ = fig.colorbar(im, ax=axes, shrink=0.8)

# %%
tile_lab.inspect(rope, "f16[32,2048,128], f32[2048,64], f32[2048,64], f16[32,2048,128], 64, 128",
                 arch="sm_90", show="source,tileir")

# %%
# NBVAL_CHECK_OUTPUT
BH, S, D = 4, 64, 32
xr = rng.standard_normal((BH, S, D)).astype(np.float32)
yr = np.zeros_like(xr)
tr_rope = tile_lab.trace(rope, (S // 16, BH), (xr, cos, sin, yr, 16, D))
print("matches NumPy:", np.allclose(yr, rope_reference(xr, cos, sin), atol=1e-5))
print("norm of each pair kept:", np.allclose(np.hypot(yr[..., :16], yr[..., 16:]),
                                              np.hypot(xr[..., :16], xr[..., 16:]), atol=1e-5))

# %% [markdown]
# Block `(1, 2)` (positions 16–31 of batch-head 2) reads its `(1, 16, 32)` box of `X` and the
# matching rows of both angle tables:

# %%
tile_lab.diagram(tr_rope, block=(1, 2), arg=["X", "COS", "SIN"])

# %% [markdown]
# The point of RoPE: after rotation, the score `q·k` between positions depends only on their
# *distance*. Put the same vector at every position and compare rows of the score matrix:

# %%
vec = np.broadcast_to(rng.standard_normal(D).astype(np.float32), (1, S, D)).copy()
rot = np.zeros_like(vec)
tile_lab.emulate(rope, (S // 16, 1), (vec, cos, sin, rot, 16, D))
scores = rot[0] @ rot[0].T
fig, ax = plt.subplots(figsize=(3.4, 3))
ax.imshow(scores, cmap="viridis")
ax.set(title="q·k of one vector at positions i, j", xlabel="j", ylabel="i")
plt.tight_layout()

# %%
# NBVAL_CHECK_OUTPUT
diag = [np.ptp(np.diagonal(scores, offset=o)) for o in range(0, 8)]
print("each diagonal (fixed distance) is constant:", max(diag) < 1e-3 * np.abs(scores).max())

# %% [markdown]
# ## Fusing them
#
# In a real layer, RMSNorm's output goes through the Q/K projections and then RoPE; both are
# bandwidth-bound, so the win is to fuse them into the GEMM's prologue/epilogue (notebook 4's
# K-loop with the normalisation applied to the A tile, RoPE to the C tile before the store).
# **Exercise:** write `rope_fused_scale(X, COS, SIN, Y, alpha, BS, D)` that also multiplies by
# `alpha` (as attention's `1/√d` could be folded in), and check it with `tile_lab.check`.
