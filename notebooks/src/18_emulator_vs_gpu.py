# %% [markdown]
# # 18 · The emulator vs the GPU: a NaN the emulator saw coming
#
# The emulator fills the lanes a GPU leaves undetermined with **poison** (NaN) and follows
# them to every store: when they reach memory it says which load padded them and which op mixed
# them into lanes you keep. That is not pessimism. NVIDIA's own `fmha_kernel` (cutile-python's
# `test/kernels/attention.py`) in a decode step — causal, grouped-query, the key length ragged
# against the tile — gave correct results on an H100 when K and V started at a 16-byte boundary,
# and **NaN in 28 of 1920 outputs** when they were views two bytes off it (a slice of a fused
# buffer), measured on 2026-11-25. This notebook runs a kernel of the same shape
# (`tile_lab.examples.decode`) and shows the emulator predicting the hazard from the source, on a
# laptop, and what this kernel did on a GPU.
#
# Then `tile_lab.crosscheck` puts the two side by side, tile by tile: the way to check that
# the emulator's values are the GPU's.

# %%
import gzip
import json
from pathlib import Path

import numpy as np
import tile_lab
from tile_lab.examples.decode import (decode_attention, decode_inputs, decode_launch,
                                      decode_reference)
from tile_lab.gpu import gpu_available
from tile_lab.render.tma import tma_report

# %% [markdown]
# ## The kernel
#
# `decode_attention` (in `tile_lab.examples.decode`): 15 new query tokens at positions 62…76
# attend to a cache of 63 keys, 4 query heads sharing 2 key/value heads, head size 32, tiles of
# 8 queries × 16 keys. 63 keys make 4 key tiles, the last with one padded row. The scores of
# padded keys are masked to −∞ (`k_pos < lk`), so their probability is 0 — but the padded
# **row of V** still enters the second `mma`, multiplied by that 0.

# %%
# NBVAL_CHECK_OUTPUT
import tile_lab.examples.decode as decode_module
for n, text in enumerate(Path(decode_module.__file__).read_text().splitlines(), 1):
    if any(s in text for s in ("k_pos", "v = ct.load", "acc = ct.mma", "ct.store")):
        print(f"{n:3d} {text.rstrip()}")

# %% [markdown]
# ## What the emulator says
#
# Run it on the CPU. Every output comes back NaN, and a warning names the load that padded and
# the op that mixed the padding into kept lanes: `0 × NaN` is NaN, and an `mma` sums every
# row of V into every output.

# %%
# NBVAL_CHECK_OUTPUT
q, k, v, out = decode_inputs(misaligned=False)
grid, args = decode_launch(q, k, v, out)
report = tile_lab.sanitize(decode_attention, grid, args)
for f in report.findings:
    print(f"[{f.kind}] line {f.line}: {f.message}")
print("NaN outputs (emulator):", int(np.isnan(out).sum()), "of", out.size)

# %% [markdown]
# On a GPU those lanes hold *whatever the load left there*. Which load that is depends on the
# address of V: a **TMA** bulk copy (`UTMALDG`) needs a 16-byte-aligned base address, and it
# fills the lanes outside the tensor with zeros; otherwise the compiler emits plain per-thread
# loads (`LDG`), and the padded lanes are never written. cuTile specialises the kernel on the
# alignment of each argument at launch, so the two layouts compile differently. The compiler
# says so on the CPU: a device array is described by its address, so an object with the
# address of a view 2 bytes off alignment is enough to compile that variant:

# %%
# NBVAL_CHECK_OUTPUT
class DeviceView:
    """The metadata of a device array at address ``ptr`` (never read: compiling only)."""

    def __init__(self, a, ptr):
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str,
                                         "data": (ptr, False), "strides": None, "version": 3}


base = 0x7F0000000000
for label, offset in (("aligned", 0), ("2 bytes off", 2)):
    kv = (DeviceView(k, base + offset), DeviceView(v, base + offset + k.nbytes))
    insp = tile_lab.inspect(decode_attention, (q, *kv, *args[3:]), arch="sm_90")
    tma = {t.line: t for t in tma_report(insp).lines}
    print(f"{label:12s}", "; ".join(f"line {n} {t.kind}: {'/'.join(t.sass_ops)}"
                                     for n, t in sorted(tma.items())))

# %% [markdown]
# ## On the GPU
#
# `bench/record_decode_alignment.py` runs the same kernel on a GPU with K and V as views of one
# fused buffer, at a 16-byte boundary and 2 bytes off, five launches each, and compares with a
# float64 NumPy reference; it also crosschecks each case against the emulator. On a GPU this
# cell runs it live; elsewhere it shows the recording in `notebooks/data/` (with the device and
# versions it ran on).

# %%
DATA = Path("data/decode_alignment.json.gz")  # gzipped JSON


def live() -> dict:
    import sys
    sys.path.insert(0, str(Path("..").resolve() / "bench"))
    from record_decode_alignment import CASES, record_case
    return {"provenance": {"gpu": "this GPU (live)"},
            "cases": [record_case(label, mis, zero, 3) for label, mis, zero in CASES]}


if gpu_available():
    gpu = live()
elif DATA.exists():
    gpu = json.loads(gzip.decompress(DATA.read_bytes()))
else:
    gpu = None
    print("No GPU here, and no recording yet: notebooks/data/decode_alignment.json.gz is made on "
          "a GPU by `python bench/record_decode_alignment.py`. The emulator's prediction "
          "above stands on its own.")
if gpu is not None:
    p = gpu["provenance"]
    print(f"{p.get('gpu')}, driver {p.get('driver')}, cuda.tile {p.get('cuda_tile')}, "
          f"tileiras {p.get('tileiras')}, CuPy {p.get('cupy')} ({p.get('recorded', 'now')})")
    for c in gpu["cases"]:
        nans = [r["nan"] for r in c["runs"]]
        errs = [r["max_abs_error_finite"] for r in c["runs"] if r["max_abs_error_finite"]]
        worst = f"{max(errs):.2g}" if errs else "n/a"
        print(f"  {c['case']:28s} NaN per launch {nans} of {c['elements']}; "
              f"max error of the finite outputs {worst}")

# %% [markdown]
# What to read in it: the same kernel and the same values at two addresses. Where the
# misaligned launches show NaN, which outputs and how many depend on what the padded lanes
# held — nothing the kernel controls, so they may change from launch to launch. Where the
# aligned launches are correct, it is because the TMA copy fills with zeros, not because the
# kernel is right: the emulator flags every output as able to go wrong whatever the alignment.
# The zero-padded kernel (below) is correct at both addresses.
#
# ## The crosscheck
#
# `tile_lab.crosscheck(kernel, grid, args)` runs a kernel on the GPU and on the emulator from
# identical copies of the arguments — the same bytes and the same layout: a view 2 bytes off
# alignment is 2 bytes off on both sides — and compares every tile a store wrote. Each
# difference gets a class: lanes the emulator marks **undetermined** (expected to differ: it
# names the load and the mixing op), differences **by design** (approximate `exp2`, division,
# flush-to-zero, summation order: it names the line and the mode), or a **mismatch**, which is
# an emulator bug. Here is the misaligned case (hover a tile for its block and source line):

# %%
if gpu is not None:
    p = gpu["provenance"]
    recording = None if "recorded" not in p else (  # a live run on this GPU is no recording
        f"run on {p.get('gpu')} on {p['recorded']} (driver {p.get('driver')}, cuda.tile "
        f"{p.get('cuda_tile')}), read from notebooks/{DATA}")
    cc = tile_lab.CrossCheck.from_json(gpu["cases"][1]["crosscheck"], recording=recording)
    display(cc)

# %% [markdown]
# In a notebook with a GPU, `%%tile --crosscheck --grid ... --args ...` does the same for the
# kernel of the cell.
#
# ## The fix
#
# Load V with `padding_mode=ct.PaddingMode.ZERO` (the kernel's `ZERO_PAD=1`): the padded row
# is 0, `0 × 0 = 0`, and nothing undetermined reaches the output — the emulator agrees with
# NumPy, and on the GPU both layouts are correct (the third recorded case).

# %%
# NBVAL_CHECK_OUTPUT
grid, args = decode_launch(q, k, v, out, zero_pad=True)
report = tile_lab.sanitize(decode_attention, grid, args)
print(report.summary())
print("max error vs float64 NumPy:",
      f"{np.abs(out.astype(np.float64) - decode_reference(q, k, v, 62)).max():.1e}")

# %% [markdown]
# **Exercise.** Masking the probabilities is not enough: change the kernel so that the padded
# V rows are masked with `ct.where` instead of zero-padded, and check with `tile_lab.sanitize`
# that the finding goes away.
