"""``bench_cpp``: time a CUDA Tile C++ kernel with the protocol and statistics of ``bench``.

A C++ kernel is a :class:`~tile_lab.gpu.job.JobKernel` (:class:`CppJobKernel`), so a C++ launch
is a :class:`~tile_lab.gpu.job.KernelJob` measured by the same code as cuTile Python kernels
(:func:`tile_lab.gpu.benchmark.bench_job`: launch once, note what it writes, cold / warm /
graph protocols, L2 flush, GPU state with every sample, regimes, confidence intervals,
provenance, ``check=``), and a C++ Measurement sits next to a Python one in the same tables
and plots. :func:`cpp_work` is one launch as a Timeable, for ``compare_timed``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..compile.artifacts import Inspection
from ..errors import TileLabError
from ..gpu import metrics
from ..gpu.benchmark import bench_job, timing_of, validate
from ..gpu.inprocess import Amounts
from ..gpu.job import KernelJob, Launch, Writes
from ..gpu.measurement import Measurement
from ..gpu.options import BenchOptions, TimingOptions
from ..gpu.sampling import TimedWork
from .launch import _require_gpu, prepare_launch


@dataclass(frozen=True)
class CppJobKernel:
    """A compiled CUDA Tile C++ kernel as a :class:`~tile_lab.gpu.job.JobKernel`. An
    in-place kernel is *not* restored between samples (each sample applies it to the previous
    one's output); its measurement says so."""

    inspection: Inspection
    fresh_outputs: bool = False

    @property
    def name(self) -> str:
        return self.inspection.kernel_name

    def bind(self, cupy: Any, grid: tuple[int, ...], dev_args: Sequence[Any]) -> Launch:
        return prepare_launch(cupy, self.inspection, None, grid, list(dev_args))

    def recipe(self) -> CppRecipe:
        insp = self.inspection
        # what a launch reads: the cubin, the Tile IR entry (parameter widths), the arch;
        # the source and its build options (defines) say what was compiled
        return CppRecipe(replace(insp, stages={"tileir": insp.stages["tileir"]}, remarks=()))

    def notes(self, writes: Writes) -> tuple[str, ...]:
        insp = self.inspection
        defines = insp.hints.get("defines")
        notes = [f"CUDA Tile C++ kernel ({insp.arch}"
                 + (f", {' '.join(defines)}" if defines else "") + ")"]
        if writes.in_place:
            notes.append("in-place kernel: each sample applies it to the previous sample's "
                         "output (bench_cpp does not restore outputs between samples)")
        return tuple(notes)


@dataclass(frozen=True)
class CppRecipe:
    """A C++ kernel shipped to another process: its compiled Inspection (cubin and Tile IR
    entry; no nvcc runs there)."""

    inspection: Inspection

    @property
    def key(self) -> str:
        insp = self.inspection
        return hashlib.sha256(insp.cubin + f"{insp.kernel_name}|{insp.arch}".encode()
                              ).hexdigest()

    def build(self) -> CppJobKernel:
        return CppJobKernel(self.inspection)


def cpp_work(inspection: Inspection, grid: Any, args: Sequence[Any]) -> TimedWork:
    """One launch of the C++ kernel of ``inspection`` as a Timeable (device arrays only), for
    ``tile_lab.gpu.compare_timed`` against a Python kernel or a baseline."""
    dims = validate(grid, args)
    cupy = _require_gpu()
    launch = CppJobKernel(inspection).bind(cupy, dims, list(args))
    return TimedWork(inspection.kernel_name,
                     lambda: launch(cupy.cuda.get_current_stream()),
                     bytes=metrics.bytes_from_arrays(args))


def bench_cpp(inspection: Inspection, grid: Any, args: Sequence[Any], *,
              bytes: int | None = None, flops: int | None = None,
              check: Callable[..., Any] | None = None, timing: TimingOptions | None = None,
              options: BenchOptions | None = None) -> Measurement:
    """Benchmark the C++ kernel of ``inspection`` (from ``inspect_cpp``) over ``grid``.

    Arguments, ``timing``, ``bytes``/``flops``, ``check`` and
    ``options`` (label, params, check_tol, stream, isolate, writes) mean what they mean for
    ``tile_lab.bench``: without ``bytes`` every array argument counts once; NumPy arrays are
    copied to the GPU and the result copied back. One difference: a kernel that updates its
    input in place is *not* restored between samples (each sample applies it to the previous
    one's output); the Measurement says so in its notes. Without a GPU raises NoGPUError --
    the CPU emulator runs cuTile Python kernels only.
    """
    if not isinstance(inspection, Inspection):
        raise TileLabError(f"bench_cpp needs the Inspection from tile_lab.inspect_cpp, not "
                           f"{type(inspection).__name__}")
    dims = validate(grid, args)
    t = timing_of(timing)
    o = options or BenchOptions()
    cupy = _require_gpu()
    job = KernelJob(CppJobKernel(inspection), dims, tuple(args), o.writes)
    return bench_job(cupy, job, timing=t, options=o, check=check,
                     amounts=Amounts(bytes, flops))
