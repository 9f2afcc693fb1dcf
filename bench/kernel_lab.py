"""Scratch lab: time tuned cuTile kernels against the strongest baselines on the GPU.

The harness (its protocol: cold L2, rotated mirrored rounds, NVML per group, burst and
sustained regimes) is ``lab_harness.py``; the phases are ``lab_phases.py``: ``gemm`` (fp16
8192³ vs the faster of torch.matmul and cupy.matmul), ``norms`` (softmax / LayerNorm /
RMSNorm fp32 vs torch, with a D2D copy of the same bytes as the roof) and ``vadd`` (vector
add vs the copy roof). Each screens its variants (one quick mirrored round each), then runs
the best ones in both regimes.

    python bench/kernel_lab.py --out DIR [--phases gemm,norms,vadd] [--budget-s 380]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from lab_harness import Gpu  # noqa: E402
from lab_phases import PHASES  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--out", default=".")
    ap.add_argument("--phases", default="gemm,norms,vadd")
    ap.add_argument("--budget-s", type=float, default=380.0)
    ns = ap.parse_args()
    import torch

    t_start = time.perf_counter()
    gpu = Gpu()
    os.makedirs(ns.out, exist_ok=True)
    meta = dict(device=gpu.name, sms=gpu.sms, boost_mhz=gpu.boost_mhz, idle_w=gpu.idle_w,
                torch=torch.__version__, start_state=gpu.state())
    try:
        import cuda.tile
        import cupy
        meta.update(cuda_tile=cuda.tile.__version__, cupy=cupy.__version__)
    except ImportError:
        pass
    print(f"{gpu.name}: {gpu.sms} SMs, boost {gpu.boost_mhz} MHz, idle {gpu.idle_w:.0f} W",
          flush=True)
    results: dict[str, Any] = dict(meta=meta)
    table: list[str] = []
    phases = ns.phases.split(",")
    for i, name in enumerate(phases):
        left = ns.budget_s - (time.perf_counter() - t_start)
        share = left / (len(phases) - i)
        print(f"-- phase {name}: {share:.0f} s of {left:.0f} s left", flush=True)
        try:
            results[name] = PHASES[name](gpu, share, table)
        except Exception as e:  # keep what the other phases measured
            import traceback
            traceback.print_exc()
            results[name] = dict(error=f"{type(e).__name__}: {e}")
        with open(os.path.join(ns.out, "kernel_lab.json"), "w") as f:
            json.dump(results, f, default=_jsonable)
    print(f"\n== {gpu.name}, boost {gpu.boost_mhz} MHz; ratio = baseline time / ours "
          f"(>1: ours faster); roof = our GB/s / D2D copy GB/s ==")
    print("\n".join(table))


def _jsonable(o: Any) -> Any:
    return asdict(o) if hasattr(o, "__dataclass_fields__") else str(o)


if __name__ == "__main__":
    main()
