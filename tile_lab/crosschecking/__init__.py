"""GPU vs emulator, tile by tile: ``tile_lab.crosscheck(kernel, grid, args)``.

``run`` (the entry point, the :class:`GpuSide` seam and the CuPy side), ``compare`` (per-tile
errors and classes, pure NumPy), ``sites`` (where a GPU may differ by design, read from the
kernel's source), ``result`` (the frozen, JSON-serialisable :class:`CrossCheck`). The picture
is drawn by ``tile_lab.render.crosscheck``, looked up through ``tile_lab.display``.
"""

from __future__ import annotations

from .budget import Budget
from .result import CrossCheck, Hazard, OutputComparison, TileComparison
from .run import CrossCheckOptions, CupyGpu, GpuSide, crosscheck_kernel, gpu_requirements
from .sites import DesignSite, design_sites

__all__ = ["Budget", "CrossCheck", "CrossCheckOptions", "CupyGpu", "DesignSite", "GpuSide",
           "Hazard", "OutputComparison", "TileComparison", "crosscheck_kernel", "design_sites",
           "gpu_requirements"]
