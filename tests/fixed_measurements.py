"""Measurements built from fixed samples, for tests of what is computed from them (metrics,
plots): the GPU timing path (``tile_lab.gpu.inprocess.build_measurement``) with the samples
given instead of taken."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tile_lab.gpu.inprocess import Amounts, Sampled, build_measurement
from tile_lab.gpu.measurement import Measurement
from tile_lab.gpu.options import BenchOptions, TimingOptions


def fixed_measurement(kernel: str, mode: str, grid: tuple[int, ...], times: Sequence[float],
                      per_sample: int, args: Sequence[Any], *, bytes: int | None,
                      flops: int | None, trace: Any, label: str | None,
                      params: dict[str, Any] | None, fresh: bool, notes: list[str], peaks: Any,
                      provenance: Any, flops_source: str | None = None) -> Measurement:
    return build_measurement(
        kernel, TimingOptions(mode=mode), grid,
        Sampled(tuple(times), per_sample, fresh, tuple(notes), None), args,
        amounts=Amounts(bytes, flops, flops_source),
        options=BenchOptions(label=label, params=params, trace=trace), peaks=peaks,
        provenance=provenance)
