"""Run a cuTile project's unmodified tests on tile_lab's emulator: ``pytest -p tile_lab.testing``.

Under the plugin every ``ct.launch`` runs on the CPU emulator (as with ``TILE_LAB_EMULATE=1``).
On a machine without CUDA (``--tile-lab-device=auto``, the default, decides by asking torch
before anything is replaced) it also lets the suite's GPU habits work on the CPU:

* cuTile's own device queries answer for the emulated arch (``--tile-lab-arch``, default
  ``sm_90``), so ``require_hopper_or_newer()`` and friends evaluate without a driver;
* with torch installed, torch's CUDA device is the CPU (:mod:`tile_lab.testing.torch_cpu`:
  ``device="cuda"``, ``.cuda()``, ``torch.cuda.current_stream()``, ``synchronize()``,
  ``is_available()``, ``get_device_capability()``), and its float32 transcendentals
  (``torch.sin`` ... ``torch.rsqrt``) return CUDA's results bit for bit, as the emulated
  kernels' ``ct.sin`` ... do, so bit-exact comparisons hold as on the GPU
  (:mod:`tile_lab.testing.torch_device_math`).

Python programs a test starts (``subprocess.run([sys.executable, script])``) inherit
``TILE_LAB_EMULATE``, ``TILE_LAB_DEVICE`` and ``TILE_LAB_ARCH``, so they run emulated on the same
device and arch. cuTile's compiles stay countable (a suite patching
``cuda.tile._compile.compile_tile`` sees one per kernel signature per process): the front-end
gate's on-disk verdict cache is off unless ``TILE_LAB_FRONTEND_CACHE`` names a directory.

Everything is switched on before the suite's ``conftest.py`` files are imported (they evaluate
GPU checks at import) and switched off when the session ends.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from .activation import (
    ARCH_VAR,
    DEFAULT_ARCH,
    DEVICE_CHOICES,
    DEVICE_VAR,
    arch_from_env,
    device_from_env,
)
from .activation import activate as _activate
from .activation import capability_of as _capability_of

if TYPE_CHECKING:
    import pytest

# pytest is imported inside the hooks only: programs import this package for
# TILE_LAB_DEVICE (tile_lab/_startup.py) without pytest
__all__ = ["DEVICE_CHOICES", "activate", "capability_of"]
_ACTIVE: list[contextlib.ExitStack] = []


def _env_device() -> str:
    try:
        return device_from_env() or "auto"
    except ValueError as exc:
        import pytest

        raise pytest.UsageError(str(exc)) from None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tile_lab", "tile_lab: run cuTile kernels on the CPU emulator")
    group.addoption("--tile-lab-device", choices=DEVICE_CHOICES, default=_env_device(),
                    help="where torch's 'cuda' tensors live: cpu (CUDA played by the CPU), "
                         "cuda (a real GPU; tensors copied to the host per launch) or auto "
                         f"(cpu unless torch sees a GPU). Env: {DEVICE_VAR}")
    group.addoption("--tile-lab-arch", default=arch_from_env(),
                    help="the arch cuTile's and torch's device queries report on the CPU "
                         f"(default {DEFAULT_ARCH}). Env: {ARCH_VAR}")


def capability_of(arch: str) -> tuple[int, int]:
    """``"sm_90"`` -> ``(9, 0)``; ``"sm_100a"`` -> ``(10, 0)``."""
    try:
        return _capability_of(arch)
    except ValueError:
        import pytest

        raise pytest.UsageError(f"--tile-lab-arch {arch!r}: expected an arch like sm_90"
                                ) from None


def activate(device: str = "auto", arch: str = DEFAULT_ARCH) -> contextlib.ExitStack:
    """Switch emulation on (and, for ``device="cpu"``, CUDA on the CPU); close the returned
    stack to switch everything back. Also usable outside pytest."""
    capability_of(arch)
    return _activate(device, arch)


# no tryfirst needed: pytest's own conftest loading is trylast, so this runs before it
def pytest_load_initial_conftests(early_config: pytest.Config, parser: Any, args: Any) -> None:
    # Before the suite's conftest.py files import: they ask the GPU for its arch at import.
    ns = early_config.known_args_namespace
    device = getattr(ns, "tile_lab_device", None) or "auto"
    arch = getattr(ns, "tile_lab_arch", None) or DEFAULT_ARCH
    _ACTIVE.append(activate(device, arch))


def pytest_unconfigure(config: pytest.Config) -> None:
    while _ACTIVE:
        _ACTIVE.pop().close()


def pytest_report_header(config: pytest.Config) -> str:
    return ("tile_lab.testing: ct.launch runs on tile_lab's CPU emulator; device="
            f"{config.getoption('tile_lab_device')}, arch={config.getoption('tile_lab_arch')}")
