"""Join profiles recorded on a GPU machine without tileirdisasm (``bench/profile_overhead.py``
there says "no line map") with tile_lab's SASS line map compiled here, and write them to
``notebooks/data``: ``python tools/join_recorded_profiles.py DIR_WITH_profile_*.json``.

The join is by instruction offset and checked by opcode (``Profile.with_lines``); it prints
how many instructions matched, which must be all of them for the same cubin.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]

GEMM = "f16[4096,4096], f16[4096,4096], f16[4096,4096], {}"
SIGS = {  # recorded profile -> (kernel module, kernel, signature) as profile_overhead ran it
    "vector_add": ("gpu_kernels", "vector_add",
                   "f32[16777216], f32[16777216], f32[16777216], 1024"),
    "gemm_best": ("gemm_kernels", "gemm_naive", GEMM.format("128, 128, 64")),
    "gemm_best_sampling": ("gemm_kernels", "gemm_naive", GEMM.format("128, 128, 64")),
    "gemm_cliff": ("gemm_kernels", "gemm_naive", GEMM.format("256, 256, 32")),
}


def main(folder: str, out: str = os.path.join(ROOT, "notebooks", "data")) -> None:
    import importlib

    import tile_lab

    for name, (module, kernel, sig) in SIGS.items():
        path = os.path.join(folder, f"profile_{name}.json")
        if not os.path.exists(path):
            continue
        prof = tile_lab.load_profile(path)
        insp = tile_lab.inspect(getattr(importlib.import_module(module), kernel), sig,
                                arch=prof.arch)
        joined = prof.with_lines(insp)
        joined = type(joined).from_json_dict({**joined.to_json_dict(), "collection": {
            **joined.collection, "line_map": "tile_lab SASS line map (compiled on a CPU "
                                              "machine, same toolchain), joined by offset"}})
        print(f"{name}: {joined.matched_instructions}/{len(joined.instructions)} instructions "
              f"matched; hottest lines {[(lp.line, lp.samples) for lp in joined.hot_lines(3)]}")
        joined.save(os.path.join(out, f"profile_{name}.json"))


if __name__ == "__main__":
    main(*sys.argv[1:])
