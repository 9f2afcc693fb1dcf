# %% [markdown]
# # 8 · Performance: measuring honestly, and the roofline
#
# "How fast is my kernel, and how far from the hardware limit?" Three rules make the answer
# trustworthy:
#
# 1. **Cold L2.** Re-running a kernel on the same buffers measures the cache, not DRAM: the
#    `cold` mode flushes L2 outside the timed span before every sample.
# 2. **Statistics, not one number.** Every measurement keeps its raw samples, a mean with a 95%
#    confidence interval, the median and the minimum.
# 3. **Know the roof.** Peak DRAM bandwidth and tensor-core throughput come from the device's own
#    attributes; a result above the roof is flagged (it means the bytes were miscounted or the data
#    came from cache), never shown as a plain number.
#
# With a GPU the cells below measure live; without one they show results recorded on the lent
# GPU, with their provenance.

# %%
import numpy as np
import cuda.tile as ct
import tile_lab
from tile_lab.gpu import gpu_available, load_measurements
from tile_lab.render.plots import bar_chart, roofline

HAVE_GPU = gpu_available()
print("measuring live on the GPU" if HAVE_GPU else
      "no GPU here: showing measurements recorded on the lent GPU (see provenance)")

# %% [markdown]
# ## Vector add: a memory-bound kernel
#
# It moves 3 × N × 4 bytes and does N additions: about 1/12 FLOP per byte, far left on the
# roofline. Its speed is its bandwidth.

# %%
@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(TILE,))
    tb = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=ta + tb)

# %%
if HAVE_GPU:
    import cupy as cp

    N = 1 << 28
    a, b, c = (cp.random.random(N, dtype=cp.float32) for _ in range(3))
    vadd = [tile_lab.bench(vector_add, (N // t,), (a, b, c, t), flops=N, label=f"vector_add tile={t}")
            for t in (256, 1024, 4096)]
    vadd.append(tile_lab.gpu.bench_function(lambda: cp.add(a, b, out=c), bytes=3 * N * 4,
                                            flops=N, label="cupy a + b"))
else:
    vadd = load_measurements("data/gpu_vector_add.json")

# %%
# NBVAL_IGNORE_OUTPUT
for m in vadd:
    print(m.summary())
print("\nrecorded on:", vadd[0].provenance.gpu, "| driver", vadd[0].provenance.driver,
      "| cuda.tile", vadd[0].provenance.cuda_tile, "| clocks locked:",
      vadd[0].provenance.clocks_locked)

# %%
bar_chart([m for m in vadd if m.mode == "cold"], metric="gbps")

# %% [markdown]
# ## GEMM: a compute-bound kernel, and a cliff
#
# An fp16 8192³ GEMM does 2·8192³ FLOPs on 3 × 128 MiB: hundreds of FLOPs per byte, far right.
# The *same* kernel with a different tile shape can fall off a cliff: see the 128×256×64 tile.

# %%
gemm = load_measurements("data/gpu_gemm.json")
for m in gemm:
    print(f"{m.name:32} {m.tflops:7.1f} TFLOPS [{m.mode}]  ({m.provenance.gpu})")

# %%
roofline(gemm + [m for m in vadd if m.mode == "cold"][:1])

# %% [markdown]
# ## Why warm numbers lie
#
# Run the same vector add twice without flushing L2 and the second run reads from cache. On a
# large array the effect is small (the array does not fit in L2); on a small one, "bandwidth"
# can exceed what DRAM can deliver — tile_lab flags it instead of printing it.

# %%
# NBVAL_IGNORE_OUTPUT
if HAVE_GPU:
    small = 1 << 22   # 3 × 16 MiB: fits in the H100/H200 L2
    a, b, c = (cp.random.random(small, dtype=cp.float32) for _ in range(3))
    for mode in ("cold", "warm"):
        print(tile_lab.bench(vector_add, (small // 1024,), (a, b, c, 1024), mode=mode).summary())
else:
    print("(needs a GPU: compare tile_lab.bench(..., mode='cold') and mode='warm' on a small array)")
