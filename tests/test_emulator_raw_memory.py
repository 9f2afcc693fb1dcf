"""Array.get_raw_memory(): element-offset loads, stores and atomics, with our own kernels."""

from __future__ import annotations

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab


@ct.kernel
def reverse_by_offset(src, dst, N: ct.Constant[int]):
    off = ct.arange(N, dtype=ct.int32)
    vals = src.get_raw_memory().load_offset(off)
    dst.get_raw_memory().store_offset((N - 1) - off, vals)


def test_load_store_by_offset_walks_memory_order_of_a_2d_array():
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    dst = np.zeros((3, 4), np.float32)
    tile_lab.emulate(reverse_by_offset, (1,), (src, dst, 8))
    expect = np.zeros(12, np.float32)
    expect[:8] = src.ravel()[:8][::-1]  # offset k is element k in row-major order
    np.testing.assert_array_equal(dst.ravel(), expect)


@ct.kernel
def masked_load(src, dst, LIMIT: ct.Constant[int]):
    off = ct.arange(8, dtype=ct.int64)
    mem = src.get_raw_memory()
    t = mem.load_offset(off, mask=off < LIMIT, padding_value=-7)
    dst.get_raw_memory().store_offset(off, t, mask=off != 0)


def test_mask_pads_loads_and_skips_stores():
    src = np.arange(10, 18, dtype=np.int32)
    dst = np.full(8, 99, np.int32)
    tile_lab.emulate(masked_load, (1,), (src, dst, 5))
    np.testing.assert_array_equal(dst, [99, 11, 12, 13, 14, -7, -7, -7])


@ct.kernel
def scalar_and_broadcast(x):
    mem = x.get_raw_memory()
    first = mem.load_offset(0)  # a scalar offset gives a 0-d tile
    mem.store_offset(ct.reshape(ct.arange(4, dtype=ct.int32), (2, 2)) + 4,
                     ct.full((2, 1), first + 1, dtype=ct.float32))


def test_scalar_offset_and_value_broadcast_to_the_offset_shape():
    x = np.zeros(8, np.float32)
    x[0] = 2.5
    tile_lab.emulate(scalar_and_broadcast, (1,), (x,))
    np.testing.assert_array_equal(x, [2.5, 0, 0, 0, 3.5, 3.5, 3.5, 3.5])


@ct.kernel
def dtype_of_raw(x, out):
    raw_dtype = x.get_raw_memory().dtype  # (cuTile's static_assert reads names, not objects)
    ct.static_assert(raw_dtype == x.dtype)
    ct.store(out, (0,), ct.full((1,), 1, dtype=ct.int32))


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint64])
def test_raw_memory_dtype_is_the_arrays(dtype):
    out = np.zeros(1, np.int32)
    tile_lab.emulate(dtype_of_raw, (1,), (np.zeros(4, dtype), out))
    assert out[0] == 1


@ct.kernel
def raw_atomics(counts, flags, old_out):
    mem = counts.get_raw_memory()
    lane = ct.arange(8, dtype=ct.int32)
    mem.atomic_add_offset(lane % 2, 1)  # repeated offsets: every lane counts
    mem.atomic_max_offset(2, 40)
    mem.atomic_min_offset(3, -5)
    bits = flags.get_raw_memory()
    bits.atomic_or_offset(0, ct.int32(6))
    bits.atomic_and_offset(1, ct.int32(12))
    bits.atomic_xor_offset(2, ct.int32(5))
    prev = bits.atomic_xchg_offset(3, ct.int32(77))
    got = bits.atomic_cas_offset(lane % 4, lane, lane + 100, mask=lane < 4)
    old_out.get_raw_memory().store_offset(lane, got)
    old_out.get_raw_memory().store_offset(8, prev)


def test_every_atomic_form_on_raw_memory():
    counts = np.array([0, 0, 10, 10], np.int32)
    flags = np.array([1, 10, 3, 9], np.int32)
    old = np.zeros(9, np.int32)
    tile_lab.emulate(raw_atomics, (1,), (counts, flags, old))
    np.testing.assert_array_equal(counts, [4, 4, 40, -5])
    # or/and/xor/xchg first: [7, 8, 6, 77]; then CAS lane k expects k at offset k
    np.testing.assert_array_equal(old[:4], [7, 8, 6, 77])
    np.testing.assert_array_equal(old[4:8], [4, 5, 6, 7])  # masked off: `expected` back
    assert old[8] == 9
    np.testing.assert_array_equal(flags, [7, 8, 6, 77])  # no lane's expected matched


@ct.kernel
def raw_float_add(x, vals):
    t = ct.load(vals, (0,), (4,))
    x.get_raw_memory().atomic_add_offset(ct.arange(4, dtype=ct.int32) % 2, t)


def test_float_atomic_add_offset_in_f16_and_bf16():
    import ml_dtypes
    for dt in (np.float16, ml_dtypes.bfloat16):
        x = np.zeros(2, dt)
        tile_lab.emulate(raw_float_add, (1,), (x, np.array([1, 2, 3, 4], dt)))
        np.testing.assert_array_equal(x.astype(np.float32), [4, 6])


@ct.kernel
def slice_then_raw(x, out):
    tail = x.slice(0, 2, 4)  # rows 2..3 of a (4, 3) array
    ct.store(out, (0,), tail.get_raw_memory().load_offset(ct.arange(8, dtype=ct.int32)))


def test_a_slice_raw_memory_starts_at_the_slice_and_runs_on_in_the_argument():
    x = np.arange(12, dtype=np.int32).reshape(4, 3)
    out = np.zeros(8, np.int32)
    with pytest.warns(tile_lab.errors.TileLabWarning):  # lanes 6, 7 are past x's end
        tile_lab.emulate(slice_then_raw, (1,), (x, out))
    np.testing.assert_array_equal(out[:6], np.arange(6, 12))


@ct.kernel
def past_the_end(x, out):
    mem = x.get_raw_memory()
    mem.store_offset(ct.arange(8, dtype=ct.int32), 5)
    ct.store(out, (0,), mem.load_offset(ct.arange(8, dtype=ct.int32)))


def test_offsets_past_the_argument_touch_nothing_and_are_reported():
    x = np.zeros(6, np.int32)
    out = np.zeros(8, np.int32)
    report = tile_lab.sanitize(past_the_end, (1,), (x, out))
    np.testing.assert_array_equal(x, 5)  # the 6 elements x owns were written
    assert report.findings, "lanes 6 and 7 are outside x: the sanitizer must say so"
    trace = tile_lab.trace(past_the_end, (1,), (np.zeros(6, np.int32), np.zeros(8, np.int32)))
    raw = [a for a in trace.accesses if a.op in ("store_offset", "load_offset")]
    assert [a.out_of_bounds for a in raw] == [2, 2]
    assert all(a.unchecked for a in raw)
    np.testing.assert_array_equal(raw[0].flat_indices, np.arange(6))


@ct.kernel
def first_eight(x, out):
    ct.store(out, (0,), x.get_raw_memory().load_offset(ct.arange(8, dtype=ct.int32)))


def test_offsets_follow_memory_not_indices_for_a_transposed_argument():
    x = np.arange(12, dtype=np.int32).reshape(4, 3).T  # (3, 4), memory order 0..11
    out = np.zeros(8, np.int32)
    trace = tile_lab.trace(first_eight, (1,), (x, out))
    np.testing.assert_array_equal(out, np.arange(8))
    load = trace.accesses[0]
    assert load.out_of_bounds == 0
    # memory position p is x[p % 3, p // 3]: flat (row-major) index (p % 3) * 4 + p // 3
    np.testing.assert_array_equal(load.flat_indices, [0, 4, 8, 1, 5, 9, 2, 6])
