"""``tile_lab.compare``: two versions of one kernel side by side, whichever the languages.

A ``@triton.jit`` kernel with its cuTile port goes to :func:`tile_lab.triton.compare_triton`
(compiles, resources, instruction mix, outputs); a cuTile Python kernel with a CUDA Tile C++
one to :func:`tile_lab.cpp.compare` (Tile IR aligned op by op).
"""

from __future__ import annotations

from typing import Any

__all__ = ["compare"]


def compare(a: Any, b: Any, **options: Any) -> Any:
    """Compare kernel ``a`` with kernel ``b``.

    * ``compare(triton_kernel, cutile_kernel, args=..., grid=..., cutile_args=...)``: see
      :func:`tile_lab.triton.compare_triton`;
    * ``compare(python_kernel_or_inspection, cpp, py_args=...)``: see
      :func:`tile_lab.cpp.compare`.
    """
    from .triton.kernel import is_triton_kernel

    if is_triton_kernel(a) or is_triton_kernel(b) or "cutile_args" in options:
        from .triton import compare_triton

        return compare_triton(a, b, **options)
    from .cpp import compare as compare_cpp

    return compare_cpp(a, b, **options)
