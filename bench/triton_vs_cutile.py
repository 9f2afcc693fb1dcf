"""Triton vs cuTile on one GPU: the three ports of notebook 19, checked and raced side by side.

For each pair of ``tile_lab.examples.triton_ports`` (vector add with a mask, row softmax, tiled
fp16 GEMM), ``tile_lab.triton.time_pair``:

* compiles both for this GPU's arch (registers, shared memory, SASS instruction mix);
* launches each once on copies of the same inputs (Triton on torch CUDA tensors, cuTile with
  ``ct.launch``) and compares the outputs element by element with the crosscheck's classes
  (identical / by design / undetermined / mismatch);
* times them with ``tile_lab.compare_timed`` in both regimes (burst: clocks recovered before
  each group; sustained: after a warm-up under load), interleaved ABBA, L2 flushed before each
  sample (``--mode cold``), with the SM clock each side ran at.

It writes ``notebooks/data/triton_vs_cutile.json.gz`` (gzipped JSON: the device's provenance,
per pair the sizes, resources, mix, the output agreement and the timing rows), from which
notebook 19 and the README's table are made. Needs a GPU, CuPy, torch with CUDA and Triton::

    python bench/triton_vs_cutile.py [--out notebooks/data/triton_vs_cutile.json.gz]
        [--only vector_add,softmax,gemm] [--rounds 8] [--samples 5]
"""

from __future__ import annotations

import argparse
import json
import platform
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# sizes: elements (vector add), rows = columns (softmax), M = N = K (GEMM); chosen so the
# emulator's trace of the same launch (which classifies the output differences) takes seconds
SIZES = {"vector_add": 1 << 24, "softmax": 4096, "gemm": 2048}


class TorchCuda:
    """``pair_inputs``' array module: NumPy data copied to torch CUDA tensors."""

    @staticmethod
    def asarray(a: Any) -> Any:
        import torch

        return torch.as_tensor(a, device="cuda")


def record_pair(name: str, size: int, options: Any, mode: str) -> dict[str, Any]:
    from tile_lab.examples.triton_ports import pair_inputs
    from tile_lab.triton import time_pair

    p = pair_inputs(name, size, xp=TorchCuda)
    cmp = time_pair(p["triton"], p["cutile"], args=p["args"], grid=p["grid"],
                    cutile_args=p["cutile_args"], options=options, mode=mode)
    rows = cmp.timing["rows"]
    for r in rows:  # the work per second each side reached, from the median times
        for side in ("triton", "cutile"):
            r[f"{side}_gbps"] = p["bytes"] / (r[f"{side}_us"] * 1e-6) / 1e9
            r[f"{side}_tflops"] = p["flops"] / (r[f"{side}_us"] * 1e-6) / 1e12
    out = cmp.outputs
    return {"pair": name, "size": size, "grid": list(p["grid"]),
            "triton": cmp.triton.to_json(), "cutile": cmp.cutile.to_json(),
            "outputs": {"agreement": out.agreement, "summary": out.summary(),
                        "elements_by_class": out.elements_by_class,
                        "explanations": out.explanations()},
            "timing": {k: cmp.timing[k] for k in ("device", "mode", "rows", "versions")},
            "bytes": p["bytes"], "flops": p["flops"]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--out", type=Path,
                    default=ROOT / "notebooks" / "data" / "triton_vs_cutile.json.gz")
    ap.add_argument("--only", default=",".join(SIZES), help="pairs, comma-separated")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--samples", type=int, default=5, help="samples per round and side")
    ap.add_argument("--mode", choices=("cold", "warm"), default="cold")
    opts = ap.parse_args(argv)

    import numpy as np

    from tile_lab.gpu.device import provenance
    from tile_lab.gpu.regimes import CompareOptions

    prov = asdict(provenance())
    prov.update(numpy=np.__version__, python=platform.python_version(),
                recorded=datetime.now(timezone.utc).strftime("%Y-%m-%d"))
    options = CompareOptions(rounds=opts.rounds, samples_per_round=opts.samples)
    pairs = []
    for name in [n.strip() for n in opts.only.split(",") if n.strip()]:
        rec = record_pair(name, SIZES[name], options, opts.mode)
        pairs.append(rec)
        print(f"{name} ({rec['size']}): outputs {rec['outputs']['agreement']}; "
              f"registers {rec['triton']['resources']['registers']} (Triton) vs "
              f"{rec['cutile']['resources']['registers']} (cuTile)")
        for r in rec["timing"]["rows"]:
            print(f"  {r['regime']:9s} Triton {r['triton_us']:9.1f} us  cuTile "
                  f"{r['cutile_us']:9.1f} us  cuTile/Triton {r['ratio']:.3f} "
                  f"({r['ci_low']:.3f}-{r['ci_high']:.3f})  SM {r['triton_sm_mhz']}/"
                  f"{r['cutile_sm_mhz']} MHz")
    prov.update(pairs[0]["timing"]["versions"] if pairs else {})
    data = {"provenance": prov, "mode": opts.mode, "rounds": opts.rounds,
            "samples_per_round": opts.samples, "pairs": pairs}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    # source paths named relative to the checkout: the JSON is kept in the repository
    text = json.dumps(data, indent=1, allow_nan=False).replace(f'"{ROOT}/', '"')
    from tile_lab.record_files import write_record

    write_record(opts.out, text)  # .gz: gzipped, reproducible bytes
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
