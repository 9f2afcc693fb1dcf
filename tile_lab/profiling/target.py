"""The process Nsight Compute profiles: ``python -m tile_lab.profiling.target SPEC.pkl``.

Rebuilds the shipped kernel job (as the isolation worker does, so kernels from notebook cells
work), copies the arguments to the GPU, launches once and waits. Its exit status
and last line tell the parent what happened.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

import numpy as np


def main(spec_path: str) -> int:
    with open(spec_path, "rb") as f:
        shipped = pickle.load(f)
    import cupy

    job = shipped.rebuild(args=[device_array(cupy, a) if hasattr(a, "__array_interface__")
                                else a for a in shipped.args])
    stream = cupy.cuda.get_current_stream()
    job.kernel.bind(cupy, job.grid, job.args)(stream)
    stream.synchronize()
    print("tile_lab.profile.target: launched", flush=True)
    return 0


# NumPy dtypes (from ml_dtypes) that CuPy has no dtype for: they go up through torch, viewed
# from their bits, as cuTile takes torch tensors of these dtypes.
_TORCH_ONLY = {"bfloat16": "bfloat16", "float8_e4m3fn": "float8_e4m3fn",
               "float8_e5m2": "float8_e5m2"}


def device_array(cupy: Any, a: Any) -> Any:
    """A device copy of the host array ``a``: CuPy where CuPy has the dtype, else a CUDA torch
    tensor made from the same bits (bfloat16 and float8 arguments of a profiled launch)."""
    name = getattr(getattr(a, "dtype", None), "name", "")
    if name not in _TORCH_ONLY:
        return cupy.asarray(a)
    import torch

    bits = torch.from_numpy(np.ascontiguousarray(a).view(f"int{8 * a.dtype.itemsize}"))
    return bits.cuda().view(getattr(torch, _TORCH_ONLY[name]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
