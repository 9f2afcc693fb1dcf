# %% [markdown]
# # 11 · Views and TMA: tiled views, overlapping windows, slices, transposed loads
#
# `ct.load(x, index, shape)` partitions an array into tiles on the fly. The guide's preferred
# form names that partition once: `x.tiled_view(tile_shape)` is a **TiledView**, an object you
# can load from, store to and atomically update, and whose tiles may **overlap**
# (`traversal_steps`) — the shape of every stencil and convolution. `x.slice(axis, start, stop)`
# shifts where tile 0 starts; `order=` loads a tile transposed. At the end: which of these loads
# the compiler turned into **TMA** bulk copies on Hopper, and a kernel that loses TMA.

# %%
import numpy as np
import cuda.tile as ct
import tile_lab
from tile_lab.render.views import transposed_load, view_windows, windows_from_trace

%load_ext tile_lab

# %% [markdown]
# ## A tiled view is a named partition
#
# `tv = x.tiled_view((T,))` is the same tile grid `ct.load(x, index=(i,), shape=(T,))` uses,
# as an object: `tv.load((i,))`, `tv.store((i,), tile)`, `tv.num_tiles(axis)`, `tv.tile_shape`.

# %%
@ct.kernel
def scale_view(x, y, T: ct.Constant[int]):
    xv, yv = x.tiled_view((T,)), y.tiled_view((T,))
    for i in range(ct.bid(0), xv.num_tiles(0), ct.num_blocks(0)):  # 2 blocks share 8 tiles
        yv.store((i,), 2 * xv.load((i,)))

# %%
# NBVAL_CHECK_OUTPUT
x = np.arange(64, dtype=np.float32)
y = np.zeros_like(x)
tr = tile_lab.trace(scale_view, (2,), (x, y, 8))
print("correct:", np.array_equal(y, 2 * x))
print("block 1 stored tiles", [a.tile_index for a in tr.select(block=(1,), arg="y")])

# %%
tile_lab.diagram(tr, view="order", arg="y")

# %% [markdown]
# ## Overlapping windows: `traversal_steps`
#
# With `traversal_steps` smaller than the tile, consecutive tiles overlap. A 1-D convolution with
# an 8-tap filter and stride 4 reads windows `x[4j : 4j + 8]`: one view tile per output. The
# numbers count how many windows read each element (2 in the middle, 1 at the ends).

# %%
view_windows((64,), (8,), (4,), highlight=[(0,), (1,), (2,)])

# %%
@ct.kernel
def conv1d(x, w, y, K: ct.Constant[int], S: ct.Constant[int]):
    j = ct.bid(0)
    window = x.tiled_view((K,), traversal_steps=(S,)).load((j,))  # x[j*S : j*S + K]
    taps = ct.load(w, index=(0,), shape=(K,))
    ct.store(y, index=(j,), tile=ct.sum(window * taps, axis=0, keepdims=True))

# %%
# NBVAL_CHECK_OUTPUT
rng = np.random.default_rng(0)
xs = rng.standard_normal(64).astype(np.float32)
w = rng.standard_normal(8).astype(np.float32)
n_out = (64 - 8) // 4 + 1
ys = np.zeros(n_out, np.float32)
tr_conv = tile_lab.trace(conv1d, (n_out,), (xs, w, ys, 8, 4))
ref = np.array([xs[4 * j: 4 * j + 8] @ w for j in range(n_out)])
print(f"{n_out} outputs, match NumPy:", np.allclose(ys, ref, atol=1e-5))

# %% [markdown]
# The same picture, drawn from what the emulated kernel actually loaded:

# %%
windows_from_trace(tr_conv, "x")

# %% [markdown]
# ## `Array.slice`: move tile 0
#
# `x.slice(0, 2, 34)` is a view of elements 2…33; its tile 0 starts at element 2. Three slices
# offset by 0, 1, 2 give a 3-point stencil without any overlap in the tile grid itself.

# %%
view_windows((40,), (8,), slice=(0, 2, 34))

# %%
@ct.kernel
def stencil3(x, y, T: ct.Constant[int]):
    i, n = ct.bid(0), y.shape[0]
    left = ct.load(x.slice(0, 0, n), index=(i,), shape=(T,))
    mid = ct.load(x.slice(0, 1, n + 1), index=(i,), shape=(T,))
    right = ct.load(x.slice(0, 2, n + 2), index=(i,), shape=(T,))
    ct.store(y, index=(i,), tile=(left + mid + right) / 3)

# %%
# NBVAL_CHECK_OUTPUT
xs = rng.standard_normal(66).astype(np.float32)
ys = np.zeros(64, np.float32)
tile_lab.emulate(stencil3, (8,), (xs, ys, 8))
print("matches np.convolve:", np.allclose(ys, np.convolve(xs, np.ones(3) / 3, "valid")))

# %% [markdown]
# ## Transposed loads: `order=`
#
# `ct.load(a, index, shape, order=(1, 0))` reads the box `a[r0:r0+w, c0:c0+h]` and returns its
# transpose: tile axis 0 runs along array axis 1. The labels say which array element each tile
# element came from.

# %%
transposed_load((8, 8), (4, 2), (1, 0), order=(1, 0))

# %%
@ct.kernel
def transpose(a, b, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(b, index=(i, j), tile=ct.load(a, index=(i, j), shape=(T, T), order=(1, 0)))

# %%
# NBVAL_CHECK_OUTPUT
a = rng.standard_normal((32, 64)).astype(np.float32)
b = np.zeros((64, 32), np.float32)
tile_lab.emulate(transpose, (4, 2), (a, b, 16))
print("b == a.T:", np.array_equal(b, a.T))

# %% [markdown]
# ## `TiledView.atomic_store_add`: many blocks, one tile
#
# Column sums with a 2-D grid: block `(i, j)` sums its tile's columns and adds them into tile
# `j` of the output with `atomic_store_add`; the four blocks of a column meet on the same tile.
# The coverage view shows every output element written by 4 blocks.

# %%
@ct.kernel
def column_sums(a, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    part = ct.sum(ct.load(a, index=(i, j), shape=(TM, TN)), axis=0)
    out.tiled_view((TN,)).atomic_store_add((j,), part)

# %%
# NBVAL_CHECK_OUTPUT
a = rng.standard_normal((64, 32)).astype(np.float32)
out = np.zeros(32, np.float32)
tr_atomic = tile_lab.trace(column_sums, (4, 4), (a, out, 16, 8))
print("matches a.sum(axis=0):", np.allclose(out, a.sum(axis=0), atol=1e-5))
print("writes per element of out:", sorted(set(tr_atomic.coverage("out").tolist())))

# %%
tile_lab.diagram(tr_atomic, view="coverage", arg="out")

# %% [markdown]
# ## Which loads became TMA?
#
# On Hopper, a tile load can be one **TMA** bulk tensor copy (`UTMALDG` in SASS) instead of
# many per-thread loads (`LDG`). TMA needs every stride except the last to be a multiple of
# **16 bytes**. `tile_lab.render.tma.tma_report` reads, per source line, what the SASS holds and
# why (from the facts the Tile IR states about the arguments); the compiler's *remarks* say the
# same in its own words. The GEMM of notebook 4 with K = 1024 (row stride 2048 B): both loads
# and the store are TMA.

# %%
from tile_lab.examples.gemm import gemm_naive
from tile_lab.render.tma import tma_report

def show_tma(sig):
    insp = tile_lab.inspect(gemm_naive, sig, arch="sm_90")
    lines = insp.source.splitlines()
    code = lambda n: lines[n - insp.first_line].strip()[:32]  # noqa: E731
    report = tma_report(insp)
    print(report.summary())
    for t in report.lines:
        print(f"  {code(t.line):32s} {t.verdict:6s} {t.reason}")
    print("compiler remarks:")
    # sorted: the compiler does not promise an order among remarks of one line
    for r in sorted(insp.remarks, key=lambda r: (r.line, r.kind != "passed", r.message)):
        if r.category == "memory":
            print(f"  {code(r.line):32s} {r.kind:6s} {r.message}")
    return insp

# %%
# NBVAL_CHECK_OUTPUT
aligned = show_tma("f16[1024,1024], f16[1024,1024], f16[1024,1024], 128, 128, 64")

# %% [markdown]
# With K = 1020, A's row stride is 2040 bytes — not a multiple of 16. The A load falls back to
# per-thread global loads; B (row stride 2048 B) keeps TMA:

# %%
# NBVAL_CHECK_OUTPUT
unaligned = show_tma("f16[1024,1020], f16[1020,1024], f16[1024,1024], 128, 128, 64")

# %% [markdown]
# The inspect view marks it on the source: with the Tile IR and SASS panes shown, every line
# holding a tile load/store gets a TMA / no-TMA badge with the reason (hover it).
# `allow_tma=False` turns TMA off on purpose — useful to measure what it buys:

# %%
%%tile --sig "f16[1024,1020], f16[1020,1024], f16[1024,1024], 64, 64, 32" --arch sm_90 --show source,tileir,sass
@ct.kernel
def gemm_no_tma_for_b(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bx, k), shape=(TM, TK))  # row stride 2·K B, K % 8 != 0: no TMA
        b = ct.load(B, index=(k, by), shape=(TK, TN), allow_tma=False)  # TMA turned off
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))

# %% [markdown]
# The diagram of the emulated kernel can carry the same verdicts in its legend (`tma=`), so
# the footprint of each load says whether it was one bulk copy. A smaller problem for the
# emulator, with K = 252: A's row stride is 504 B, again no multiple of 16, and the verdicts
# below come from compiling this very signature:

# %%
rng_g = np.random.default_rng(1)
A = rng_g.standard_normal((256, 252)).astype(np.float16)
B = rng_g.standard_normal((252, 256)).astype(np.float16)
C = np.zeros((256, 256), np.float16)
tr_gemm = tile_lab.trace(gemm_no_tma_for_b, (2, 2), (A, B, C, 128, 128, 64))
insp_no_tma = tile_lab.inspect(gemm_no_tma_for_b, "f16[256,252], f16[252,256], f16[256,256], "
                               "128, 128, 64", arch="sm_90")
tile_lab.diagram(tr_gemm, block=(1, 0), tma=tma_report(insp_no_tma))

# %% [markdown]
# ### The red hatch: undetermined lanes
#
# The hatch on C says its values are **undetermined**. Here K = 252 is not a multiple of
# TK = 64: the last step of the K loop loads columns 192…255 of A and rows 192…255 of B, four
# of them past the end. These loads use cuTile's default `PaddingMode.UNDETERMINED`: the
# padded lanes hold whatever the hardware left there. The `mma` sums every column of A with
# every row of B, so four undetermined terms enter **every** element of C. The emulator pads
# with NaN (its *poison*) to make this visible, so every element of its C is NaN, and the
# sanitizer names the loads and the op that mixed them in:

# %%
# NBVAL_CHECK_OUTPUT
print("NaN in C:", int(np.isnan(C).sum()), "of", C.size)
C[:] = 0
for f in tile_lab.sanitize(gemm_no_tma_for_b, (2, 2), (A, B, C, 128, 128, 64)).findings:
    print(f"[{f.kind}] line {f.line}: {f.message[:150]}...")

# %% [markdown]
# On a GPU these lanes are whatever the load path leaves: a TMA copy fills lanes outside the
# tensor with zeros (so a TMA load often *looks* right), per-thread loads leave what the
# registers held — here B's load has TMA turned off. Notebook 18 shows the same hazard turning
# into real NaNs on an H100. Two fixes: pad with zeros, which add nothing to the sum
# (`padding_mode=ct.PaddingMode.ZERO` on both K-loop loads), or choose a K that TK divides.

# %%
# NBVAL_CHECK_OUTPUT
@ct.kernel
def gemm_no_tma_for_b_zero(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int],
                           TK: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bx, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(TK, TN), allow_tma=False,
                    padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))


C[:] = 0
print(tile_lab.sanitize(gemm_no_tma_for_b_zero, (2, 2), (A, B, C, 128, 128, 64)).summary())
want = A.astype(np.float32) @ B.astype(np.float32)
print("matches A @ B:", np.allclose(C.astype(np.float32), want, rtol=1e-2, atol=0.1))

# %% [markdown]
# **Exercise.** Pad K from 1020 to 1024 (the usual fix: allocate `A` with a padded row and take
# a view) and check with `show_tma` that the A load is TMA again.
