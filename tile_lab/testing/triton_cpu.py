"""Triton's benchmarking helpers on the host, for GPU programs that time their cuTile kernels
with ``triton.testing`` (TileGym's benchmarks do) while torch's CUDA device is played by the
CPU (:mod:`tile_lab.testing.torch_cpu`).

Where no GPU driver answers, :func:`host_benchmarking` makes Triton's active driver a host
stand-in: ``get_active_torch_device()`` is ``torch.device("cuda", 0)`` (which torch_cpu puts
on the CPU), ``get_device_interface()`` is ``torch.cuda`` (played: its events time the host),
and the cache ``do_bench`` clears between calls is one element (there is no GPU L2 to
flush). So ``triton.testing.do_bench`` runs as written. ``do_bench_cudagraph`` captures a
CUDA graph, which the CPU does not play: it is replaced by one that times each call by itself.
Every time either returns is host wall time, the emulator's, not a GPU's. Triton's own
kernels still need a GPU (or ``TRITON_INTERPRET=1``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

_MODES = ("min", "max", "mean", "median", "all")


class HostDriver:
    """Triton's driver interface as far as ``triton.testing`` and benchmark scripts use it."""

    def __init__(self, capability: tuple[int, int]) -> None:
        self.capability = capability

    @classmethod
    def is_active(cls) -> bool:
        return True

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cuda", 0)

    def get_device_interface(self) -> Any:
        import torch

        return torch.cuda

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        pass

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        major, minor = self.capability
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_benchmarker(self) -> Callable[..., Any]:
        from triton.testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self) -> Any:
        import torch

        return torch.empty(1, dtype=torch.int32)

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()

    def map_python_to_cpp_type(self, ty: str) -> str:
        raise NotImplementedError("tile_lab's host stand-in for Triton's driver builds no "
                                  "Triton kernels: they need a GPU (or TRITON_INTERPRET=1)")


def do_bench_host(fn: Callable[[], Any], rep: float = 20, grad_to_none: Sequence[Any] | None = None,
                  quantiles: Sequence[float] | None = None, return_mode: str = "mean") -> Any:
    """``triton.testing.do_bench_cudagraph`` on the host: no graph to capture, so after one
    warm-up call the calls are timed one by one (milliseconds of host wall time) for about
    ``rep`` ms, at least once; summarised as Triton does (``quantiles``, else ``return_mode``)."""
    if return_mode not in _MODES:
        raise ValueError(f"return_mode must be one of {_MODES}, got {return_mode!r}")
    fn()
    times: list[float] = []
    spent = 0.0
    while not times or spent < rep:
        for x in grad_to_none or ():
            x.grad = None
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1e3)
        spent += times[-1]
    return summarize(times, quantiles, return_mode)


def summarize(times: list[float], quantiles: Sequence[float] | None, return_mode: str) -> Any:
    """The quantiles of ``times`` (one value when one was asked), else its min / max / mean /
    median, or the list itself for ``"all"``."""
    import statistics

    if quantiles is not None:
        import torch

        values = torch.quantile(torch.tensor(times, dtype=torch.float64),
                                torch.tensor(list(quantiles), dtype=torch.float64)).tolist()
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return times
    return {"min": min, "max": max, "mean": statistics.mean,
            "median": statistics.median}[return_mode](times)


def _driver_answers(config: Any) -> bool:
    try:
        return config.active is not None
    except Exception:  # no libcuda, no active backend: Triton's own errors differ by version
        return False


@contextlib.contextmanager
def host_benchmarking(capability: tuple[int, int] = (9, 0)) -> Iterator[None]:
    """While inside, ``triton.testing`` times on the host (see the module docstring); Triton's
    real driver stays where one answers."""
    import triton.runtime
    import triton.testing

    config = triton.runtime.driver
    saved_driver = getattr(config, "_active", None)
    replaced_driver = not _driver_answers(config)
    if replaced_driver:
        config.set_active(HostDriver(capability))
    saved_bench = triton.testing.do_bench_cudagraph
    triton.testing.do_bench_cudagraph = do_bench_host
    try:
        yield
    finally:
        triton.testing.do_bench_cudagraph = saved_bench
        if replaced_driver:
            config._active = saved_driver  # reset_active() would build the failing default
