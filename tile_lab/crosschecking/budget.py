"""How far a GPU's result may legitimately lie from the emulator's: a per-element budget.

The emulator and a GPU start from the same bytes and run the same ops. Where the kernel has no
by-design site (:mod:`tile_lab.crosschecking.sites`) every op is correctly rounded on both sides and
they agree bit for bit. Where it has sites, the difference at element ``i`` of a float output
is bounded by two parts:

``|gpu_i - emu_i| <= output_ulps · ulp(max(|gpu_i|, |emu_i|)) + rho · S``

* **The output's own rounding**, one ULP of the output dtype at that value: both sides round
  a value to the output dtype to nearest; two values closer than ``rho · S`` round to results
  at most ``rho · S`` plus half an ULP plus half an ULP apart (a value just below a rounding
  midpoint on one side and just above it on the other gives a 1-ULP difference however small
  ``rho · S`` is). This is what bounds an fp16 or bf16 output: 2^-10 (2^-7) of the element.
* **What the kernel's sites add before that rounding**, ``rho · S``: ``S`` is the largest
  finite magnitude in the emulator's output (the scale of the terms the kernel combines: a
  sum that cancels loses accuracy against its terms, not against its result), ``rho`` the sum
  of one relative error per site (:func:`error_model`):

  - a sum (``mma``, ``@``, ``sum``, ``cumsum``, ``reduce``, ``scan``, ``atomic_add``, blocks
    taking turns under a lock) of ``n`` terms in an accumulator of machine epsilon ``eps``:
    ``n · eps``: each side is within γ_n·Σ|terms| of the exact sum whatever its order
    (Higham, γ_n = n·u/(1-n·u), u = eps/2), so the two differ by at most 2·γ_n ≈ n·eps of
    Σ|terms|, for which the output's scale S stands (for terms of random sign Σ|terms| is
    about √n times the output's typical value, while the typical error is √n·u of it rather
    than n·u: n·eps·S covers it with a margin that grows with √n). ``n`` comes from the
    trace: for a matrix product the K extent the block accumulated at that line (the sum of
    ``k`` over its products there) and the accumulator dtype the trace recorded; for another
    reduction the longest tile extent a block loaded times the loads it made at one line (a
    loop carries the sum), the whole tile for a reduction without ``axis``; for
    ``atomic_add`` and a lock the number of blocks that wrote there.
  - approximate math (``exp``, ``rsqrt``, ``tanh``...; rounding_mode=APPROX): the
    documented maximum relative error of the PTX ``.approx`` instruction (2^-21 for
    ``ex2``/``lg2``/``rsqrt``/``rcp``/``div``; 2^-11 for ``tanh``; ``exp`` as ``ex2`` of
    ``x·log2 e`` loses another |x|·2^-24, up to 2^-16 for |x| <= 128), and never less than
    half an ULP of the dtype the site computes in (an fp16 tile's ``exp`` is rounded to
    fp16).
  - a multiply-add the compiler may fuse: one rounding of the product fewer, half an ULP of
    the dtype it computes in (none for integers: exact).
  - a rounding mode other than nearest-even: one ULP of the dtype it computes in.
  - a narrowing cast feeding a sum (``p.astype(ct.float16)`` into an ``mma``): a value that
    differs by design may round to the neighbouring fp16 value, one ULP of that dtype on a
    term of the sum (none for a widening cast to float32: exact).

  The dtype a site computes in is followed through the kernel's source
  (:mod:`tile_lab.crosschecking.flow`); where the source does not say, the narrowest float dtype of
  the kernel's arrays stands for it (the cautious side).
  - flush-to-zero: values below the smallest normal number, on both sides, agree.

For a fp16 GEMM of K = 1024 with a float32 accumulator that is 1 ULP of fp16 plus
1024·2^-23 ≈ 1.2e-4 of the output's largest value: a 1 % error anywhere near the output's
scale is 10 fp16 ULPs, far outside it. Integer outputs get no budget: integer arithmetic is
exact in any order. :class:`Budget` scales each part (the documented defaults are 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..tracing.trace import Trace
from .sites import DesignSite

# machine epsilon (spacing of 1.0 to the next value) by dtype name, ml_dtypes' narrow floats
_EPS = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "tfloat32": 2.0 ** -10,
        "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float8_e4m3fn": 2.0 ** -3,
        "float8_e5m2": 2.0 ** -2}
# smallest normal number by dtype name
_TINY = {"float64": 2.0 ** -1022, "float32": 2.0 ** -126, "float16": 2.0 ** -14,
         "bfloat16": 2.0 ** -126, "float8_e4m3fn": 2.0 ** -6, "float8_e5m2": 2.0 ** -14}
F32 = _EPS["float32"]

# documented maximum relative error of the device's approximate math (PTX ISA: ex2/lg2/rsqrt/
# rcp/div .approx.f32 about 2 ULP of float32; tanh.approx.f32 2^-10.987; sin/cos .approx an
# absolute 2^-20.5 on [-pi, pi], taken relative to the output scale); exp, exp/pow via ex2
# of a scaled argument, lose |x·log2 e| float32 ULPs more: 2^-16 covers |x| <= 128
APPROX_REL = {"exp": 2.0 ** -16, "pow": 2.0 ** -16, "expm1": 2.0 ** -16, "tanh": 2.0 ** -10,
              "sigmoid": 2.0 ** -16, "sinh": 2.0 ** -16, "cosh": 2.0 ** -16}
APPROX_DEFAULT = 2.0 ** -21


def eps_of(dtype: str) -> float:
    return _EPS.get(dtype, F32)


def is_float_name(dtype: str) -> bool:
    return dtype in _EPS


@dataclass(frozen=True)
class Budget:
    """Multipliers on the error model (see the module docstring); 1 is the documented bound.

    ``output_ulps``: ULPs of the output dtype at each element for the output's rounding;
    ``reduction``: on every sum's ``n · eps``; ``approx``: on every other site's error."""

    output_ulps: float = 1.0
    reduction: float = 1.0
    approx: float = 1.0


@dataclass(frozen=True)
class Term:
    """One site's share of ``rho``: ``rel`` relative to the output's scale, and why."""

    line: int
    op: str
    rel: float
    why: str


@dataclass(frozen=True)
class ErrorModel:
    """The budget of one kernel's outputs: ``terms`` (each site's relative error) and the
    multiplier on the output's own rounding."""

    terms: tuple[Term, ...]
    output_ulps: float = 1.0

    @property
    def rho(self) -> float:
        return float(sum(t.rel for t in self.terms))

    def allowed(self, g: np.ndarray, e: np.ndarray, dtype: str, scale: float) -> np.ndarray:
        """Per element: how far ``g`` may lie from ``e`` (float64 arrays of an output of
        ``dtype`` whose largest finite magnitude is ``scale``)."""
        mag = np.maximum(np.abs(g), np.abs(e))
        return self.output_ulps * ulp(mag, dtype) + self.rho * scale

    def describe(self, dtype: str, scale: float) -> str:
        """The budget in words: "1 ULP of float16 + 1.2e-04 × 41.3 (mma at line 16: K=1024
        summed in float32)"."""
        head = f"{self.output_ulps:g} ULP of {dtype}"
        if not self.terms:
            return head
        parts = "; ".join(f"{t.op} at line {t.line}: {t.why}" if t.line else t.why
                          for t in self.terms)
        return f"{head} + {self.rho:.2g} × {scale:.4g} ({parts})"


def ulp(mag: np.ndarray, dtype: str) -> np.ndarray:
    """The spacing of ``dtype``'s values at magnitude ``mag`` (the larger one at a power of
    two; the subnormal spacing below the smallest normal number)."""
    eps, tiny = eps_of(dtype), _TINY.get(dtype, _TINY["float32"])
    m = np.maximum(np.asarray(mag, np.float64), tiny)
    with np.errstate(divide="ignore", invalid="ignore"):
        exp = np.floor(np.log2(m))
    return np.where(np.isfinite(exp), np.exp2(exp) * eps, np.inf)


def within(g: np.ndarray, e: np.ndarray, finite: np.ndarray, dtype: str, model: ErrorModel,
           scale: float, flush: bool = False) -> np.ndarray:
    """True where the difference is inside the budget (``flush``: the kernel flushes
    subnormals, so a subnormal on one side and anything below the smallest normal number on
    the other agree too)."""
    ok = finite & (np.abs(g - e) <= model.allowed(g, e, dtype, scale))
    tiny = _TINY.get(dtype)
    if flush and tiny is not None:
        ok |= finite & (np.abs(g) < tiny) & (np.abs(e) < tiny)
    return ok


# ---- the model of one kernel ------------------------------------------------------------

_MATRIX = ("mma", "matmul", "mma_scaled", "matmul (@)")


def error_model(trace: Trace, sites: Sequence[DesignSite], budget: Budget,
                dtypes: Mapping[tuple[int, str], str] | None = None) -> ErrorModel:
    """Each by-design site's relative error (see the module docstring), from the kernel's
    sites, what its trace recorded and ``dtypes``, the dtype each site computes in where the
    source says (:func:`tile_lab.crosschecking.flow.site_dtypes`; elsewhere the narrowest float
    dtype of the kernel's arrays)."""
    narrow = _narrowest_eps(trace)
    extents = _Extents.of(trace)
    terms: list[Term] = []
    for s in sites:
        known = (dtypes or {}).get((s.line, s.op))
        if known and not is_float_name(known) and s.kind in ("approx", "fma", "rounding"):
            continue  # integer arithmetic: exact on both sides
        eps = eps_of(known) if known else narrow
        what = f" in {known}" if known else ""
        if s.kind == "order":
            n, eps, words = _sum_length(s, trace, extents)
            if n:
                terms.append(Term(s.line, s.op, budget.reduction * n * eps, words))
        elif s.kind == "approx":
            rel = max(APPROX_REL.get(s.op, APPROX_DEFAULT), eps / 2)
            terms.append(Term(s.line, s.op, budget.approx * rel,
                              f"approximate{what}, relative error {rel:.2g}"))
        elif s.kind == "fma":
            terms.append(Term(s.line, s.op, budget.approx * eps / 2,
                              f"one rounding of the product fewer{what}"))
        elif s.kind == "rounding":
            terms.append(Term(s.line, s.op, budget.approx * eps,
                              f"rounding mode {s.mode}{what}, 1 ULP"))
        elif s.kind == "cast" and any(o.kind != "cast" for o in sites) and (
                not known or eps > F32):  # a widening cast (to float32) is exact
            terms.append(Term(s.line, s.op, budget.approx * eps,
                              "a value that differs by design may round to the neighbouring "
                              "narrow value before a sum"))
    lock = _lock_term(trace, budget)
    if lock is not None:
        terms.append(lock)
    return ErrorModel(tuple(terms), budget.output_ulps)


def _narrowest_eps(trace: Trace) -> float:
    """eps of the narrowest float dtype among the kernel's arrays (float32 when none is
    narrower): the precision its tiles may be rounded to between ops."""
    eps = [eps_of(a.dtype) for a in trace.arrays if is_float_name(a.dtype)]
    return max([F32, *eps])


@dataclass(frozen=True)
class _Extents:
    axis: int  # the longest extent of any tile a block loaded, along one axis
    tile: int  # the most elements of any one tile a block loaded
    trips: int  # the most loads one block made at one line (a loop's trip count)

    @classmethod
    def of(cls, trace: Trace) -> _Extents:
        axis, tile = 1, 1
        counts: dict[tuple, int] = {}
        for a in trace.accesses:
            if not a.is_read:
                continue
            if a.tile_shape:
                axis = max(axis, max(a.tile_shape))
                tile = max(tile, math.prod(a.tile_shape))
            elif a.flat_indices is not None:
                axis = max(axis, int(a.flat_indices.size))
                tile = max(tile, int(a.flat_indices.size))
            key = (a.block, a.line)
            counts[key] = counts.get(key, 0) + 1
        return cls(axis, tile, max(counts.values(), default=1))


def _sum_length(s: DesignSite, trace: Trace, ext: _Extents) -> tuple[int, float, str]:
    """(n, eps, words) of one summation-order site."""
    if s.op in _MATRIX and trace.mma_calls is not None:
        calls = [c for c in trace.mma_calls if c.line == s.line and
                 (not s.filename or not c.filename or c.filename == s.filename)]
        if not calls:
            return 0, 0.0, "never ran"
        per_block: dict[tuple, int] = {}
        for c in calls:
            per_block[c.block] = per_block.get(c.block, 0) + c.k
        acc = {c.acc_dtype or c.dtype for c in calls}
        eps = max(eps_of(a) for a in acc)
        k = max(per_block.values())
        return k, eps, f"K={k} summed in {'/'.join(sorted(acc))}"
    if s.op == "atomic_add":
        blocks: dict[str, set] = {}
        dts = {a.name: a.dtype for a in trace.arrays}
        for a in trace.accesses:
            if a.op == "atomic_add":
                blocks.setdefault(a.arg, set()).add(a.block)
        if not blocks:
            return 0, 0.0, "never ran"
        arg = max(blocks, key=lambda k: len(blocks[k]))
        n = len(blocks[arg])
        dt = dts.get(arg, "float32")
        return n, eps_of(dt), f"{n} blocks adding into {arg} ({dt})"
    # a reduction of tiles: the emulator sums narrow floats in float32 (the result's own
    # rounding is the output's or a cast's term); float64 sums are covered by float32's eps
    n = (ext.tile if s.reduces == "all" else ext.axis) * ext.trips
    return n, F32, f"up to {n} terms summed in float32"


def _lock_term(trace: Trace, budget: Budget) -> Term | None:
    """Blocks that take turns under a lock (atomic_cas / atomic_xchg) to add into the same
    tile sum in the order they got the lock."""
    if not any(a.op in ("atomic_cas", "atomic_xchg") for a in trace.accesses):
        return None
    writers: dict[tuple, set] = {}
    for a in trace.accesses:
        if a.is_write and a.is_box and not a.op.startswith("atomic"):
            writers.setdefault((a.arg, a.box_start, a.box_stop), set()).add(a.block)
    n = max((len(b) for b in writers.values()), default=1)
    if n < 2:
        return None
    return Term(0, "lock", budget.reduction * n * F32,
                f"{n} blocks taking turns under a lock add in the order they get it")

