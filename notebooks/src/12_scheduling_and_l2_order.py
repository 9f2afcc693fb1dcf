# %% [markdown]
# # 12 · Scheduling: waves, the tail, persistent kernels and L2-friendly tile order
#
# A launch's blocks do not all run at once. The GPU hands them to its SMs in block-id order;
# each SM holds a few at a time (its *occupancy*), and a new block starts when one finishes.
# With equal-length blocks the grid runs in **waves** of `SMs × blocks per SM`, and a last
# partial wave — the **tail** — leaves SMs idle. Which blocks share a wave also decides which
# data they share in **L2**. The pictures below are a model (every block takes the same time);
# the numbers at the end were measured on a GPU.

# %%
import gzip
import json

import matplotlib.pyplot as plt
import numpy as np
import tile_lab
from tile_lab.examples.gemm import gemm_grouped, gemm_naive, gemm_persistent
from tile_lab.analysis.schedule import SmTimeline
from tile_lab.render.schedule import l2_order, sm_timeline

# %% [markdown]
# ## Waves and the tail
#
# 300 blocks on an H100 SXM (132 SMs), one block per SM: two full waves and a third with 36
# blocks, during which 96 SMs wait. Hover a block to outline its wave.

# %%
sm_timeline(300, gpu="H100 SXM")

# %% [markdown]
# Two blocks per SM (when registers and shared memory allow): the same 300 blocks need 2 waves.

# %%
sm_timeline(300, gpu="H100 SXM", blocks_per_sm=2)

# %% [markdown]
# The tail's cost is a saw-tooth in the grid size: right after a multiple of 132 a new wave
# starts nearly empty. The fraction of SM time spent working, for grids of 1 to 700 blocks:

# %%
blocks = np.arange(1, 701)
busy = [SmTimeline(int(b), 132).utilization for b in blocks]
fig, ax = plt.subplots(figsize=(8, 2.6))
ax.plot(blocks, busy, lw=1)
for w in range(1, 6):
    ax.axvline(132 * w, color="0.8", lw=0.8, zorder=0)
ax.set(xlabel="blocks in the grid", ylabel="SMs busy (fraction)", ylim=(0, 1.05),
       title="Tail effect on 132 SMs, one block per SM (model: equal-length blocks)")
plt.tight_layout()

# %% [markdown]
# For a square fp16 GEMM with 128×128 output tiles (one block per tile):

# %%
# NBVAL_CHECK_OUTPUT
print(f"{'N':>6} {'tiles':>6} {'waves':>6} {'last wave':>10} {'SMs busy':>9}")
for n in (2048, 3072, 4096, 6144, 8192):
    tl = SmTimeline((n // 128) ** 2, 132)
    last = tl.tail_blocks or tl.slots
    print(f"{n:6d} {tl.blocks:6d} {tl.waves:6d} {last:7d}/132 {tl.utilization:9.0%}")

# %% [markdown]
# ## Persistent kernels: one block per SM, looping over tiles
#
# A **persistent** kernel launches as many blocks as fit at once and lets each loop over the
# output tiles (`for tile in range(ct.bid(0), n_tiles, ct.num_blocks(0))`). There is still a
# tail (the tile count does not divide), but no per-block launch cost, and the tile order is
# the kernel's to choose. Emulated with 3 "SMs" on a 4×4-tile GEMM, the order view shows which
# block computed each C tile, and when:

# %%
rng = np.random.default_rng(0)
A = rng.standard_normal((256, 256)).astype(np.float16)
B = rng.standard_normal((256, 256)).astype(np.float16)
C = np.zeros((256, 256), np.float16)
tr_persistent = tile_lab.trace(gemm_persistent, (3,), (A, B, C, 64, 64, 64, 2, 3))
tile_lab.diagram(tr_persistent, view="order", arg="C")

# %%
# NBVAL_CHECK_OUTPUT
ref = A.astype(np.float32) @ B.astype(np.float32)
print("correct:", np.allclose(C.astype(np.float32), ref, atol=0.25, rtol=1e-2))
for b in range(3):
    tiles = [a.tile_index for a in tr_persistent.select(block=(b,), arg="C", kind="store")]
    print(f"block {b} computed C tiles {tiles}")

# %% [markdown]
# ## Tile order and L2: why grouping helps
#
# C tile `(m, n)` reads A's row panel `m` and B's column panel `n`, all of K. Tiles in the same
# wave that share a panel read it from DRAM once and from L2 after that. Linear order puts a
# couple of whole rows of C in a wave (the naive 2-D grid does the same down columns, since
# block x varies fastest): few A panels, but *every* B panel. **Grouped** order walks `GROUP`
# rows at a time, column by column, so a wave covers a compact block of C and reads far fewer
# panels. A small case first: 16×16 output tiles on 32 SMs, groups of 4 rows.

# %%
l2_order(16, 16, group_m=4, num_sms=32)

# %% [markdown]
# At full size — an 8192² fp16 GEMM with 128×128 tiles is 64×64 tiles on 132 SMs — the
# panels wave 0 needs, and what that means in bytes:

# %%
# NBVAL_CHECK_OUTPUT
row_major, grouped = l2_order(64, 64, group_m=8, num_sms="H100 SXM").data
panel_mib = 128 * 8192 * 2 / 2**20  # one 128-row (or column) panel of fp16, all K
for name, order in (("row-major", row_major), ("grouped, GROUP=8", grouped)):
    w = order.waves[0]
    print(f"{name:17s} wave 0: {len(w.a_panels):2d} A + {len(w.b_panels):2d} B panels = "
          f"{w.panels * panel_mib:4.0f} MiB to keep in L2 (H100: 50 MB); "
          f"mean {order.panels_per_wave:.1f} panels per wave")

# %% [markdown]
# The same two orders, from emulated kernels: the naive 2-D grid against `gemm_grouped`
# (a 1-D grid whose block `i` computes the `i`-th tile in grouped order, `GROUP = 2`). The numbers
# are the order in which tiles were visited.

# %%
C1, C2 = np.zeros_like(C), np.zeros_like(C)
tr_naive = tile_lab.trace(gemm_naive, (4, 4), (A, B, C1, 64, 64, 64))
tr_grouped = tile_lab.trace(gemm_grouped, (16,), (A, B, C2, 64, 64, 64, 2, 3))
tile_lab.diagram(tr_naive, view="order", arg="C")

# %%
tile_lab.diagram(tr_grouped, view="order", arg="C")

# %%
# NBVAL_CHECK_OUTPUT
print("same result:", np.array_equal(C1, C2))
first4 = lambda tr: [tr.select(block=(b,), arg="C", kind="store")[0].tile_index for b in range(4)]
print("first 4 blocks, naive:  ", first4(tr_naive), "(block x runs down a column)")
print("first 4 blocks, grouped:", first4(tr_grouped))

# %% [markdown]
# ## What it is worth on a GPU
#
# Recorded on the lent GPU (notebook 9 tunes these kernels): the best config of each variant,
# timed side by side with cuBLAS (`cupy.matmul`) in alternating rounds, cold L2.

# %%
# NBVAL_CHECK_OUTPUT
runs = json.load(gzip.open("data/tuning_gemm_8192_summary.json.gz", "rt"))
for r in runs:
    if "ratio_vs_cublas" in r:
        print(f"{r['phase']:26s} {r['best_tflops']:6.0f} TFLOPS  vs cuBLAS {r['ratio_vs_cublas']:.3f}x"
              f"  ({r['gpu']}, fp16 8192³)")

# %% [markdown]
# **Exercise.** With `SmTimeline`, compare 128×128 and 256×128 output tiles for N = 3072 and
# N = 6144 on an H100 (132 SMs, one block per SM): which choice has the smaller tail, and is
# the tile with the smaller tail also the one with more blocks to hide latency with?
