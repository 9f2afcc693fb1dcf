"""bench/gpu_gemm_profile_rows.py on the CPU: which rows it picks and what its summary says,
from a scripted profile (the real profile needs a GPU and Nsight Compute)."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

import gpu_gemm_profile_rows as pr  # noqa: E402

from tile_lab.profiling.data import InstructionSample, KernelMetrics, LineProfile  # noqa: E402


def _row(name: str, burst: float | None, sustained: float | None, status: str = "ok") -> dict:
    floor = {reg: {"ratio": r} for reg, r in (("burst", burst), ("sustained", sustained))
             if r is not None}
    m, n, k = (int(x) for x in name.split()[1].split("x"))
    return dict(name=name, status=status, floor=floor,
                row=dict(dtype=name.split()[0], m=m, n=n, k=k),
                tuning=dict(config=dict(TM=128, TN=128, SPLIT=2)))


ROWS = [_row("fp16 8192x8192x8192", 1.015, 1.024), _row("fp16 128x8192x8192", 0.235, 0.234),
        _row("bf16 4000x4000x4000", 1.020, 0.993), _row("bf16 4096x4096x4096", 1.01, None),
        _row("fp16 256x16384x4096", None, None, status="skipped")]


def test_by_default_every_measured_row_below_one_in_either_regime_is_profiled():
    assert [r["name"] for r in pr.pick(ROWS, None)] == [
        "fp16 128x8192x8192", "bf16 4000x4000x4000", "bf16 4096x4096x4096"]


def test_rows_are_picked_by_name_fragment_and_an_unknown_one_is_named():
    assert [r["name"] for r in pr.pick(ROWS, "8192x8192x8192,128x")] == [
        "fp16 8192x8192x8192", "fp16 128x8192x8192"]
    with pytest.raises(SystemExit, match="'9999x'"):
        pr.pick(ROWS, "9999x")


def test_the_summary_gives_rate_bytes_and_stall_shares_from_the_profile():
    ins = (InstructionSample(0, "LDG.E", 30, 10, {"long_scoreboard": 30}, line=5),
           InstructionSample(16, "HGMMA", 10, 10, {"math_pipe_throttle": 6, "wait": 4}, line=7))
    lines = (LineProfile(5, "  b = ct.load(B)", 30, 10, 1, {"long_scoreboard": 30}),)
    prof = SimpleNamespace(
        metrics=KernelMetrics(duration_ns=250_000, registers_per_thread=168,
                              achieved_occupancy_pct=6.2, theoretical_occupancy_pct=6.25),
        instructions=ins, hot_lines=lambda n: lines[:n])
    s = pr.summarize(ROWS[1], prof)
    assert s["duration_us"] == pytest.approx(250.0)
    assert s["tflops"] == pytest.approx(2 * 128 * 8192 * 8192 / 250e-6 / 1e12)
    once = (128 * 8192 + 8192 * 8192 + 128 * 8192) * 2
    assert s["gbps_if_each_operand_once"] == pytest.approx(once / 250e-6 / 1e9)
    assert s["stalls_pct"] == {"long_scoreboard": 75.0, "math_pipe_throttle": 15.0, "wait": 10.0}
    assert s["hot_lines"][0]["text"] == "b = ct.load(B)"
