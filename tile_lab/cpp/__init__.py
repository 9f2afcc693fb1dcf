"""CUDA Tile C++ next to cuTile Python: compile, inspect, launch and compare C++ kernels.

``inspect_cpp`` compiles a ``__tile_global__`` kernel with the pip nvcc into the same
``Inspection`` that ``tile_lab.inspect`` makes for Python kernels; ``compare`` aligns
the Tile IR of a Python kernel and a C++ kernel op by op; ``launch_cpp`` runs a C++
kernel on CuPy arrays (GPU only: the CPU emulator covers Python kernels only).
"""

from .build import inspect_cpp
from .compare import Comparison, OpLine, OpPair, compare
from .launch import launch_cpp
from .source import find_kernel_names

__all__ = ["Comparison", "OpLine", "OpPair", "compare", "find_kernel_names", "inspect_cpp",
           "launch_cpp"]
