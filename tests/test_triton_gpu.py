"""tile_lab.triton.time_pair on a GPU: both ports launched, outputs compared, timed in both
regimes; and bench/triton_vs_cutile.py's record of one pair."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from triton_cases import needs_triton

pytestmark = [needs_triton, pytest.mark.gpu]

QUICK = dict(rounds=2, samples_per_round=3, sustain_s=0.2, bootstrap=200)


@pytest.mark.parametrize("name, size", [("vector_add", 1 << 20), ("softmax", 512),
                                        ("gemm", 512)])
def test_time_pair_checks_and_times_both(name, size):
    import torch

    from tile_lab.examples.triton_ports import pair_inputs
    from tile_lab.gpu.regimes import CompareOptions
    from tile_lab.triton import time_pair

    class Cuda:
        asarray = staticmethod(lambda a: torch.as_tensor(a, device="cuda"))

    p = pair_inputs(name, size, xp=Cuda)
    cmp = time_pair(p["triton"], p["cutile"], args=p["args"], grid=p["grid"],
                    cutile_args=p["cutile_args"], options=CompareOptions(**QUICK))
    assert cmp.outputs.ok, str(cmp.outputs)
    assert torch.cuda.get_device_name() in cmp.outputs.device
    rows = {r["regime"]: r for r in cmp.timing["rows"]}
    assert set(rows) == {"burst", "sustained"}
    for r in rows.values():
        assert r["triton_us"] > 0 and r["cutile_us"] > 0
        assert r["ci_low"] <= r["ratio"] <= r["ci_high"]
    assert cmp.triton.inspection.arch == cmp.cutile.inspection.arch


def test_bench_records_a_pair():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from triton_vs_cutile import record_pair

    from tile_lab.gpu.regimes import CompareOptions

    rec = record_pair("vector_add", 1 << 20, CompareOptions(**QUICK), "cold")
    assert rec["outputs"]["agreement"] in ("identical", "explained")
    assert {r["regime"] for r in rec["timing"]["rows"]} == {"burst", "sustained"}
    assert all(r["triton_gbps"] > 0 for r in rec["timing"]["rows"])
