"""Where the time goes in the attention grid's rows below 1.0x: one Nsight Compute profile
per row of the winner config ``gpu_attention_grid.py`` recorded (the GEMM sweep's
``gpu_gemm_profile_rows.py`` for attention).

Each chosen row's winner is launched once under ``tile_lab.profile`` on the row's shapes;
the summary (duration, rate, occupancy, registers, spills, the stall mix over the whole
kernel, the hottest source lines with their top stalls) is printed and saved. It says what
limits a row; it measures no ratio (``gpu_attention_grid.py`` does).

    python bench/gpu_attention_profile_rows.py --grid notebooks/data/attention_grid_h200.json.gz \\
        [--rows SPEC] [--out DIR]             # writes DIR/attention_grid_profiles.json

``--rows``: comma-separated name fragments (default: every row below 1.0x in either regime).
On a machine without a GPU or ``ncu`` it says what is missing and exits 2.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpu_gemm_profile_rows import pick, profile_summary, run_profiles
from sweep_common import read_payload

HINTS = ("num_ctas", "num_worker_warps", "occupancy")


def row_amounts(r: dict[str, Any]) -> tuple[int, int]:
    """(flops, bytes if Q, K, V and O are each moved once) of an attention row."""
    b, h, s, d = r["batch"], r["heads"], r["seq"], r["d"]
    flops = 4 * b * h * s * s * d // (2 if r["causal"] else 1)
    return flops, 4 * b * h * s * d * 2  # fp16 / bf16


def profile_row(row: dict[str, Any]) -> dict[str, Any]:
    import torch
    from attention_kernels import flash_attention_knobs, knob_args, knob_grid

    import tile_lab
    from tile_lab.examples.attention import LOG2_E

    r, c = row["row"], row["tuning"]["config"]
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[r["dtype"]]
    g = torch.Generator(device="cuda").manual_seed(0)
    shape = (r["batch"] * r["heads"], r["seq"], r["d"])
    q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, generator=g) for _ in range(3))
    out = torch.empty_like(q)
    args = knob_args(q, k, v, out, LOG2_E / math.sqrt(r["d"]), r["d"], r["causal"], c)
    prof = tile_lab.profile(flash_attention_knobs, knob_grid(r["seq"], shape[0], c), args,
                            hints={h: c[h] for h in HINTS})
    return profile_summary(row, prof, *row_amounts(r))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--grid", default="notebooks/data/attention_grid_h200.json.gz")
    p.add_argument("--rows", default=None, help="rows to profile (comma-separated name "
                   "fragments); default: every row below 1.0x in either regime")
    p.add_argument("--out", default=".")
    ns = p.parse_args(argv)
    chosen = pick(read_payload(ns.grid)["rows"], ns.rows)
    run_profiles("gpu_attention_profile_rows.py", chosen, profile_row,
                 os.path.join(ns.out, "attention_grid_profiles.json"),
                 dict(grid=os.path.basename(ns.grid)))


if __name__ == "__main__":
    main()
