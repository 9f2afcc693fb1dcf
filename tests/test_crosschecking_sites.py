"""Where a GPU may differ from the emulator by design, read from the kernel source."""

from __future__ import annotations

import cuda.tile as ct
from corpus import correct, line_of

from tile_lab.crosschecking import design_sites
from tile_lab.crosschecking.sites import describe_sites


def scaled(x, s):  # a helper the kernel calls: its ops count too
    return ct.mul(x, s, rounding_mode=ct.RoundingMode.RZ)


@ct.kernel
def modes(X, Y, TILE: ct.Constant[int]):
    x = ct.load(X, index=(ct.bid(0),), shape=(TILE,))
    y = ct.truediv(x, 3.0, rounding_mode=ct.RoundingMode.APPROX)
    y = y + ct.sum(x)
    y = scaled(y, 2.0)
    ct.store(Y, index=(ct.bid(0),), tile=ct.exp2(y, flush_to_zero=True).astype(ct.float16))


def test_each_mode_is_found_with_its_line():
    got = {(s.line, s.op, s.kind, s.mode) for s in design_sites(modes)}
    div, total = line_of(modes, "ct.truediv"), line_of(modes, "ct.sum(x)")
    store = line_of(modes, "ct.exp2(y")
    assert (div, "truediv", "approx", "APPROX") in got
    assert (total, "sum", "order", "device default") in got
    assert (store, "exp2", "approx", "device default") in got
    assert (store, "exp2", "ftz", "flush_to_zero") in got
    helper = scaled.__code__.co_firstlineno + 1
    assert (helper, "mul", "rounding", "RZ") in got


def test_exact_kernels_have_no_sites():
    cases = {c.name: c for c in correct.CASES}
    assert design_sites(cases["vector_add"].kernel) == ()
    assert design_sites(cases["transpose"].kernel) == ()


def test_sites_in_words_one_entry_per_line_and_op():
    words = describe_sites(design_sites(modes))
    line = line_of(modes, "ct.exp2(y")
    assert f"exp2 at line {line} (approximate math, flush-to-zero)" in words
    assert "truediv at line" in words and "(approximate math APPROX)" in words


@ct.kernel
def axpb_like(X, Y, alpha: float, TILE: ct.Constant[int]):
    x = ct.load(X, index=(ct.bid(0),), shape=(TILE,))
    y = alpha * x + 1.0
    z = x + x
    ct.store(Y, index=(ct.bid(0),), tile=1.0 - y * z)


def test_a_product_feeding_an_add_is_a_multiply_add_the_compiler_may_fuse():
    # the H100 gave y = alpha * x + 1 one rounding (an FMA) where NumPy rounds twice
    got = {(s.line, s.kind) for s in design_sites(axpb_like)}
    assert (line_of(axpb_like, "alpha * x + 1.0"), "fma") in got
    assert (line_of(axpb_like, "1.0 - y * z"), "fma") in got
    assert (line_of(axpb_like, "z = x + x"), "fma") not in got  # no product: exact
    assert "multiply-add the compiler may fuse" in describe_sites(design_sites(axpb_like))


@ct.kernel
def sums_and_casts(X, Y, TILE: ct.Constant[int]):
    x = ct.load(X, index=(ct.bid(0), 0), shape=(TILE, TILE))
    p = ct.exp(x).astype(ct.float16)
    rows = ct.sum(x, axis=1)
    total = ct.sum(x)
    acc = ct.mma(p, x.astype(ct.float16), ct.full((TILE, TILE), 0.0, dtype=ct.float32))
    c = ct.cumsum(rows)
    ct.store(Y, index=(ct.bid(0),), tile=c + total + ct.sum(acc, axis=None))


def test_reductions_say_whether_they_run_along_an_axis_and_casts_into_sums_are_found():
    sites = design_sites(sums_and_casts)
    reduces = {(s.line, s.op): s.reduces for s in sites if s.kind == "order"}
    line = lambda text: line_of(sums_and_casts, text)  # noqa: E731
    assert reduces[(line("rows = ct.sum(x, axis=1)"), "sum")] == "axis"
    assert reduces[(line("total = ct.sum(x)"), "sum")] == "all"
    assert reduces[(line("c = ct.cumsum(rows)"), "cumsum")] == "axis"  # scans: always
    assert reduces[(line("ct.sum(acc, axis=None)"), "sum")] == "all"
    assert reduces[(line("acc = ct.mma("), "mma")] == ""
    casts = {s.line for s in sites if s.kind == "cast"}
    # the cast assigned to p, and the one written in the mma's arguments
    assert casts == {line("p = ct.exp(x).astype"), line("acc = ct.mma(")}
    assert "narrowing cast feeding a sum" in describe_sites(sites)
