# %% [markdown]
# # 7 · Reading Tile IR and SASS: what the compiler did with your loads
#
# cuTile compiles in two steps: your Python becomes **Tile IR** (tile-level operations — loads of
# partition views, `mma`, reductions), and `tileiras` lowers Tile IR to machine code (**SASS**) for
# one GPU architecture. Reading both tells you whether your loads became TMA bulk copies, whether
# `mma` reached the tensor cores, and what the compiler could not do (its **remarks**).
#
# All of this runs on a CPU-only machine.

# %%
import cuda.tile as ct
import tile_lab

# %%
@ct.kernel
def matmul(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bx, k), shape=(TM, TK))
        b = ct.load(B, index=(k, by), shape=(TK, TN))
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))

SIG = "f16[4096,4096], f16[4096,4096], f16[4096,4096], 128, 128, 64"

# %%
hopper = tile_lab.inspect(matmul, SIG, arch="sm_90")
hopper.with_show(("source", "tileir", "remarks"))   # SASS is long: see below

# %% [markdown]
# ## Tensor cores, per architecture
#
# The same Tile IR `mma` becomes different instructions: `HMMA` (warp-level MMA, Ampere) or
# `HGMMA` (warpgroup MMA, Hopper) or `UTC*MMA` (Blackwell's tensor memory MMA).

# %%
# NBVAL_CHECK_OUTPUT
import re

for arch in ("sm_80", "sm_90", "sm_100"):
    insp = tile_lab.inspect(matmul, SIG, arch=arch)
    mma_ops = sorted({m.group(0).split(".")[0] for m in
                      re.finditer(r"\b[A-Z]*MMA[A-Z0-9.]*", insp.sass)})
    print(arch, mma_ops)

# %% [markdown]
# ## Where did each SASS instruction come from?
#
# (Show the SASS pane with `hopper.with_show(("source", "sass"))`.)
#
# Every SASS line carries the source line it was generated for (the cubin has line info). Count
# instructions per source line: the `mma` line and the loads dominate.

# %%
# NBVAL_CHECK_OUTPUT
from collections import Counter

per_line = Counter(l for l in hopper.line_map["sass"] if l is not None)
src = dict(hopper.source_lines)
for line, n in sorted(per_line.items()):
    print(f"line {line:3}: {n:4} SASS instructions | {src.get(line, '').strip()[:60]}")

# %% [markdown]
# ## Compiler remarks
#
# `tileiras` explains its memory and tensor-core decisions. Remarks carry a source line too.

# %%
for r in hopper.remarks[:12]:
    print(f"[{r.kind}/{r.category}] line {r.line}: {r.message}")

# %% [markdown]
# ## Where the time goes: a GPU profile on these lines
#
# Reading SASS says what the compiler made; a profile says where the warps *wait*.
# `tile_lab.profile(kernel, grid, args)` (or `%%tile --profile --grid ... --args ...`) launches
# the kernel once under NVIDIA Nsight Compute and returns a `Profile`: for every SASS instruction
# the warp-stall samples by reason and how often it ran, plus duration, registers, spills,
# shared memory and occupancy. Nsight Compute's own source view attributes cuTile kernels to
# `cuda/tile/_stub.py`; tile_lab joins its per-instruction data by **instruction offset** with
# the SASS line map you saw above, checking the opcode at every offset.
#
# You need a GPU and `ncu` to take a profile, but not to read one. These were recorded on an
# H100 with this notebook's GEMM (the tuning benchmark's `gemm_naive`, the same code as
# `matmul`) at 4096³: the best tuning config 128×128×64 and the cliff config 256×256×32.

# %%
# NBVAL_CHECK_OUTPUT
best = tile_lab.load_profile("data/profile_gemm_best.json.gz")
cliff = tile_lab.load_profile("data/profile_gemm_cliff.json.gz")
for p in (best, cliff):
    print(p.summary())
print(best.provenance["gpu"], "| driver", best.provenance["driver"], "| SM clock at start",
      best.provenance["sm_clock_mhz"], "MHz |", best.collection["tool"],
      best.collection["ncu_version"])

# %% [markdown]
# Join the best config's profile with **this notebook's** compile of `matmul` (`hopper`, same
# tile sizes, compiled here on the CPU): every instruction offset holds the same opcode, so the
# recorded samples land on this cell's line numbers.

# %%
# NBVAL_CHECK_OUTPUT
here = best.with_lines(hopper)
print(f"{here.matched_instructions} of {len(here.instructions)} instructions matched")
for lp in here.hot_lines(5):
    share = 100 * lp.samples / here.total_samples
    reasons = ", ".join(f"{k} {100 * n / lp.samples:.0f}%" for k, n in lp.top_stalls(2))
    print(f"line {lp.line:3} {share:5.1f}%  {lp.text[:44]:44} {reasons}")
print(f"no source line {100 * here.unattributed_samples() / here.total_samples:5.1f}%")

# %% [markdown]
# The same in the inspect view: a heat gutter on every pane's lines (hover a line for its stall
# reasons; `.view(hopper.with_show(("source", "sass")))` adds per-instruction heat in SASS).

# %%
best.view(hopper.with_show(("source", "tileir")), top=5)

# %% [markdown]
# **The hot loop.** Half the samples sit on the `ct.mma` line, and 85% of those are *long
# scoreboard* stalls. The hottest instructions show what the warps wait for:

# %%
# NBVAL_CHECK_OUTPUT
for ins in here.hot_instructions(4):
    top = max(ins.stalls, key=ins.stalls.get)
    print(f"/*{ins.offset:04x}*/ line {ins.line}  {ins.sass[:44]:44} {ins.samples:6} samples, "
          f"mostly {top}")

# %% [markdown]
# `SYNCS.PHASECHK.TRANS64.TRYWAIT` + `@!P1 BRA` is a spin on a shared-memory barrier that the TMA
# unit completes when a tile of A or B has arrived. So the mma line is hot not because the tensor
# cores are slow (`HGMMA` itself barely shows) but because the warps wait for the loads of the
# next K step: with 193 KB of shared memory and 255 registers per thread only one block fits on
# an SM (12.5% theoretical occupancy), and nothing else hides that latency. The `ct.load(A…)`
# line's own hot spot is the same kind of barrier wait. The next things to try are the ones
# notebook 9 tunes: deeper load pipelining (`latency=`) and an L2-friendly tile order.
#
# ## The cliff config: spills
#
# 256×256 tiles run **41× slower** here (8.9 ms vs 0.22 ms). Side by side (on a GPU,
# `tile_lab.profile_tuning(kernel, result, grid_fn, args_fn)` profiles a tuning result's best
# and worst configs and shows them this way):

# %%
tile_lab.compare_profiles({"best 128×128×64": best, "cliff 256×256×32": cliff})

# %%
# NBVAL_CHECK_OUTPUT
m = cliff.metrics
at_spills = sum(i.samples for i in cliff.instructions if i.opcode in ("LDL", "STL"))
print(f"accumulator per thread: 256*256 fp32 / {m.block_size} threads = "
      f"{256 * 256 // m.block_size} values, in at most {m.registers_per_thread} registers")
print(f"spill code: {m.spill_stores} STL + {m.spill_loads} LDL, "
      f"{m.stack_frame_bytes} B of stack per thread")
print(f"local-memory traffic: {m.local_load_bytes / 1e9:.1f} GB loaded, "
      f"{m.local_store_bytes / 1e9:.1f} GB stored in {m.duration_ns / 1e6:.2f} ms")
print(f"samples at LDL/STL: {100 * at_spills / cliff.total_samples:.0f}%; "
      f"'lg' (local/global queue full) stalls: "
      f"{100 * cliff.stall_totals()['lg'] / cliff.total_samples:.0f}%")

# %% [markdown]
# The 256×256 fp32 accumulator needs 256 values per thread, more than the 255 registers a thread
# can have, so the compiler keeps part of it on the stack: every K step writes and re-reads it
# through local memory (about 20 GB each way per launch), the memory queues fill (`lg` stalls)
# and the loads of spilled values stall on the long scoreboard. Most of that spill code carries
# no source line, which is why the "(no source line)" row of the cliff profile is its largest.
#
# One more thing the profiler itself ran into: Nsight Compute counts executed instructions by
# patching the kernel's SASS, and this spilling kernel faults under that patching (`LaunchFailed`).
# `tile_lab.profile` then falls back to PC sampling alone (stall samples per instruction and
# reason, no executed counts) and records it:

# %%
# NBVAL_CHECK_OUTPUT
print(cliff.collection["plan"], "| failed first:", cliff.collection["failed_plans"][0].split(";")[0])
