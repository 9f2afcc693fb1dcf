# %% [markdown]
# # 1 · Your first tile kernel
#
# A cuTile kernel is a Python function run by every **block** of a **grid**. Each block loads
# **tiles** (fixed-shape chunks of arrays), computes on whole tiles at once, and stores tiles back.
# You never write per-thread code: the compiler maps tiles to threads, registers and tensor cores.
#
# This notebook runs anywhere: without a GPU, kernels run on tile_lab's CPU emulator; with one,
# the same cells launch on the GPU.

# %%
import numpy as np
import cuda.tile as ct
import tile_lab

%load_ext tile_lab

# %% [markdown]
# ## Write a kernel, see what the compiler made of it
#
# `%%tile` runs the cell (defining the kernel) and, given a signature, compiles it for a GPU
# architecture — on this machine, no GPU needed — and shows the source next to the compiler's
# Tile IR and SASS. Hover a line: every IR line that came from the same source line lights up.

# %%
%%tile --sig "f32[4096], f32[4096], f32[4096], 256" --arch sm_90 --show source,tileir
@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)                                   # which block am I?
    ta = ct.load(a, index=(bid,), shape=(TILE,))      # tile number `bid` of a
    tb = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=ta + tb)           # one add for the whole tile

# %% [markdown]
# `load` takes a **tile index**, not an element index: tile `bid` of shape `(TILE,)` covers
# elements `bid*TILE … bid*TILE + TILE - 1`. The Tile IR shows this as `load_view_tko` on a
# `partition_view<tile=(256)>` of the array.
#
# The same inspection from Python returns an object you can query:

# %%
# NBVAL_CHECK_OUTPUT
import re

insp = tile_lab.inspect(vector_add, "f32[4096], f32[4096], f32[4096], 256", arch="sm_90")
print(re.findall(r"\b(?:load|store)_view_tko\b", insp.tileir))

# %% [markdown]
# ## Run it
#
# `tile_lab.launch` runs on the GPU. With `fallback="emulate"`, as here, a machine without one
# runs the CPU emulator instead and prints one line saying so; without `fallback` it raises
# `NoGPUError`. A grid of `N // TILE` blocks covers the array exactly.

# %%
N, TILE = 4096, 256
a = np.arange(N, dtype=np.float32)
b = np.full(N, 0.5, dtype=np.float32)
c = np.zeros(N, dtype=np.float32)
tile_lab.launch(vector_add, (N // TILE,), (a, b, c, TILE), fallback="emulate")

# %%
# NBVAL_CHECK_OUTPUT
print("correct:", np.array_equal(c, a + b))

# %% [markdown]
# ## Which block did what?
#
# The emulator records every memory operation. The diagram shows block 3's footprint: the
# tile it loaded from `a` and `b` and stored to `c`, coloured by source line.

# %%
# NBVAL_CHECK_OUTPUT
tr = tile_lab.trace(vector_add, (N // TILE,), (a, b, c, TILE))
print(tr)
print("block 3 wrote c elements",
      np.flatnonzero(tr.footprint((3,), "c", kind="write"))[[0, -1]])

# %%
tile_lab.diagram(tr, block=(3,))

# %% [markdown]
# ## Exercise: scale and shift
#
# Write `axpb(x, y, alpha, TILE)` computing `y = alpha * x + 1` tile by tile. The checker runs it
# on random inputs and, if it is wrong, tells you *which block* wrote the wrong elements.

# %%
@ct.kernel
def axpb(x, y, alpha: float, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    tx = ct.load(x, index=(bid,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=alpha * tx + 1)

# %%
# NBVAL_CHECK_OUTPUT
tile_lab.check(axpb, spec=lambda x: 3.0 * x + 1, grid=(16,), shapes=[(1024,), (1024,)],
               constants=(3.0, 64), device="emulator")

# %% [markdown]
# A wrong answer shows where it went wrong: here the grid is one block short, so the last tile
# is never written.

# %%
# NBVAL_CHECK_OUTPUT
tile_lab.check(axpb, spec=lambda x: 3.0 * x + 1, grid=(15,), shapes=[(1024,), (1024,)],
               constants=(3.0, 64), device="emulator")
