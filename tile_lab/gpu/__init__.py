"""The GPU boundary: launch, measure, peaks, isolation. Everything that imports CuPy lives in
this package and imports it lazily, so ``import tile_lab.gpu`` works on a machine without a
GPU; GPU-only calls raise :class:`~tile_lab.errors.NoGPUError` there.

Modules: ``device`` (detection, properties, clocks, provenance), ``peaks`` (roofs and the
per-arch throughput table), ``timing`` (cold/warm/graph protocols, statistics), ``metrics``
(bytes, FLOPs, rates, output checks), ``measurement`` (the ``Measurement`` record and its
JSON files), ``launcher`` (``launch``), ``benchmark`` (``bench``), ``isolate`` (worker
process).
"""

from __future__ import annotations

from .benchmark import Writes, bench, bench_function, detect_writes
from .device import gpu_available, require_gpu
from .launcher import launch
from .measurement import Measurement, load_measurements, save_measurements

__all__ = ["Measurement", "Writes", "bench", "bench_function", "detect_writes", "gpu_available",
           "launch", "load_measurements", "require_gpu", "save_measurements"]
