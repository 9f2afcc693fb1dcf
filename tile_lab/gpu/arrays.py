"""Moving and comparing kernel arguments: NumPy arrays to the device and back, device copies,
bitwise comparison without GPU kernels. The bottom of the GPU package: it imports nothing else
from it, and launch, bench, the isolation worker and the C++ bench all use it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import metrics


def device_args(cupy: Any, args: Sequence[Any]) -> tuple[list[Any], list[tuple[int, Any]]]:
    """Arguments with NumPy arrays copied to the device; also (index, device copy) pairs whose
    results must be copied back into the NumPy originals."""
    out: list[Any] = []
    back: list[tuple[int, Any]] = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            d = cupy.asarray(a)
            out.append(d)
            back.append((i, d))
        else:
            out.append(a)
    return out, back


def copy_back(cupy: Any, args: Sequence[Any], back: list[tuple[int, Any]]) -> None:
    for i, d in back:
        np.copyto(args[i], cupy.asnumpy(d))


def copy_into(cupy: Any, dst: Any, src: Any) -> None:
    """``dst[...] = src`` on the current stream; a plain memcpy when both are contiguous
    (no kernel, so nothing for CuPy to compile on first use)."""
    if (dst.flags.c_contiguous and src.flags.c_contiguous and dst.dtype == src.dtype
            and dst.shape == src.shape and hasattr(dst.data, "copy_from_device_async")):
        dst.data.copy_from_device_async(src.data, src.nbytes)
    else:
        dst[...] = src


_COMPARE_CHUNK = 32 << 20  # bytes per host round trip of same_bytes (a multiple of 8)
_staging: list[Any] = []  # two pinned host buffers of _COMPARE_CHUNK bytes, made on first use


def device_copy(cupy: Any, a: Any) -> Any:
    """A copy of ``a`` made with :func:`copy_into` (a memcpy when contiguous)."""
    out = cupy.empty_like(a)
    copy_into(cupy, out, a)
    return out


def same_bytes(cupy: Any, a: Any, b: Any) -> bool:
    """Bitwise equality of two arrays (NaN-safe, dtype-agnostic).

    Device arrays are compared on the host, a chunk at a time through pinned buffers, stopping
    at the first differing chunk. No GPU kernel is involved on purpose: CuPy compiles each
    comparison kernel on first use (seconds per kernel on a machine that never ran it, e.g. a
    fresh cloud GPU), and a tuner must not pay that in front of its first measurement."""
    x = cupy.ascontiguousarray(a).reshape(-1).view(cupy.uint8)
    y = cupy.ascontiguousarray(b).reshape(-1).view(cupy.uint8)
    if x.size != y.size:
        return False
    if not hasattr(x, "get"):  # host arrays
        return _equal_host(np.asarray(x), np.asarray(y))
    if not _staging:
        for _ in range(2):
            mem = cupy.cuda.alloc_pinned_memory(_COMPARE_CHUNK)
            _staging.append((mem, np.frombuffer(mem, np.uint8, _COMPARE_CHUNK)))
    (_, bx), (_, by) = _staging
    for start in range(0, x.size, _COMPARE_CHUNK):
        n = min(_COMPARE_CHUNK, x.size - start)
        x[start:start + n].get(out=bx[:n])
        y[start:start + n].get(out=by[:n])
        if not _equal_host(bx[:n], by[:n]):
            return False
    return True


def _equal_host(x: np.ndarray, y: np.ndarray) -> bool:
    whole = x.size // 8 * 8  # compare 8 bytes at a time: several times faster than bytewise
    return bool(np.array_equal(x[:whole].view(np.uint64), y[:whole].view(np.uint64))
                and np.array_equal(x[whole:], y[whole:]))


def host_copy(value: Any) -> Any:
    """A NumPy copy of an array argument (any device array), or the value itself."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if not metrics.is_array(value):
        return value
    if type(value).__module__.split(".")[0] == "torch":
        import torch

        t = value.detach().cpu()
        if t.dtype == torch.bfloat16:  # through CuPy it came back as raw '<V2' bytes
            import ml_dtypes

            return t.view(torch.int16).numpy().copy().view(ml_dtypes.bfloat16)
        return t.numpy().copy()
    import cupy

    return cupy.asnumpy(cupy.asarray(value))
