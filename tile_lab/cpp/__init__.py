"""CUDA Tile C++ next to cuTile Python: compile, inspect, launch and compare C++ kernels.

``inspect_cpp`` compiles a ``__tile_global__`` kernel with the pip nvcc into the same
``Inspection`` that ``tile_lab.inspect`` makes for Python kernels; ``compare`` aligns
the Tile IR of a Python kernel and a C++ kernel op by op; ``launch_cpp`` runs a C++
kernel on CuPy arrays (GPU only: the CPU emulator covers Python kernels only);
``bench_cpp`` times it like ``tile_lab.bench`` and ``tune_cpp`` tunes its ``-D`` defines
(tile sizes, ``cutile::hint`` values) with ``tile_lab.tune``'s spaces, strategies and store.
"""

from .bench import bench_cpp
from .build import inspect_cpp
from .compare import Comparison, OpLine, OpPair, compare
from .launch import launch_cpp
from .source import find_kernel_names
from .tune import CppKernel, compile_configs, tune_cpp

__all__ = ["Comparison", "CppKernel", "OpLine", "OpPair", "bench_cpp", "compare",
           "compile_configs", "find_kernel_names", "inspect_cpp", "launch_cpp", "tune_cpp"]
