"""NumPy standing in for CuPy, and the timing layer standing in for the GPU, for CPU tests of
what a kernel job does around its timed samples (tests/test_gpu_job.py, the bench_cpp tests
of tests/test_cpp_bench_tune.py): which arrays a launch writes, restores, copies back."""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from tile_lab.gpu.inprocess import Sampled


class DeviceArray(np.ndarray):
    """A 'device' array: a separate copy of the host data, as CuPy's would be."""


class FakeStream:
    ptr = 1

    def synchronize(self) -> None:
        pass

    def __enter__(self) -> FakeStream:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False


class FakeCupy:
    ndarray = DeviceArray
    uint8 = np.uint8
    array_equal = staticmethod(np.array_equal)
    ascontiguousarray = staticmethod(np.ascontiguousarray)
    empty_like = staticmethod(np.empty_like)

    class cuda:  # mirrors cupy.cuda
        stream = FakeStream()
        get_current_stream = staticmethod(lambda: FakeCupy.cuda.stream)
        Stream = FakeStream

    @staticmethod
    def asarray(a: Any) -> Any:
        return a if isinstance(a, DeviceArray) else np.array(a).view(DeviceArray)

    @staticmethod
    def asnumpy(a: Any) -> np.ndarray:
        return np.array(a)


def fake_timing(monkeypatch: Any, counts: dict[str, int] | None = None) -> None:
    """A kernel job's GPU layers replaced: ``time_work`` runs the warm-ups and samples
    (restoring before each, as the real timer does; ``counts["timed"]`` counts the runs);
    no device peaks or provenance."""
    import tile_lab.gpu.device as device
    import tile_lab.gpu.job as job
    import tile_lab.gpu.peaks as peaks

    def time_work(cupy: Any, s: Any, work: Any, timing: Any, *, warmup_done: int = 0
                  ) -> Sampled:
        for _ in range(max(0, timing.warmup - warmup_done) + timing.n):
            work.prepare()
            work.run()
            if counts is not None:
                counts["timed"] = counts.get("timed", 0) + 1
        return Sampled((1e-5,) * timing.n, 1, False, (), None)

    monkeypatch.setattr(job, "time_work", time_work)
    monkeypatch.setattr(device, "provenance", lambda **_: None)
    monkeypatch.setattr(peaks, "device_peaks", lambda: types.SimpleNamespace(
        top_tflops=None, dram_gbps=None, fp32_tflops=None))
