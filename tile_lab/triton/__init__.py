"""Triton beside cuTile: compile a ``@triton.jit`` kernel on a CPU, run it, compare its port.

``inspect_triton`` compiles a Triton kernel for sm_90 (or another arch) with the ptxas Triton's
wheel ships into the same ``Inspection`` ``tile_lab.inspect`` makes for cuTile kernels (Triton
IR, TritonGPU IR, PTX, SASS, each line tied to its source line); ``run_triton_cpu`` runs it
through Triton's interpreter on NumPy/torch CPU arrays; ``compare_triton`` (what
``tile_lab.compare`` calls for a Triton kernel) puts it beside its cuTile port: both compiles,
registers, shared memory, instruction mix, and both outputs compared element by element;
``time_pair`` races the two on a GPU with ``compare_timed``. Triton is optional
(``pip install "tile_lab[triton]"``): without it each entry point says so.
"""

from ._require import TritonMissing, triton_status
from .build import compile_triton, inspect_triton
from .interpret import run_triton_cpu
from .kernel import TritonSignature, is_triton_kernel, signature_of
from .pair import PortComparison, PortSide, compare_triton
from .resources import Resources, cubin_resources, instruction_mix

__all__ = ["PortComparison", "PortSide", "Resources", "TritonMissing", "TritonSignature",
           "compare_triton", "compile_triton", "cubin_resources", "inspect_triton",
           "instruction_mix", "is_triton_kernel", "run_triton_cpu", "signature_of",
           "time_pair", "triton_status"]


def __getattr__(name: str):  # the GPU path imports CuPy-side modules only when asked for
    if name == "time_pair":
        from .gpu import time_pair

        return time_pair
    raise AttributeError(f"module 'tile_lab.triton' has no attribute {name!r}")
