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
# ## On a GPU: against torch SDPA
#
# Recorded with `bench/flash_attention.py`: `flash_attention` from `tile_lab.examples.attention`
# (the kernel above plus the causal skip) against `torch.nn.functional.scaled_dot_product_attention`
# (torch's default backend choice), fp16 and bf16, timed with CUDA events, the two sides in
# alternating rounds (5 rounds; the ratio is the median of the per-round ratios, with its range).
# The kernel's tile shape was picked per row from 128×64, 64×64 and 128×128 by one quick timing
# each. *Burst*: each round after 1 s of idle, 10 calls per side (the GPU at its boost clock);
# *sustained*: after 4 s of continuous work, 50 calls per side (the clock settled under the power
# cap). Every row carries the SM clock read from NVML after its segments; the power column is
# NVML's averaged reading, which after a 1 s idle mostly reflects the idle second.

# %%
# NBVAL_CHECK_OUTPUT
rec = json.load(open("data/flash_attention.json"))
p = rec["provenance"]
print(f"{p['gpu']} ({p['sm_count']} SMs, max SM clock {p['max_sm_clock_mhz']} MHz, "
      f"{p['power_limit_w']:.0f} W cap), driver {p['driver']}, torch {p['torch']}, "
      f"CUDA {p['cuda_runtime']}, cuda.tile {p['cuda_tile']}, clocks not locked")
print(f"{'regime':9} {'dtype':5} {'B,H,S,D':14} {'causal':6} {'tiles':7} {'ours ms':>8} "
      f"{'SDPA ms':>8} {'speed vs SDPA':>17} {'SM MHz':>6} {'reasons'}")
for r in rec["results"]:
    shape = ",".join(str(x) for x in r["shape"])
    tiles = "x".join(str(t) for t in r["tiles"])
    spread = f"{r['speedup']:.2f}x [{r['ratio_min']:.2f}-{r['ratio_max']:.2f}]"
    print(f"{r['regime']:9} {r['dtype']:5} {shape:14} {str(r['causal']):6} {tiles:7} "
          f"{r['ours_ms']:8.3f} {r['sdpa_ms']:8.3f} {spread:>17} {r['sm_clock_mhz']:6.0f} "
          f"{','.join(r['clock_event_reasons']) or '-'}")

# %%
fig, ax = plt.subplots(figsize=(8, 2.8))
labels = [f"{r['dtype']} S={r['shape'][2]} D={r['shape'][3]}{' causal' if r['causal'] else ''}"
          for r in rec["results"] if r["regime"] == "burst"]
for off, regime, color in ((-0.2, "burst", "#56B4E9"), (0.2, "sustained", "#D55E00")):
    rows = [r for r in rec["results"] if r["regime"] == regime]
    ax.bar(np.arange(len(rows)) + off, [r["speedup"] for r in rows], 0.4, color=color,
           label=regime, yerr=[[r["speedup"] - r["ratio_min"] for r in rows],
                               [r["ratio_max"] - r["speedup"] for r in rows]])
ax.axhline(1.0, color="k", lw=0.8)
ax.set_xticks(range(len(labels)), labels, rotation=20, fontsize=7, ha="right")
ax.set(ylabel="speed vs SDPA (>1 faster)", title=f"flash_attention vs torch SDPA on {p['gpu']}")
ax.legend(fontsize=8)
plt.tight_layout()

# %% [markdown]
# Which SDPA matters. `bench/gpu_attention.py` (the project's comparison harness: ABBA rounds,
# cold L2, bootstrap CI) timed the same kernel against SDPA **pinned to its FlashAttention
# backend** on the same H100 model. Against that backend the kernel wins; against torch's default
# choice (above, which ran about twice as fast as the flash backend on 4×16×2048×128) it loses:

# %%
# NBVAL_CHECK_OUTPUT
flash = json.load(open("data/regimes_attention.json"))
fp = flash["env"]["provenance"]
print(f"{fp['gpu']}, driver {fp['driver']}, torch {flash['env']['torch']}, cuda.tile {fp['cuda_tile']}")
for r in flash["rows"]:
    print(f"{r['row']:32} {r['regime']:9} ours {r['ours_tflops']:4.0f} TFLOPS vs "
          f"{r['baseline']} {r['baseline_tflops']:4.0f}: {r['ratio']:.2f}x "
          f"[CI {r['ci_low']:.2f}-{r['ci_high']:.2f}] at {r['ours_sm_mhz']:.0f} MHz")
default = [r for r in rec["results"] if r["shape"] == [4, 16, 2048, 128] and not r["causal"]
           and r["dtype"] == "fp16"]
for r in default:
    print(f"default-dispatch SDPA, 4x16x2048x128 fp16, {r['regime']:9}: "
          f"{r['sdpa_tflops']:4.0f} TFLOPS; ours {r['ours_tflops']:4.0f}")

# %% [markdown]
# **The honest reading:** this straightforward kernel runs at about 0.5–0.65× of torch's SDPA
# (default backend choice, the one a user gets) on the H100, and at 1.05–1.18× of SDPA's
# FlashAttention-2 backend — correct (max difference from SDPA's output ≤ 4e-3 in bf16), but not competitive; the
# goal of ≥ 1.0× is not met. The gap is larger in the sustained regime, where both run at a
# lower, power-capped clock. Production attention kernels on Hopper overlap the softmax
# arithmetic of one tile with the tensor-core work of the next (warp specialisation, ping-pong
# between two query tiles) and pipeline K/V loads deeply; the tuning knobs of notebooks 9 and 13
# (`latency` on the K/V loads, `num_ctas`, `occupancy`, tile shapes) are where to start.
