"""Reaching the plain Python function behind ``@ct.kernel`` / ``@ct.function`` objects.

Private cuTile access lives in ``tile_lab/_cutile_compat/`` (``python_function``);
``@ct.function`` helpers are ``functools.wraps`` wrappers, so the public ``__wrapped__``
protocol reaches their functions.
"""

from __future__ import annotations

from types import FunctionType

from .._cutile_compat import is_kernel, python_function
from ..errors import EmulationError


def kernel_function(kernel: object) -> FunctionType:
    """The Python function a ``@ct.kernel`` was made from (a plain function is returned
    as is, so tests and notebooks may emulate undecorated kernels)."""
    if is_kernel(kernel):
        return python_function(kernel)
    if isinstance(kernel, FunctionType):
        return unwrap_tile_function(kernel)
    raise EmulationError(f"expected a @ct.kernel (or a Python function), got "
                         f"{type(kernel).__name__}")


def unwrap_tile_function(fn: FunctionType) -> FunctionType:
    """The user's function behind a ``@ct.function`` wrapper (else ``fn`` itself)."""
    while getattr(fn, "_cutile_function_wrapper", False) and hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn
