"""``TILE_LAB_EMULATE=1 python prog.py``: switch ``cuda.tile`` to the CPU emulator in a program
that never imports tile_lab.

Installing tile_lab puts ``tile_lab_emulate.pth`` into site-packages. Python runs its one line
at start-up; it does nothing unless ``TILE_LAB_EMULATE`` is set (cost when unset: one
environment look-up, measured by ``bench/startup_hook.py``). When set, it imports this
package (``tile_lab/__init__`` is lazy: nothing heavy), which calls :func:`activate`:

* ``cuda.tile`` not imported yet (the start-up case): a meta-path finder waits for its first
  import and, once cuda.tile has loaded, turns emulation on (``emulator/program.py``), so the
  program's own ``import cuda.tile as ct`` gets a ``ct.launch`` that runs on the CPU;
* ``cuda.tile`` already imported (``import tile_lab`` later in a process): switch at once.

With ``TILE_LAB_DEVICE=cpu`` (or ``auto``: the CPU unless a GPU answers) CUDA is also played by
the CPU for the whole process, as under ``pytest -p tile_lab.testing``: cuTile's device
queries answer for ``TILE_LAB_ARCH`` (default sm_90) once cuda.tile is imported, torch's
CUDA device is the CPU once torch is, and ``triton.testing``'s timers time the host once
triton is (``tile_lab/testing/activation.py``), in whichever order the program imports them.

A value that is not a mode (``TILE_LAB_EMULATE=maybe``) is a one-line error, raised as
``SystemExit`` (Python prints its message alone and exits 1) when the program imports
cuda.tile (never at start-up: other Python programs in that environment are not its business).

This module imports only the standard library: it runs inside every Python start-up that has
the variable set.
"""

from __future__ import annotations

import sys
from typing import Any

from ._env_mode import ENV_VAR, MODES_HELP, mode_from_env

__all__ = ["ENV_VAR", "MODES_HELP", "activate", "mode_from_env", "play_device_from_env"]
_PLAYING: list[str] = []  # "cuda.tile" once its device queries are played by the CPU


def activate() -> None:
    """Act on ``TILE_LAB_EMULATE``: switch now if cuda.tile is loaded, else when it loads."""
    try:
        mode = mode_from_env()
    except ValueError as exc:
        if _loaded("cuda.tile"):
            raise SystemExit(str(exc)) from None
        _install_finder(str(exc))
        return
    if mode is None:
        return
    if _device() not in (None, "cuda"):
        _when_imported("torch", _torch_on_cpu)
        _when_imported("triton", _triton_on_cpu)
    if _loaded("cuda.tile"):
        _switch()
    else:
        _install_finder(None)


def play_device_from_env() -> None:
    """``TILE_LAB_DEVICE=cpu`` (or ``auto``) for ``python -m tile_lab.emulator``, which has
    cuda.tile loaded already: cuTile's device queries now, torch's CUDA device now or when
    torch is imported. Once per process (the start-up hook may have done it)."""
    if _PLAYING or _device() in (None, "cuda"):
        return
    _when_imported("torch", _torch_on_cpu)
    _when_imported("triton", _triton_on_cpu)
    _cuda_tile_on_cpu()


def _device() -> str | None:
    import os

    value = (os.environ.get("TILE_LAB_DEVICE") or os.environ.get("TILE_LAB_TEST_DEVICE")
             or "").strip().lower()
    return value or None


def _torch_on_cpu() -> None:
    from .testing.activation import arch_from_env, device_from_env, torch_on_cpu

    try:
        torch_on_cpu(device_from_env() or "auto", arch_from_env())
    except ValueError as exc:
        raise SystemExit(f"tile_lab: {exc}") from None


def _triton_on_cpu() -> None:
    from .testing.activation import arch_from_env, device_from_env, triton_on_cpu

    try:
        triton_on_cpu(device_from_env() or "auto", arch_from_env())
    except ValueError as exc:
        raise SystemExit(f"tile_lab: {exc}") from None


def _when_imported(name: str, then: Any) -> None:
    if _loaded(name):
        then()
    elif not any(isinstance(f, _SwitchOnImport) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _SwitchOnImport(None, name, then))


def _loaded(name: str) -> bool:
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    return module is not None and not getattr(spec, "_initializing", False)


def _switch() -> None:
    from .emulator.program import install_from_env

    if _device() not in (None, "cuda"):
        _cuda_tile_on_cpu()
    install_from_env()


def _cuda_tile_on_cpu() -> None:
    from .testing.activation import arch_from_env, cuda_tile_on_cpu, device_from_env

    _PLAYING.append("cuda.tile")
    try:
        cuda_tile_on_cpu(device_from_env() or "auto", arch_from_env())
    except ValueError as exc:
        raise SystemExit(f"tile_lab: {exc}") from None


def _install_finder(error: str | None) -> None:
    if not any(isinstance(f, _SwitchOnImport) and f.name == "cuda.tile" for f in sys.meta_path):
        sys.meta_path.insert(0, _SwitchOnImport(error))


class _SwitchOnImport:
    """A meta-path finder for one module (``cuda.tile``, or ``torch`` for TILE_LAB_DEVICE): it
    finds the real module through the other finders and wraps its loader so that ``then``
    (default: the emulation switch) runs right after the module ran. It removes itself at
    its first use."""

    def __init__(self, error: str | None, name: str = "cuda.tile", then: Any = None) -> None:
        self.error = error
        self.name = name
        self.then = then or _switch

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.name:
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        if self.error is not None:
            raise SystemExit(self.error)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _SwitchingLoader(spec.loader, self.then)
        return spec


class _SwitchingLoader:
    """The module's own loader, then the switch."""

    def __init__(self, loader: Any, then: Any = None) -> None:
        self._loader = loader
        self._then = then or _switch

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self._loader  # leave no trace behind
        self._then()

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)
