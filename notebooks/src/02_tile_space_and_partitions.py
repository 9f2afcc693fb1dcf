# %% [markdown]
# # 2 · Tile space, partitions, ragged edges
#
# An array seen through a tile shape becomes a grid of tiles — its **tile space**. The CUDA
# programming guide's Figure 19: a 10×16 array in 2×4 tiles is a 5×4 grid of tiles, and tile
# (1, 2) covers elements (2, 8) to (3, 11).

# %%
import numpy as np
import cuda.tile as ct
import tile_lab

%load_ext tile_lab

# %%
# NBVAL_CHECK_OUTPUT
fig19 = tile_lab.partition((10, 16), (2, 4), highlight=(1, 2))
fig19

# %% [markdown]
# ## When the array is not a multiple of the tile
#
# A 10×14 array in 4×4 tiles needs ⌈10/4⌉×⌈14/4⌉ = 3×4 tiles. The last row and column of tiles
# stick out of the array: on a **load** those lanes are filled by the padding mode (zero, NaN,
# ±inf, or undetermined); on a **store** they are silently discarded. Nothing is out of bounds.

# %%
@ct.kernel
def double_2d(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(i, j), shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(i, j), tile=t * 2)

# %%
x = np.arange(10 * 14, dtype=np.float32).reshape(10, 14)
y = np.zeros_like(x)
grid = (ct.cdiv(10, 4), ct.cdiv(14, 4), 1)
tr = tile_lab.trace(double_2d, grid, (x, y, 4, 4))

# %%
# NBVAL_CHECK_OUTPUT
print("correct:", np.array_equal(y, 2 * x))
corner = tr.select(block=(2, 3), arg="y")[0]
print("block (2, 3) stored tile", corner.tile_index, "covering rows", corner.box_start[0],
      "..", corner.box_stop[0] - 1, "cols", corner.box_start[1], "..", corner.box_stop[1] - 1)
print("lanes discarded by that store:", corner.outside_count(y.shape))

# %%
tile_lab.diagram(tr, arg="y", block=(2, 3))

# %% [markdown]
# ## Every element exactly once
#
# Over all blocks, how many times was each element of `y` written? A correct kernel covers its
# output exactly once; the coverage view calls out anything else.

# %%
# NBVAL_CHECK_OUTPUT
cov = tr.coverage("y", kind="write")
print("written once everywhere:", bool((cov == 1).all()))

# %%
tile_lab.diagram(tr, arg="y", view="coverage")

# %% [markdown]
# ## Padding modes, side by side
#
# What a load returns for the lanes outside the array depends on `padding_mode`:

# %%
@ct.kernel
def load_last_tile(x, out, mode: ct.Constant[int]):
    if mode == 0:
        t = ct.load(x, index=(1,), shape=(8,), padding_mode=ct.PaddingMode.ZERO)
    elif mode == 1:
        t = ct.load(x, index=(1,), shape=(8,), padding_mode=ct.PaddingMode.NEG_INF)
    else:
        t = ct.load(x, index=(1,), shape=(8,), padding_mode=ct.PaddingMode.NAN)
    ct.store(out, index=(0,), tile=t)

# %%
# NBVAL_CHECK_OUTPUT
x = np.arange(12, dtype=np.float32)  # tile 1 covers elements 8..15: 4 real, 4 padded
for mode, name in enumerate(["ZERO", "NEG_INF", "NAN"]):
    out = np.zeros(8, np.float32)
    tile_lab.emulate(load_last_tile, (1,), (x, out, mode))
    print(f"{name:8}", out)
