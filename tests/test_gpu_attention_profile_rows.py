"""bench/gpu_attention_profile_rows.py on the CPU: the rows it picks from the recorded H200
grid, the amounts its rates are computed from, the summary of a scripted profile, and its
exit status where there is no GPU (the real profile needs a GPU and Nsight Compute)."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)

import gpu_attention_profile_rows as apr  # noqa: E402
from attention_space import AttnRow  # noqa: E402
from sweep_common import read_payload  # noqa: E402

from tile_lab.profiling.data import InstructionSample, KernelMetrics  # noqa: E402

GRID = os.path.join(ROOT, "notebooks", "data", "attention_grid_h200.json.gz")


def test_amounts_are_the_grids_own_flops_and_four_tensors_once():
    for row in (AttnRow("fp16", 8192, 128, True), AttnRow("bf16", 2048, 64, False)):
        flops, moved = apr.row_amounts(row.as_json())
        assert flops == row.flops
        assert moved == 4 * row.batch * row.heads * row.seq * row.d * 2


def test_by_default_the_rows_below_one_of_the_recorded_grid_are_profiled():
    rows = read_payload(GRID)["rows"]
    picked = apr.pick(rows, None)
    below = [r for r in rows
             if min(r["floor"]["burst"]["ratio"], r["floor"]["sustained"]["ratio"]) < 1.0]
    assert picked == below
    # the H200 grid of 2026-11-28: every head-128 row is below 1.0x in some regime
    assert {r["name"] for r in rows if r["row"]["d"] == 128} <= {r["name"] for r in picked}
    assert [r["name"] for r in apr.pick(rows, "2x16x8192x128 causal")] == [
        "fp16 2x16x8192x128 causal", "bf16 2x16x8192x128 causal"]


def test_the_summary_uses_the_rows_flops():
    row = next(r for r in read_payload(GRID)["rows"] if r["name"] == "fp16 8x16x2048x128")
    prof = SimpleNamespace(
        metrics=KernelMetrics(duration_ns=500_000, registers_per_thread=168),
        instructions=(InstructionSample(0, "HGMMA", 10, 10, {"wait": 10}, line=3),),
        hot_lines=lambda n: ())
    s = apr.profile_summary(row, prof, *apr.row_amounts(row["row"]))
    assert s["tflops"] == pytest.approx(AttnRow("fp16", 2048, 128, False).flops / 500e-6 / 1e12)
    assert s["config"] == row["tuning"]["config"] and s["stalls_pct"] == {"wait": 100.0}


@pytest.mark.timeout(120)
def test_without_a_gpu_it_says_what_is_missing_and_exits_2(tmp_path):
    from gpu_presence import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU")
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "gpu_attention_profile_rows.py"),
                           "--grid", GRID, "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "gpu_attention_profile_rows.py:" in proc.stderr
    assert not (tmp_path / "attention_grid_profiles.json").exists()
