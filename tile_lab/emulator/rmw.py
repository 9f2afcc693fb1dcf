"""Read-modify-write: what an atomic (or a tiled view's atomic store) does to the value in
memory, per operation name, in the array's dtype.
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .state import kernel_error

__all__ = ["RMW"]


def _arith(fn):
    def apply(cur: np.ndarray, upd: np.ndarray, dtype: object) -> np.ndarray:
        compute = dtypes.compute_dtype(dtype)
        return dtypes.cast(fn(np.asarray(cur).astype(compute), np.asarray(upd).astype(compute)),
                           dtype)
    return apply


def _bits(fn):
    def apply(cur: np.ndarray, upd: np.ndarray, dtype: object) -> np.ndarray:
        if dtypes.is_float(dtype):
            raise kernel_error(f"bitwise atomics need an integer array, not {dtype}")
        return fn(cur, upd)
    return apply


RMW = {
    "xchg": lambda cur, upd, dtype: upd,
    "add": _arith(np.add), "max": _arith(np.maximum), "min": _arith(np.minimum),
    "and": _bits(np.bitwise_and), "or": _bits(np.bitwise_or), "xor": _bits(np.bitwise_xor),
}
