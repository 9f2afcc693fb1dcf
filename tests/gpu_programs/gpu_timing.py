"""CUDA-event timing, the way GPU programs time their kernels (shared by the programs here)."""

import torch


def time_ms(run, *args, warmup: int = 1, iters: int = 3) -> float:
    """Mean milliseconds per call of ``run(*args)`` between two CUDA events."""
    for _ in range(warmup):
        run(*args)
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        run(*args)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters
