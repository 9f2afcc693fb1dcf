"""Switching CUDA-on-the-CPU on, for the pytest plugin and for plain programs (no pytest here).

Two switches share this module:

* ``pytest -p tile_lab.testing`` (``--tile-lab-device``, ``--tile-lab-arch``) calls
  :func:`activate` before the suite's ``conftest.py`` files load;
* ``TILE_LAB_EMULATE=1 TILE_LAB_DEVICE=cpu python prog.py``: the start-up hook
  (``tile_lab/_startup.py``) calls :func:`cuda_tile_on_cpu` when ``cuda.tile`` is imported and
  :func:`torch_on_cpu` when ``torch`` is and :func:`triton_on_cpu` when ``triton`` is, for
  the rest of the process.

``TILE_LAB_DEVICE``: ``cpu`` (CUDA played by the CPU), ``auto`` (the CPU unless a GPU
answers) or ``cuda`` (a real GPU: arrays are copied to the host per emulated launch).
``TILE_LAB_ARCH`` (default ``sm_90``): what cuTile's and torch's device queries report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from typing import Any

DEVICE_VAR = "TILE_LAB_DEVICE"
ARCH_VAR = "TILE_LAB_ARCH"
DEVICE_CHOICES = ("auto", "cpu", "cuda")
DEFAULT_ARCH = "sm_90"
_KEPT: list[contextlib.ExitStack] = []  # switches a program keeps on until it exits


def device_from_env() -> str | None:
    """``TILE_LAB_DEVICE`` (the plugin's first name, ``TILE_LAB_TEST_DEVICE``, is read too),
    or None when unset; ValueError for anything but ``DEVICE_CHOICES``."""
    raw = os.environ.get(DEVICE_VAR) or os.environ.get("TILE_LAB_TEST_DEVICE") or ""
    value = raw.strip().lower()
    if not value:
        return None
    if value not in DEVICE_CHOICES:
        raise ValueError(f"{DEVICE_VAR}={raw!r}: expected one of {', '.join(DEVICE_CHOICES)}")
    return value


def arch_from_env() -> str:
    return (os.environ.get(ARCH_VAR) or os.environ.get("TILE_LAB_TEST_ARCH")
            or DEFAULT_ARCH).strip()


def capability_of(arch: str) -> tuple[int, int]:
    """``"sm_90"`` -> ``(9, 0)``; ``"sm_100a"`` -> ``(10, 0)``; ValueError otherwise."""
    digits = arch.strip().lower().removeprefix("sm_").rstrip("af")
    if not digits.isdigit() or len(digits) < 2:
        raise ValueError(f"arch {arch!r}: expected an arch like sm_90")
    return int(digits[:-1]), int(digits[-1])


def torch_sees_a_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _driver_answers() -> bool:
    from .. import _cutile_compat as compat

    return compat.gpu_compute_capability() is not None


def host_kernel_signatures() -> contextlib.AbstractContextManager[None]:
    """``KernelSignature.from_kernel_args`` from host arrays. cuTile's own asks the CUDA
    driver about each array (it loads libcuda, which a CPU-only machine lacks); where that
    fails, tile_lab's signature builder derives the same constraints from the arrays'
    metadata (suites export kernels this way to check their bytecode). cuTile's own argument
    errors still come from cuTile (``_cutile_compat.signatures_without_driver``)."""
    from .. import _cutile_compat as compat

    return compat.signatures_without_driver(_host_constraints)


def _host_constraints(kernel: Any, args: Any, calling_convention: Any) -> list[Any]:
    from cuda.tile.compilation import CallingConvention

    from ..compile.signature import constraints_from_args

    params = constraints_from_args(kernel, list(args))
    if calling_convention == CallingConvention.cutile_python_v2():
        params = [_singletons(c, a) for c, a in zip(params, args)]
    return params


def _singletons(constraint: Any, arg: Any) -> Any:
    """Under the v2 calling convention cuTile takes an array's size-1 dims as constants,
    unless the kernel annotated static dims (then only those are)."""
    from cuda.tile.compilation import ArrayConstraint

    shape = getattr(arg, "shape", None)
    if not isinstance(constraint, ArrayConstraint) or shape is None or \
            any(c is not None for c in constraint.shape_constant):
        return constraint
    dims = tuple(1 if int(n) == 1 else None for n in shape)
    return dataclasses.replace(constraint, shape_constant=dims)


def activate(device: str = "auto", arch: str = DEFAULT_ARCH) -> contextlib.ExitStack:
    """Switch emulation on (and, on the CPU, cuTile's device queries and torch's CUDA device);
    close the returned stack to switch everything back."""
    if device not in DEVICE_CHOICES:
        raise ValueError(f"device must be one of {DEVICE_CHOICES}, got {device!r}")
    capability = capability_of(arch)
    stack = contextlib.ExitStack()
    on_cpu = device == "cpu" or (device == "auto" and not torch_sees_a_gpu())
    stack.enter_context(_children_alike("cpu" if on_cpu else "cuda", arch))
    if on_cpu:
        from .._cutile_compat.device import emulated_device_queries

        stack.enter_context(emulated_device_queries(capability))
        stack.enter_context(host_kernel_signatures())
        with contextlib.suppress(ImportError):
            from .torch_cpu import cuda_on_cpu

            stack.enter_context(cuda_on_cpu(capability))
    from ..emulator import program, verdict_cache

    # a suite may count cuTile's compiles: each process checks each kernel signature once
    stack.enter_context(verdict_cache.off_by_default())
    if not program.is_enabled():
        program.enable()
        stack.callback(program.disable)
    return stack


@contextlib.contextmanager
def _children_alike(device: str, arch: str) -> Iterator[None]:
    """Python programs the suite starts (``subprocess.run([sys.executable, script])``, as
    tests of device-side asserts do) inherit the environment: with ``TILE_LAB_EMULATE`` (kept
    if set, else ``1``), ``TILE_LAB_DEVICE`` and ``TILE_LAB_ARCH`` they run emulated on the
    same device and arch (tile_lab's start-up hook), as the suite's own launches do."""
    from .._env_mode import ENV_VAR as EMULATE_VAR

    wanted = {EMULATE_VAR: os.environ.get(EMULATE_VAR) or "1", DEVICE_VAR: device,
              ARCH_VAR: arch}
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def cuda_tile_on_cpu(device: str, arch: str) -> None:
    """For a program: cuTile's device queries answer for ``arch`` from now on (``device``
    ``auto``: only when no CUDA driver answers)."""
    if device == "cuda" or (device == "auto" and _driver_answers()):
        return
    from .._cutile_compat.device import emulated_device_queries

    stack = contextlib.ExitStack()
    stack.enter_context(emulated_device_queries(capability_of(arch)))
    stack.enter_context(host_kernel_signatures())
    _KEPT.append(stack)


def torch_on_cpu(device: str, arch: str) -> None:
    """For a program: torch's CUDA device is the CPU from now on (``auto``: unless torch sees
    a GPU)."""
    if device == "cuda" or (device == "auto" and torch_sees_a_gpu()):
        return
    from .torch_cpu import cuda_on_cpu

    stack = contextlib.ExitStack()
    stack.enter_context(cuda_on_cpu(capability_of(arch)))
    _KEPT.append(stack)


def triton_on_cpu(device: str, arch: str) -> None:
    """For a program: ``triton.testing``'s timers work on the host from now on, with a host
    stand-in for Triton's driver where no GPU driver answers (``triton_cpu.py``); ``auto``:
    unless torch sees a GPU."""
    if device == "cuda" or (device == "auto" and torch_sees_a_gpu()):
        return
    from .triton_cpu import host_benchmarking

    stack = contextlib.ExitStack()
    stack.enter_context(host_benchmarking(capability_of(arch)))
    _KEPT.append(stack)
