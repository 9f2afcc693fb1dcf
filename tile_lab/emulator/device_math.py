"""CUDA's float32 math library in NumPy, operation for operation.

tileiras lowers ``ct.sin``, ``ct.log``, ``ct.tanh``... on float32 to the same instruction
sequences as CUDA's libdevice (``__nv_sinf``, ``__nv_logf``, ``__nv_tanhf``...), which torch's
CUDA kernels also call: a range reduction and a polynomial evaluated with float32 FMAs, and for
some functions a hardware approximation (the MUFU instructions behind ``ex2.approx``,
``rcp.approx``, ``rsqrt.approx``, ``tanh.approx``, ``sqrt.approx``). Their results are not the
correctly rounded ones (an ulp or two off on up to a fifth of inputs), so this module replays the
sequences that tileiras 13.4 emits for sm_90 (read from its PTX and SASS), step by step, with
each float32 operation rounded as the GPU rounds it.

The MUFU approximations behind ``ex2.approx``, ``rcp.approx`` and ``rsqrt.approx`` are
replayed from lookup tables fitted to an H100 (``mufu.py``); ``tanh.approx`` and
``sqrt.approx`` (:func:`tanh_approx`, :func:`sqrt_approx`) are not modelled bit for bit: they
return the correctly rounded value, which differs from the GPU's on many inputs.

Values flow between steps as float64 arrays holding float32 numbers (every step rounds to
float32), so each product of two float32 numbers is exact and only sums need care: see
:func:`fma`. NaN results carry the GPU's canonical NaN (bits 0x7fffffff).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import mufu

__all__ = [
    "FUNCTIONS", "cos", "cosh", "ex2_approx", "exp", "exp2", "exp2_ftz", "exp_approx", "fma",
    "log", "log2", "rcp_approx", "rsqrt", "rsqrt_approx", "rsqrt_ftz", "sin", "sinh", "sqrt",
    "sqrt_approx", "tan", "tanh", "tanh_approx",
]

_CANONICAL_NAN = np.uint32(0x7FFFFFFF)
_CHUNK = 131072
_EXPONENT64 = np.int64(0x7FF0000000000000)


def _c(bits: int) -> float:
    """The float32 constant with these bits (as the PTX writes it: ``0f3F22F983``)."""
    return float(np.uint32(bits).view(np.float32))


def _round32(v: np.ndarray) -> np.ndarray:
    """float64 values rounded to float32 (to nearest even), kept as float64."""
    return v.astype(np.float32).astype(np.float64)


def _round32_odd_fixed(s: np.ndarray, p: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``s = p + c`` (float64, rounded) moved to round-to-odd where it was inexact, so that a
    second rounding, to float32, is the correct rounding of the exact ``p + c``.

    Rounding to nearest twice (to 53 bits, then 24) goes wrong only when the first rounding
    lands exactly on a float32 midpoint; a 53-bit round-to-odd value never does, and rounds
    to 24 bits (or fewer, subnormal) as the exact sum would (Boldo & Melquiond, 2008)."""
    b = s - p
    err = (p - (s - b)) + (c - b)  # two-sum: p + c == s + err exactly
    bits = s.view(np.int64)
    even_inexact = (err != 0) & np.isfinite(err) & ((bits & 1) == 0)
    toward = np.where(err > 0, np.inf, -np.inf)
    return np.where(even_inexact, np.nextafter(s, toward), s)


def _fma64(a: np.ndarray, b: np.ndarray | float, c: np.ndarray | float) -> np.ndarray:
    """fma.rn.f32 on float64 arrays of float32 values; the result as float64."""
    p = np.multiply(a, b)  # exact: float32 x float32 fits a float64 significand
    s = np.add(p, c)
    # a float32 midpoint has its low 28 float64 significand bits clear (normal or subnormal
    # float32); only there can the float64 rounding of the sum mislead the float32 one.
    # Infinities and NaNs (bits 0x7FF... in their exponent) pass as they are: padded -inf
    # lanes (a softmax's) would otherwise all take the slow path
    bits = s.view(np.int64)
    idx = np.flatnonzero(((bits & 0x0FFFFFFF) == 0) & ((bits & _EXPONENT64) != _EXPONENT64))
    if idx.size:
        pb = np.broadcast_to(p, s.shape)[idx]
        cb = np.broadcast_to(np.asarray(c, np.float64), s.shape)[idx]
        s[idx] = _round32_odd_fixed(s[idx], pb, cb)
    return _round32(s)


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``fma.rn.f32``: ``a * b + c`` of float32 values with one rounding, as float32."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float32) for v in (a, b, c)))
    flat = [v.reshape(-1).astype(np.float64) for v in (a, b, c)]
    with np.errstate(all="ignore"):
        out = _fma64(*flat)
    return out.astype(np.float32).reshape(a.shape)


def _fma64_rm(a: np.ndarray, b: float, c: float) -> np.ndarray:
    """fma.rm.f32 (rounded toward minus infinity) for operands whose float32 result is an
    integer below 2**24 (exp's exponent extraction): the floor of the exact sum."""
    p = a * b
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)
    f = np.floor(s)
    return np.where((f == s) & (err < 0), f - 1.0, f)


def _mul(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    return _round32(np.multiply(a, b))


def _add(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    # float64 sum then float32: innocuous double rounding for + (53 >= 2 * 24 + 2)
    return _round32(np.add(a, b))


def _ftz(v: np.ndarray) -> np.ndarray:
    """float32 subnormals (held in float64) to zeros of the same sign."""
    return np.where(np.abs(v) < 2.0 ** -126, v * 0.0, v)


def _bits_to_f64(bits: np.ndarray) -> np.ndarray:
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def _f64_to_bits(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float32).view(np.uint32)


def _float32_function(steps: Callable[[np.ndarray], np.ndarray]
                      ) -> Callable[[np.ndarray], np.ndarray]:
    """A float32 -> float32 function of any shape from ``steps`` on a flat float64 array of
    float32 values; NaN results get the GPU's canonical NaN."""

    def function(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float32)
        flat = x.reshape(-1)
        out = np.empty(flat.shape, np.float32)
        with np.errstate(all="ignore"):
            # in chunks that stay in the CPU's cache: the steps are ~100 passes over the data
            for start in range(0, len(flat), _CHUNK):
                part = flat[start:start + _CHUNK].astype(np.float64)
                out[start:start + _CHUNK] = steps(part)
        nan = np.isnan(out)
        if nan.any():
            out.view(np.uint32)[nan] = _CANONICAL_NAN
        return out.reshape(x.shape)

    function.__name__ = function.__qualname__ = steps.__name__
    function.__doc__ = steps.__doc__
    return function


# ---- the hardware approximations (MUFU) --------------------------------------------------------

def ex2_approx(t: np.ndarray) -> np.ndarray:
    """``ex2.approx.ftz.f32`` (MUFU.EX2): 2**t, subnormals flushed to zero."""
    return mufu.ex2(t)


def rcp_approx(t: np.ndarray) -> np.ndarray:
    """``rcp.approx.ftz.f32`` (MUFU.RCP): 1/t, subnormals flushed to zero."""
    return mufu.rcp(t)


def rsqrt_approx(t: np.ndarray) -> np.ndarray:
    """``rsqrt.approx.ftz.f32`` (MUFU.RSQ): 1/sqrt(t), subnormals flushed to zero."""
    return mufu.rsqrt(t)


@_float32_function
def tanh_approx(x: np.ndarray) -> np.ndarray:
    """``tanh.approx.f32`` (MUFU.TANH) of float32 ``x``, as float32. Not the GPU's bits: the
    correctly rounded tanh (the hardware's is good to about 2**-11 relative; on an H100 it
    differed from this on 19% of a 720k-input set)."""
    return _round32(np.tanh(x))


@_float32_function
def sqrt_approx(x: np.ndarray) -> np.ndarray:
    """``sqrt.approx.f32`` (MUFU.SQRT, subnormal inputs scaled by 2**24 first), as float32.
    Not the GPU's bits: the correctly rounded root (an ulp from MUFU.SQRT's on 17% of an
    H100's positive inputs)."""
    return _round32(np.sqrt(x))


# ---- exp, exp2 ---------------------------------------------------------------------------

def _exp2_nonftz(t: np.ndarray) -> np.ndarray:
    """``ex2.approx.f32`` without ftz: below -126, 2**(t/2) squared (ptxas' sequence)."""
    low = t < -126.0
    r = ex2_approx(np.where(low, t * 0.5, t))
    return np.where(low, _mul(r, r), r)


@_float32_function
def exp2(x: np.ndarray) -> np.ndarray:
    """``ct.exp2`` of float32 ``x`` (``ex2.approx.f32``)."""
    return _exp2_nonftz(x)


@_float32_function
def exp2_ftz(x: np.ndarray) -> np.ndarray:
    """``ct.exp2(x, flush_to_zero=True)`` (``ex2.approx.ftz.f32``)."""
    return ex2_approx(x)


@_float32_function
def exp_approx(x: np.ndarray) -> np.ndarray:
    """``ct.exp(x, rounding_mode=APPROX)``: ``ex2.approx.f32(x * log2(e))``."""
    return _exp2_nonftz(_mul(x, _c(0x3FB8AA3B)))


@_float32_function
def exp(x: np.ndarray) -> np.ndarray:
    """``ct.exp`` (also ``rounding_mode=FULL``) and CUDA's ``expf``: 2**j * ex2(r) with j
    from a saturated, round-down FMA and r = x*log2(e) - j in two FMAs."""
    x = x
    t = _fma64(x, _c(0x3BBB989D), 0.5)
    t = np.clip(np.nan_to_num(t, nan=0.0), 0.0, 1.0)  # cvt.sat: NaN to 0
    j = _fma64_rm(t, 252.0, 12582913.0)
    k = _add(j, -12583039.0)
    r = _fma64(x, _c(0x3FB8AA3B), -k)
    r = _fma64(x, _c(0x32A57060), r)
    scale = _bits_to_f64(_f64_to_bits(j) << np.uint32(23))
    return _mul(ex2_approx(r), scale)


# ---- log, log2 ---------------------------------------------------------------------------

_LOG_POLY = (0xBE055027, 0x3E1039F6, 0xBDF8CDCC, 0x3E0F2955, 0xBE2AD8B9, 0x3E4CED0B,
             0xBE7FFF22, 0x3EAAAA78, 0xBF000000)
_LOG2_POLY = (0x3DC6B27F, 0xBE2C7F30, 0x3E2FCF2A, 0xBE374E43, 0x3E520BF4, 0xBE763C8B,
              0x3E93BF99, 0xBEB8AA49, 0x3EF6384A, 0xBF38AA3B)


def _log_parts(x: np.ndarray, offset: int, poly: tuple[int, ...]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The shared start of logf/log2f: (scaled input, f = m - 1, polynomial p(f), exponent
    as float32, was-subnormal), the mantissa m taken in [2/3, 4/3)."""
    sub = x < 2.0 ** -126
    xs = np.where(sub, _mul(x, 8388608.0), x)
    bits = _f64_to_bits(xs)
    e_bits = (bits - np.uint32(offset)) & np.uint32(0xFF800000)
    f = _add(_bits_to_f64(bits - e_bits), -1.0)
    p = _fma64(f, _c(poly[0]), _c(poly[1]))
    for coeff in poly[2:]:
        p = _fma64(p, f, _c(coeff))
    expo = _fma64(e_bits.view(np.int32).astype(np.float64), 2.0 ** -23,
                  np.where(sub, -23.0, 0.0))
    return xs, f, p, expo, bits


def _log_specials(xs: np.ndarray, bits: np.ndarray, value: np.ndarray) -> np.ndarray:
    special = bits > np.uint32(0x7F7FFFFF)  # negative, inf, NaN
    out = np.where(special, _fma64(xs, np.inf, np.inf), value)
    return np.where(xs == 0.0, -np.inf, out)


@_float32_function
def log(x: np.ndarray) -> np.ndarray:
    """``ct.log`` and CUDA's ``logf``."""
    xs, f, p, expo, bits = _log_parts(x, 0x3F2AAAAB, _LOG_POLY)
    q = _fma64(_mul(f, p), f, f)
    return _log_specials(xs, bits, _fma64(expo, _c(0x3F317218), q))


@_float32_function
def log2(x: np.ndarray) -> np.ndarray:
    """``ct.log2`` and CUDA's ``log2f``."""
    xs, f, p, expo, bits = _log_parts(x, 0x3F3504F3, _LOG2_POLY)
    q = _fma64(f, _c(0x3FB8AA3B), _mul(f, _mul(f, p)))
    return _log_specials(xs, bits, _add(expo, q))


# ---- sin, cos, tan -----------------------------------------------------------------------

# 2/pi in 32-bit words, low word first (the Payne-Hanek table of CUDA's trig reduction)
_TWO_OVER_PI = np.array([0x3C439041, 0xDB629599, 0xF534DDC0, 0xFC2757D1, 0x4E441529,
                         0xA2F9836E], np.uint64)


def _reduce_large(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Payne-Hanek reduction of finite float32 values with |x| >= 105615 (their bits):
    (r as float64-held float32, quadrant as int32)."""
    mask = np.uint64(0xFFFFFFFF)
    b = bits.astype(np.uint64)
    mant = ((b << np.uint64(8)) | np.uint64(0x80000000)) & mask
    words = []
    carry = np.zeros_like(mant)
    for w in _TWO_OVER_PI:
        v = mant * w + carry
        words.append(v & mask)
        carry = v >> np.uint64(32)
    words.append(carry)
    table = np.stack(words, axis=-1)  # 7 words, low first
    expo = b >> np.uint64(23)
    k = (((expo & np.uint64(0xE0)) - np.uint64(128)) >> np.uint64(5)).astype(np.int64)
    shift = expo & np.uint64(31)
    rows = np.arange(len(b))
    hi, lo, lo2 = table[rows, 6 - k], table[rows, 5 - k], table[rows, 4 - k]
    hi = ((hi << shift) | (lo >> (np.uint64(32) - shift))) & mask
    lo = ((lo << shift) | (lo2 >> (np.uint64(32) - shift))) & mask
    mid = ((hi << np.uint64(2)) | (lo >> np.uint64(30))) & mask
    low = (lo << np.uint64(2)) & mask
    q = ((mid >> np.uint64(31)) + (hi >> np.uint64(30))).astype(np.int64)
    negative_x = (b >> np.uint64(31)) != 0
    q = np.where(negative_x, -q, q)
    flip = np.where((mid >> np.uint64(31)) != 0, mask, np.uint64(0))
    fixed = (((mid ^ flip) << np.uint64(32)) | (low ^ flip)).astype(np.int64)
    r = _round32(fixed.astype(np.float64) * float(np.uint64(0x3BF921FB54442D19).view(np.float64)))
    negative_r = (((mid ^ b) >> np.uint64(31)) & np.uint64(1)) != 0
    return np.where(negative_r, -r, r), q.astype(np.int32)


def _reduce(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x = q * pi/2 + r for float64-held float32 ``x``: (r, q as int32)."""
    t = _mul(x, _c(0x3F22F983))
    q = np.rint(np.nan_to_num(t, nan=0.0, posinf=2.0 ** 31, neginf=-2.0 ** 31))
    q = np.clip(q, -2.0 ** 31, 2.0 ** 31 - 1)  # cvt.rni.s32 saturates
    qf = _round32(q) + 0.0  # an integer: no negative zero
    r = _fma64(qf, _c(0xBFC90FDA), x)
    r = _fma64(qf, _c(0xB3A22168), r)
    r = _fma64(qf, _c(0xA7C234C5), r)
    q = q.astype(np.int32)
    a = np.abs(x)
    large = a >= _c(0x47CE4780)  # (NaN stays on the short path)
    if large.any():
        r, q = r.copy(), q.copy()
        inf = a == np.inf
        r[inf], q[inf] = np.nan, 0  # x * 0
        finite = np.nonzero(large & ~inf)
        if finite[0].size:
            r[finite], q[finite] = _reduce_large(_f64_to_bits(x[finite]))
    return r, q


def _sincos_poly(r: np.ndarray, odd: np.ndarray, negate: np.ndarray) -> np.ndarray:
    """sin(r) (``odd`` False) or cos(r) (``odd`` True) on the reduced argument, negated
    where ``negate`` (as ``0 - v``)."""
    s = _mul(r, r)
    base = np.where(odd, 1.0, r)
    sr = _fma64(s, base, 0.0)
    p = np.where(odd, _fma64(s, _c(0x37CBAC00), _c(0xBAB607ED)), _c(0xB94D4153))
    p = _fma64(p, s, np.where(odd, _c(0x3D2AAABB), _c(0x3C0885E4)))
    p = _fma64(p, s, np.where(odd, _c(0xBEFFFFFF), _c(0xBE2AAAA8)))
    v = _fma64(p, sr, base)
    return np.where(negate, 0.0 - v, v)


@_float32_function
def sin(x: np.ndarray) -> np.ndarray:
    """``ct.sin`` and CUDA's ``sinf``."""
    r, q = _reduce(x)
    return _sincos_poly(r, (q & 1) != 0, (q & 2) != 0)


@_float32_function
def cos(x: np.ndarray) -> np.ndarray:
    """``ct.cos`` and CUDA's ``cosf``."""
    r, q = _reduce(x)
    return _sincos_poly(r, (q & 1) == 0, ((q + 1) & 2) != 0)


_TAN_POLY = (0x3C190000, 0x3B560000, 0x3CC70000, 0x3D5B0000, 0x3E089438, 0x3EAAAA88)


@_float32_function
def tan(x: np.ndarray) -> np.ndarray:
    """``ct.tan`` and CUDA's ``tanf``: odd quadrants take ``rcp.approx`` of -tan(r)."""
    r, q = _reduce(x)
    s = _mul(r, r)
    p = _fma64(s, _c(_TAN_POLY[0]), _c(_TAN_POLY[1]))
    for coeff in _TAN_POLY[2:]:
        p = _fma64(p, s, _c(coeff))
    t = _fma64(p, _mul(s, r), r)
    t = np.where(np.abs(r) == _c(0x3A00B43C), r, t)
    return np.where((q & 1) != 0, rcp_approx(-t), t)


# ---- sinh, cosh, tanh --------------------------------------------------------------------

def _half_exp_parts(a: np.ndarray) -> np.ndarray:
    """e**a / 4 for a = |x| as sinhf/coshf compute it: 2**(j-2) * ex2((a - j ln2) log2 e)."""
    j = np.trunc(_mul(a, _c(0x3FB8AA3B)))
    j = np.where(np.abs(j) > 126.0, np.copysign(126.0, j), j)
    r = _fma64(j, _c(0xBF317218), a)
    r = _fma64(j, _c(0x3102E308), r)
    e = ex2_approx(_mul(r, _c(0x3FB8AA3B)))
    shifted = _f64_to_bits(_add(j, 12583037.0)) << np.uint32(23)
    return _mul(e, _bits_to_f64(shifted))


@_float32_function
def sinh(x: np.ndarray) -> np.ndarray:
    """``ct.sinh`` and CUDA's ``sinhf``: an odd polynomial below 1, else
    2 * (e**a / 4) - 0.125 / (e**a / 4)."""
    x = x
    a = np.abs(x)
    h = _half_exp_parts(a)
    big = _fma64(h, 2.0, _ftz(_mul(rcp_approx(h), -0.125)))
    big = np.copysign(big, x)
    s = _mul(x, x)
    p = _fma64(s, _c(0x363D0ADA), _c(0x394FFF49))
    p = _fma64(p, s, _c(0x3C08889A))
    p = _fma64(p, s, _c(0x3E2AAAAB))
    small = _fma64(_mul(s, p), x, x)
    return np.where(a >= 1.0, big, small)


@_float32_function
def cosh(x: np.ndarray) -> np.ndarray:
    """``ct.cosh`` and CUDA's ``coshf``: 2 * (e**a / 4) + 0.125 / (e**a / 4)."""
    h = _half_exp_parts(np.abs(x))
    return _fma64(h, 2.0, _ftz(_mul(rcp_approx(h), 0.125)))


_TANH_POLY = (0x3C80F082, 0xBD563CAE, 0x3E085941, 0xBEAAA9ED)


@_float32_function
def tanh(x: np.ndarray) -> np.ndarray:
    """``ct.tanh`` (also ``rounding_mode=FULL``) and CUDA's ``tanhf``: an odd polynomial
    below 0.6, else 1 - 2 / (2**(2|x| log2 e) + 1), 1 from 9.0109 on."""
    x = x
    a = np.abs(x)
    s = _mul(x, x)
    p = _fma64(s, _c(_TANH_POLY[0]), _c(_TANH_POLY[1]))
    for coeff in _TANH_POLY[2:]:
        p = _fma64(p, s, _c(coeff))
    small = _fma64(_fma64(p, s, 0.0), x, x)
    e = ex2_approx(_mul(a, _c(0x4038AA3B)))
    big = _fma64(rcp_approx(_add(e, 1.0)), -2.0, 1.0)
    big = np.copysign(np.where(a >= _c(0x41102CB4), 1.0, big), x)
    return np.where(a >= _c(0x3F19999A), big, small)


# ---- rsqrt -------------------------------------------------------------------------------

@_float32_function
def rsqrt(x: np.ndarray) -> np.ndarray:
    """``ct.rsqrt`` and CUDA's ``rsqrtf`` (``rsqrt.approx.f32``): subnormal inputs are
    scaled by 2**24 and the result by 2**12."""
    x = x
    low = ~(np.abs(x) >= 2.0 ** -126)
    r = rsqrt_approx(np.where(low, _mul(x, 16777216.0), x))
    return np.where(low, _mul(r, 4096.0), r)


@_float32_function
def rsqrt_ftz(x: np.ndarray) -> np.ndarray:
    """``ct.rsqrt(x, flush_to_zero=True)`` (``rsqrt.approx.ftz.f32``)."""
    return rsqrt_approx(x)


@_float32_function
def sqrt(x: np.ndarray) -> np.ndarray:
    """``ct.sqrt`` and CUDA's ``sqrtf`` (``sqrt.rn.f32``): the correctly rounded root
    (rounding the float64 root again is innocuous: 53 >= 2 * 24 + 2)."""
    return _round32(np.sqrt(x))


FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": exp, "sqrt": sqrt, "exp2": exp2, "log": log, "log2": log2, "rsqrt": rsqrt, "sin": sin,
    "cos": cos, "tan": tan, "sinh": sinh, "cosh": cosh, "tanh": tanh,
}
"""The float32 functions by ``ct`` name: float32 in, float32 out (what CUDA returns)."""
