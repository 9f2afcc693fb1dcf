"""Bytes, FLOPs and rates: the arithmetic between a time and a "% of peak".

Pure functions on shapes/dtypes/numbers — no GPU — so every formula is tested on the CPU.

Bytes model when the user gives none ("array sizes"): every array argument is moved through
DRAM exactly once (inputs read once, outputs written once), which is the fewest bytes a
kernel that touches all of each array can move. A kernel that reads part of an array, or
re-reads, needs ``bytes=`` (or a trace, "trace": unique elements read + unique elements
written, from :func:`bytes_from_trace`).

FLOPs model when the user gives none ("mma shapes"): the tensor-core work of every
``ct.mma`` / ``ct.matmul`` / ``ct.mma_scaled`` the kernel executes, 2·batch·M·N·K per call
with the *tile* shapes. A tile padded at a ragged edge is multiplied in full by the
hardware, so for M not a multiple of TM this counts the work executed (more than the
problem's useful 2·M·N·K; pass ``flops=`` for the latter). Elementwise arithmetic is not
counted: a kernel without matrix products gets no FLOPs rather than an invented number.
:func:`estimate_flops` emulates only a few sample blocks (see there), so the one function
that emulates lives here, imported lazily; everything else in this module is pure.
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


# ---- FLOPs from mma shapes -------------------------------------------------------------------
DEFAULT_FLOPS_SAMPLES = 3


@dataclass(frozen=True)
class FlopsEstimate:
    """FLOPs of one launch derived from the matrix products of emulated blocks.

    ``flops`` is None when no emulated block ran a matrix product. ``per_block`` lists
    (block id, FLOPs) of every emulated block; ``uniform`` says whether they all agree.
    ``exact`` is True when every block of the grid was emulated.
    """

    flops: int | None
    source: str
    blocks_emulated: int
    blocks_total: int
    uniform: bool
    exact: bool
    per_block: tuple[tuple[tuple[int, int, int], int], ...]


def flops_from_trace(trace: Any) -> FlopsEstimate:
    """FLOPs of the launch a ``Trace`` (whole grid or a subset of blocks) describes.

    Whole grid: the exact sum. A subset: its per-block FLOPs times the grid's block count
    when the sampled blocks agree; when they disagree, their mean times the block count,
    labelled "NOT uniform" (an estimate: pass ``flops=`` for an exact figure).
    """
    if trace.mma_calls is None:
        raise ValueError("this trace did not record matrix products (it was saved by an "
                         "older tile_lab); trace the kernel again")
    per = trace.mma_flops_by_block()
    total_blocks = math.prod(trace.grid)
    ran = len(per)
    values = sorted(set(per.values()))
    uniform = len(values) <= 1
    per_block = tuple(per.items())
    if not any(values):
        return FlopsEstimate(None, f"no mma in {_of(ran, total_blocks)} blocks emulated", ran,
                             total_blocks, uniform, trace.complete, per_block)
    if trace.complete:
        return FlopsEstimate(sum(per.values()), f"mma shapes, all {total_blocks} blocks "
                             "emulated", ran, total_blocks, uniform, True, per_block)
    if uniform:
        return FlopsEstimate(values[0] * total_blocks,
                             f"mma shapes, {ran} of {total_blocks} blocks emulated, uniform",
                             ran, total_blocks, True, False, per_block)
    mean = sum(per.values()) / ran
    return FlopsEstimate(
        round(mean * total_blocks),
        f"mma shapes, {ran} of {total_blocks} blocks emulated, NOT uniform (per block "
        f"{values[0]:.4g} to {values[-1]:.4g} FLOPs): mean x {total_blocks} blocks",
        ran, total_blocks, False, False, per_block)


def sample_blocks(grid: Sequence[int], samples: int = DEFAULT_FLOPS_SAMPLES
                  ) -> list[tuple[int, int, int]]:
    """``samples`` block ids spread evenly over the grid in launch order (x fastest):
    always the first and the last block (the ragged corner), then evenly between."""
    g = (*(int(v) for v in grid), 1, 1)[:3]
    total = math.prod(g)
    count = max(1, min(int(samples), total))
    linear = sorted({0 if count == 1 else round(i * (total - 1) / (count - 1))
                     for i in range(count)})
    return [(i % g[0], (i // g[0]) % g[1], i // (g[0] * g[1])) for i in linear]


def estimate_flops(kernel: Any, grid: Sequence[int], args: Sequence[Any], *,
                   samples: int = DEFAULT_FLOPS_SAMPLES) -> FlopsEstimate:
    """FLOPs of one launch of ``kernel`` from its matrix-product shapes, without running
    the whole grid: emulate ``samples`` blocks (first, middle, last by default, see
    :func:`sample_blocks`) and extrapolate with :func:`flops_from_trace`.

    The emulator runs on host copies of the array arguments, so the caller's arrays are
    never written. Arrays on a GPU are copied to the host whole, once (an 8192×8192 fp16
    matrix is 128 MiB): the sampled blocks may read any part of them, and their values can
    steer control flow. The emulated blocks run their real arithmetic, so the cost is that
    of ``samples`` blocks on the CPU (a 128×128 fp16 GEMM tile with K=8192: well under a
    second each).

    Raises what the emulator raises (``EmulationError``, ``EmulatorUnsupported``) when it
    cannot run the kernel.
    """
    from ..emulator.runtime import trace_kernel as emulate_trace

    host_args = [_host_copy(a) for a in args]
    t = emulate_trace(kernel, tuple(grid), host_args, blocks=sample_blocks(grid, samples))
    return flops_from_trace(t)


def _host_copy(value: Any) -> Any:
    """A NumPy copy of an array argument (recursing into lists/tuples), else the value."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return type(value)(_host_copy(v) for v in value)
    if not is_array(value):
        return value
    root = type(value).__module__.split(".")[0]
    if root == "torch":
        import torch

        t = value.detach().cpu()
        if t.dtype == torch.bfloat16:
            import ml_dtypes

            return t.view(torch.int16).numpy().copy().view(ml_dtypes.bfloat16)
        return t.numpy().copy()
    if root == "cupy" or hasattr(value, "__cuda_array_interface__"):
        import cupy

        return cupy.asnumpy(cupy.asarray(value))
    return np.from_dlpack(value).copy()  # a CPU DLPack producer


def _of(part: int, whole: int) -> str:
    return f"all {whole}" if part == whole else f"{part} of {whole}"


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
