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

__all__ = ["ENV_VAR", "MODES_HELP", "activate", "mode_from_env"]


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
    if _loaded("cuda.tile"):
        _switch()
    else:
        _install_finder(None)


def _loaded(name: str) -> bool:
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    return module is not None and not getattr(spec, "_initializing", False)


def _switch() -> None:
    from .emulator.program import install_from_env

    install_from_env()


def _install_finder(error: str | None) -> None:
    if not any(isinstance(f, _SwitchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _SwitchOnImport(error))


class _SwitchOnImport:
    """A meta-path finder for ``cuda.tile`` only: it finds the real module through the other
    finders and wraps its loader so that emulation is switched on right after the module ran.
    It removes itself at its first use."""

    def __init__(self, error: str | None) -> None:
        self.error = error

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "cuda.tile":
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        if self.error is not None:
            raise SystemExit(self.error)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _SwitchingLoader(spec.loader)
        return spec


class _SwitchingLoader:
    """cuda.tile's own loader, then the switch."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self._loader  # leave no trace behind
        _switch()

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)
