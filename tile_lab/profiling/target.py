"""The process Nsight Compute profiles: ``python -m tile_lab.profiling.target SPEC.pkl``.

Rebuilds the kernel from its source (as the isolation worker does, so kernels from notebook
cells work), copies the arguments to the GPU, launches once and waits. Its exit status
and last line tell the parent what happened.
"""

from __future__ import annotations

import pickle
import sys


def main(spec_path: str) -> int:
    with open(spec_path, "rb") as f:
        job = pickle.load(f)
    import cuda.tile as ct
    import cupy

    from ..gpu.isolate import rebuild

    kernel = rebuild(job["kernel"])
    args = tuple(cupy.asarray(a) if hasattr(a, "__array_interface__") else a
                 for a in job["args"])
    stream = cupy.cuda.get_current_stream()
    ct.launch(stream, tuple(job["grid"]), kernel, args)
    stream.synchronize()
    print("tile_lab.profile.target: launched", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
