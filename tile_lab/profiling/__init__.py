"""Profiles of tile kernels: Nsight Compute's per-instruction data on tile_lab's line maps.

``profile`` (needs a GPU and ``ncu``) returns a frozen ``Profile``; ``load_profile`` reads a
recorded one anywhere. Rendering lives in ``tile_lab.render.profile_view``.
"""

from __future__ import annotations

from .api import profile_kernel
from .data import (
    InstructionSample,
    KernelMetrics,
    LineProfile,
    Profile,
    compare_profiles,
    load_profile,
)
from .tuned_configs import profile_tuning

__all__ = ["InstructionSample", "KernelMetrics", "LineProfile", "Profile", "compare_profiles",
           "load_profile", "profile_kernel", "profile_tuning"]
