# %% [markdown]
# # 13 · Pipelining and clusters: `latency` hints, prefetch depth, `num_ctas`, `ByTarget`
#
# In a K-loop every iteration waits for two tile loads before its `mma`. The compiler hides that
# wait by **prefetching**: while the tensor cores work on step k, the loads for steps k+1 … k+d
# are already in flight, each in its own shared-memory buffer. The per-load `latency=` hint
# (1 = light DRAM traffic … 10 = heavy) tells it how much to hide, and so how deep to pipeline.
# **Clusters** (`num_ctas`) let 2+ blocks on neighbouring SMs share one load (TMA multicast).
# All compiles below run on this CPU; the GPU numbers at the end are recorded.

# %%
import re

import matplotlib.pyplot as plt
import cuda.tile as ct
import tile_lab
from tile_lab.examples.gemm import gemm_grouped, gemm_naive
from tile_lab.gpu.measurement import Measurement
from tile_lab.analysis.pipeline import k_loop
from tile_lab.render.pipeline import pipeline_picture
from tile_lab.tuning import TuningStore

# %% [markdown]
# ## What prefetch depth buys: a model
#
# A K-loop of 8 steps where one step's loads take 3 time units and its `mma` 1 unit. Depth 1:
# load, wait, compute, repeat. Depth d: up to d steps' loads in flight, each step's `mma`
# starting once its own tiles have arrived. (A model: real loads share DRAM bandwidth.)

# %%
def schedule(steps, load, compute, depth):
    """(start, end) of each step's loads and mma, with at most `depth` steps' loads in flight."""
    loads, mmas = [], []
    for k in range(steps):
        free = mmas[k - depth][1] if k >= depth else 0  # the buffer step k - depth used is free
        start = max(free, loads[k - 1][0] if k else 0)  # loads are issued in order
        loads.append((start, start + load))
        m0 = max(loads[k][1], mmas[k - 1][1] if k else 0)  # needs its tiles and the tensor cores
        mmas.append((m0, m0 + compute))
    return loads, mmas

depths = (1, 2, 4)
fig, axes = plt.subplots(3, 1, figsize=(9, 5.4), sharex=True,
                         gridspec_kw={"height_ratios": [d + 1 for d in depths]})
for ax, depth in zip(axes, depths):
    loads, mmas = schedule(8, 3, 1, depth)
    # loads in flight at once overlap in time: each buffer stage gets its own lane
    for k, ((l0, l1), (m0, m1)) in enumerate(zip(loads, mmas)):
        lane = 1 + k % depth
        ax.broken_barh([(l0, l1 - l0)], (lane + 0.1, 0.8), color="#56B4E9", edgecolor="k",
                       lw=0.3)
        ax.broken_barh([(m0, m1 - m0)], (0.1, 0.8), color="#E69F00", edgecolor="k", lw=0.3)
        ax.text((l0 + l1) / 2, lane + 0.5, str(k), ha="center", va="center", fontsize=7)
        ax.text((m0 + m1) / 2, 0.5, str(k), ha="center", va="center", fontsize=7)
    ax.set_ylim(0, depth + 1)
    ax.set_yticks([0.5] + [1.5 + s for s in range(depth)],
                  ["mma"] + [f"load, buffer {s}" for s in range(depth)], fontsize=8)
    ax.set_title(f"prefetch depth {depth}: loop ends at t = {mmas[-1][1]} (numbers: step k)",
                 fontsize=9, loc="left")
axes[-1].set_xlabel("time (load = 3 units, mma = 1 unit)")
plt.tight_layout()

# %% [markdown]
# ## The `latency` hint changes the pipeline the compiler builds
#
# `gemm_grouped` (in `tile_lab.examples.gemm`) passes `latency=LAT` to both loads of its K-loop.
# The hint lands in the Tile IR as `optimization_hints = <… latency = LAT>`; the compiler answers
# with a deeper pipeline. `tile_lab.analysis.pipeline.k_loop` reads the depth off the SASS (on
# sm_90 each stage has a "full" and an "empty" barrier that the TMA loads arrive on) and the
# shared memory it takes (one stage of 128×64 A + 64×128 B fp16 tiles is 32 KiB):

# %%
# NBVAL_CHECK_OUTPUT
sig = "f16[4096,4096], f16[4096,4096], f16[4096,4096], 128, 128, 64, 8, {lat}"
depth, inspections = {}, {}
for lat in (1, 2, 4, 10):
    insp = inspections[lat] = tile_lab.inspect(gemm_grouped, sig.format(lat=lat), arch="sm_90")
    hint = re.search(r"latency = (\d+)", insp.tileir).group(1)
    loop = k_loop(insp)
    depth[lat] = loop.stages
    print(f"LAT={lat:2d} (Tile IR latency = {hint:>2s}): {loop.stages} stages; {loop.evidence()}")

# %% [markdown]
# The pipeline for `LAT=4`, beside the loop's source lines: at each step the `mma` consumes one
# iteration's tiles while the loads of the next iterations are in flight.

# %%
pipeline_picture(inspections[4])

# %%
fig, ax = plt.subplots(figsize=(5, 2.2))
ax.bar([str(k) for k in depth], list(depth.values()), color="#009E73")
ax.set(xlabel="latency hint on the K-loop loads", ylabel="pipeline stages",
       title="gemm_grouped 128×128×64, sm_90 (read from SASS)")
plt.tight_layout()

# %% [markdown]
# ## Clusters: `num_ctas=2`
#
# With `num_ctas=2`, two blocks form a **cluster** on neighbouring SMs. The PTX asks for it
# (`.reqnctapercluster 2`), and the SASS gains `UTMALDG.2D.MULTICAST` — one TMA load delivered
# into both blocks' shared memory — and cluster barriers (`UCGABAR_*`) to agree on when a shared
# buffer is free. Same kernel, one hint:

# %%
# NBVAL_CHECK_OUTPUT
def cluster_signs(insp):
    ptx = re.findall(r"\.reqnctapercluster \d+", insp.ptx)
    sass = sorted(set(re.findall(r"\b(UTMALDG[.\w]*|UCGABAR_\w+)", insp.sass)))
    return ptx, sass

gsig = "f16[4096,4096], f16[4096,4096], f16[4096,4096], 128, 128, 64"
for n in (1, 2):
    ptx, sass = cluster_signs(tile_lab.inspect(gemm_naive, gsig, arch="sm_90",
                                               hints={"num_ctas": n}))
    print(f"num_ctas={n}: PTX {ptx or '-'}; SASS {', '.join(sass)}")

# %% [markdown]
# What two blocks of a cluster can share, from an emulated trace of a 2×2-block GEMM. If blocks
# `(0, 0)` and `(1, 0)` share a cluster (which blocks the hardware pairs is the launch's cluster
# shape; here we pick the pair), they compute C tiles in the same column, so they read the
# *same* B panel — every B element there is read by both (2), which one multicast load can
# serve — and different A panels (1 each):

# %%
import numpy as np

rng = np.random.default_rng(0)
A = rng.standard_normal((256, 256)).astype(np.float16)
B = rng.standard_normal((256, 256)).astype(np.float16)
C = np.zeros((256, 256), np.float16)
tr = tile_lab.trace(gemm_naive, (2, 2), (A, B, C, 128, 128, 64))
cluster = [(0, 0), (1, 0)]
fig, axes = plt.subplots(1, 2, figsize=(7, 3))
for ax, name in zip(axes, ("A", "B")):
    readers = sum(tr.footprint(b, name, kind="read").astype(int) for b in cluster)
    im = ax.imshow(readers, cmap="Blues", vmin=0, vmax=2)
    ax.set_title(f"{name}: cluster blocks reading it", fontsize=9)
    ax.set_xticks([]), ax.set_yticks([])
fig.colorbar(im, ax=axes, ticks=[0, 1, 2], shrink=0.8)
print("B elements read by both blocks of the cluster:",
      int((sum(tr.footprint(b, "B", kind="read").astype(int) for b in cluster) == 2).sum()))

# %% [markdown]
# ## `ByTarget`: a hint per architecture
#
# Clusters exist from Hopper on; the best cluster size differs per GPU. `ct.ByTarget` picks the
# value by the architecture being compiled for:

# %%
@ct.kernel(num_ctas=ct.ByTarget(sm_90=2, default=1))
def gemm_by_target(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        acc = ct.mma(ct.load(A, index=(bx, k), shape=(TM, TK)),
                     ct.load(B, index=(k, by), shape=(TK, TN)), acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))

# %%
# NBVAL_CHECK_OUTPUT
for arch in ("sm_80", "sm_90", "sm_100"):
    ptx, sass = cluster_signs(tile_lab.inspect(gemm_by_target, gsig, arch=arch))
    print(f"{arch}: PTX {ptx or '-'}; TMA/cluster SASS: {', '.join(sass) or 'none (sm_80 has no TMA)'}")

# %% [markdown]
# ## What the hints were worth on the GPU
#
# From the tuning store of notebook 9 (fp16 8192³, cold L2): the same tiles with `LAT` 2 vs 4,
# and a 128×256 tile that is slow alone and fast as a 2-block cluster. Each row says the SM
# clock its measurement ran at: the LAT=2 row ran at a lower clock than the others, so part of
# its gap is the clock, not the hint (compare like with like; notebook 8 explains the protocol).

# %%
# NBVAL_CHECK_OUTPUT
store = TuningStore("data/tuning_gemm_8192.jsonl.gz")
rows = {}
for r in store.records():
    if r.context["kernel"] == "gemm_grouped" and r.status == "ok":
        rows[r.config.label()] = Measurement.from_json_dict(r.measurement)
pick = ["TM=128, TN=128, TK=64, GROUP=8, LAT=2, num_ctas=1",
        "TM=128, TN=128, TK=64, GROUP=8, LAT=4, num_ctas=1",
        "TM=128, TN=256, TK=64, GROUP=8, LAT=4, num_ctas=1",
        "TM=128, TN=256, TK=64, GROUP=8, LAT=4, num_ctas=2"]
prov = rows[pick[0]].provenance
print(f"gemm_grouped on {prov.gpu} (driver {prov.driver}, cuda.tile {prov.cuda_tile})")
for label in pick:
    m = rows[label]
    print(f"  {label:48s} {m.tflops:5.0f} TFLOPS  (SM clock {m.provenance.sm_clock_mhz:.0f} MHz)")
