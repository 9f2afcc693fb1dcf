# %% [markdown]
# # 17 · Tile Puzzles
#
# Seventeen small kernels to write, from a copy to flash attention, in the spirit of
# Triton-Puzzles. Each puzzle shows its spec (what to compute, in NumPy terms), the launch
# (grid, shapes, constants) and a hint. Fill in the kernel below it and run the check: it runs
# your kernel on the CPU emulator on random inputs and compares with NumPy. When it is wrong,
# the verdict says **which blocks wrote wrong elements** (and which elements no block wrote) and
# draws the first bad block's footprint.
#
# The stubs below are unsolved, so their checks say ✗ until you solve them. The solutions are
# in `tile_lab/examples/puzzle_solutions.py` — try first; the last cell checks them all.

# %%
import numpy as np
import cuda.tile as ct
import tile_lab
from tile_lab.examples import puzzles

# %% [markdown]
# ## How the checker talks
#
# A kernel for puzzle 3 whose block 5 forgets to double: the verdict names block 5, the line of
# the store that wrote the wrong values, and the diagram shows that block's footprint.

# %%
@ct.kernel
def double(x, y, T: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, index=(i,), shape=(T,))
    ct.store(y, index=(i,), tile=ct.where(i == 5, t, 2 * t))  # block 5 forgets

# %%
# NBVAL_CHECK_OUTPUT
result = puzzles.check(3, double)
print(result.verdict())
print("blocks blamed:", [b.block for b in result.bad_blocks])

# %%
result  # the same verdict, with the picture

# %% [markdown]
# ## Puzzle 1: Copy

# %%
puzzles.puzzle(1)

# %%
@ct.kernel
def copy(x, y, T: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(1, copy)

# %% [markdown]
# ## Puzzle 2: Add

# %%
puzzles.puzzle(2)

# %%
@ct.kernel
def add(x, y, z, T: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(2, add)

# %% [markdown]
# ## Puzzle 3: Ragged edge

# %%
puzzles.puzzle(3)

# %%
@ct.kernel
def double(x, y, T: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(3, double)

# %% [markdown]
# ## Puzzle 4: Outer sum

# %%
puzzles.puzzle(4)

# %%
@ct.kernel
def outer_sum(x, y, z, TM: ct.Constant[int], TN: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(4, outer_sum)

# %% [markdown]
# ## Puzzle 5: Transpose

# %%
puzzles.puzzle(5)

# %%
@ct.kernel
def transpose(x, y, T: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(5, transpose)

# %% [markdown]
# ## Puzzle 6: Row sums

# %%
puzzles.puzzle(6)

# %%
@ct.kernel
def row_sum(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(6, row_sum)

# %% [markdown]
# ## Puzzle 7: Column max

# %%
puzzles.puzzle(7)

# %%
@ct.kernel
def col_max(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(7, col_max)

# %% [markdown]
# ## Puzzle 8: Softmax

# %%
puzzles.puzzle(8)

# %%
@ct.kernel
def softmax(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(8, softmax)

# %% [markdown]
# ## Puzzle 9: Prefix sums

# %%
puzzles.puzzle(9)

# %%
@ct.kernel
def row_cumsum(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(9, row_cumsum)

# %% [markdown]
# ## Puzzle 10: Gather

# %%
puzzles.puzzle(10)

# %%
@ct.kernel
def gather(x, idx, y, T: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(10, gather)

# %% [markdown]
# ## Puzzle 11: Shifted sum (Array.slice)

# %%
puzzles.puzzle(11)

# %%
@ct.kernel
def shifted_sum(x, y, T: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(11, shifted_sum)

# %% [markdown]
# ## Puzzle 12: Unfold: overlapping windows

# %%
puzzles.puzzle(12)

# %%
@ct.kernel
def unfold(x, y, W: ct.Constant[int], S: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(12, unfold)

# %% [markdown]
# ## Puzzle 13: Lower triangle

# %%
puzzles.puzzle(13)

# %%
@ct.kernel
def tril(x, y, T: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(13, tril)

# %% [markdown]
# ## Puzzle 14: Matrix–vector

# %%
puzzles.puzzle(14)

# %%
@ct.kernel
def matvec(A, x, y, TM: ct.Constant[int], TK: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(14, matvec)

# %% [markdown]
# ## Puzzle 15: Matmul + bias + ReLU

# %%
puzzles.puzzle(15)

# %%
@ct.kernel
def linear_relu(A, B, bias, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(15, linear_relu)

# %% [markdown]
# ## Puzzle 16: RMSNorm

# %%
puzzles.puzzle(16)

# %%
@ct.kernel
def rmsnorm(x, w, y, eps: float, TM: ct.Constant[int], TN: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(16, rmsnorm)

# %% [markdown]
# ## Puzzle 17: Flash attention

# %%
puzzles.puzzle(17)

# %%
@ct.kernel
def attention(Q, K, V, Out, qk_scale_log2: float, BM: ct.Constant[int], BN: ct.Constant[int], D: ct.Constant[int]):
    # your code here
    pass

# %%
puzzles.check(17, attention)

# %% [markdown]
# ## All solutions
#
# The reference solutions from `tile_lab/examples/puzzle_solutions.py`, each through the same
# check. (Spoiler-free: this prints verdicts, not code.)

# %%
# NBVAL_CHECK_OUTPUT
from tile_lab.examples.puzzle_solutions import SOLUTIONS

for n, kernel in SOLUTIONS.items():
    print(f"{n:2d}", puzzles.check(n, kernel).verdict())
