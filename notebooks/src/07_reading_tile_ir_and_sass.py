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
