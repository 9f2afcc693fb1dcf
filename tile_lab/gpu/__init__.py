"""The GPU boundary: launch, measure, peaks, isolation. Everything that imports CuPy lives in
this package and imports it lazily, so ``import tile_lab.gpu`` works on a machine without a
GPU; GPU-only calls raise :class:`~tile_lab.errors.NoGPUError` there.

Modules: ``device`` (detection, properties, clocks, provenance), ``peaks`` (roofs, the per-arch
throughput table, SM counts by GPU name), ``timing`` (cold/warm/graph protocols, statistics),
``metrics`` (bytes, FLOPs, rates, output checks), ``measurement`` (the ``Measurement`` record
and its JSON files), ``state`` (NVML readings, throttle flags), ``sampling`` (the Timeable
protocol, the timer, samples with state), ``regimes`` (burst/sustained, ``compare_timed``),
``baselines`` (torch/cuBLAS/copy baselines), ``options`` (frozen option objects), ``arrays`` +
``inprocess`` (the bottom layer: launch and time in this process; a kernel travels to another
process through ``tile_lab.kernel_source``), ``job`` (the kernel job: a cuTile or
C++ launch, shippable, measured around its samples), ``launcher`` (``launch_kernel``, under
``tile_lab.launch``), ``benchmark`` (``bench``), ``isolate`` (worker process, on top of ``job``).
"""

from __future__ import annotations

from .benchmark import Writes, bench, bench_function, bench_work, detect_writes
from .device import gpu_available, require_gpu
from .inprocess import kernel_work
from .launcher import launch_kernel
from .measurement import Measurement, load_measurements, save_measurements
from .options import BenchOptions, TimingOptions
from .regimes import ClockMismatchWarning, CompareOptions, Comparison, compare_timed
from .sampling import Timeable, TimedWork
from .state import ThrottlePolicy

__all__ = ["BenchOptions", "ClockMismatchWarning", "CompareOptions", "Comparison", "Measurement",
           "ThrottlePolicy", "Timeable", "TimedWork", "TimingOptions", "Writes", "bench",
           "bench_function", "bench_work", "compare_timed", "detect_writes", "gpu_available",
           "kernel_work", "launch_kernel", "load_measurements", "require_gpu", "save_measurements"]
