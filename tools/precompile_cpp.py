"""Compile the CUDA Tile C++ examples here (CPU) for one arch and save each Inspection as JSON.

The lent GPU machine's system nvcc predates CUDA Tile C++; either carry the pip nvcc there in a
call of its own (``tools/gpu_split_bundle.sh --cpp``) or compile the C++ kernels on the CPU
(which is exactly what tile_lab is for) and let their cubins travel inside the JSON. Tests and
benchmarks load them when ``TILE_LAB_CPP_PREBUILT`` names the folder (see ``cpp_inspection``).

    python tools/precompile_cpp.py --arch sm_90 --out .gpu_cpp
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "tests" / "cpp_examples"


def cpp_inspection(cu_file: str | os.PathLike[str], arch: str):
    """The Inspection of an example: prebuilt JSON when ``TILE_LAB_CPP_PREBUILT`` has it, else a
    fresh ``inspect_cpp`` compile."""
    from tile_lab.compile.artifacts import Inspection
    from tile_lab.cpp import inspect_cpp

    prebuilt = os.environ.get("TILE_LAB_CPP_PREBUILT")
    if prebuilt:
        path = Path(prebuilt) / f"{Path(cu_file).stem}_{arch}.json"
        if path.exists():
            return Inspection.from_json(path.read_text())
    return inspect_cpp(Path(cu_file), arch=arch)


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", default=".gpu_cpp")
    ns = ap.parse_args()
    from tile_lab.cpp import inspect_cpp

    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    for cu in sorted(EXAMPLES.glob("*.cu")):
        insp = inspect_cpp(cu, arch=ns.arch)
        (out / f"{cu.stem}_{ns.arch}.json").write_text(insp.to_json())
        print(f"{cu.name}: {len(insp.cubin)} bytes of cubin for {ns.arch}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
