"""Run a cuTile project's unmodified tests on tile_lab's emulator: ``pytest -p tile_lab.testing``.

Under the plugin every ``ct.launch`` runs on the CPU emulator (as with ``TILE_LAB_EMULATE=1``).
On a machine without CUDA (``--tile-lab-device=auto``, the default, decides by asking torch
before anything is replaced) it also lets the suite's GPU habits work on the CPU:

* cuTile's own device queries answer for the emulated arch (``--tile-lab-arch``, default
  ``sm_90``), so ``require_hopper_or_newer()`` and friends evaluate without a driver;
* with torch installed, torch's CUDA device is the CPU (:mod:`tile_lab.testing.torch_cpu`:
  ``device="cuda"``, ``.cuda()``, ``torch.cuda.current_stream()``, ``synchronize()``,
  ``is_available()``, ``get_device_capability()``).

Everything is switched on before the suite's ``conftest.py`` files are imported (they evaluate
GPU checks at import) and switched off when the session ends.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pytest

DEVICE_CHOICES = ("auto", "cpu", "cuda")
_ACTIVE: list[contextlib.ExitStack] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tile_lab", "tile_lab: run cuTile kernels on the CPU emulator")
    group.addoption("--tile-lab-device", choices=DEVICE_CHOICES,
                    default=os.environ.get("TILE_LAB_TEST_DEVICE", "auto"),
                    help="where torch's 'cuda' tensors live: cpu (CUDA played by the CPU), "
                         "cuda (a real GPU; tensors copied to the host per launch) or auto "
                         "(cpu unless torch sees a GPU). Env: TILE_LAB_TEST_DEVICE")
    group.addoption("--tile-lab-arch", default=os.environ.get("TILE_LAB_TEST_ARCH", "sm_90"),
                    help="the arch cuTile's and torch's device queries report on the CPU "
                         "(default sm_90). Env: TILE_LAB_TEST_ARCH")


def capability_of(arch: str) -> tuple[int, int]:
    """``"sm_90"`` -> ``(9, 0)``; ``"sm_100a"`` -> ``(10, 0)``."""
    digits = arch.strip().lower().removeprefix("sm_").rstrip("af")
    if not digits.isdigit() or len(digits) < 2:
        raise pytest.UsageError(f"--tile-lab-arch {arch!r}: expected an arch like sm_90")
    return int(digits[:-1]), int(digits[-1])


def _torch_sees_a_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def activate(device: str = "auto", arch: str = "sm_90") -> contextlib.ExitStack:
    """Switch emulation (and, for ``device="cpu"``, CUDA on the CPU) on; close the returned
    stack to switch everything back. Also usable outside pytest."""
    if device not in DEVICE_CHOICES:
        raise ValueError(f"device must be one of {DEVICE_CHOICES}, got {device!r}")
    stack = contextlib.ExitStack()
    on_cpu = device == "cpu" or (device == "auto" and not _torch_sees_a_gpu())
    if on_cpu:
        from .. import _cutile_compat as compat
        capability = capability_of(arch)
        stack.enter_context(compat.emulated_device_queries(capability))
        from ..signature import constraints_from_args
        # the compile API (KernelSignature.from_kernel_args, then export_kernel with
        # tileiras) works without a driver too: constraints from tile_lab's builder
        stack.enter_context(compat.signatures_without_driver(constraints_from_args))
        with contextlib.suppress(ImportError):
            from .torch_cpu import cuda_on_cpu
            stack.enter_context(cuda_on_cpu(capability))
    from ..emulator import program
    if not program.is_enabled():
        program.enable()
        stack.callback(program.disable)
    return stack


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: Any, args: Any) -> None:
    # Before the suite's conftest.py files import: they ask the GPU for its arch at import.
    ns = early_config.known_args_namespace
    device = getattr(ns, "tile_lab_device", None) or "auto"
    arch = getattr(ns, "tile_lab_arch", None) or "sm_90"
    _ACTIVE.append(activate(device, arch))


def pytest_unconfigure(config: pytest.Config) -> None:
    while _ACTIVE:
        _ACTIVE.pop().close()


def pytest_report_header(config: pytest.Config) -> str:
    return ("tile_lab.testing: ct.launch runs on tile_lab's CPU emulator; device="
            f"{config.getoption('tile_lab_device')}, arch={config.getoption('tile_lab_arch')}")
