"""The strongest baseline a performance engineer would pick, for each kind of kernel, in one place.

* GEMM: the faster of ``torch.matmul`` and ``cupy.matmul`` (both cuBLAS, but they pick
  different algorithms and workspaces) — :func:`gemm_candidates` + :func:`fastest`;
* softmax / LayerNorm / RMSNorm: torch (``torch.softmax``, ``F.layer_norm``, ``F.rms_norm``);
* attention: the fastest of ``F.scaled_dot_product_attention`` as dispatched and pinned to each
  backend (cuDNN, flash, memory-efficient) — :func:`attention_candidates` + :func:`fastest`;
* memory roof: a measured device-to-device copy (:func:`copy_roof`), shown beside the spec peak.

Each is a :class:`~tile_lab.gpu.sampling.TimedWork` whose ``baseline`` field names the library
call and its version; measurements and comparisons carry it into their provenance. Inputs may be
CuPy arrays or torch tensors (shared through DLPack, never copied).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar

from .sampling import Timeable, TimedWork, Timer

W = TypeVar("W", bound=Timeable)


def _torch() -> Any:
    import torch

    return torch


def as_torch(x: Any) -> Any:
    """A torch view of a CuPy array (or the tensor itself): no copy."""
    torch = _torch()
    return x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)


def torch_version() -> str:
    torch = _torch()
    cublas = ""
    with contextlib.suppress(Exception):
        cublas = f", cuBLAS {torch._C._cuda_getCompiledVersion()}"
    return f"torch {torch.__version__} (CUDA {torch.version.cuda}{cublas})"


def cupy_version() -> str:
    import cupy

    try:
        cublas = cupy.cuda.cublas.getVersion(cupy.cuda.device.get_cublas_handle())
        return f"CuPy {cupy.__version__} (cuBLAS {cublas})"
    except Exception:
        return f"CuPy {cupy.__version__}"


# ---- GEMM ------------------------------------------------------------
def gemm_candidates(a: Any, b: Any, c: Any) -> list[TimedWork]:
    """``c = a @ b`` through torch and through CuPy (cuBLAS both); time them with
    :func:`fastest` to get the GEMM baseline."""
    import cupy

    flops = 2 * a.shape[0] * a.shape[1] * b.shape[1]
    ta, tb, tc = as_torch(a), as_torch(b), as_torch(c)
    torch = _torch()
    ca, cb, cc = cupy.asarray(a), cupy.asarray(b), cupy.asarray(c)
    return [
        TimedWork("torch.matmul", lambda: torch.matmul(ta, tb, out=tc), flops=flops,
                  baseline=f"torch.matmul (cuBLAS), {torch_version()}"),
        TimedWork("cupy.matmul", lambda: cupy.matmul(ca, cb, out=cc), flops=flops,
                  baseline=f"cupy.matmul (cuBLAS), {cupy_version()}"),
    ]


def rank(candidates: Sequence[W], timer: Timer, *, rounds: int = 3,
         samples: int = 5) -> list[tuple[W, float]]:
    """Each candidate with its median time in seconds over ``rounds`` interleaved rounds (order
    reversed every other round, so drift hits all alike), fastest first."""
    import statistics

    if not candidates:
        raise ValueError("no candidates to rank")
    times: dict[int, list[float]] = {id(c): [] for c in candidates}
    for r in range(rounds):
        for c in (candidates if r % 2 == 0 else list(reversed(candidates))):
            times[id(c)] += timer.time(c, samples, first=r == 0)
    medians = [(c, statistics.median(times[id(c)])) for c in candidates]
    return sorted(medians, key=lambda cm: cm[1])


def fastest(candidates: Sequence[W], timer: Timer, *, rounds: int = 3, samples: int = 5) -> W:
    """The candidate with the lowest median time (:func:`rank`): the strongest baseline, or the
    best of a few kernel configs; a TimedWork's ``baseline`` text then names the candidates it
    beat, with their times."""
    return best_of(rank(candidates, timer, rounds=rounds, samples=samples))


def best_of(ranked: Sequence[tuple[W, float]]) -> W:
    """The first of :func:`rank`'s result; a TimedWork's ``baseline`` text gains the times."""
    (best, mine), others = ranked[0], ranked[1:]
    if isinstance(best, TimedWork) and best.baseline and others:
        beaten = ", ".join(f"{c.name} ({t * 1e6:.1f} us)" for c, t in others)
        return replace(best, baseline=f"{best.baseline}; the faster here ({mine * 1e6:.1f} us "
                                      f"vs {beaten}, interleaved)")
    return best


# ---- row-wise norms -----------------------------------------------------------------------------
def softmax(x: Any) -> TimedWork:
    """Row softmax (last axis) of ``x`` with ``torch.softmax`` (the output comes from torch's
    caching allocator, as in a user's code)."""
    torch = _torch()
    tx = as_torch(x)
    return TimedWork("torch.softmax", lambda: torch.softmax(tx, dim=-1),
                     bytes=2 * tx.numel() * tx.element_size(),
                     baseline=f"torch.softmax, {torch_version()}")


def layer_norm(x: Any, weight: Any, bias: Any, eps: float = 1e-5) -> TimedWork:
    """LayerNorm over the last axis with ``torch.nn.functional.layer_norm``."""
    torch = _torch()
    tx, tw, tb = (as_torch(v) for v in (x, weight, bias))
    n = tx.shape[-1]

    def run_fn() -> None:
        torch.nn.functional.layer_norm(tx, (n,), tw, tb, eps)

    return TimedWork("torch layer_norm", run_fn,
                     bytes=2 * tx.numel() * tx.element_size() + 2 * tw.numel() * tw.element_size(),
                     baseline=f"torch.nn.functional.layer_norm, {torch_version()}")


def rms_norm(x: Any, weight: Any, eps: float = 1e-5) -> TimedWork:
    """RMSNorm over the last axis with ``torch.nn.functional.rms_norm``."""
    torch = _torch()
    tx, tw = as_torch(x), as_torch(weight)
    n = tx.shape[-1]
    return TimedWork("torch rms_norm",
                     lambda: torch.nn.functional.rms_norm(tx, (n,), tw, eps),
                     bytes=2 * tx.numel() * tx.element_size() + tw.numel() * tw.element_size(),
                     baseline=f"torch.nn.functional.rms_norm, {torch_version()}")


# ---- attention ------------------------------------------------------------
SDPA_BACKENDS = ("default", "cudnn", "flash", "efficient")


def attention(q: Any, k: Any, v: Any, *, causal: bool = False,
              backend: str = "default") -> TimedWork:
    """``F.scaled_dot_product_attention`` over (batch, heads, seq, dim) tensors, either as
    torch dispatches it (``backend="default"``, what a user gets by calling it) or pinned to
    one backend (``"cudnn"``, ``"flash"``, ``"efficient"``). Raises the error torch gives when
    the pinned backend cannot take these inputs."""
    if backend not in SDPA_BACKENDS:
        raise ValueError(f"backend must be one of {SDPA_BACKENDS}, got {backend!r}")
    torch = _torch()
    tq, tk, tv = as_torch(q), as_torch(k), as_torch(v)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    pinned: Any = contextlib.nullcontext
    if backend != "default":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        which = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                 "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend]

        def pinned() -> Any:
            return sdpa_kernel(which)

    def run() -> None:
        with pinned():
            sdpa(tq, tk, tv, is_causal=causal)

    with warnings.catch_warnings():  # torch warns, then raises, when a backend cannot run
        warnings.simplefilter("ignore")
        run()  # fails here, not in the middle of a measurement
    b, h, s, d = tq.shape
    flops = 4 * b * h * s * tk.shape[2] * d // (2 if causal else 1)
    return TimedWork(f"torch sdpa ({backend})", run, flops=flops,
                     baseline=f"torch.nn.functional.scaled_dot_product_attention "
                              f"[{backend} backend], {torch_version()}")


def attention_candidates(q: Any, k: Any, v: Any, *,
                         causal: bool = False) -> tuple[list[TimedWork], dict[str, str]]:
    """SDPA as torch dispatches it and pinned to each backend that takes these inputs; time them
    with :func:`fastest` for the attention baseline (on an H100 the default dispatch, cuDNN,
    ran about twice as fast as the flash backend). Also returns why each missing backend was
    left out."""
    works: list[TimedWork] = []
    skipped: dict[str, str] = {}
    for backend in SDPA_BACKENDS:
        try:
            works.append(attention(q, k, v, causal=causal, backend=backend))
        except Exception as e:  # this torch/GPU/dtype has no such backend: say so, go on
            skipped[backend] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    return works, skipped


# ---- memory roof ------------------------------------------------------------
def copy_roof(nbytes: int) -> TimedWork:
    """A device-to-device copy of ``nbytes`` (``cudaMemcpyAsync``): the bandwidth a
    streaming kernel can hope for, measured (it reads and writes, so bytes = 2 × nbytes)."""
    import cupy

    src = cupy.ones(nbytes, dtype=cupy.uint8)
    dst = cupy.empty_like(src)
    return TimedWork("device-to-device copy",
                     lambda: dst.data.copy_from_device_async(src.data, nbytes),
                     bytes=2 * nbytes, baseline=f"cudaMemcpyAsync D2D, {cupy_version()}")
