# %% [markdown]
# # 4 · Matrix multiply: the K-loop, `mma`, accumulator types
#
# Block (bx, by) computes one TM×TN tile of C. It walks along K: at step k it loads the A tile
# (bx, k) and the B tile (k, by) and accumulates their product with `ct.mma` into a float32
# accumulator — fp16 inputs, fp32 sums, as the tensor cores do.

# %%
import numpy as np
import cuda.tile as ct
import tile_lab

%load_ext tile_lab

# %%
%%tile --sig "f16[256,128], f16[128,256], f32[256,256], 64, 64, 32" --arch sm_90 --show source,tileir
@ct.kernel
def matmul(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bx, k), shape=(TM, TK))
        b = ct.load(B, index=(k, by), shape=(TK, TN))
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))

# %% [markdown]
# The Tile IR shows the loop (`for`), the two `load_view_tko` per iteration and the `mma` on
# `tile<64x32xf16>` × `tile<32x64xf16>` into `tile<64x64xf32>`.

# %%
# NBVAL_CHECK_OUTPUT
M, K, N = 256, 128, 256
rng = np.random.default_rng(0)
A = rng.standard_normal((M, K)).astype(np.float16)
B = rng.standard_normal((K, N)).astype(np.float16)
C = np.zeros((M, N), np.float32)
tr = tile_lab.trace(matmul, (M // 64, N // 64), (A, B, C, 64, 64, 32))
ref = A.astype(np.float32) @ B.astype(np.float32)
print("max abs error vs fp32 NumPy:", float(np.abs(C - ref).max()) < 1e-2)
print("loads by block (1, 2):", len(tr.select(block=(1, 2), kind="load")), "=",
      K // 32, "K steps × 2")

# %% [markdown]
# ## The A/B/C picture for one block
#
# Block (1, 2) reads row-panel 1 of A and column-panel 2 of B — every k — and writes one tile of C.

# %%
tile_lab.diagram(tr, block=(1, 2), view="gemm")

# %% [markdown]
# Step through the K loop: iteration 2 of block (1, 2) loads A tile (1, 2) and B tile (2, 2).

# %%
# NBVAL_CHECK_OUTPUT
for a in tr.select(block=(1, 2), iteration=2, kind="load"):
    print(a.arg, "tile", a.tile_index, "line", a.line)

# %% [markdown]
# ## Accumulator types matter
#
# Accumulating in fp16 loses precision as K grows; fp32 accumulation (what `mma` does with an fp32
# `acc`) keeps it. Compare the error of the two against a float64 reference:

# %%
@ct.kernel
def matmul_acc16(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float16)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bx, k), shape=(TM, TK))
        b = ct.load(B, index=(k, by), shape=(TK, TN))
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))

# %%
# NBVAL_CHECK_OUTPUT
K2 = 1024
A2 = rng.standard_normal((64, K2)).astype(np.float16)
B2 = rng.standard_normal((K2, 64)).astype(np.float16)
exact = A2.astype(np.float64) @ B2.astype(np.float64)
for name, kern in [("fp32 acc", matmul), ("fp16 acc", matmul_acc16)]:
    C2 = np.zeros((64, 64), np.float32)
    tile_lab.emulate(kern, (1, 1), (A2, B2, C2, 64, 64, 32))
    rel = np.linalg.norm(C2 - exact) / np.linalg.norm(exact)
    print(f"{name}: relative error ~1e{int(np.floor(np.log10(rel)))}")

# %% [markdown]
# ## When the tile grid cannot fill the GPU: M = 128
#
# At 128×8192×8192 a grid of 128×128 output tiles has only 1 × 64 = 64 tiles for an H100/H200's
# 132 SMs: more than half the GPU idles, and each busy SM has one tile's loads of B in flight
# (B is 128 MB, A 2 MB: the product is a stream of B). On the H100 the best tile-grid kernel of
# the sweep (64×128 tiles, split-K 2) reached 0.235× cuBLAS there. One way out is a different
# *schedule*: cut the K loop too. **Stream-K** gives every block an equal contiguous range of
# the flattened (output tile, K step) iterations; a tile cut between blocks is summed by the
# last block to arrive, from a workspace (`tile_lab.examples.gemm_schedules.gemm_streamk`).

# %%
# NBVAL_CHECK_OUTPUT
print("output tiles at 128x8192, 128x128 tiles:", (128 // 128) * (8192 // 128), "for 132 SMs")
from tile_lab.examples.gemm_schedules import gemm_streamk, streamk_grid

Ms, Ns, Ks = 64, 128, 256          # a small skinny product: 2 output tiles of 8 K steps
As = rng.standard_normal((Ms, Ks)).astype(np.float16)
Bs = rng.standard_normal((Ks, Ns)).astype(np.float16)
Cs = np.zeros((Ms, Ns), np.float16)
grid_sk = streamk_grid(Ms, Ns, Ks, 64, 64, 32, slots=5)   # 16 iterations over 5 blocks
W = np.zeros((2 * grid_sk[0], 64, 64), np.float32)
arrived = np.zeros(2, np.int32)
tr_sk = tile_lab.trace(gemm_streamk, grid_sk, (As, Bs, Cs, W, arrived, 64, 64, 32, 2, 1))
ref_s = As.astype(np.float32) @ Bs.astype(np.float32)
print("blocks:", grid_sk[0], "| matches NumPy:", np.allclose(Cs.astype(np.float32), ref_s,
                                                           atol=0.1, rtol=1e-2),
      "| counters left clean:", not arrived.any())
for b in range(grid_sk[0]):
    steps = [a.tile_index for a in tr_sk.select(block=(b,), kind="load") if a.arg == "B"]
    print(f"block {b}: B tiles {steps[0]} .. {steps[-1]} ({len(steps)} K steps)")

# %% [markdown]
# Block 2's range crosses from output tile 0 into tile 1: its B loads (the K steps it owns)
# in the picture below. Each block streams its own slice of B, so all blocks (all SMs, on the
# real shape) keep loads in flight.

# %%
tile_lab.diagram(tr_sk, block=(2,), view="gemm")

# %% [markdown]
# On the H200 stream-K (128×64 tiles, K step 256) took about 79 µs against cuBLAS's 44: better
# than the tile grid, still 0.57×. What won in the end is not a schedule at all but the *plain*
# tile grid on a **2-CTA cluster**: each 128×128 tile is split between two CTAs of a cluster
# (128×64 each), and A's tile is loaded once and multicast to both. 64 tiles × 2 CTAs keep 128
# of the 132 SMs streaming B, without a workspace or a fix-up. Splitting such wide tiles along
# K as well (`gemm_splitk_wide`, `gemm_streamk_wide`: every contributor stores its fp32 partial,
# the last to arrive sums the workspace in row pieces) lost: the last arriver's reduction is a
# serial tail that each extra split makes longer. The cell below reads what the workbench's
# tuner measured on the H200 (recorded in `data/`; each row's JSON keeps every sample's GPU
# state).

# %%
# NBVAL_CHECK_OUTPUT
import gzip
import json


def recorded_row(path, name):
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    return next(r for r in doc["rows"] if r["name"] == name), doc["env"]["provenance"]["gpu"]


first, gpu = recorded_row("data/gemm_sweep_skinny3_h200.json.gz", "fp16 128x8192x8192")
print(f"{gpu}, fp16 128x8192x8192, the first run with the wide kernels (median per config):")
for t in sorted(first["tuning"]["trials"], key=lambda t: t["median_us"]):
    c = t["config"]
    tile = f"{c['TM']}x{c['TN']}x{c['TK']}, SPLIT {c['SPLIT']}, {c['num_ctas']}-CTA, LAT {c['LAT']}"
    print(f"  {c['schedule']:12s} {tile:35s} {t['median_us']:6.1f} us")
sweep, _ = recorded_row("data/gemm_sweep_h200.json.gz", "fp16 128x8192x8192")
c = sweep["tuning"]["config"]
print(f"full sweep winner: {c['schedule']} {c['TM']}x{c['TN']}x{c['TK']}, SPLIT {c['SPLIT']}, "
      f"{c['num_ctas']}-CTA, LAT {c['LAT']}; timed against cuBLAS twice per regime:")
for run in sweep["runs"]:
    for r in run["rows"]:
        print(f"  {r['regime']:9s} ours {r['ours_median_s'] * 1e6:.1f} us vs {r['baseline']} "
              f"{r['baseline_median_s'] * 1e6:.1f} us: {r['ratio']:.3f}x")
