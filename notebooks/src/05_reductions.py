# %% [markdown]
# # 5 · Reductions: softmax and LayerNorm
#
# A reduction collapses a tile along an axis: `ct.max`, `ct.sum`. One block per row keeps the
# whole row in one tile, so a row softmax is three tile operations and no communication.

# %%
import numpy as np
import cuda.tile as ct
import tile_lab

# %%
@ct.kernel
def softmax_rows(x, y, TN: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TN), padding_mode=ct.PaddingMode.NEG_INF)
    t = t - ct.max(t, axis=1, keepdims=True)     # subtract the row max: exp never overflows
    e = ct.exp(t)
    ct.store(y, index=(row, 0), tile=e / ct.sum(e, axis=1, keepdims=True))

# %%
# NBVAL_CHECK_OUTPUT
x = np.random.default_rng(0).standard_normal((64, 100)).astype(np.float32)
y = np.zeros_like(x)
tile_lab.emulate(softmax_rows, (64,), (x, y, 128))   # 128 ≥ 100: padded lanes are -inf → exp 0
ref = np.exp(x - x.max(1, keepdims=True))
ref /= ref.sum(1, keepdims=True)
print("matches NumPy:", np.allclose(y, ref, atol=1e-6), "| rows sum to 1:",
      np.allclose(y.sum(1), 1))

# %% [markdown]
# `padding_mode=NEG_INF` is what makes the ragged row (100 of 128 lanes) correct: padded lanes
# never win the max and contribute `exp(-inf) = 0` to the sum. With `ZERO` padding, the 28 extra
# lanes would each add `exp(0 - max)` to the denominator.

# %% [markdown]
# ## LayerNorm forward
#
# Mean and variance per row, then normalise and apply the learned scale and shift.

# %%
@ct.kernel
def layernorm(x, w, b, y, N: ct.Constant[int], TN: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TN), padding_mode=ct.PaddingMode.ZERO)
    mean = ct.sum(t, axis=1, keepdims=True) / N
    mask = ct.arange(TN, dtype=ct.int32) < N
    d = ct.where(mask, t - mean, 0.0)
    var = ct.sum(d * d, axis=1, keepdims=True) / N
    tw = ct.load(w, index=(0,), shape=(TN,), padding_mode=ct.PaddingMode.ZERO)
    tb = ct.load(b, index=(0,), shape=(TN,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(row, 0), tile=d * ct.rsqrt(var + 1e-5) * tw + tb)

# %%
# NBVAL_CHECK_OUTPUT
x = np.random.default_rng(1).standard_normal((32, 200)).astype(np.float32)
w = np.linspace(0.5, 1.5, 200, dtype=np.float32)
b = np.linspace(-1, 1, 200, dtype=np.float32)
y = np.zeros_like(x)
tile_lab.emulate(layernorm, (32,), (x, w, b, y, 200, 256))
mu, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
print("matches NumPy:", np.allclose(y, (x - mu) / np.sqrt(var + 1e-5) * w + b, atol=1e-4))

# %% [markdown]
# ## Exercise: row sums
#
# Write `row_sum(x, out, TN)` storing the sum of each row of `x` into `out`.

# %%
@ct.kernel
def row_sum(x, out, TN: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(row,), tile=ct.sum(t, axis=1))

# %%
# NBVAL_CHECK_OUTPUT
tile_lab.check(row_sum, spec=lambda x: x.sum(1), grid=(48,), shapes=[(48, 30), (48,)],
               constants=(32,), tol=(1e-4, 1e-4), device="emulator")
