"""bench/tileiras_ab.py on the CPU: which rows it compares, how a round's ratio is taken (only
at one clock), the table of a saved run, and what it says without a GPU or a tileiras (the
comparison itself needs a GPU: its numbers are in bench/results/tileiras_ab_h200.json.gz)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)

import tileiras_ab as ab  # noqa: E402
from sweep_common import load_payloads  # noqa: E402

from tile_lab.compile.toolchain import find_tool  # noqa: E402

GEMM = [os.path.join(ROOT, p) for p in ab.GEMM]
ATTENTION = [os.path.join(ROOT, p) for p in ab.ATTENTION]


def _below_one(rec: dict) -> bool:
    return any(rec["floor"].get(reg, {}).get("ratio", 0.0) < 1.0
               for reg in ("burst", "sustained"))


def test_by_default_the_rows_below_one_of_both_sweeps_are_compared_with_their_winners():
    rows = ab.chosen_rows(GEMM, ATTENTION, None)
    for kind, paths in (("gemm", GEMM), ("attention", ATTENTION)):
        recs = [r for r in load_payloads(paths)["rows"] if r.get("status") == "ok"]
        mine = {r["name"]: r for r in rows if r["kind"] == kind}
        assert mine and set(mine) == {r["name"] for r in recs if _below_one(r)}
        for r in recs:
            if r["name"] in mine:
                assert mine[r["name"]]["config"] == r["tuning"]["config"]
                assert mine[r["name"]]["row"] == r["row"]
    assert [r["kind"] for r in rows] == sorted((r["kind"] for r in rows),
                                                key=["gemm", "attention"].index)


def test_rows_are_picked_by_name_fragment_across_both_sweeps():
    rows = ab.chosen_rows(GEMM, ATTENTION, "fp16 4096x4096x4096,8x16x2048x128 causal")
    assert [(r["kind"], r["name"]) for r in rows] == [
        ("gemm", "fp16 4096x4096x4096"), ("attention", "fp16 8x16x2048x128 causal"),
        ("attention", "bf16 8x16x2048x128 causal")]
    with pytest.raises(SystemExit, match="no row name contains 'nothing'"):
        ab.chosen_rows(GEMM, ATTENTION, "nothing")


def test_a_rounds_ratio_counts_only_when_both_batches_ran_at_one_clock():
    slow = dict(us=[110.0, 120.0, 105.0, 130.0], sm_mhz=[1980, 1980, 1755, None])
    fast = dict(us=[100.0, 100.0, 100.0, 100.0], sm_mhz=[1980, 1965, 1980, 1980])
    r = ab.clock_matched_ratios(slow, fast)
    # round 2 (1965 vs 1980: 0.8% apart) counts; round 3 (11% apart) and 4 (no reading) do not
    assert (r["median"], r["low"], r["high"], r["rounds"], r["dropped"]) == (
        1.15, 1.1, 1.2, 2, 2)
    none = ab.clock_matched_ratios(dict(us=[1.0], sm_mhz=[1500]), dict(us=[1.0], sm_mhz=[1980]))
    assert none["median"] is None and none["dropped"] == 1


def test_the_baseline_of_a_round_is_that_rounds_quickest():
    c = {"torch.matmul": dict(us=[10.0, 12.0], sm_mhz=[1980, 1965]),
         "cupy.matmul": dict(us=[11.0, 11.5], sm_mhz=[1970, 1950])}
    assert ab.fastest_baseline(c, ["torch.matmul", "cupy.matmul"]) == dict(
        us=[10.0, 11.5], sm_mhz=[1980, 1950])


def _saved_run() -> dict:
    at = [1980.0] * 3
    contenders = {"A": dict(us=[200.0, 201.0, 199.0], sm_mhz=at),
                  "B": dict(us=[190.0, 191.0, 189.0], sm_mhz=at),
                  "torch.matmul": dict(us=[195.0, 196.0, 194.0], sm_mhz=at)}
    rec = dict(kind="gemm", name="fp16 4096x4096x4096", baselines=["torch.matmul"],
               contenders=contenders)
    rec["ratios"] = ab.row_ratios(rec)
    return dict(builds=dict(A="release 13.4, V13.4.92", B="release 13.5, V13.5.37"),
                device="NVIDIA H200", driver="580.159.04", cuda_tile="1.7.0",
                rows=[rec, dict(name="fp16 8x16x2048x128", error="RuntimeError: boom")])


def test_the_ratios_say_which_build_is_quicker_and_the_table_shows_them():
    doc = _saved_run()
    r = doc["rows"][0]["ratios"]
    assert r["B vs A"]["median"] == pytest.approx(200 / 190, abs=1e-4)  # the middle round
    assert r["A vs baseline"]["median"] < 1.0 < r["B vs baseline"]["median"]
    table = ab.markdown(doc)
    assert "A: release 13.4, V13.4.92; B: release 13.5, V13.5.37; NVIDIA H200" in table
    row = next(line for line in table.splitlines() if line.startswith("| fp16 4096"))
    assert f"**{200 / 190:.3f}**" in row and "3 rounds" in row and "1980–1980" in row
    assert "| fp16 8x16x2048x128 | error: RuntimeError: boom |" in table


@pytest.mark.timeout(120)
def test_a_folder_without_tileiras_is_named_and_nothing_runs(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "tileiras_ab.py"), "--a",
                           str(tmp_path), "--b", str(tmp_path), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert proc.returncode == 2
    assert f"no tileiras executable in '{tmp_path}'" in proc.stderr


@pytest.mark.timeout(120)
def test_without_a_gpu_it_says_what_is_missing_and_exits_2(tmp_path):
    from gpu_presence import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU")
    folder = str(find_tool("tileiras").parent)
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "tileiras_ab.py"), "--a", folder,
                           "--b", folder, "--rows", "fp16 4096x4096x4096", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "tileiras_ab.py: bench/tileiras_ab.py needs a CUDA GPU" in proc.stderr
    assert not (tmp_path / "tileiras_ab.json").exists()


@pytest.mark.timeout(120)
def test_markdown_prints_a_saved_runs_table(tmp_path):
    import json

    path = tmp_path / "run.json"
    path.write_text(json.dumps(_saved_run()))
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "tileiras_ab.py"), "--markdown",
                           str(path)], capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ab.markdown(_saved_run())
