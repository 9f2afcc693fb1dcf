# %% [markdown]
# # 3 · Gather, scatter and irregular access
#
# Tile-space `load`/`store` move whole, aligned tiles. When the elements you need are not a tile
# — a ragged tail handled by hand, a permutation, a lookup table — use `gather` and `scatter`
# with a tile of **indices**. Out-of-range indices are masked off (gather returns
# `padding_value`, scatter drops them) unless you say `check_bounds=False`.

# %%
import numpy as np
import cuda.tile as ct
import tile_lab

# %%
@ct.kernel
def add_any_length(a, b, c, TILE: ct.Constant[int]):
    idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)   # element indices of my tile
    ta = ct.gather(a, idx)                                      # lanes past the end read 0
    tb = ct.gather(b, idx)
    ct.scatter(c, idx, ta + tb)                                 # lanes past the end are dropped

# %%
# NBVAL_CHECK_OUTPUT
N, TILE = 1000, 128                      # 1000 is not a multiple of 128
a = np.random.default_rng(0).standard_normal(N).astype(np.float32)
b = np.ones(N, np.float32)
c = np.zeros(N, np.float32)
tr = tile_lab.trace(add_any_length, (ct.cdiv(N, TILE),), (a, b, c, TILE))
print("correct:", np.allclose(c, a + b))
last = tr.select(block=(7,), arg="c")[0]
print("last block scattered", last.element_count(c.shape), "elements and dropped",
      last.out_of_bounds, "out-of-range lanes")

# %%
tile_lab.diagram(tr, arg="c", block=(7,))

# %% [markdown]
# ## A permutation: reverse an array
#
# Each block reads its tile and scatters it to mirrored positions: irregular on the output side.

# %%
@ct.kernel
def reverse(x, y, TILE: ct.Constant[int]):
    n = x.shape[0]
    idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    t = ct.gather(x, idx)
    ct.scatter(y, n - 1 - idx, t)

# %%
# NBVAL_CHECK_OUTPUT
x = np.arange(300, dtype=np.float32)
y = np.zeros_like(x)
tile_lab.emulate(reverse, (ct.cdiv(300, 64),), (x, y, 64))
print("correct:", np.array_equal(y, x[::-1]))

# %% [markdown]
# ## What `check_bounds=False` costs you
#
# Turning off bounds checks saves a compare per lane — and makes an out-of-range index undefined
# behaviour. The sanitizer finds such indices (on a GPU they would corrupt memory or fault).

# %%
@ct.kernel
def add_unchecked(a, b, c, TILE: ct.Constant[int]):
    idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    ta = ct.gather(a, idx, check_bounds=False)
    tb = ct.gather(b, idx)
    ct.scatter(c, idx, ta + tb)

# %%
# NBVAL_CHECK_OUTPUT
report = tile_lab.sanitize(add_unchecked, (ct.cdiv(N, TILE),), (a, b, np.zeros(N, np.float32), TILE))
print(report)

# %% [markdown]
# ## Exercise: gather a column
#
# Write `take_column(m, out, col, TILE)` that copies column `col` of a 2-D array `m` into `out`
# using `gather` with a tuple of (row indices, column index).

# %%
@ct.kernel
def take_column(m, out, col: int, TILE: ct.Constant[int]):
    rows = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    ct.scatter(out, rows, ct.gather(m, (rows, col)))

# %%
# NBVAL_CHECK_OUTPUT
tile_lab.check(take_column, spec=lambda m: m[:, 5], grid=(4,), shapes=[(200, 16), (200,)],
               constants=(5, 64), device="emulator")
