"""tile_lab: a Jupyter workbench for cuTile Python (``import cuda.tile as ct``).

The public surface is re-exported here and imported lazily, so ``import tile_lab``
stays cheap and never needs CuPy or a GPU. Each name lives in the module that owns it.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__ as __version__
from .display import set_renderer_loader

# public name -> module that defines it (relative to this package)
_EXPORTS: dict[str, str] = {
    # compile + inspect (source -> artifacts)
    "inspect": ".compile.inspect",
    "Inspection": ".compile.artifacts",
    "doctor": "._doctor",
    # emulator, trace, sanitizer (artifacts -> execution on CPU); the functions that run a
    # kernel build a Request and hand it to the core (api.py)
    "emulate": ".api",
    "trace": ".api",
    "emulation": ".emulator",
    "Trace": ".tracing.trace",
    "MemoryAccess": ".tracing.trace",
    "load_trace": ".tracing.trace",
    "sanitize": ".api",
    "SanitizerReport": ".sanitizer",
    "check_trace": ".sanitizer",
    # GPU vs emulator, tile by tile
    "crosscheck": ".api",
    "CrossCheck": ".crosschecking",
    "CrossCheckOptions": ".crosschecking",
    # diagrams (trace -> SVG)
    "diagram": ".render.diagram",
    "browse": ".widgets.diagram_browser",
    "partition": ".render.diagram",
    # GPU: launch, measure (execution on GPU -> measurements)
    "launch": ".api",
    "bench": ".gpu",
    "bench_function": ".gpu",
    "compare_timed": ".gpu",
    "TimingOptions": ".gpu",
    "Measurement": ".gpu.measurement",
    "load_measurements": ".gpu.measurement",
    "roofline": ".render.plots",
    # GPU: profile (execution under Nsight Compute -> per-line profiles)
    "profile": ".api",
    "Profile": ".profiling",
    "load_profile": ".profiling",
    "compare_profiles": ".profiling",
    "profile_tuning": ".profiling",
    # tuning
    "Schedules": ".tuning",
    "Space": ".tuning",
    "tune": ".tuning",
    "TuneOptions": ".tuning",
    "TuningStore": ".tuning",
    "explore": ".widgets.explore",
    # share: one-file exports, reproducers
    "export": ".share",
    "reproducer": ".share",
    "Reproducer": ".share",
    # exercises
    "check": ".checker",
    # CUDA Tile C++
    "inspect_cpp": ".cpp",
    "compare": "._compare",
    "launch_cpp": ".cpp",
    "bench_cpp": ".cpp",
    "tune_cpp": ".cpp",
    # Triton beside cuTile
    "inspect_triton": ".triton",
    # errors
    "TileLabError": ".errors",
    "NoGPUError": ".errors",
    "EmulatorUnsupported": ".errors",
}

__all__ = sorted([*_EXPORTS, "load_ipython_extension", "__version__"])


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tile_lab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


def _emulate_from_env() -> None:
    """``TILE_LAB_EMULATE=1|sanitize``: every ``ct.launch`` of this process runs on the CPU
    emulator (``_startup.py``; imported only when the variable is set)."""
    import os

    if os.environ.get("TILE_LAB_EMULATE", "").strip():
        from ._startup import activate

        activate()


_emulate_from_env()


def _register_renderers() -> None:
    """Renderers sit above the data types they draw and register themselves when imported;
    the display hook (``display.py``, at the bottom) runs this on its first display."""
    from .render import registered  # noqa: F401


set_renderer_loader(_register_renderers)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext tile_lab``: register the ``%%tile`` cell magic (prints nothing)."""
    from .magic.tile_magic import register

    register(ipython)
