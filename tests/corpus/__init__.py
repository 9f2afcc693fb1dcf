"""A corpus of real cuTile kernels for the emulator and sanitizer tests.

``correct.CASES``: kernels with input builders and NumPy references (no sanitizer
findings allowed). ``buggy.CASES``: kernels with a seeded bug each, documenting the
sanitizer findings expected (kind, argument, and the source line, given as a snippet
of that line so the test does not hard-code line numbers).
"""

from __future__ import annotations

import inspect
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cuda.tile as ct
import numpy as np

from tile_lab._cutile_compat import kernel_parameters, python_function

Args = tuple


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Expect:
    """A sanitizer finding a buggy kernel must produce: ``kind`` on ``arg``, reported at
    the kernel line containing ``line_text``."""

    kind: str
    arg: str
    line_text: str


@dataclass(frozen=True)
class Case:
    """One kernel with everything needed to run and check it.

    ``grid(args)`` gives the launch grid; ``make_args(rng)`` fresh arguments (NumPy);
    ``reference(args)`` the expected outputs by name, computed from the inputs;
    ``outputs(args)`` the actual outputs by the same names after the run (default: the
    kernel arguments with those parameter names). ``expect`` lists the findings of a
    seeded bug (empty for correct kernels); ``bug`` says what the bug is.
    """

    name: str
    kernel: Any
    grid: Callable[[Args], tuple[int, ...]]
    make_args: Callable[[np.random.Generator], Args]
    reference: Callable[[Args], dict[str, np.ndarray]] | None = None
    outputs: Callable[[Args], dict[str, np.ndarray]] | None = None
    rtol: float = 1e-6
    atol: float = 1e-6
    expect: tuple[Expect, ...] = ()
    bug: str = ""
    extra: dict = field(default_factory=dict)

    def build(self, seed: int = 0) -> tuple[tuple[int, ...], Args]:
        """(grid, args) with freshly made arguments."""
        args = self.make_args(np.random.default_rng(seed))
        return tuple(self.grid(args)), args

    def actual(self, args: Args) -> dict[str, np.ndarray]:
        if self.outputs is not None:
            return self.outputs(args)
        names = param_names(self.kernel)
        assert self.reference is not None
        return {k: args[names.index(k)] for k in self.reference(args)}

    def line(self, text: str) -> int:
        return line_of(self.kernel, text)


def param_names(kernel: Any) -> list[str]:
    return [p.name for p in kernel_parameters(kernel)]


def line_of(kernel: Any, text: str) -> int:
    """The file line number of the one kernel line containing ``text``."""
    lines, first = inspect.getsourcelines(python_function(kernel))
    hits = [first + i for i, line in enumerate(lines) if text in line]
    if len(hits) != 1:
        raise AssertionError(f"{text!r} occurs {len(hits)} times in the kernel source")
    return hits[0]


# ---- compiling with cuTile (proves every corpus kernel is valid cuTile) -------------------

def export_tileir(kernel: Any, args: Args) -> bytes:
    """Compile ``kernel`` for example ``args`` to Tile IR bytecode with cuTile's public
    export API (works without a GPU). Raises whatever cuTile raises on invalid kernels."""
    from cuda.tile.compilation import (
        ArrayConstraint,
        CallingConvention,
        KernelSignature,
        ScalarConstraint,
        export_kernel,
    )

    params = []
    for info, value in zip(kernel_parameters(kernel), args, strict=True):
        if info.constant:
            params.append(value)
        elif isinstance(value, np.ndarray):
            params.append(ArrayConstraint(
                _ct_dtype(value.dtype), value.ndim, index_dtype=ct.int32,
                stride_lower_bound_incl=0, alias_groups=(), may_alias_internally=False))
        elif isinstance(value, bool):
            params.append(ScalarConstraint(ct.bool_))
        elif isinstance(value, int):
            params.append(ScalarConstraint(ct.int32))
        elif isinstance(value, float):
            params.append(ScalarConstraint(ct.float32))
        else:
            raise TypeError(f"cannot describe argument {info.name}={value!r} to cuTile")
    sig = KernelSignature(params, CallingConvention.cutile_python_v1())
    buf = io.BytesIO()
    export_kernel(kernel, [sig], buf, output_format="tileir_bytecode")
    return buf.getvalue()


def _ct_dtype(dtype: np.dtype):
    name = np.dtype(dtype).name
    return ct.bool_ if name == "bool" else getattr(ct, name)
