"""Whole cuTile programs on the CPU: ``ct.launch`` runs on the emulator.

Three switches, all scoped (cuda.tile is never patched just because tile_lab is imported):

* ``with tile_lab.emulation():`` (or ``emulation(sanitize=True)``) for a block of code;
* ``%tile_emulate on|sanitize|off`` in a notebook (after ``%load_ext tile_lab``);
* ``TILE_LAB_EMULATE=1`` (or ``=sanitize``) in the environment of a program that imports
  tile_lab, or ``python -m tile_lab.emulator [--sanitize] script.py [args]`` for any script
  (NVIDIA's samples import only ``cuda.tile``).

While on, ``cuda.tile.launch(stream, grid, kernel, args)`` runs ``kernel`` on the emulator:
any ``stream`` is accepted (``None`` included), NumPy arrays and torch CPU tensors are
updated in place, CuPy/DLPack arrays are copied to the host and back. In sanitize mode every
launch is sanitized and its report printed with the kernel and the launching line. A name
bound before the switch (``from cuda.tile import launch``) still refers to cuTile's own
launch: programs written as ``ct.launch(...)`` are the ones that switch.

A program that calls a GPU-only API (``torch.cuda.current_stream()`` on a CPU-only torch,
``device="cuda"``, CuPy) fails with that error plus a note naming the call and the CPU-mode
alternative.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

import cuda.tile as ct

ENV_VAR = "TILE_LAB_EMULATE"
_LOCK = threading.Lock()
_STACK: list[tuple[Any, bool]] = []  # (the launch that was in place, sanitize) per switch


class _EmulatedLaunch:
    """Stands in for ``cuda.tile.launch`` while emulation is on."""

    def __init__(self, sanitize: bool) -> None:
        self.sanitize = sanitize
        self.__name__ = self.__qualname__ = "launch"
        self.__doc__ = "cuda.tile.launch, running kernels on tile_lab's CPU emulator"

    def __call__(self, stream: Any, grid: Any, kernel: Any, kernel_args: Sequence[Any], /,
                 **options: Any) -> None:
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        args = tuple(kernel_args)
        if not self.sanitize:
            from .runtime import emulate
            emulate(kernel, grid, args)
            return
        from ..sanitizer import sanitize
        report = sanitize(kernel, grid, args)
        print(f"[tile_lab] {launch_site(sys._getframe(1))}: ct.launch of {_name(kernel)} "
              f"grid={grid}\n{report}", flush=True)

    def __repr__(self) -> str:
        mode = "sanitize" if self.sanitize else "emulate"
        return f"<cuda.tile.launch on tile_lab's CPU emulator ({mode})>"


def _name(kernel: Any) -> str:
    from ._kernel_access import kernel_function
    try:
        return kernel_function(kernel).__name__
    except Exception:
        return repr(kernel)


def launch_site(frame: Any) -> str:
    """``Cell In[3], line 7`` / ``script.py:12``: where the user's code called launch."""
    from ..errors import location_label  # one notion of "which cell" for every message
    filename, line = frame.f_code.co_filename, frame.f_lineno
    where = location_label(filename)
    if where.startswith("Cell In["):
        return f"{where}, line {line}"
    return f"{os.path.basename(filename)}:{line}"


# ---- switching ---------------------------------------------------------------------------------

def enable(*, sanitize: bool = False) -> None:
    """Turn emulation on until :func:`disable` (nested: each enable needs its disable)."""
    with _LOCK:
        _STACK.append((ct.launch, sanitize))
        ct.launch = _EmulatedLaunch(sanitize)


def disable() -> None:
    """Undo the last :func:`enable` (no-op when emulation is off)."""
    with _LOCK:
        if _STACK:
            ct.launch = _STACK.pop()[0]


def is_enabled() -> bool:
    return isinstance(ct.launch, _EmulatedLaunch)


def mode() -> str | None:
    """``"emulate"``, ``"sanitize"``, or None when ``ct.launch`` is cuTile's own."""
    launch = ct.launch
    if not isinstance(launch, _EmulatedLaunch):
        return None
    return "sanitize" if launch.sanitize else "emulate"


@contextlib.contextmanager
def emulation(*, sanitize: bool = False) -> Iterator[None]:
    """Run ``ct.launch`` calls inside this block on the CPU emulator (sanitizing each launch
    when ``sanitize``). A GPU-only call inside fails with a note saying what to use instead."""
    enable(sanitize=sanitize)
    try:
        yield
    except BaseException as exc:
        add_gpu_note(exc)
        raise
    finally:
        disable()


def mode_from_env(value: str | None = None) -> str | None:
    """``"emulate"``, ``"sanitize"`` or None for the value of ``TILE_LAB_EMULATE``."""
    value = (os.environ.get(ENV_VAR, "") if value is None else value).strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return None
    if value == "sanitize":
        return "sanitize"
    if value in ("1", "true", "yes", "on", "emulate"):
        return "emulate"
    raise ValueError(f"{ENV_VAR}={value!r}: use 1 (emulate every launch), sanitize, or 0")


def install_from_env() -> bool:
    """Called when tile_lab is imported: switch emulation on for the whole process if
    ``TILE_LAB_EMULATE`` asks for it, and explain GPU-only calls in uncaught errors."""
    try:
        mode = mode_from_env()
    except ValueError as exc:  # a typo must not break `import tile_lab`
        import warnings
        warnings.warn(f"{exc}; emulation stays off", stacklevel=2)
        return False
    if mode is None or is_enabled():
        return False
    enable(sanitize=mode == "sanitize")
    _chain_excepthook()
    return True


# ---- GPU-only calls ----------------------------------------------------------------------------

_GPU_MODULES = ("torch/cuda", "cupy", "cuda/bindings", "cuda/core", "numba/cuda")
_GPU_WORDS = ("not compiled with CUDA", "no CUDA GPUs", "CUDA driver", "cudaErrorNoDevice",
              "CUDA_ERROR_NO_DEVICE", "libcuda", "Found no NVIDIA driver", "cuInit")


def add_gpu_note(exc: BaseException) -> bool:
    """Add a note naming the user's call when ``exc`` comes from a GPU-only API."""
    if getattr(exc, "_tile_lab_gpu_note", False):
        return True
    frames = traceback.extract_tb(exc.__traceback__)
    message = str(exc)
    in_gpu = any(any(m in f.filename.replace("\\", "/") for m in _GPU_MODULES) for f in frames)
    if not in_gpu and not any(w in message for w in _GPU_WORDS):
        return False
    user = [f for f in frames if "site-packages" not in f.filename
            and "/tile_lab/" not in f.filename.replace("\\", "/")]
    where = user[-1] if user else (frames[-1] if frames else None)
    call = f"`{where.line.strip()}` ({os.path.basename(where.filename)}:{where.lineno})" \
        if where is not None and where.line else "a GPU-only call"
    exc.add_note(
        f"tile_lab emulation: {call} needs a GPU, but kernels run on the CPU emulator here. "
        "In CPU mode pass stream=None (or 0) to ct.launch instead of a CUDA stream "
        "(e.g. torch.cuda.current_stream()), and make arrays on the host: NumPy arrays or "
        "torch tensors with device='cpu'.")
    exc._tile_lab_gpu_note = True  # type: ignore[attr-defined]
    return True


def _chain_excepthook() -> None:
    previous = sys.excepthook

    def hook(kind, value, tb):
        add_gpu_note(value)
        previous(kind, value, tb)

    sys.excepthook = hook


# ---- python -m tile_lab.emulator script.py ----------------------------------------------------

def run_script(argv: Sequence[str]) -> int:
    """``python -m tile_lab.emulator [--sanitize] script.py [args...]``."""
    import runpy

    args = list(argv)
    sanitize = False
    if args and args[0] in ("--sanitize", "-s"):
        sanitize, args = True, args[1:]
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m tile_lab.emulator [--sanitize] script.py [args...]\n"
              "Runs script.py with every cuda.tile.launch on tile_lab's CPU emulator.",
              file=sys.stderr)
        return 2
    sys.argv = args
    sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
    enable(sanitize=sanitize)
    try:
        runpy.run_path(args[0], run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:
        add_gpu_note(exc)
        traceback.print_exception(exc)
        return 1
    finally:
        disable()
    return 0
