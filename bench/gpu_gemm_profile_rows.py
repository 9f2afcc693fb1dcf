"""Where the time goes in the GEMM sweep's rows that stay below 1.0x: one Nsight Compute
profile per row of the winner config ``gpu_gemm_sweep.py`` recorded.

For each row (by default every row whose floor is below 1.0 in either regime) the winner of
the sweep's JSON is launched once under ``tile_lab.profile`` on the same shapes, and the
script prints and saves a summary: duration, achieved vs theoretical occupancy, registers,
the effective rate (TFLOPS) and bytes moved per second if A, B and C are each read or written
once, the stall reasons over the whole kernel, and the hottest source lines with their top
stalls. It says what limits a row; it measures no ratio (``gpu_gemm_sweep.py`` does).

    python bench/gpu_gemm_profile_rows.py --sweep notebooks/data/gemm_sweep_h200.json.gz \\
        [--rows SPEC] [--out DIR]                 # writes DIR/gemm_sweep_profiles.json

On a machine without a GPU or ``ncu`` it says what is missing and exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sweep_common import exit_without_gpu, read_payload


def pick(rows: list[dict[str, Any]], spec: str | None) -> list[dict[str, Any]]:
    """Rows named by ``spec`` (comma-separated name fragments, e.g. "128x8192,bf16 4000");
    None: every row below 1.0x in either regime. An unknown fragment is an error naming it."""
    if not spec:
        return below_one(rows)
    picked: list[dict[str, Any]] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        hits = [r for r in rows if part in r["name"]]
        if not hits:
            raise SystemExit(f"--rows: no row name contains {part!r}")
        picked += [r for r in hits if r not in picked]
    return picked


def below_one(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sweep rows whose floor is under 1.0 in either regime (or was not measured)."""
    out = []
    for r in rows:
        floor = r.get("floor") or {}
        ratios = [floor.get(reg, {}).get("ratio") for reg in ("burst", "sustained")]
        if r.get("status") == "ok" and any(x is None or x < 1.0 for x in ratios):
            out.append(r)
    return out


def profile_summary(row: dict[str, Any], prof: Any, flops: int, bytes_once: int
                    ) -> dict[str, Any]:
    """What limits a row, from one profile (plain JSON): its rate if it does ``flops`` and
    moves ``bytes_once`` (every operand read or written once), occupancy, registers, spills,
    the stall mix over the whole kernel and the hottest source lines. Shared with
    ``gpu_attention_profile_rows.py``."""
    seconds = (prof.metrics.duration_ns or 0) * 1e-9
    stalls: Counter[str] = Counter()
    for ins in prof.instructions:
        stalls.update(ins.stalls)
    total = sum(stalls.values()) or 1
    return dict(
        row=row["name"], config=row["tuning"]["config"],
        duration_us=seconds * 1e6 if seconds else None,
        tflops=flops / seconds / 1e12 if seconds else None,
        gbps_if_each_operand_once=bytes_once / seconds / 1e9 if seconds else None,
        registers=prof.metrics.registers_per_thread,
        occupancy_pct=(prof.metrics.achieved_occupancy_pct,
                       prof.metrics.theoretical_occupancy_pct),
        spills=(prof.metrics.spill_loads, prof.metrics.spill_stores),
        stalls_pct={s: round(100 * c / total, 1) for s, c in stalls.most_common(6)},
        hot_lines=[dict(line=lp.line, text=lp.text.strip(), samples=lp.samples,
                        top=lp.top_stalls(3)) for lp in prof.hot_lines(4)],
    )


def summarize(row: dict[str, Any], prof: Any) -> dict[str, Any]:
    """The numbers a reader needs to see what limits a GEMM row (plain JSON)."""
    m, n, k = (row["row"][d] for d in ("m", "n", "k"))
    itemsize = 2  # fp16 / bf16 inputs and output
    return profile_summary(row, prof, 2 * m * n * k, (m * k + k * n + m * n) * itemsize)


def profile_row(row: dict[str, Any]) -> dict[str, Any]:
    import torch
    from gemm_kernels import gemm_splitk
    from gpu_gemm_sweep import grid_for, tiles

    import tile_lab

    r, c = row["row"], row["tuning"]["config"]
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[r["dtype"]]
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn((r["m"], r["k"]), device="cuda", dtype=dtype, generator=g)
    b = torch.randn((r["k"], r["n"]), device="cuda", dtype=dtype, generator=g)
    out = torch.empty((r["m"], r["n"]), device="cuda", dtype=dtype)
    split = c["SPLIT"] > 1
    w = torch.zeros((r["m"], r["n"]) if split else (1, 1), device="cuda", dtype=torch.float32)
    arrived = torch.zeros(tiles(r["m"], r["n"], c), device="cuda", dtype=torch.int32)
    hints = {h: c[h] for h in ("num_ctas", "num_worker_warps", "occupancy")}
    if c.get("schedule", "splitk") != "splitk":  # a schedule of gemm_schedule_rows.py
        import gemm_schedule_rows as gsr

        from tile_lab.gpu.device import device_info

        sms = device_info().sm_count
        ops = gsr.Operands(dict(a=a, b=b, c=out, w=w), r["m"], r["n"], r["k"], sms)
        kernel = gsr.schedules().for_config(c)
        prof = tile_lab.profile(kernel, gsr.grid(r["m"], r["n"], r["k"], c, sms), ops.args(c),
                                hints=hints)
        return summarize(row, prof)
    args = (a, b, out, w, arrived, *(c[x] for x in ("TM", "TN", "TK", "GROUP", "LAT", "SPLIT")))
    prof = tile_lab.profile(gemm_splitk, grid_for(r["m"], r["n"], c), args, hints=hints)
    return summarize(row, prof)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--sweep", default="notebooks/data/gemm_sweep_h200.json.gz")
    p.add_argument("--rows", default=None, help="rows to profile (as gpu_gemm_sweep.py "
                   "--rows); default: every row below 1.0x in either regime")
    p.add_argument("--out", default=".")
    ns = p.parse_args(argv)
    chosen = pick(read_payload(ns.sweep)["rows"], ns.rows)
    run_profiles("gpu_gemm_profile_rows.py", chosen, profile_row,
                 os.path.join(ns.out, "gemm_sweep_profiles.json"),
                 dict(sweep=os.path.basename(ns.sweep)))


def run_profiles(script: str, chosen: list[dict[str, Any]],
                 profile_one: Callable[[dict[str, Any]], dict[str, Any]], path: str,
                 header: dict[str, Any]) -> None:
    """Both profile scripts' run: say what is missing and exit 2 without a GPU, else profile
    each chosen row (a row's failure is kept as data, not the end of the run), print each
    summary and save them to ``path`` under ``header``."""
    exit_without_gpu(script)
    results = []
    for row in chosen:
        try:
            s = profile_one(row)
        except Exception as e:  # one row's failure is data, not the end of the run
            s = dict(row=row["name"], error=f"{type(e).__name__}: {e}")
        results.append(s)
        print(json.dumps(s), flush=True)
    with open(path, "w") as f:
        json.dump(dict(header, profiles=results), f, indent=1)
    print(f"saved {path}")


if __name__ == "__main__":
    main()
