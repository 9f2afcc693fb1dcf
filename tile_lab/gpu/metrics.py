"""Bytes, FLOPs and rates: the arithmetic between a time and a "% of peak".

Pure functions on shapes/dtypes/numbers — no GPU — so every formula is tested on the CPU.

Bytes model when the user gives none ("array sizes"): every array argument is moved through
DRAM exactly once (inputs read once, outputs written once), which is the fewest bytes a
kernel that touches all of each array can move. A kernel that reads part of an array, or
re-reads, needs ``bytes=`` (or a trace, "trace": unique elements read + unique elements
written, from :func:`bytes_from_trace`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def is_array(value: Any) -> bool:
    """Array-like kernel argument (NumPy, CuPy, torch, DLPack/CUDA-array-interface)."""
    return (hasattr(value, "shape") and hasattr(value, "dtype")
            and not isinstance(value, (np.generic, int, float, bool)))


def array_nbytes(value: Any) -> int:
    nbytes = getattr(value, "nbytes", None)
    if nbytes is not None:
        return int(nbytes)
    itemsize = getattr(value, "itemsize", None)
    if itemsize is None:  # torch.Tensor
        itemsize = value.element_size()
    return int(math.prod(tuple(value.shape))) * int(itemsize)


def bytes_from_arrays(args: Sequence[Any]) -> int:
    """Every array argument moved once (see module docstring)."""
    return sum(array_nbytes(a) for a in args if is_array(a))


def bytes_from_trace(trace: Any) -> int:
    """Unique bytes read plus unique bytes written, from an emulator ``Trace``."""
    total = 0
    for info in trace.arrays:
        itemsize = np.dtype(info.dtype).itemsize if info.dtype != "bfloat16" else 2
        for kind in ("read", "write"):
            touched = np.zeros(info.shape, dtype=bool)
            for acc in trace.select(arg=info.name):
                if (acc.is_read if kind == "read" else acc.is_write):
                    touched |= acc.mask(info.shape)
            total += int(touched.sum()) * itemsize
    return total


def matmul_flops(m: int, n: int, k: int, *, batch: int = 1) -> int:
    """2·M·N·K per (batched) matrix product: one multiply and one add per term."""
    return 2 * m * n * k * batch


def mma_flops(tile_shapes: Sequence[tuple[int, int, int]], executions: int = 1) -> int:
    """FLOPs of ``ct.mma`` tile ops: 2·M·N·K for each (M, N, K), times ``executions``."""
    return executions * sum(matmul_flops(m, n, k) for m, n, k in tile_shapes)


@dataclass(frozen=True)
class Rates:
    gbps: float | None
    tflops: float | None
    above_roof: bool
    notes: tuple[str, ...]


def rates(mean_s: float, *, nbytes: int | None, flops: int | None, peak_gbps: float | None,
          peak_tflops: float | None) -> Rates:
    """GB/s and TFLOPS from the mean time, and whether either is above its physical roof."""
    if mean_s <= 0:
        raise ValueError(f"mean time must be > 0, got {mean_s!r}")
    gbps = None if nbytes is None else nbytes / mean_s / 1e9
    tflops = None if flops is None else flops / mean_s / 1e12
    notes = []
    if gbps is not None and peak_gbps and gbps > peak_gbps:
        notes.append(f"{gbps:.4g} GB/s is above the DRAM roof {peak_gbps:.4g} GB/s: the bytes "
                     "are overcounted or the data came from L2 (warm cache)")
    if tflops is not None and peak_tflops and tflops > peak_tflops:
        notes.append(f"{tflops:.4g} TFLOPS is above the compute roof {peak_tflops:.4g}: the "
                     "FLOPs are overcounted")
    return Rates(gbps, tflops, bool(notes), tuple(notes))


# ---- correctness: output vs reference ----------------------------------------------------------
def default_tolerance(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) for comparing a kernel's output of ``dtype`` with a reference."""
    name = str(np.dtype(dtype)) if str(dtype) != "bfloat16" else "bfloat16"
    if name in ("float16", "bfloat16") or name.startswith("float8"):
        return 1e-2, 1e-2
    if name == "float32":
        return 1e-4, 1e-5
    if name == "float64":
        return 1e-10, 1e-12
    return 0.0, 0.0  # integers and bools: exact


@dataclass(frozen=True)
class Comparison:
    max_abs_err: float
    max_rel_err: float
    mismatches: int
    worst_index: tuple[int, ...] | None


def compare(actual: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float) -> Comparison:
    """Element-wise |actual - expected| <= atol + rtol·|expected|; NaN matches only NaN."""
    if tuple(actual.shape) != tuple(np.shape(expected)):
        raise ValueError(f"shape {tuple(actual.shape)} != reference shape "
                         f"{tuple(np.shape(expected))}")
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    both_nan = np.isnan(a) & np.isnan(e)
    diff = np.where(both_nan, 0.0, np.abs(a - e))
    diff = np.where(np.isnan(diff), np.inf, diff)
    bad = diff > atol + rtol * np.abs(np.where(np.isnan(e), 0.0, e))
    rel = diff / np.maximum(np.abs(np.where(np.isnan(e), 0.0, e)), np.finfo(np.float64).tiny)
    rel = np.where(diff == 0, 0.0, rel)
    worst = None
    if bad.any():
        worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(np.where(bad, diff, -1))),
                                                       a.shape))
    return Comparison(max_abs_err=float(diff.max()) if diff.size else 0.0,
                      max_rel_err=float(rel.max()) if rel.size else 0.0,
                      mismatches=int(bad.sum()), worst_index=worst)
