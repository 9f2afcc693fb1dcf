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
# 4. **Know the power state.** A GPU's clock depends on what it just did. Every sample records
#    the SM clock, power, temperature and NVML's clocks-event reasons it ran with, and two things
#    are only compared in the same *regime* (the last sections of this notebook).
#
# With a GPU the cells below measure live; without one they show results recorded on the lent
# GPU, with their provenance.

# %%
import numpy as np
import cuda.tile as ct
import tile_lab
from tile_lab.gpu import BenchOptions, TimingOptions, gpu_available, load_measurements
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
    vadd = [tile_lab.bench(vector_add, (N // t,), (a, b, c, t), flops=N,
                           options=BenchOptions(label=f"vector_add tile={t}"))
            for t in (256, 1024, 4096)]
    vadd.append(tile_lab.gpu.bench_function(lambda: cp.add(a, b, out=c), bytes=3 * N * 4,
                                            flops=N, label="cupy a + b"))
else:
    vadd = load_measurements("data/gpu_vector_add.json.gz")

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
gemm = load_measurements("data/gpu_gemm.json.gz")
for m in gemm:
    print(f"{m.name:32} {m.tflops:7.1f} TFLOPS [{m.mode}]  ({m.provenance.gpu})")

# %%
# one roofline, one GPU's roofs: the GEMM and vector add recorded on the same card
recorded_vadd = load_measurements("data/gpu_vector_add.json.gz")
roofline(gemm + [m for m in recorded_vadd if m.mode == "cold"][:1])

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
        m = tile_lab.bench(vector_add, (small // 1024,), (a, b, c, 1024),
                           timing=TimingOptions(mode=mode))
        print(m.summary())
else:
    print("(needs a GPU: compare tile_lab.bench(..., timing=TimingOptions(mode='cold')) and "
          "mode='warm' on a small array)")

# %% [markdown]
# ## The power-state trap
#
# A GPU's clock is not a constant. An H100 has a 700 W power limit; a few seconds of back-to-back
# cuBLAS reach it, and the card then lowers its SM clock to stay under it (NVML names the reason:
# `0x4`, *software power cap*). Below is a trace recorded on the lent H100 by
# `bench/gpu_power_state.py`: one second idle, four seconds of fp16 8192³ `cupy.matmul`, two
# seconds idle again.

# %%
# NBVAL_CHECK_OUTPUT
from tile_lab.gpu.state import ThrottlePolicy, load_trace, reason_names

trace, max_sm, device = load_trace("data/nvml_trace_h100_cublas.json.gz")
policy = ThrottlePolicy()   # nvbench's defaults: 75% of the max clock, 50 ms recovery delay
hot = [s for s in trace if policy.throttled(s, max_sm)]
print(f"{device}: {len(trace)} NVML readings over {trace[-1].t_s:.1f} s, max SM clock "
      f"{max_sm:.0f} MHz")
print(f"throttled readings: {len(hot)}; SM clock {min(s.sm_mhz for s in hot):.0f}-"
      f"{max(s.sm_mhz for s in hot):.0f} MHz at up to {max(s.power_w for s in hot):.0f} W; "
      f"reasons {sorted({n for s in hot for n in reason_names(s.reasons)})}")

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 2.8))
t = [s.t_s for s in trace]
ax.plot(t, [s.sm_mhz for s in trace], color="#0072B2", label="SM clock (MHz)")
ax.set_xlabel("seconds")
ax.set_ylabel("SM clock (MHz)", color="#0072B2")
ax2 = ax.twinx()
ax2.plot(t, [s.power_w for s in trace], color="#D55E00", label="board power (W)")
ax2.set_ylabel("power (W)", color="#D55E00")
for s in hot:
    ax.axvspan(s.t_s - 0.02, s.t_s + 0.02, color="#D55E00", alpha=0.06, lw=0)
ax.set_title(f"{device}: cuBLAS at the power cap (shaded: throttled readings)")
fig.tight_layout()

# %% [markdown]
# So the *same* call measures differently depending on what ran just before. The same script
# timed `cupy.matmul` twice with the same cold-L2 protocol: once on a rested GPU (the *burst*
# regime: tile_lab waited until no throttle reason was set and the power was near idle), once
# right after three seconds of load (*sustained*). Each measurement carries the state of every
# sample:

# %%
# NBVAL_CHECK_OUTPUT
rested, after_load = load_measurements("data/power_state.json.gz")
for m in (rested, after_load):
    print(f"{m.label:40} {m.tflops:6.1f} TFLOPS  SM {m.sm_mhz:.0f} MHz  {m.power_w:.0f} W  "
          f"{m.throttled_samples}/{m.n} samples throttled  [{m.regime}]")
print(f"same kernel, same protocol: {rested.tflops / after_load.tflops:.2f}x apart")

# %% [markdown]
# A benchmark that warms cuBLAS up for three seconds and then times it against a kernel measured
# on a rested GPU divides by the slow number — that is how an earlier version of this project
# reported its GEMM at "1.06× cuBLAS" (notebook 9 tells the honest result). The rule:
# **compare like with like**. `tile_lab.compare_timed(a, b)` does it for you:
#
# * it measures in both regimes and reports them separately: **burst** (before every group of
#   samples the GPU has recovered, then a few untimed launches bring an idle card up to its
#   clock) and **sustained** (after a warm-up of continuous load, samples back to back);
# * it interleaves A and B in rounds ordered ABBA, with the same number of samples each, so
#   drift hits both sides alike;
# * it reports the ratio with a bootstrap 95% confidence interval over rounds, and the clock
#   and power each side ran at — and raises a `ClockMismatchWarning` when the two sides' clocks
#   differ by more than 3%.
#
# ```python
# from tile_lab.gpu import baselines, kernel_work
# c = tile_lab.compare_timed(kernel_work(vector_add, (N // 1024,), (a, b, c, 1024)),
#                            baselines.copy_roof(3 * N * 4 // 2))   # the measured memory roof
# print(c.summary())
# ```
#
# Recorded on the lent H100 (`bench/gpu_vector_add.py`): vector add against a device-to-device
# copy of the same number of bytes — the bandwidth a streaming kernel can actually reach — in
# both regimes:

# %%
# NBVAL_CHECK_OUTPUT
import gzip
import json

from tile_lab.gpu import Comparison

roof_run = json.load(gzip.open("data/regimes_vector_add.json.gz", "rt"))
print(Comparison.from_json_dict(roof_run["comparison"]).summary())
copy = roof_run["copy_roof"]
print(f"copy roof {copy['gbps']:.0f} GB/s measured = {copy['gbps'] / copy['peak_gbps']:.2f} of "
      f"the {copy['peak_gbps']:.0f} GB/s spec peak")
