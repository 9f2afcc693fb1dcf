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
    p = argparse.ArgumentParser(description=description)
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
