"""Differential tests: every atomic, returned old values, repeated indices, CAS."""

from __future__ import annotations

import cuda.tile as ct
import numpy as np
import pytest
from test_emulator_harness import Case

import tile_lab
from tile_lab._cutile_compat import python_function
from tile_lab.errors import EmulationError


def rmw_kernel(op):
    @ct.kernel
    def rmw(x, old, upd):
        idx = ct.arange(8, dtype=ct.int32)
        ct.store(old, (0,), op(x, idx, ct.load(upd, (0,), (8,))))
    return rmw


def _rmw_case(name, op, ref):
    def make(rng):
        return (rng.integers(0, 100, 8).astype(np.int32), np.zeros(8, np.int32),
                rng.integers(0, 100, 8).astype(np.int32))
    return Case(f"atomic-{name}", rmw_kernel(op), (1,), make,
                lambda a: {0: ref(a[0], a[2]).astype(np.int32), 1: a[0]})


RMW = [
    _rmw_case("add", ct.atomic_add, np.add),
    _rmw_case("max", ct.atomic_max, np.maximum),
    _rmw_case("min", ct.atomic_min, np.minimum),
    _rmw_case("and", ct.atomic_and, np.bitwise_and),
    _rmw_case("or", ct.atomic_or, np.bitwise_or),
    _rmw_case("xor", ct.atomic_xor, np.bitwise_xor),
    _rmw_case("xchg", ct.atomic_xchg, lambda x, u: u),
]


@ct.kernel
def histogram(values, bins, TILE: ct.Constant[int]):
    v = ct.load(values, (ct.bid(0),), (TILE,), padding_mode=ct.PaddingMode.ZERO)
    valid = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32) < values.shape[0]
    ct.atomic_add(bins, ct.where(valid, v, -1), 1)  # lane -1: out of bounds, skipped


@ct.kernel
def cas_tile(x, old):
    idx = ct.arange(4, dtype=ct.int32)
    ct.store(old, (0,), ct.atomic_cas(x, idx, ct.full((4,), 0, dtype=ct.int32),
                                      ct.full((4,), 42, dtype=ct.int32)))


@ct.kernel
def float_accumulate(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (TILE,))
    ct.atomic_add(out, ct.arange(TILE, dtype=ct.int32) % 4, t)


@ct.kernel
def ticket(counter, order):
    # each block takes the next ticket: blocks run in order, so tickets are 0, 1, 2, ...
    t = ct.atomic_add(counter, 0, 1)
    ct.store(order, (ct.bid(0),), t.reshape((1,)))


CASES = [
    *RMW,
    Case("histogram-repeated-indices", histogram, (4,),
         lambda rng: (rng.integers(0, 10, 50).astype(np.int32), np.zeros(10, np.int32), 16),
         lambda a: {1: np.bincount(a[0], minlength=10).astype(np.int32)}),
    Case("cas-doc-example", cas_tile, (1,),
         lambda rng: (np.array([0, 1, 0, 1], np.int32), np.zeros(4, np.int32)),
         lambda a: {0: np.array([42, 1, 42, 1]), 1: np.array([0, 1, 0, 1])}),
    Case("float-atomic-add", float_accumulate, (4,),
         lambda rng: (rng.normal(size=64).astype(np.float32), np.zeros(4, np.float32), 16),
         lambda a: {1: a[0].reshape(-1, 4).astype(np.float64).sum(0)}, rtol=1e-5, atol=1e-5,
         gpu_rtol=1e-4, gpu_atol=1e-4),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_atomics_match(case, check_case):
    check_case(case)


def test_tickets_follow_block_order():
    counter, order = np.zeros(1, np.int32), np.zeros(6, np.int32)
    tile_lab.emulate(ticket, (6,), (counter, order))
    np.testing.assert_array_equal(order, np.arange(6))
    assert counter[0] == 6


def test_repeated_lanes_return_sequential_old_values():
    @ct.kernel
    def same_slot(x, old):
        ct.store(old, (0,), ct.atomic_add(x, ct.zeros((4,), dtype=ct.int32), 1))

    x, old = np.zeros(1, np.int32), np.zeros(4, np.int32)
    tile_lab.emulate(same_slot, (1,), (x, old))
    np.testing.assert_array_equal(old, [0, 1, 2, 3])
    assert x[0] == 4


@ct.kernel
def wait_for_later_block(flags):
    # block 0 waits for block 1's flag: on the GPU it may work, here it never can
    if ct.bid(0) == 0:
        while ct.atomic_cas(flags, 1, 1, 1) != 1:
            pass
    else:
        ct.atomic_xchg(flags, 1, 1)


def test_waiting_for_a_later_block_is_reported():
    with pytest.raises(EmulationError, match="can never succeed") as info:
        tile_lab.emulate(wait_for_later_block, (2,), (np.zeros(2, np.int32),))
    first = python_function(wait_for_later_block).__code__.co_firstlineno
    assert info.value.location.line == first + 4
