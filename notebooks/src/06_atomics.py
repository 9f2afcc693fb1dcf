# %% [markdown]
# # 6 · Atomics and cross-block reductions
#
# Blocks of one launch run in no particular order and cannot wait for each other. To combine
# results across blocks — a global sum, a histogram — use **atomics**: `ct.atomic_add` makes the
# read-modify-write of each element indivisible.

# %%
import numpy as np
import cuda.tile as ct
import tile_lab

# %%
@ct.kernel
def total_sum(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.atomic_add(out, 0, ct.sum(t))          # every block adds its partial sum to out[0]

# %%
# NBVAL_CHECK_OUTPUT
x = np.arange(10_000, dtype=np.float32) % 7
out = np.zeros(1, np.float32)
tile_lab.emulate(total_sum, (ct.cdiv(x.size, 1024),), (x, out, 1024))
print("sum:", out[0], "NumPy:", x.sum(dtype=np.float64))

# %% [markdown]
# ## The race you get without the atomic
#
# Replace the atomic with a plain read-add-write and every block overwrites `out[0]`: on a GPU
# the result depends on timing. In the emulator blocks run one after another, so the answer
# happens to be right — which is exactly why the **sanitizer** exists: it looks at *who touched
# what*, not at the answer.

# %%
@ct.kernel
def total_sum_racy(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    acc = ct.load(out, index=(0,), shape=(1,))
    ct.store(out, index=(0,), tile=acc + ct.sum(t))

# %%
# NBVAL_CHECK_OUTPUT
report = tile_lab.sanitize(total_sum_racy, (ct.cdiv(x.size, 1024),),
                           (x, np.zeros(1, np.float32), 1024))
print(report)

# %%
# NBVAL_CHECK_OUTPUT
print(tile_lab.sanitize(total_sum, (ct.cdiv(x.size, 1024),), (x, np.zeros(1, np.float32), 1024)))

# %% [markdown]
# ## A histogram
#
# `atomic_add` with a tile of indices: many lanes may hit the same bin, in the same block or
# across blocks, and every increment counts.

# %%
@ct.kernel
def histogram(values, bins, TILE: ct.Constant[int]):
    idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    v = ct.gather(values, idx, padding_value=-1)   # lanes past the end get bin -1 ...
    ct.atomic_add(bins, v, 1)                      # ... which is out of bounds: skipped

# %%
# NBVAL_CHECK_OUTPUT
values = np.random.default_rng(0).integers(0, 10, 5000).astype(np.int32)
bins = np.zeros(10, np.int32)
tile_lab.emulate(histogram, (ct.cdiv(5000, 512),), (values, bins, 512))
print(bins, "matches np.bincount:", np.array_equal(bins, np.bincount(values, minlength=10)))
