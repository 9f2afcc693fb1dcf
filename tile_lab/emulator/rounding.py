"""Rounding modes other than nearest-even (``rounding_mode=`` RZ, RM, RP, RA) and
flush-to-zero, for ``ct.astype`` and the arithmetic ops that take them.

A directed result is the round-to-nearest result moved one representable step
(``numpy.nextafter``) when it lies on the wrong side of the exact value, so it is right
whenever the value it starts from is exact: a float64 source of ``astype``, and float32 (or
narrower) ``+ - *`` computed in float64 (exact there, but for sums of operands more than 29
binades apart); a float64 quotient or square root of float32 operands is not exact but never
lands on a float32 value the exact one is not on, so the step's direction is right too.
float64 operands are computed in the platform's ``longdouble`` (80-bit on x86: 11 more bits),
which decides the direction of all but rare products and quotients.
"""

from __future__ import annotations

from typing import Any

import cuda.tile as ct
import numpy as np

_RM = ct.RoundingMode
_DIRECTED = frozenset({_RM.RZ, _RM.RM, _RM.RP, _RM.RA})
_TINY32 = np.float32(np.finfo(np.float32).tiny)


def is_directed(mode: Any) -> bool:
    """True for a mode that needs more than NumPy's round-to-nearest-even."""
    return mode in _DIRECTED


def round_to(exact: np.ndarray, target: np.dtype, mode: Any) -> np.ndarray:
    """``exact`` (a wider float array) rounded to ``target`` in ``mode``."""
    exact = np.asarray(exact)
    rn = exact.astype(target)
    if not is_directed(mode):
        return rn
    back = rn.astype(exact.dtype)
    finite = np.isfinite(exact)
    if mode is _RM.RA:  # nearest, ties away from zero: only ties differ from RN
        toward = np.nextafter(rn, np.where(exact > back, np.inf, -np.inf).astype(target))
        gap = np.abs(toward.astype(exact.dtype) - back)
        tie = finite & (exact != back) & (np.abs(exact - back) * 2 == gap)
        away = tie & (np.abs(toward.astype(exact.dtype)) > np.abs(back))
        return np.where(away, toward, rn).astype(target)
    if mode is _RM.RZ:
        wrong, goal = np.abs(back) > np.abs(exact), np.zeros_like(rn)
    elif mode is _RM.RM:
        wrong, goal = back > exact, np.full_like(rn, -np.inf)
    else:  # RP
        wrong, goal = back < exact, np.full_like(rn, np.inf)
    wrong &= finite
    return np.where(wrong, np.nextafter(rn, goal), rn).astype(target)


def wide(values: np.ndarray) -> np.ndarray:
    """``values`` in a format wide enough to round from (float64, or longdouble for f64)."""
    a = np.asarray(values)
    return a.astype(np.longdouble if a.dtype == np.float64 else np.float64)


def flush(values: np.ndarray) -> np.ndarray:
    """float32 subnormals replaced by zeros of the same sign (``flush_to_zero=True``)."""
    a = np.asarray(values)
    if a.dtype != np.float32:
        return a
    sub = (a != 0) & (np.abs(a) < _TINY32)
    return np.where(sub, np.copysign(np.float32(0), a), a).astype(np.float32) if sub.any() \
        else a


def round_tf32(values: np.ndarray, mode: Any) -> np.ndarray:
    """float32 values rounded to tf32's 10 explicit mantissa bits in ``mode`` (RN, RZ, RA)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    finite = np.isfinite(np.asarray(values, dtype=np.float32))
    if mode is _RM.RZ:
        out = bits & np.uint32(0xFFFFE000)
    elif mode is _RM.RA:
        out = (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
    else:
        lsb = (bits >> 13) & 1
        out = (bits + 0x0FFF + lsb) & np.uint32(0xFFFFE000)
    out = np.where(finite, out.astype(np.uint32), bits).view(np.float32)
    return out.reshape(np.shape(values))
