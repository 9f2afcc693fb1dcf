"""bench/baseline_kernels.py on the CPU: reading kernels out of a CUPTI trace, choosing rows, the
table of a saved run, and what it says without a GPU (the trace itself needs one: its record is
bench/results/baseline_kernels_h200.json.gz)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)

import baseline_kernels as bk  # noqa: E402

NVJET = "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"


def _kernel(name: str, dur: float, **args) -> dict:
    return dict(cat="kernel", name=name, dur=dur, args=args)


def test_kernels_are_read_from_the_trace_one_entry_per_name_in_launch_order():
    events = [dict(cat="cpu_op", name="aten::matmul", dur=50.0),
              _kernel(NVJET, 172.0, grid=[2, 66, 1], block=[384, 1, 1],
                      **{"registers per thread": 168, "shared memory": 213188}),
              _kernel("elementwise", 3.0, grid=[8, 1, 1], block=[128, 1, 1]),
              _kernel(NVJET, 171.5, grid=[2, 66, 1], block=[384, 1, 1]),
              _kernel(NVJET, 173.0)]
    got = bk.kernels_in_trace(events)
    assert [k["name"] for k in got] == [NVJET, "elementwise"]
    first = got[0]
    assert (first["launches"], first["min_us"], first["grid"], first["block"],
            first["registers"], first["shared_memory"]) == (3, 171.5, [2, 66, 1], [384, 1, 1],
                                                             168, 213188)
    assert got[1]["registers"] is None and got[1]["launches"] == 1


def test_rows_are_the_sweeps_and_are_picked_by_name_fragment():
    every = bk.chosen(None)
    assert len(every) == 18 + 32
    assert {kind for kind, _, _ in every} == {"gemm", "attention"}
    picked = bk.chosen("4000x4000,8x16x2048x128 causal")
    assert [name for _, name, _ in picked] == [
        "fp16 4000x4000x4000", "bf16 4000x4000x4000", "fp16 8x16x2048x128 causal",
        "bf16 8x16x2048x128 causal"]
    with pytest.raises(SystemExit, match="no row name contains 'nothing'"):
        bk.chosen("nothing")


def _doc() -> dict:
    k = dict(name=NVJET, launches=3, min_us=171.5, grid=[2, 66, 1], block=[384, 1, 1],
             registers=168, shared_memory=213188)
    return dict(device="NVIDIA H200", torch="2.11.0", cupy="14.2.0",
                rows=[dict(kind="gemm", name="fp16 4096x4096x4096",
                           baselines={"torch.matmul": [k], "cupy.matmul": [k]})])


def test_the_table_names_each_baselines_kernel_and_its_launch_shape():
    lines = bk.markdown(_doc()).splitlines()
    assert lines[0] == "NVIDIA H200, torch 2.11.0, CuPy 14.2.0"
    assert lines[4] == (f"| fp16 4096x4096x4096 | torch.matmul | `{NVJET}` | 2×66×1 | 384×1×1 | "
                        "168 | 213188 | 171.5 |")
    assert len(lines) == 6


@pytest.mark.timeout(120)
def test_markdown_prints_a_saved_runs_table(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_doc()))
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "baseline_kernels.py"),
                           "--markdown", str(path)], capture_output=True, text=True,
                          timeout=100, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == bk.markdown(_doc())


@pytest.mark.timeout(120)
def test_without_a_gpu_it_says_what_is_missing_and_exits_2(tmp_path):
    from gpu_presence import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU")
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "baseline_kernels.py"),
                           "--rows", "fp16 4096x4096x4096", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "baseline_kernels.py: bench/baseline_kernels.py needs a CUDA GPU" in proc.stderr
    assert not (tmp_path / "baseline_kernels.json").exists()
