"""Differential tests: reductions (built-in and custom) and scans."""

from __future__ import annotations

import cuda.tile as ct
import numpy as np
import pytest
from test_emulator_harness import Case

RS, CS = 8, 16


def reduce_kernel(op):
    @ct.kernel
    def reduction(x, y):
        ct.store(y, (0, 0), op(ct.load(x, (0, 0), (RS, CS))))
    return reduction


def _case(name, op, ref, out_shape, dtype=np.float32, out_dtype=None, tol=1e-5, ints=False):
    def make(rng):
        x = rng.integers(-5, 6, (RS, CS)) if ints else rng.normal(size=(RS, CS))
        return x.astype(dtype), np.zeros(out_shape, out_dtype or dtype)

    return Case(name, reduce_kernel(op), (1,), make,
                lambda a: {1: np.reshape(ref(a[0].astype(np.float64) if not ints else a[0]),
                                         out_shape).astype(out_dtype or dtype)},
                rtol=tol, atol=tol)


def sum_axis1_keepdims(t):
    return ct.sum(t, axis=1, keepdims=True)


def sum_all(t):
    return ct.sum(t).reshape((1, 1))


def sum_axes_tuple(t):
    return ct.sum(t.reshape((RS, 4, 4)), (1, 2))[:, None]


def max_axis0(t):
    return ct.max(t, 0)[None, :]


def min_axis1(t):
    return ct.min(t, 1)[:, None]


def prod_axis1(t):
    return ct.prod(t, 1, keepdims=True)


def argmax_axis1(t):
    return ct.argmax(t, 1, keepdims=True)


def argmin_all(t):
    return ct.argmin(t).reshape((1, 1))


def combine_max(a, b):
    return ct.maximum(a, b)


def combine_argmax(v0, i0, v1, i1):
    take = v1 > v0
    return ct.where(take, v1, v0), ct.where(take, i1, i0)


def combine_add(a, b):
    return a + b


def reduce_custom_max(t):
    return ct.reduce(t, 1, combine_max, float("-inf"), keepdims=True)


def reduce_tuple_argmax(t):
    lanes = ct.broadcast_to(ct.arange(CS, dtype=ct.int32)[None, :], (RS, CS))
    return ct.reduce((t, lanes), 1, combine_argmax, (float("-inf"), 0), keepdims=True)[1]


def cumsum_axis1(t):
    return ct.cumsum(t, 1)


def cumsum_reverse(t):
    return ct.cumsum(t, 1, reverse=True)


def cumprod_axis0(t):
    return ct.cumprod(t, 0)


def scan_custom_add(t):
    return ct.scan(t, 1, combine_add, 0.0)


def scan_custom_max_reverse(t):
    return ct.scan(t, 0, combine_max, float("-inf"), reverse=True)


CASES = [
    _case("sum-axis1-keepdims", sum_axis1_keepdims, lambda x: x.sum(1, keepdims=True), (RS, 1)),
    _case("sum-all", sum_all, lambda x: x.sum(), (1, 1)),
    _case("sum-axes-tuple", sum_axes_tuple, lambda x: x.reshape(RS, 4, 4).sum((1, 2)), (RS, 1)),
    _case("max-axis0", max_axis0, lambda x: x.max(0), (1, CS)),
    _case("min-axis1", min_axis1, lambda x: x.min(1), (RS, 1)),
    _case("prod-int", prod_axis1, lambda x: x.prod(1, keepdims=True), (RS, 1), dtype=np.int32,
          ints=True),
    _case("argmax", argmax_axis1, lambda x: x.argmax(1), (RS, 1), out_dtype=np.int32),
    _case("argmin-all", argmin_all, lambda x: x.argmin(), (1, 1), out_dtype=np.int32),
    _case("argmax-ties-first", argmax_axis1, lambda x: x.argmax(1), (RS, 1), dtype=np.int32,
          out_dtype=np.int32, ints=True),
    _case("reduce-custom-max", reduce_custom_max, lambda x: x.max(1, keepdims=True), (RS, 1)),
    _case("reduce-tuple-argmax", reduce_tuple_argmax, lambda x: x.argmax(1), (RS, 1),
          out_dtype=np.int32),
    _case("cumsum-axis1", cumsum_axis1, lambda x: x.cumsum(1), (RS, CS)),
    _case("cumsum-reverse", cumsum_reverse, lambda x: x[:, ::-1].cumsum(1)[:, ::-1], (RS, CS)),
    _case("cumprod-int", cumprod_axis0, lambda x: x.cumprod(0), (RS, CS), dtype=np.int32,
          ints=True),
    _case("scan-custom-add", scan_custom_add, lambda x: x.cumsum(1), (RS, CS)),
    _case("scan-custom-max-reverse", scan_custom_max_reverse,
          lambda x: np.maximum.accumulate(x[::-1], 0)[::-1], (RS, CS)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reductions_match(case, check_case):
    check_case(case)


def test_sum_of_bool_counts_as_int32():
    import tile_lab

    @ct.kernel
    def count(x, y):
        positives = ct.sum(ct.load(x, (0,), (16,)) > 0)
        ct.static_assert(positives.dtype == ct.int32)
        ct.store(y, (0,), positives.reshape((1,)))

    x = np.arange(-8, 8, dtype=np.float32)
    y = np.zeros(1, np.int32)
    tile_lab.emulate(count, (1,), (x, y))
    assert y[0] == 7
