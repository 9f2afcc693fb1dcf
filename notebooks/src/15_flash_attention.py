# %% [markdown]
# # 15 · Flash attention, built up step by step
#
# Attention is `O = softmax(Q Kᵀ / √d) V`, one row of scores per query. Written naively it
# materialises the `seq × seq` score matrix; **flash attention** never does: each block keeps
# a tile of queries, walks K and V in tiles, and keeps a *running* softmax — a row maximum `m`
# and a row sum `l` that are corrected as larger scores arrive. Everything below runs on the CPU
# emulator and is checked against NumPy; the GPU section shows recorded numbers against
# `torch.nn.functional.scaled_dot_product_attention`.

# %%
import gzip
import json
import math

import matplotlib.pyplot as plt
import numpy as np
import cuda.tile as ct
import tile_lab
from tile_lab.examples.attention import LOG2_E, attention_reference, flash_attention

%load_ext tile_lab
rng = np.random.default_rng(0)

# %% [markdown]
# ## Why not just compute the scores?
#
# The score matrix of one batch-head is `seq²` numbers. For a 16-head layer at a sequence of
# 8192 tokens in fp16 that is more memory than Q, K and V together — by a lot:

# %%
# NBVAL_CHECK_OUTPUT
heads, seq, d = 16, 8192, 128
qkv = 3 * heads * seq * d * 2
scores = heads * seq * seq * 2
print(f"Q, K, V: {qkv / 2**20:.0f} MiB   scores: {scores / 2**30:.0f} GiB  ({scores / qkv:.0f}x)")

# %% [markdown]
# ## Step 1: online softmax, in NumPy
#
# Softmax over a row that arrives in chunks. Keep `m` (the largest score so far) and
# `l = Σ exp(s - m)`. When a chunk raises the maximum from `m_old` to `m_new`, every term
# already in `l` was computed against the wrong maximum: multiply `l` by
# `α = exp(m_old - m_new)`. The output accumulator `Σ exp(s - m) v` gets the same correction.
# The picture follows one query row through 8 chunks of 16 keys:

# %%
def online_softmax_trace(s, chunk):
    m, l, steps = -np.inf, 0.0, []
    for j in range(0, len(s), chunk):
        c = s[j:j + chunk]
        m_new = max(m, c.max())
        alpha = math.exp(m - m_new) if np.isfinite(m) else 0.0
        l = l * alpha + np.exp(c - m_new).sum()
        steps.append((m_new, l, alpha))
        m = m_new
    return steps

s_row = rng.standard_normal(128) * 2
s_row[70] = 7.0  # one key much more relevant than the rest
steps = online_softmax_trace(s_row, 16)
m_run, l_run, alphas = map(np.array, zip(*steps))
fig, axes = plt.subplots(1, 3, figsize=(10, 2.5))
axes[0].plot(s_row, ".", ms=3, color="0.6")
axes[0].step(np.arange(8) * 16 + 15, m_run, where="pre", color="#D55E00")
axes[0].set_title("scores and running max m", fontsize=9)
axes[1].plot(range(8), l_run, "o-")
axes[1].set_title("running sum l = Σ exp(s − m)", fontsize=9)
axes[2].bar(range(8), alphas, color="#009E73")
axes[2].set_title("rescale α = exp(m_old − m_new)", fontsize=9)
for ax in axes[1:]:
    ax.set_xlabel("chunk")
plt.tight_layout()

# %%
# NBVAL_CHECK_OUTPUT
exact = np.exp(s_row - s_row.max()).sum()
print(f"final m = {m_run[-1]:.2f} (max score {s_row.max():.2f}); "
      f"final l matches the one-pass sum: {np.isclose(l_run[-1], exact)}")
print("chunks where the max grew (α < 1):", [i for i, a in enumerate(alphas) if 0 < a < 1])

# %% [markdown]
# ## Step 2: one tile of scores
#
# Arrays are `[batch·heads, seq, d]`. Block `(i, bh)` loads its `BM × d` query tile once. A
# score tile needs `Kᵀ`: `ct.load(K, …, shape=(1, D, BN), order=(0, 2, 1))` reads K's
# `BN × d` box already transposed, so `ct.mma(q, kt, acc)` is a plain `(BM, D) @ (D, BN)`.

# %%
@ct.kernel
def score_tile(Q, K, S, BM: ct.Constant[int], BN: ct.Constant[int], D: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    q = ct.load(Q, index=(0, i, 0), shape=(1, BM, D)).reshape((BM, D))
    kt = ct.load(K, index=(0, 0, j), shape=(1, D, BN), order=(0, 2, 1)).reshape((D, BN))
    s = ct.mma(q, kt, ct.full((BM, BN), 0.0, dtype=ct.float32))
    ct.store(S, index=(i, j), tile=s)

# %%
# NBVAL_CHECK_OUTPUT
q, k, v = (rng.standard_normal((1, 128, 32)).astype(np.float16) for _ in range(3))
S = np.zeros((128, 128), np.float32)
tile_lab.emulate(score_tile, (4, 4), (q, k, S, 32, 32, 32))
exact_s = q[0].astype(np.float32) @ k[0].astype(np.float32).T
print("score tiles match Q Kᵀ:", np.allclose(S, exact_s, atol=1e-2))

# %% [markdown]
# ## Step 3: the whole forward pass
#
# Now loop over the key tiles inside the block: scores, the online-softmax update, and
# `acc = P V + α·acc`. The kernel works in base 2 (`exp2`, with `log2(e)/√d` folded into the
# scale), as the hardware's exponential does. `%%tile` compiles it for Hopper on this machine;
# hover a line to see its Tile IR.

# %%
%%tile --sig "f16[16,1024,64], f16[16,1024,64], f16[16,1024,64], f16[16,1024,64], 0.18, 64, 64, 64" --arch sm_90 --show source,tileir
@ct.kernel
def attention_fwd(Q, K, V, Out, qk_scale_log2: float, BM: ct.Constant[int],
                  BN: ct.Constant[int], D: ct.Constant[int]):
    i, bh = ct.bid(0), ct.bid(1)
    q = ct.load(Q, index=(bh, i, 0), shape=(1, BM, D)).reshape((BM, D))
    m = ct.full((BM, 1), -math.inf, dtype=ct.float32)            # running row max
    row_sum = ct.full((BM, 1), 0.0, dtype=ct.float32)           # running Σ exp2(s - m)
    acc = ct.full((BM, D), 0.0, dtype=ct.float32)               # running Σ exp2(s - m) v
    for j in range(ct.num_tiles(K, axis=1, shape=(1, BN, D))):
        kt = ct.load(K, index=(bh, 0, j), shape=(1, D, BN), order=(0, 2, 1)).reshape((D, BN))
        s = ct.mma(q, kt, ct.full((BM, BN), 0.0, dtype=ct.float32)) * qk_scale_log2
        m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp2(s - m_new)
        alpha = ct.exp2(m - m_new)                                # correct the old terms
        row_sum = row_sum * alpha + ct.sum(p, axis=1, keepdims=True)
        v = ct.load(V, index=(bh, j, 0), shape=(1, BN, D)).reshape((BN, D))
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m = m_new
    ct.store(Out, index=(bh, i, 0), tile=(acc / row_sum).astype(Out.dtype).reshape((1, BM, D)))

# %%
# NBVAL_CHECK_OUTPUT
BH, SEQ, D, BM, BN = 2, 128, 32, 32, 32
q, k, v = (rng.standard_normal((BH, SEQ, D)).astype(np.float16) for _ in range(3))
out = np.zeros_like(q)
scale = LOG2_E / math.sqrt(D)
tr = tile_lab.trace(attention_fwd, (SEQ // BM, BH), (q, k, v, out, scale, BM, BN, D))
err = np.abs(out.astype(np.float64) - attention_reference(q, k, v)).max()
print("matches float64 NumPy within fp16 rounding (|error| < 2e-3):", err < 2e-3)

# %% [markdown]
# ## What one block touches, iteration by iteration
#
# Block `(1, 0)` (query tile 1 of batch-head 0) holds one Q tile for the whole loop and reads
# K and V tile `j` at iteration `j`; it writes its O tile once at the end. Iteration 2:

# %%
tile_lab.diagram(tr, block=(1, 0), iteration=2)

# %% [markdown]
# All iterations of that block at once, from the same trace: which rows of each array (batch-head
# 0, sequence positions on the x axis) block `(1, 0)` touches at each step of its loop. Q and
# the O store sit outside the loop (counted as iteration 0 of their own lines).

# %%
names = ["Q", "K", "V", "Out"]
steps = SEQ // BN
grid_img = np.zeros((steps, len(names), SEQ))
for a in tr.select(block=(1, 0)):
    rows = tr.footprint((1, 0), a.arg)[0].any(axis=1)  # positions of batch-head 0 touched
    box = np.zeros(SEQ, bool)
    box[a.box_start[1]:a.box_stop[1]] = True
    grid_img[a.iteration, names.index(a.arg)] = np.where(box & rows, 1 + a.is_write, 0)
fig, axes = plt.subplots(1, len(names), figsize=(10, 1.9), sharey=True)
for col, (ax, name) in enumerate(zip(axes, names)):
    ax.imshow(grid_img[:, col], aspect="auto", cmap="Blues", vmin=0, vmax=2,
              interpolation="nearest", extent=(0, SEQ, steps - 0.5, -0.5))
    ax.set_title(name, fontsize=9)
    ax.set_xlabel("position", fontsize=8)
axes[0].set_ylabel("iteration j")
plt.tight_layout()

# %% [markdown]
# Over all iterations, every block reads all of K and V of its batch-head — the price of never
# storing the scores is re-reading K and V once per query tile (here 4 times each):

# %%
tile_lab.diagram(tr, view="coverage", arg=["K", "V"])

# %%
# NBVAL_CHECK_OUTPUT
for it in range(SEQ // BN):
    loads = tr.select(block=(1, 0), iteration=it, kind="load")
    print(f"iteration {it}:", ", ".join(f"{a.arg} tile {a.tile_index}" for a in loads
                                       if a.arg != "Q"))

# %% [markdown]
# ## Causal attention: skip the tiles above the diagonal
#
# With a causal mask, query `r` sees keys `≤ r`. Key tiles wholly after a query tile's last row
# contribute nothing, so the loop stops early; the tile on the diagonal is masked with
# `ct.where`. This is `tile_lab.examples.attention.flash_attention(…, CAUSAL=1)`; the reads per K
# element now fall off along the sequence:

# %%
out_c = np.zeros_like(q)
tr_c = tile_lab.trace(flash_attention, (SEQ // BM, BH), (q, k, v, out_c, scale, BM, BN, D, 1))
tile_lab.diagram(tr_c, view="coverage", arg="K")

# %%
# NBVAL_CHECK_OUTPUT
err_c = np.abs(out_c.astype(np.float64) - attention_reference(q, k, v, causal=True)).max()
print("causal matches NumPy (|error| < 2e-3):", err_c < 2e-3)
print(f"K tile loads: {len(tr_c.select(arg='K', kind='load'))} causal vs "
      f"{len(tr.select(arg='K', kind='load'))} without the mask")

# %% [markdown]
# ## Making it fast: `flash_attention_tuned`
#
# The kernel above is the algorithm, written for reading. On an H100 it ran at about 0.6× of
# torch's fastest attention (below). `tile_lab.examples.attention.flash_attention_tuned` computes
# the same thing with five changes, each a line or two:
#
# 1. **Scale the row maxima, not the scores.** `max(s) · scale` costs `BM` multiplies instead of
#    `BM × BN`, and `s · scale − m` becomes one fused multiply-add per score.
# 2. **Mask only the tiles that cross the diagonal.** A causal block's key tiles below its first
#    query row are fully visible; only the last one or two need the `ct.where`.
# 3. **Cheap exponentials and one approximate division.** `ct.exp2(…, flush_to_zero=True)` and
#    `ct.truediv(acc, l, rounding_mode=APPROX)`: the output is rounded to 16 bits anyway.
# 4. **`latency=` hints on the K and V loads**: how far ahead the compiler should fetch them.
# 5. **Tile shape, worker warps and occupancy chosen by measurement** on the GPU (below).
#
# It is still checked against NumPy on the emulator, with and without the causal mask:

# %%
# NBVAL_CHECK_OUTPUT
from tile_lab.examples.attention import flash_attention_tuned

for causal in (0, 1):
    out_t = np.zeros_like(q)
    tile_lab.emulate(flash_attention_tuned, (SEQ // BM, BH),
                     (q, k, v, out_t, scale, BM, BN, D, causal, 2))
    err_t = np.abs(out_t.astype(np.float64) - attention_reference(q, k, v, causal=bool(causal)))
    print(f"causal={causal}: matches NumPy (|error| < 2e-3):", err_t.max() < 2e-3)

# %% [markdown]
# ## Which tiles fit: registers, found on the CPU
#
# One block keeps its output accumulator (`BM × D` fp32) and a tile of scores (`BM × BN` fp32,
# then fp16) in registers, spread over its worker warps; a thread has at most 255 registers.
# Past that the compiler **spills** to local memory (`STL`/`LDL` in the SASS), which is slow.
# No GPU is needed to see it: compile a few configurations for Hopper here and count the spill
# instructions, next to the rough estimate `(BM·D + 1.5·BM·BN) / threads` registers of data:

# %%
# NBVAL_CHECK_OUTPUT
qh = np.zeros((1, 1024, 128), np.float16)
print(f"{'BM x BN':8} {'warps':>5} {'data regs/thread':>17}  SASS (sm_90)")
for bm, bn, warps in ((64, 128, 4), (128, 64, 4), (128, 128, 4), (128, 128, 8), (256, 128, 8)):
    insp = tile_lab.inspect(flash_attention_tuned, (qh, qh, qh, qh, 0.1, bm, bn, 128, 0, 2),
                            arch="sm_90", hints={"num_worker_warps": warps})
    n_spill = sum(insp.spill_instructions().values())  # LDL + STL in the SASS
    est = (bm * 128 + 1.5 * bm * bn) / (32 * warps)
    print(f"{bm:>3}x{bn:<4} {warps:>5} {est:>17.0f}  "
          f"{'spills to local memory' if n_spill else 'no spills'}")

# %% [markdown]
# The measured search on the GPU (below) skips every configuration that spills before launching
# it, with this same check.
#
# ## On a GPU: against the fastest torch SDPA
#
# Recorded with `bench/gpu_attention.py` on an H100. For each row it first finds the **strongest
# baseline**: `torch.nn.functional.scaled_dot_product_attention` as torch dispatches it and
# pinned to each of its backends (cuDNN, FlashAttention-2, memory-efficient), timed in
# interleaved rounds. Torch's own dispatch picks cuDNN here, 1.6–1.9× as fast as its
# FlashAttention-2 backend:

# %%
# NBVAL_CHECK_OUTPUT
rec = json.load(gzip.open("data/attention.json.gz", "rt"))
p = rec["env"]["provenance"]
print(f"{p['gpu']} ({p['sm_count']} SMs, max SM clock {p['max_sm_clock_mhz']:.0f} MHz), driver "
      f"{p['driver']}, torch {rec['env']['torch']}, cuda.tile {p['cuda_tile']}, tileiras "
      f"{p['tileiras']}, clocks locked: {p['clocks_locked']}")
backends = ["cudnn", "default", "flash", "efficient"]
print(f"{'row':26}" + "".join(f"{b:>11}" for b in backends) + "   (µs, median)")
for b in rec["baselines"]:
    times = {k[len("torch sdpa ("):-1]: v for k, v in b["candidates_us"].items()}
    print(f"{b['row']:26}" + "".join(f"{times.get(k, float('nan')):11.0f}" for k in backends))

# %% [markdown]
# Then it tunes `flash_attention_tuned` once per head size and mask: every tile shape × worker
# warps × occupancy that passes the spill check, ranked in two interleaved rounds of 5 samples
# (L2 flushed before each), then the best three with other `latency` hints. Here is that search
# for `D = 128` without the mask; the tutorial's 128×64 tile with 4 warps is not the best:

# %%
tune = rec["tuning"]["D=128 causal=False"]
trials = sorted((t for t in tune["trials"] if "median_us" in t), key=lambda t: t["median_us"])
labels = [f"{c['BM']}x{c['BN']} w{c['num_worker_warps']} o{c['occupancy']} "
          f"lat{c['latency']}" for c in (t["config"] for t in trials)]
fig, ax = plt.subplots(figsize=(8, 4.2))
ax.barh(range(len(trials)), [t["median_us"] for t in trials],
        color=["#D55E00" if i == 0 else "#56B4E9" for i in range(len(trials))])
ax.set_yticks(range(len(trials)), labels, fontsize=6)
ax.invert_yaxis()
ax.set(xlabel="median µs (4×16×2048×128 fp16)", title=f"tuning on {p['gpu']}: "
       f"{len(trials)} launches; {sum(s['spills'] != 0 for s in tune['screened'])} "
       "configs skipped for spilling")
plt.tight_layout()

# %% [markdown]
# Finally each row compares the tuned kernel (and, on the 4×16×2048×128 fp16 rows, the
# tutorial kernel) against the fastest baseline with `tile_lab.compare_timed`: the *burst*
# regime (the GPU rested before every group of samples: boost clock) and the *sustained*
# regime (after 2 s of continuous load, under the power cap), ABBA rounds, every batch of
# samples enqueued behind a stream hold so the host's launch overhead (large for SDPA's cuDNN
# path) never falls inside a timed span, the ratio `baseline time / ours` (above 1: ours is
# faster) with its bootstrap 95% CI, and the SM clock each side ran at:

# %%
# NBVAL_CHECK_OUTPUT
print(f"{'row':26} {'kernel':8} {'regime':9} {'ratio':>6} {'95% CI':>13}  {'ours TFLOPS':>11} "
      f"{'SDPA TFLOPS':>11} {'SM MHz':>9}")
for r in rec["rows"]:  # three decimals: 0.998 is not 1.00
    print(f"{r['row']:26} {r['kernel']:8} {r['regime']:9} {r['ratio']:6.3f} "
          f"{r['ci_low']:6.3f}-{r['ci_high']:<6.3f} {r['ours_tflops']:11.0f} "
          f"{r['baseline_tflops']:11.0f} {r['ours_sm_mhz']:4.0f}/{r['baseline_sm_mhz']:4.0f}")

# %%
tuned = [r for r in rec["rows"] if r["kernel"] == "tuned"]
labels = sorted({r["row"] for r in tuned}, key=[r["row"] for r in tuned].index)
fig, ax = plt.subplots(figsize=(8, 0.5 * len(labels) + 1.2))
for off, regime, color in ((-0.2, "burst", "#56B4E9"), (0.2, "sustained", "#D55E00")):
    rows = [next(r for r in tuned if r["row"] == lab and r["regime"] == regime)
            for lab in labels]
    ax.barh(np.arange(len(rows)) + off, [r["ratio"] for r in rows], 0.4, color=color,
            label=regime, xerr=[[r["ratio"] - r["ci_low"] for r in rows],
                                [r["ci_high"] - r["ratio"] for r in rows]])
# the differences live between 0.90 and 1.00: the axis shows that range, not 0..1
lo = min(r["ci_low"] for r in tuned)
ax.set_xlim(np.floor((lo - 0.01) * 50) / 50, max(1.0, max(r["ci_high"] for r in tuned)) + 0.01)
ax.axvline(1.0, color="k", lw=0.8)
ax.set_yticks(range(len(labels)), labels, fontsize=8)
ax.invert_yaxis()
ax.set(xlabel=f"fastest SDPA time / ours (1.0 = parity; axis from {ax.get_xlim()[0]:.2f})",
       title=f"flash_attention_tuned on {p['gpu']}")
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
plt.tight_layout()

# %% [markdown]
# **The honest reading.** Tuned, the kernel runs at **0.90–1.00× of cuDNN's attention** (the
# fastest SDPA here) in both regimes: 0.996–0.998× at head size 64 (parity within half a percent),
# 0.97× with the causal mask, 0.91× for the dense 2048-token rows and 0.93–0.96× at 8192 tokens
# (566–626 TFLOPS against 606–673). The tutorial kernel reaches 0.57–0.58×, so tiles, warps,
# occupancy and the five changes above took it from 360 to 569 TFLOPS. The goal of ≥ 1.0×
# against the strongest SDPA is **not met**; it comes closest at head size 64. One idea that did
# not help: FlashAttention-4's lazy rescaling (touch `acc` only when some row's maximum grew by
# more than 2⁸) ran 5–40% *slower* on the same H100, because the data-dependent `if` in the loop
# stops the compiler from overlapping one iteration's loads and MMAs with the next. What remains is
# what FlashAttention-3 does by hand on Hopper — one warp group computing the softmax of a tile
# while another runs the next tile's matrix multiply — which cuTile leaves to its compiler;
# `bench/gpu_attention.py` is the harness to test the next idea with.
