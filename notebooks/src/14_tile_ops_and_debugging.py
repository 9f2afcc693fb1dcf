# %% [markdown]
# # 14 · Tile algebra and debugging: broadcasting, promotion, scans, reshaping, rounding, printing
#
# Inside a kernel a tile behaves much like a small NumPy array: element-wise ops broadcast,
# mixed dtypes promote, and there are scans and shape ops. This notebook runs each rule on the
# emulator, draws what it did, and checks the claims that matter against the real compiler.
# Last: how to look inside a running kernel (`ct.print`, `ct.printf`, `ct.assert_`) and how to
# make the compiler check and compute things for you (`static_assert`, `static_eval`,
# `static_iter`).

# %%
import contextlib
import io

import matplotlib.pyplot as plt
import numpy as np
import cuda.tile as ct
import tile_lab

rng = np.random.default_rng(0)

# %% [markdown]
# ## Broadcasting
#
# Shapes align from the right; a dimension of 1 stretches. A `(TM, 1)` column plus a `(1, TN)`
# row is a `(TM, TN)` tile; a rank-1 `(TN,)` tile is promoted to `(1, TN)` first; a scalar
# stretches to anything.

# %%
@ct.kernel
def broadcast_demo(col, row, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    c = ct.load(col, index=(0,), shape=(TM,)).reshape((TM, 1))   # (TM, 1)
    r = ct.load(row, index=(0,), shape=(TN,))                      # (TN,) -> (1, TN)
    ct.store(out, index=(0, 0), tile=10 * c + r)                   # scalar, column, row

col = np.arange(4, dtype=np.float32)
row = np.arange(8, dtype=np.float32)
out = np.zeros((4, 8), np.float32)
tile_lab.emulate(broadcast_demo, (1,), (col, row, out, 4, 8))

fig, axes = plt.subplots(1, 3, figsize=(8, 2.2), gridspec_kw={"width_ratios": [1, 8, 8]})
for ax, data, title in zip(axes, (col[:, None], row[None, :], out),
                           ("col (4, 1)", "row (8,) → (1, 8)", "10·col + row  (4, 8)")):
    ax.imshow(data, cmap="viridis", aspect="equal")
    for (i, j), v in np.ndenumerate(data):
        ax.text(j, i, f"{v:g}", ha="center", va="center", color="w", fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([]), ax.set_yticks([])
plt.tight_layout()

# %% [markdown]
# ## Type promotion
#
# Mixed tiles of one kind promote to the wider type (`f16 + f32 → f32`); between kinds the float
# wins, at its own width (`int32 + f16 → f16`). A Python scalar adapts to the tile unless it is
# of a higher *kind* (`int32 tile + 1.5 → float32`, but `f16 tile * 2.5 → f16`).
# The table is what the emulator computes for `a + b`, printed with `ct.print` from inside the
# kernel:

# %%
@ct.kernel
def sum_dtype(a, b):
    ct.print((ct.load(a, index=(0,), shape=(4,)) + ct.load(b, index=(0,), shape=(4,))).dtype)

@ct.kernel
def scalar_dtypes(a):
    x = ct.load(a, index=(0,), shape=(4,))
    ct.print((x + 1).dtype, (x + 1.5).dtype)

names = ["int8", "int32", "float16", "float32"]
result = {}
for p in names:
    for q in names:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            tile_lab.emulate(sum_dtype, (1,), (np.zeros(4, p), np.zeros(4, q)))
        result[p, q] = buf.getvalue().strip()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        tile_lab.emulate(scalar_dtypes, (1,), (np.zeros(4, p),))
    result[p, "1"], result[p, "1.5"] = buf.getvalue().split()

cols = names + ["1", "1.5"]
cells = [[result[p, q] for q in cols] for p in names]
fig, ax = plt.subplots(figsize=(8, 1.9))
ax.axis("off")
palette = {"int8": "#F0E442", "int32": "#E69F00", "float16": "#A6D8F0", "float32": "#56B4E9"}
t = ax.table(cellText=cells, rowLabels=[f"{p} tile" for p in names],
             colLabels=[f"+ {q} tile" if q in names else f"+ {q}" for q in cols],
             cellColours=[[palette.get(c, "w") for c in row_] for row_ in cells], loc="center")
t.scale(1, 1.3)
ax.set_title("dtype of a + b (emulator)", fontsize=9)
plt.tight_layout()

# %% [markdown]
# The compiler agrees: `static_assert` checks the dtypes at compile time, and this compiles for
# sm_90 (a wrong claim would fail the compile with the message):

# %%
# NBVAL_CHECK_OUTPUT
@ct.kernel
def promotion_claims(h, f, n, out):
    x = ct.load(h, index=(0,), shape=(8,))
    y = ct.load(f, index=(0,), shape=(8,))
    k = ct.load(n, index=(0,), shape=(8,))
    ct.static_assert((x + y).dtype == ct.float32, "f16 + f32 -> f32")
    ct.static_assert((x * 2.5).dtype == ct.float16, "a float scalar keeps f16")
    ct.static_assert((k + 1.5).dtype == ct.float32, "int tile + float scalar -> f32")
    ct.static_assert((k + x).dtype == ct.float16, "int32 tile + f16 tile -> f16 (the float kind wins)")
    ct.store(out, index=(0,), tile=x + y)

insp = tile_lab.inspect(promotion_claims, "f16[8], f32[8], i32[8], f32[8]", arch="sm_90")
print("compiled:", insp.kernel_name, "for", insp.arch)

# %% [markdown]
# ## Scans: `cumsum` and a custom `scan`
#
# `ct.cumsum(t, axis)` is the inclusive prefix sum along an axis; `ct.scan(t, axis, func,
# identity)` takes any associative function — here a running maximum.

# %%
@ct.kernel
def scans(x, csum, cmax, T: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(T,))
    ct.store(csum, index=(0,), tile=ct.cumsum(t, axis=0))
    ct.store(cmax, index=(0,), tile=ct.scan(t, 0, lambda a, b: ct.maximum(a, b), -np.inf))

x = rng.standard_normal(32).astype(np.float32)
csum, cmax = np.zeros_like(x), np.zeros_like(x)
tile_lab.emulate(scans, (1,), (x, csum, cmax, 32))
fig, ax = plt.subplots(figsize=(8, 2.4))
ax.bar(range(32), x, color="0.75", label="x")
ax.plot(csum, "o-", ms=3, label="ct.cumsum(x)")
ax.step(range(32), cmax, where="mid", label="ct.scan(x, maximum)")
ax.legend(fontsize=8), ax.set_xlabel("lane")
plt.tight_layout()

# %%
# NBVAL_CHECK_OUTPUT
print("cumsum matches NumPy:", np.allclose(csum, np.cumsum(x), atol=1e-5))
print("running max matches NumPy:", np.array_equal(cmax, np.maximum.accumulate(x)))

# %% [markdown]
# ## Reshaping tiles: `transpose`, `permute`, `cat`, `extract`, `insert`
#
# `extract(t, index, shape)` cuts `t` into `shape`-sized sub-tiles and returns sub-tile
# `index`; `insert` writes one back; `cat` joins two tiles along an axis; `transpose` and
# `permute` reorder axes. Each panel below is the output of one kernel step on a 4×8 tile
# numbered 0…31:

# %%
@ct.kernel
def shapes(x, o_t, o_cat, o_ins, o_perm):
    t = ct.load(x, index=(0, 0), shape=(4, 8))
    left = ct.extract(t, index=(0, 0), shape=(4, 4))
    right = ct.extract(t, index=(0, 1), shape=(4, 4))
    ct.store(o_t, index=(0, 0), tile=ct.transpose(t))                      # (8, 4)
    ct.store(o_cat, index=(0, 0), tile=ct.cat((right, left), axis=1))     # halves swapped
    ct.store(o_ins, index=(0, 0),
             tile=ct.insert(t, index=(1, 1), value=ct.full((2, 4), -1.0, dtype=ct.float32)))
    cube = t.reshape((2, 2, 8))
    ct.store(o_perm, index=(0, 0, 0), tile=ct.permute(cube, (2, 0, 1)))   # (8, 2, 2)

xs = np.arange(32, dtype=np.float32).reshape(4, 8)
outs = [np.zeros((8, 4), np.float32), np.zeros((4, 8), np.float32),
        np.zeros((4, 8), np.float32), np.zeros((8, 2, 2), np.float32)]
tile_lab.emulate(shapes, (1,), (xs, *outs))
panels = [(xs, "t (4, 8)"), (outs[0], "transpose(t)"), (outs[1], "cat((right, left), 1)"),
          (outs[2], "insert(t, (1, 1), -1s (2, 4))"), (outs[3].reshape(8, 4),
                                                      "permute(t.reshape(2,2,8), (2,0,1))")]
fig, axes = plt.subplots(1, 5, figsize=(11, 2.6))
for ax, (data, title) in zip(axes, panels):
    ax.imshow(data, cmap="coolwarm", vmin=-1, vmax=31)
    for (i, j), v in np.ndenumerate(data):
        ax.text(j, i, f"{v:g}", ha="center", va="center", fontsize=6)
    ax.set_title(title, fontsize=8), ax.set_xticks([]), ax.set_yticks([])
plt.tight_layout()

# %%
# NBVAL_CHECK_OUTPUT
expect_ins = xs.copy()
expect_ins[2:4, 4:8] = -1
print("transpose:", np.array_equal(outs[0], xs.T))
print("cat:", np.array_equal(outs[1], np.concatenate([xs[:, 4:], xs[:, :4]], axis=1)))
print("insert:", np.array_equal(outs[2], expect_ins))
print("permute:", np.array_equal(outs[3], xs.reshape(2, 2, 8).transpose(2, 0, 1)))

# %% [markdown]
# ## Rounding modes
#
# `astype`, arithmetic and reductions take `rounding_mode=ct.RoundingMode.…` (`RN` nearest-even,
# the default; `RZ` toward zero; `RM`/`RP` toward −∞/+∞; `RA` nearest, ties away). The compiler
# carries the mode into the Tile IR and down to the PTX conversion:

# %%
# NBVAL_CHECK_OUTPUT
import re

@ct.kernel
def to_half(x, y, TOWARD_ZERO: ct.Constant[int], T: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,))
    if TOWARD_ZERO:
        h = ct.astype(t, ct.float16, rounding_mode=ct.RoundingMode.RZ)
    else:
        h = ct.astype(t, ct.float16)
    ct.store(y, index=(ct.bid(0),), tile=h)

for rz in (0, 1):
    ins = tile_lab.inspect(to_half, f"f32[1024], f16[1024], {rz}, 256", arch="sm_90")
    ftof = next(ln.strip() for ln in ins.tileir.splitlines() if "ftof" in ln).split(":")[0]
    cvt = re.findall(r"cvt\.r\w\.f16x2\.f32", ins.ptx)[0]
    print(f"TOWARD_ZERO={rz}: Tile IR {ftof:36s} PTX {cvt}")

# %% [markdown]
# What the two modes do to values between two neighbouring fp16 numbers (1 and 1 + 2⁻¹⁰),
# computed in NumPy — the emulator itself always rounds to nearest-even and says so in its docs:

# %%
v = np.linspace(1.0, 1.0 + 2**-10, 201, dtype=np.float32)
rn = v.astype(np.float16)
bits = v.view(np.uint32) & np.uint32(0xFFFFE000)   # drop the 13 mantissa bits fp16 lacks
rz = bits.view(np.float32).astype(np.float16)
fig, ax = plt.subplots(figsize=(6, 2.4))
ax.plot(v, v, color="0.6", lw=1, label="exact")
ax.step(v, rn.astype(np.float32), where="post", label="RN (nearest even)")
ax.step(v, rz.astype(np.float32), where="post", ls="--", label="RZ (toward zero)")
ax.set(xlabel="float32 value", ylabel="as float16")
ax.legend(fontsize=8)
plt.tight_layout()

# %% [markdown]
# ## Looking inside a running kernel
#
# `ct.print` (Python-style) and `ct.printf` (C-style) print from every block; `ct.assert_`
# stops a kernel whose tile has a false lane. On the emulator blocks run in order, so the output
# is readable and repeatable; on a GPU the lines of different blocks interleave.

# %%
# NBVAL_CHECK_OUTPUT
@ct.kernel
def inspect_blocks(x, T: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,))
    ct.print("block", ct.bid(0), "max", ct.max(t))
    ct.printf("block %d: sum=%.1f\n", ct.bid(0), ct.sum(t))
    ct.assert_(t >= 0, "inputs must be non-negative")

data = np.arange(48, dtype=np.float32)
tile_lab.emulate(inspect_blocks, (3,), (data, 16))

# %%
# NBVAL_CHECK_OUTPUT
data[37] = -1.0
try:
    tile_lab.emulate(inspect_blocks, (3,), (data, 16))
except tile_lab.TileLabError as e:
    print(type(e).__name__, "—", str(e).splitlines()[0])

# %% [markdown]
# ## Work at compile time: `static_assert`, `static_eval`, `static_iter`
#
# Constants (`ct.Constant` parameters, shapes, dtypes) are known when the kernel compiles.
# `static_assert` refuses a bad configuration with your message instead of a wrong answer;
# `static_eval` computes a Python value then; `static_iter` unrolls a loop over a Python tuple —
# here three taps of a stencil, each its own load on its own source line in the trace.

# %%
@ct.kernel
def taps(x, y, T: ct.Constant[int], OFFSETS: ct.Constant[tuple]):
    ct.static_assert(T % 8 == 0, "T must be a multiple of 8")
    width = ct.static_eval(len(OFFSETS))
    i, n = ct.bid(0), y.shape[0]
    acc = ct.full((T,), 0.0, dtype=ct.float32)
    for off in ct.static_iter(OFFSETS):            # unrolled: one load per offset
        acc = acc + ct.load(x.slice(0, off, off + n), index=(i,), shape=(T,))
    ct.store(y, index=(i,), tile=acc / width)

xs = rng.standard_normal(36).astype(np.float32)
ys = np.zeros(32, np.float32)
tr_taps = tile_lab.trace(taps, (4,), (xs, ys, 8, (0, 2, 4)))
tile_lab.diagram(tr_taps, block=(1,))

# %%
# NBVAL_CHECK_OUTPUT
print("matches NumPy:", np.allclose(ys, (xs[0:32] + xs[2:34] + xs[4:36]) / 3))
print("loads of x by block 1:", [(a.box_start, a.box_stop) for a in tr_taps.select(block=(1,), arg="x")])
try:
    tile_lab.emulate(taps, (4,), (xs, ys, 4, (0, 2)))
except tile_lab.TileLabError as e:
    print(type(e).__name__, "—", str(e).splitlines()[0])
