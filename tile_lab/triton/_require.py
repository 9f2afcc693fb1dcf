"""Triton is optional: find it, or say exactly what is missing and what it would enable.

Nothing in ``tile_lab.triton`` imports Triton at module import time; each entry point calls
:func:`require_triton` first, so ``import tile_lab`` works without it and the error names the
feature that needed it.
"""

from __future__ import annotations

from types import ModuleType

from ..errors import ToolchainError

__all__ = ["INSTALL_HINT", "TritonMissing", "require_torch", "require_triton", "triton_status"]

INSTALL_HINT = 'pip install "tile_lab[triton]"  (Triton and CPU torch; no GPU needed)'
# what the doctor says Triton enables
ENABLES = ("%%tile --lang triton (Triton IR, TTGIR, PTX and SASS for sm_90 on a CPU)",
           "tile_lab.compare(triton_kernel, cutile_kernel, ...) side by side",
           "Triton's interpreter vs the cuTile emulator on CPU, element by element")


class TritonMissing(ToolchainError):
    """Triton (or torch, which its interpreter runs on) is not installed."""


def _triton() -> ModuleType | None:
    try:  # a plain import (not by string) so the layer test sees it
        import triton
    except ImportError:
        return None
    return triton


def _torch() -> ModuleType | None:
    try:
        import torch
    except ImportError:
        return None
    return torch


def require_triton(what: str) -> ModuleType:
    """The ``triton`` module, or TritonMissing naming ``what`` needed it."""
    mod = _triton()
    if mod is None:
        raise TritonMissing(f"{what} needs Triton, which is not installed (import triton "
                            f"failed)", hint=INSTALL_HINT)
    return mod


def require_torch(what: str) -> ModuleType:
    """``torch`` (Triton's interpreter runs kernels on torch CPU tensors)."""
    mod = _torch()
    if mod is None:
        raise TritonMissing(f"{what} needs torch (Triton's interpreter runs kernels on torch "
                            f"CPU tensors), which is not installed", hint=INSTALL_HINT)
    return mod


def triton_status() -> tuple[str | None, str | None]:
    """(Triton's version, torch's version); None where not installed."""
    tr, to = _triton(), _torch()
    return (getattr(tr, "__version__", "?") if tr else None,
            getattr(to, "__version__", "?") if to else None)
