"""Shared pieces of the GPU benchmark scripts: argument parsing, the ratio table, saving.

Every script measures its rows side by side in one run (same process, same protocol), prints
a table headed by the device name and writes its measurements as JSON (``--out``, default
``notebooks/data``) for the notebooks' recorded results.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # gpu_kernels
sys.path.insert(0, os.path.dirname(HERE))  # tile_lab from a checkout


def parse_args(description: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description, allow_abbrev=False)
    p.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "notebooks", "data"),
                   help="folder for the JSON measurements")
    p.add_argument("--samples", type=int, default=50)
    p.add_argument("--quick", action="store_true", help="smaller sizes (smoke test)")
    return p.parse_args()


def rate(m, metric: str) -> str:
    value = getattr(m, metric)
    if value is None:
        return "-"
    peak = m.peak_gbps if metric == "gbps" else m.peak_tflops
    if m.above_roof and peak and value > peak:
        return "ABOVE ROOF"
    return f"{value:.1f}"


def print_table(title: str, rows: Sequence[tuple[str, object, str]]) -> None:
    """rows: (name, Measurement, ratio text)."""
    from tile_lab.gpu.device import device_info

    info = device_info()
    print(f"\n== {title} on {info.name} ({info.arch}, {info.sm_count} SMs) ==")
    print(f"{'row':34} {'mode':6} {'mean µs':>10} {'±95% µs':>8} {'GB/s':>9} {'TFLOPS':>8}  ratio")
    for name, m, ratio in rows:
        print(f"{name:34} {m.mode:6} {m.mean_us:10.1f} {m.ci95_us:8.2f} {rate(m, 'gbps'):>9} "
              f"{rate(m, 'tflops'):>8}  {ratio}")


def save(measurements, out_dir: str, name: str) -> str:
    from tile_lab.gpu.measurement import save_measurements

    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    save_measurements(measurements, path)
    print(f"saved {len(measurements)} measurements to {path}")
    return path


# ---- per-regime comparisons against the strongest baselines -------------------------------------
CLOCK_BOUND = 0.011  # a round whose two sides' median SM clocks differ more is re-run
CLOCK_RETRIES = 3


def compare_options(quick: bool, *, clock_bound: float = CLOCK_BOUND,
                    clock_retries: int = CLOCK_RETRIES, rounds: int | None = None,
                    samples_per_round: int | None = None, sustain_s: float | None = None):
    """Interleaved rounds for ``compare_timed``: fewer and shorter with --quick. Rounds whose
    sides ran more than ``clock_bound`` apart in SM clock are re-run (``clock_retries`` times
    at most); a regime still apart is flagged CLOCKS DIFFER."""
    from tile_lab.gpu import CompareOptions

    base = (dict(rounds=4, samples_per_round=3, sustain_s=0.5) if quick
            else dict(rounds=10, samples_per_round=8, sustain_s=2.0))
    for key, value in (("rounds", rounds), ("samples_per_round", samples_per_round),
                       ("sustain_s", sustain_s)):
        if value is not None:
            base[key] = value
    return CompareOptions(clock_tolerance=clock_bound, clock_retries=clock_retries, **base)


def comparison_rows(name: str, comparison, *, ours_bytes=None, ours_flops=None) -> list[dict]:
    """One JSON-ready row per regime: ratio (baseline time / ours: above 1 we are faster), its
    95% CI, medians, rates, and the SM clock and power each side ran at."""
    rows = []
    for r in comparison.regimes:
        row = dict(row=name, regime=r.regime, ours=r.a.name, baseline=r.b.name,
                   baseline_version=comparison.baseline, ratio=r.ratio, ci_low=r.ci_low,
                   ci_high=r.ci_high, ours_median_s=r.a.median_s,
                   baseline_median_s=r.b.median_s, ours_sm_mhz=r.a.sm_mhz,
                   baseline_sm_mhz=r.b.sm_mhz, ours_power_w=r.a.power_w,
                   baseline_power_w=r.b.power_w, ours_throttled=r.a.throttled,
                   baseline_throttled=r.b.throttled, clock_mismatch=r.clock_mismatch,
                   clock_gap=r.clock_gap, clock_bound=r.clock_tolerance,
                   clock_rerun_rounds=r.rerun_rounds,
                   clock_disagreeing_rounds=r.disagreeing_rounds)
        if ours_bytes:
            row["ours_gbps"] = ours_bytes / r.a.median_s / 1e9
        if ours_flops:
            row["ours_tflops"] = ours_flops / r.a.median_s / 1e12
            row["baseline_tflops"] = ours_flops / r.b.median_s / 1e12
        rows.append(row)
    return rows


def print_comparisons(title: str, rows: Sequence[dict], *, unit: str = "") -> None:
    """The per-regime table: ratio with CI and the clocks/power of each side."""
    from tile_lab.gpu.device import device_info

    info = device_info()
    print(f"\n== {title} on {info.name} ({info.arch}) ==")
    print(f"{'row':30} {'regime':9} {'ratio':>6} {'95% CI':>13} {'ours µs':>9} {'base µs':>9} "
          f"{'SM MHz ours/base':>17} {'W ours/base':>12} {unit}")
    for r in rows:
        def mhz(v):
            return "?" if v is None else f"{v:.0f}"

        extra = ""
        if "ours_gbps" in r:
            extra = f"{r['ours_gbps']:.0f} GB/s"
        if "ours_tflops" in r:
            extra = f"{r['ours_tflops']:.0f} vs {r['baseline_tflops']:.0f} TFLOPS"
        flag = "  CLOCKS DIFFER" if r["clock_mismatch"] else ""
        print(f"{r['row'][:30]:30} {r['regime']:9} {r['ratio']:6.3f} "
              f"{r['ci_low']:6.3f}-{r['ci_high']:6.3f} {r['ours_median_s'] * 1e6:9.1f} "
              f"{r['baseline_median_s'] * 1e6:9.1f} "
              f"{mhz(r['ours_sm_mhz']) + '/' + mhz(r['baseline_sm_mhz']):>17} "
              f"{mhz(r['ours_power_w']) + '/' + mhz(r['baseline_power_w']):>12} {extra}{flag}")


def environment() -> dict:
    """Provenance of a benchmark run: device, driver, clocks now, versions of everything timed."""
    import platform

    from tile_lab.gpu.device import device_info, nvml_reader, provenance

    info = device_info()
    reader = nvml_reader()
    state = reader.read()
    env = dict(provenance=provenance().to_json_dict(), python=platform.python_version(),
               l2_bytes=info.l2_bytes, max_sm_mhz=reader.max_sm_mhz(),
               state_at_start=None if state is None else state.to_json_dict())
    try:
        import torch

        env["torch"] = torch.__version__
        env["torch_cuda"] = torch.version.cuda
    except ImportError:
        env["torch"] = None
    return env


def save_json(payload: dict, out_dir: str, name: str) -> str:
    """Write ``payload`` to ``out_dir/name`` as JSON (gzipped when ``name`` ends in ``.gz``:
    level 9, no timestamp, so the same content gives the same bytes)."""
    import json

    from tile_lab.record_files import write_record

    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    write_record(path, json.dumps(payload, indent=1, sort_keys=True, default=str) + "\n")
    print(f"saved {path}")
    return path
