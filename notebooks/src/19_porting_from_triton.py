# %% [markdown]
# # 19 · Porting from Triton: three kernels, side by side
#
# Most cuTile kernels will start life as Triton kernels. This notebook ports three of them —
# **vector add with a mask**, a **row softmax** and a **tiled GEMM** — and after each port puts
# the two side by side with `tile_lab.compare`: both sources, both compiled for **sm_90 on this
# CPU** (Triton with the `ptxas` its wheel ships, cuTile with `tileiras`), registers, shared
# memory and SASS instruction mix, and both run on the same inputs — the Triton kernel in
# **Triton's interpreter**, the cuTile port in **tile_lab's emulator** — with the outputs
# compared element by element in the crosscheck's classes (identical, different by design,
# undetermined, mismatch).
#
# The four differences to learn:
#
# | Triton | cuTile |
# | --- | --- |
# | `tl.program_id(axis)` | `ct.bid(axis)` |
# | pointer arithmetic: `x_ptr + pid * BLOCK + tl.arange(0, BLOCK)` | a tiled view: `ct.load(x, index=(bid,), shape=(TILE,))` |
# | a `mask=` on every load and store, `other=` for the masked lanes | the array's bounds mask; `padding_mode=` says what out-of-bounds lanes hold |
# | `tl.dot(a, b, acc)` | `ct.mma(a, b, acc)` |
#
# Triton is optional for tile_lab: `pip install "tile_lab[triton]"` (Triton and a CPU torch;
# no GPU needed). The kernels of this notebook are also in `tile_lab.examples.triton_ports`,
# which `bench/triton_vs_cutile.py` races on a GPU (section 4).

# %%
import gzip
import inspect
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import cuda.tile as ct
import tile_lab
from tile_lab.examples import triton_ports
from tile_lab.gpu import gpu_available

%load_ext tile_lab
GPU = gpu_available()


EXAMPLES = inspect.getsource(triton_ports)


def same_as_example(cmp):
    """Are both kernels of the comparison, as compiled, word for word in
    tile_lab.examples.triton_ports (the kernels the GPU recording of section 4 timed)?"""
    return all(side.inspection.source.strip() in EXAMPLES for side in (cmp.triton, cmp.cutile))


def show_pair(cmp):
    """The comparison's verdict, resources and mix, one line each."""
    t, c = cmp.triton, cmp.cutile
    print(cmp.outputs.summary())
    print(f"{'':22}{'Triton':>10}{'cuTile':>10}")
    print(f"{'registers / thread':22}{t.resources.registers:>10}{c.resources.registers:>10}")
    print(f"{'shared memory (B)':22}{t.resources.shared_bytes:>10}{c.resources.shared_bytes:>10}")
    print(f"{'SASS instructions':22}{t.instructions:>10}{c.instructions:>10}")
    for cls in dict.fromkeys([*t.mix, *c.mix]):
        print(f"{'  ' + cls:22}{t.mix.get(cls, 0):>10}{c.mix.get(cls, 0):>10}")

# %% [markdown]
# ## 1 · Vector add with a mask
#
# `%%tile --lang triton` compiles a `@triton.jit` cell for sm_90 and shows its stages in the
# same inspect view as a cuTile cell: the source, **Triton IR** (`ttir`), **TritonGPU IR**
# (`ttgir`, where the layouts appear), PTX and SASS, every line tied to its source line. `--sig`
# takes Triton's own notation: a type per parameter, a value per `tl.constexpr`.

# %%
%%tile --lang triton --sig "*fp32, *fp32, *fp32, i32, 1024" --show source,ttir,sass
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)

# %% [markdown]
# The port. `tl.program_id(0)` becomes `ct.bid(0)`. The Triton kernel computes an address per
# lane (`x_ptr + offs`); the cuTile kernel asks for **tile number `bid`** of shape `(TILE,)` of
# the array `x`, which knows its own length. So there is no `n` and no mask: lanes past the end
# of the array are padded on load and dropped on store.

# %%
%%tile --sig "f32[1000], f32[1000], f32[1000], 1024" --arch sm_90 --show source,sass
import cuda.tile as ct


@ct.kernel
def vector_add(x, y, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    a = ct.load(x, index=(bid,), shape=(TILE,))
    b = ct.load(y, index=(bid,), shape=(TILE,))
    ct.store(out, index=(bid,), tile=a + b)

# %% [markdown]
# The picture: the last block of a 13-element add with blocks of 8. Triton's mask switches the
# three lanes past `n` off; cuTile's tile 1 reaches past the array's end, and the array's
# bounds do the same job.

# %%
def lanes(ax, title, labels, on, off_label):
    for i, (label, keep) in enumerate(zip(labels, on)):
        ax.add_patch(plt.Rectangle((i, 0), 0.92, 0.92, color="#4c9a5f" if keep else "#c8c8c8"))
        ax.text(i + 0.46, 0.46, label, ha="center", va="center", fontsize=8,
                color="white" if keep else "#444")
    ax.text(len(labels) + 0.3, 0.46, off_label, va="center", fontsize=8)
    ax.set_title(title, fontsize=9, loc="left")
    ax.set_xlim(0, len(labels) + 5.5)
    ax.set_ylim(0, 1)
    ax.axis("off")


fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 2.0))
offs = list(range(8, 16))
lanes(top, "Triton, pid = 1:  offs = pid * 8 + tl.arange(0, 8),  mask = offs < 13",
      [str(o) for o in offs], [o < 13 for o in offs], "grey: mask False")
lanes(bottom, "cuTile, bid = 1:  ct.load(x, index=(1,), shape=(8,)) on an array of 13",
      [str(o) for o in offs], [o < 13 for o in offs], "grey: past the array")
plt.tight_layout()
plt.show()

# %% [markdown]
# Side by side, on the same inputs (1000 elements, tiles of 1024: one ragged block).
# `tile_lab.compare(triton_kernel, cutile_kernel, args=..., cutile_args=..., grid=...)` pairs the
# array arguments in order (a different count, shape or dtype is an error naming both).

# %%
# NBVAL_CHECK_OUTPUT
rng = np.random.default_rng(0)
x, y = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
out = np.zeros(1000, np.float32)
vadd = tile_lab.compare(add_kernel, vector_add, args=(x, y, out, 1000, 1024),
                        cutile_args=(x, y, out, 1024), grid=(1,), arch="sm_90")
print(vadd.outputs.summary())
print("same kernels as tile_lab.examples.triton_ports:", same_as_example(vadd))

# %%
show_pair(vadd)
vadd

# %% [markdown]
# ## 2 · Row softmax
#
# One program (one block) per row. Triton loads the row under a mask with `other=-inf`, so the
# padded lanes cannot win the max and add `exp(-inf) = 0` to the sum. cuTile says the same with
# `padding_mode=ct.PaddingMode.NEG_INF`: the lanes past the row's end hold −∞. The reductions
# differ in shape only: Triton's row is a 1-D block (`axis=0`); cuTile's is a `(1, TILE_N)` tile
# reduced along `axis=1` with `keepdims=True`, so it broadcasts back over the row.

# %%
%%tile --lang triton --sig "*fp32, *fp32, i32, i32, 128" --show source,ttgir
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * row_stride + cols, num / den, mask=mask)

# %%
@ct.kernel
def softmax_rows(x, out, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
    t = t - ct.max(t, axis=1, keepdims=True)
    num = ct.exp(t)
    den = ct.sum(num, axis=1, keepdims=True)
    ct.store(out, index=(row, 0), tile=num / den)

# %%
# NBVAL_CHECK_OUTPUT
xs = rng.standard_normal((64, 100), dtype=np.float32)
outs = np.zeros_like(xs)
smax = tile_lab.compare(softmax_kernel, softmax_rows, args=(xs, outs, 100, 100, 128),
                        cutile_args=(xs, outs, 128), grid=(64,), arch="sm_90")
print(smax.outputs.summary())
print("same kernels as tile_lab.examples.triton_ports:", same_as_example(smax))

# %%
show_pair(smax)

# %% [markdown]
# ## 3 · Tiled GEMM
#
# Here the languages differ most. Triton builds a **grid of pointers** for the A and B tiles
# (`offs_m[:, None] * K + offs_k[None, :]`), masks both edges, and walks K by bumping the
# pointers (`a_ptrs += BK`). cuTile asks for **tile `(bm, k)` of A** and **tile `(k, bn)` of B**:
# the array's shape and strides are the array's business, and `padding_mode=ZERO` pads the
# ragged edges with zeros, which add nothing to the sum (what Triton's `other=0.0` does).
# `tl.dot(a, b, acc)` and `ct.mma(a, b, acc)` are the same tensor-core product with an fp32
# accumulator.

# %%
%%tile --lang triton --sig "*fp16, *fp16, *fp32, i32, i32, i32, 64, 64, 32" --show source,sass
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # row-major, contiguous: a row of A is K elements apart, a row of B and of C N apart
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        k_left = K - k
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

# %%
@ct.kernel
def matmul_tiles(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.full((BM, BN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(BM, BK))):
        ta = ct.load(a, index=(bm, k), shape=(BM, BK), padding_mode=ct.PaddingMode.ZERO)
        tb = ct.load(b, index=(k, bn), shape=(BK, BN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=acc)

# %% [markdown]
# The picture: block `(1, 2)` of a 4 × 4 grid. `tl.program_id(0), tl.program_id(1)` are
# `ct.bid(0), ct.bid(1)`; at step `k` the block reads tile `(1, k)` of A and tile `(k, 2)` of B
# — in Triton as the pointer grids `a_ptrs`, `b_ptrs` moved `k` steps along K, in cuTile as
# those tile indices.

# %%
def tiles(ax, title, rows, cols, hot, label):
    for r in range(rows):
        for c in range(cols):
            on = (r, c) in hot
            ax.add_patch(plt.Rectangle((c, rows - 1 - r), 0.94, 0.94,
                                       color="#3b6ea8" if on else "#e3e3e3"))
            ax.text(c + 0.47, rows - 0.53 - r, label(r, c), ha="center", va="center",
                    fontsize=7, color="white" if on else "#555")
    ax.set_title(title, fontsize=9)
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_aspect("equal")
    ax.axis("off")


fig, axes = plt.subplots(1, 3, figsize=(9, 3.3))
tiles(axes[0], "A: tiles (1, k)", 4, 4, {(1, k) for k in range(4)}, lambda r, c: f"{r},{c}")
tiles(axes[1], "B: tiles (k, 2)", 4, 4, {(k, 2) for k in range(4)}, lambda r, c: f"{r},{c}")
tiles(axes[2], "C: block (1, 2) writes this", 4, 4, {(1, 2)}, lambda r, c: f"{r},{c}")
plt.tight_layout()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
A = rng.standard_normal((80, 80)).astype(np.float16)
B = rng.standard_normal((80, 80)).astype(np.float16)
C = np.zeros((80, 80), np.float32)
gemm = tile_lab.compare(matmul_kernel, matmul_tiles,
                        args=(A, B, C, 80, 80, 80, 64, 64, 32),
                        cutile_args=(A, B, C, 64, 64, 32), grid=(2, 2), arch="sm_90")
print(gemm.outputs.summary())
print("same kernels as tile_lab.examples.triton_ports:", same_as_example(gemm))
print("tensor-core instructions in both:",
      gemm.triton.mix.get("tensor core", 0) > 0 and gemm.cutile.mix.get("tensor core", 0) > 0)

# %%
show_pair(gemm)
gemm

# %% [markdown]
# On a CPU both sides compute the products in float32 from the same fp16 inputs; on a GPU each
# tensor-core unit sums in its own order, so there the two GEMMs may differ by design (the
# crosscheck names `tl.dot` and `ct.mma` as summation-order sites and allows for it).
#
# ## 4 · On a GPU
#
# `bench/triton_vs_cutile.py` runs the three pairs of `tile_lab.examples.triton_ports` (the
# kernels above, checked equal in each section) on a GPU at larger sizes (2²⁴ elements; 4096 ×
# 4096 softmax; 2048³ fp16 GEMM): each launched once on copies of the same inputs with the
# outputs compared in the crosscheck's classes, then raced with `tile_lab.compare_timed` in
# both regimes (burst and sustained, ABBA rounds, L2 flushed before every sample). It writes
# `notebooks/data/triton_vs_cutile.json.gz` (gzipped JSON) with the device's provenance; this
# cell shows it (a ratio above 1 means cuTile took longer).

# %%
DATA = Path("data/triton_vs_cutile.json.gz")  # gzipped JSON
if DATA.exists():
    rec = json.loads(gzip.decompress(DATA.read_bytes()))
    p = rec["provenance"]
    print(f"recorded {p.get('recorded')} on {p.get('gpu')} (driver {p.get('driver')}), "
          f"cuda.tile {p.get('cuda_tile')}, tileiras {p.get('tileiras')}, "
          f"triton {p.get('triton')}, torch {p.get('torch')}; {rec['mode']} L2")
    for pair in rec["pairs"]:
        print(f"{pair['pair']} (size {pair['size']}): outputs {pair['outputs']['agreement']}; "
              f"registers {pair['triton']['resources']['registers']} vs "
              f"{pair['cutile']['resources']['registers']}")
        for r in pair["timing"]["rows"]:
            print(f"  {r['regime']:9s} Triton {r['triton_us']:9.1f} us   cuTile "
                  f"{r['cutile_us']:9.1f} us   cuTile / Triton {r['ratio']:.3f} "
                  f"({r['ci_low']:.3f}-{r['ci_high']:.3f})")
else:
    print("No GPU recording exists yet: notebooks/data/triton_vs_cutile.json.gz is written on a "
          "GPU by `python bench/triton_vs_cutile.py`. Sections 1-3 above stand on their own.")
if GPU:
    print("A GPU is here: run `python bench/triton_vs_cutile.py --out /tmp/mine.json` to "
          "measure it yourself (a few minutes).")
