"""Which dtype each by-design site computes in, followed through the kernel's source."""

from __future__ import annotations

import cuda.tile as ct
from corpus import line_of

from tile_lab.crosschecking.flow import site_dtypes


def helper(x):
    return ct.exp(x)


@ct.kernel
def mixed(Q, V, Out, BM: ct.Constant[int]):
    q = ct.load(Q, index=(ct.bid(0), 0), shape=(BM, BM))
    s = ct.mma(q, q, ct.full((BM, BM), 0.0, dtype=ct.float32))
    p = ct.exp2(s)
    h = ct.exp(q)
    rows = ct.bid(0) * BM + ct.arange(BM, dtype=ct.int32)
    v = ct.load(V, index=(ct.bid(0), 0), shape=(BM, BM)).reshape((BM, BM))
    acc = ct.mma(p.astype(Q.dtype), v, ct.full((BM, BM), 0.0, dtype=ct.float32))
    w = v.astype(ct.float32) * 2.0 + 1.0
    ct.store(Out, index=(ct.bid(0), 0), tile=(acc + w + helper(h)).astype(Out.dtype))
    ct.store(Out, index=(ct.bid(0), 0), tile=rows.astype(Out.dtype).reshape((BM, 1)))


def test_tiles_are_followed_from_loads_fulls_mmas_and_casts():
    got = site_dtypes(mixed, {"Q": "float16", "V": "bfloat16", "Out": "float32"})
    line = lambda text: line_of(mixed, text)  # noqa: E731
    assert got[(line("p = ct.exp2(s)"), "exp2")] == "float32"  # an mma's accumulator
    assert got[(line("h = ct.exp(q)"), "exp")] == "float16"  # a load of the fp16 array
    assert got[(line("rows = "), "a * b ± c")] == "int32"  # integer index arithmetic
    assert got[(line("acc = ct.mma(p.astype"), "astype")] == "float16"  # Q.dtype
    assert got[(line("w = v.astype"), "a * b ± c")] == "float32"  # cast, then the math
    assert got[(line("w = v.astype"), "astype")] == "float32"
    # a helper's parameters are not followed: its sites stay unknown
    assert not any(key[0] == helper.__code__.co_firstlineno + 1 for key in got)


def test_without_array_dtypes_a_load_is_unknown():
    got = site_dtypes(mixed, {})
    assert (line_of(mixed, "h = ct.exp(q)"), "exp") not in got
    assert got[(line_of(mixed, "p = ct.exp2(s)"), "exp2")] == "float32"
