"""Record decode attention on the GPU with K/V aligned and 2 bytes off alignment (notebook 18).

The kernel is ``tile_lab.examples.decode.decode_attention`` (b 1, Hq 4, Hkv 2, Lq 15, Lk 63,
D 32, tiles 8×16, input_pos 62; float16). Three cases: K and V views of a fused buffer at a
16-byte boundary; the same views 2 bytes off; 2 bytes off with V loaded with
``PaddingMode.ZERO``. Per case: ``repeats`` launches, each compared with the float64 NumPy
reference (NaN count and where, max error over the finite outputs), and one
``tile_lab.crosscheck`` (GPU vs emulator, per tile). Writes
``notebooks/data/decode_alignment.json.gz`` (gzipped JSON) with the device's provenance (GPU,
driver, CUDA, cuda.tile, tileiras, CuPy, NumPy, Python versions).

    python bench/record_decode_alignment.py [--out notebooks/data/decode_alignment.json.gz]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASES = (("aligned", False, False), ("2 bytes off", True, False),
         ("2 bytes off, V zero-padded", True, True))


def record_case(label: str, misaligned: bool, zero_pad: bool, repeats: int) -> dict:
    import tile_lab
    from tile_lab.crosschecking import CupyGpu
    from tile_lab.examples.decode import (
        decode_attention,
        decode_inputs,
        decode_launch,
        decode_reference,
    )

    q, k, v, o = decode_inputs(misaligned=misaligned)
    grid, args = decode_launch(q, k, v, o, zero_pad=zero_pad)
    want = decode_reference(q, k, v, args[5])
    gpu = CupyGpu()
    runs = []
    for _ in range(repeats):
        out = np.asarray(gpu.run(decode_attention, grid, args)[3], np.float64)
        nan = np.isnan(out)
        finite = np.isfinite(out)
        runs.append({"nan": int(nan.sum()), "inf": int(np.isinf(out).sum()),
                     "nan_at": np.argwhere(nan).tolist(),
                     "max_abs_error_finite": float(np.abs(out - want)[finite].max())
                     if finite.any() else None})
    cc = tile_lab.crosscheck(decode_attention, grid, args)
    return {"case": label, "misaligned": misaligned, "zero_pad": zero_pad,
            "k_address_mod_16": int(k.ctypes.data % 16), "grid": list(grid),
            "elements": int(o.size), "runs": runs, "crosscheck": cc.to_json()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--out", type=Path, default=ROOT / "notebooks" / "data" /
                    "decode_alignment.json.gz")
    ap.add_argument("--repeats", type=int, default=5)
    opts = ap.parse_args(argv)

    from tile_lab.gpu.device import provenance

    prov = asdict(provenance())
    prov.update(numpy=np.__version__, python=platform.python_version(),
                recorded=datetime.now(timezone.utc).strftime("%Y-%m-%d"))
    cases = [record_case(label, mis, zero, opts.repeats) for label, mis, zero in CASES]
    data = {"kernel": "tile_lab.examples.decode.decode_attention",
            "shape": {"b": 1, "hq": 4, "hkv": 2, "lq": 15, "lk": 63, "d": 32, "tm": 8,
                      "tn": 16, "input_pos": 62, "dtype": "float16"},
            "provenance": prov, "cases": cases}
    # source files named relative to the checkout: the JSON is kept in the repository
    text = json.dumps(data, indent=1, allow_nan=False).replace(f'"{ROOT}/', '"') + "\n"
    from tile_lab.record_files import write_record

    write_record(opts.out, text)  # .gz: gzipped, reproducible bytes
    for c in cases:
        nans = [r["nan"] for r in c["runs"]]
        print(f"{c['case']:28s} NaN per run {nans} of {c['elements']}; crosscheck: "
              f"{c['crosscheck']['summary']}")
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
