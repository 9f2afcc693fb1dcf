"""Bytes, FLOPs, rates, the above-roof flag and output comparison (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest
from fixed_measurements import fixed_measurement as _measurement

import tile_lab
from tile_lab.gpu import metrics
from tile_lab.gpu.benchmark import reference_outputs as _reference
from tile_lab.gpu.peaks import compute_peaks
from tile_lab.tracing.trace import ArrayInfo, MemoryAccess, Trace

H100 = compute_peaks(gpu="H100", arch="sm_90", sm_count=132, sm_clock_mhz=1980,
                     mem_clock_mhz=2619, bus_width_bits=5120)


def test_bytes_from_arrays_counts_every_array_once_and_ignores_scalars():
    a = np.zeros(1000, np.float32)
    b = np.zeros((10, 10), np.float16)
    assert metrics.bytes_from_arrays([a, b, 128, 2.5]) == 4000 + 200


def test_flops_of_matrix_products():
    assert metrics.matmul_flops(8192, 8192, 8192) == 2 * 8192**3
    assert metrics.matmul_flops(2, 3, 4, batch=5) == 240
    # two mma tile ops of 128x128x64 executed 10 times
    assert metrics.mma_flops([(128, 128, 64)] * 2, executions=10) == 20 * 2 * 128 * 128 * 64


def test_rates_and_percent_of_peak():
    r = metrics.rates(1e-3, nbytes=3_000_000_000, flops=10**12, peak_gbps=H100.dram_gbps,
                      peak_tflops=H100.top_tflops)
    assert r.gbps == pytest.approx(3000.0)
    assert r.tflops == pytest.approx(1000.0)
    assert not r.above_roof and r.notes == ()


def test_a_rate_above_the_dram_roof_is_flagged_with_a_reason():
    r = metrics.rates(1e-3, nbytes=5_000_000_000, flops=None, peak_gbps=H100.dram_gbps,
                      peak_tflops=H100.top_tflops)
    assert r.above_roof
    assert "above the DRAM roof" in r.notes[0] and "L2" in r.notes[0]


def test_measurement_derivation_from_samples_and_arrays():
    a = np.zeros(1 << 20, np.float32)
    times = [100e-6, 102e-6, 98e-6, 101e-6]
    m = _measurement("vadd", "cold", (1024,), times, 1, (a, a, a, 1024), bytes=None,
                     flops=None, trace=None, label=None, params={"tile": 1024}, fresh=False,
                     notes=[], peaks=H100, provenance=None)
    assert m.bytes == 3 * 4 * (1 << 20) and m.bytes_source == "array sizes"
    assert m.mean_s == pytest.approx(100.25e-6)
    assert m.gbps == pytest.approx(m.bytes / 100.25e-6 / 1e9)
    assert m.pct_peak_bw == pytest.approx(100 * m.gbps / H100.dram_gbps)
    assert m.tflops is None and m.pct_peak_flops is None
    assert not m.above_roof


def test_warm_measurement_above_roof_is_flagged_in_its_summary():
    a = np.zeros(1 << 20, np.float32)  # 12 MiB in 1 µs would be 12.6 TB/s
    m = _measurement("vadd", "warm", (1,), [1e-6] * 3, 1, (a, a, a), bytes=None, flops=None,
                     trace=None, label=None, params={}, fresh=False, notes=[], peaks=H100,
                     provenance=None)
    assert m.above_roof
    text = m.summary()
    assert "ABOVE ROOF" in text and f"{m.gbps:.4g} GB/s (" not in text
    assert any("warm mode" in n for n in m.notes)


def test_bytes_from_trace_counts_unique_elements_read_and_written():
    info = (ArrayInfo("x", (8, 8), "float32"), ArrayInfo("y", (8, 8), "float32"))
    acc = (
        MemoryAccess(0, (0, 0, 0), "load", "load", "x", 3, 0, box_start=(0, 0), box_stop=(4, 8)),
        MemoryAccess(1, (1, 0, 0), "load", "load", "x", 3, 0, box_start=(2, 0), box_stop=(6, 8)),
        MemoryAccess(2, (0, 0, 0), "store", "store", "y", 4, 0, box_start=(0, 0),
                     box_stop=(8, 8)),
    )
    trace = Trace("k", (2, 1, 1), info, acc)
    # x rows 0..5 read (48 elements, rows 2..3 twice but counted once), y fully written
    assert metrics.bytes_from_trace(trace) == (48 + 64) * 4


def test_compare_reports_max_errors_and_mismatches():
    got = np.array([1.0, 2.0, 3.0, np.nan], np.float32)
    want = np.array([1.0, 2.1, 3.0, np.nan])
    cmp = metrics.compare(got, want, rtol=0.0, atol=0.05)
    assert cmp.mismatches == 1 and cmp.worst_index == (1,)
    assert cmp.max_abs_err == pytest.approx(0.1, rel=1e-5)
    assert cmp.max_rel_err == pytest.approx(0.1 / 2.1, rel=1e-5)
    assert metrics.compare(got, want, rtol=0.0, atol=0.2).mismatches == 0
    # NaN where a number is expected is always a mismatch
    assert metrics.compare(np.array([np.nan]), np.array([1.0]), rtol=1, atol=1).mismatches == 1


def test_default_tolerances_follow_the_dtype():
    assert metrics.default_tolerance(np.float16) == (1e-2, 1e-2)
    assert metrics.default_tolerance(np.float32) == (1e-4, 1e-5)
    assert metrics.default_tolerance(np.int32) == (0.0, 0.0)


def test_reference_in_place_and_returned_conventions():
    a = np.ones(4, np.float32)
    c = np.zeros(4, np.float32)

    def in_place(a, c, tile):
        c[:] = a * 3

    exp = _reference(in_place, (a, c, 4))
    np.testing.assert_array_equal(exp[1], np.full(4, 3.0))
    assert not c.any()  # the reference worked on copies
    exp = _reference(lambda a, c, tile: a * 5, (a, c, 4))
    np.testing.assert_array_equal(exp[1], np.full(4, 5.0))  # the last array argument
    np.testing.assert_array_equal(exp[0], a)


# ---- FLOPs from mma shapes (emulated sample blocks) --------------------------------------------
def _gemm(m, n, k, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    return (rng.standard_normal((m, k)).astype(np.float16),
            rng.standard_normal((k, n)).astype(np.float16), np.zeros((m, n), np.float32))


def test_sample_blocks_are_first_middle_and_last_in_launch_order():
    assert metrics.sample_blocks((4096,)) == [(0, 0, 0), (2048, 0, 0), (4095, 0, 0)]
    # 2-D grid, x fastest: linear 0, 10, 19 of a 4x5 grid; the last is the ragged corner
    assert metrics.sample_blocks((4, 5)) == [(0, 0, 0), (2, 2, 0), (3, 4, 0)]
    assert metrics.sample_blocks((2,), 3) == [(0, 0, 0), (1, 0, 0)]
    assert metrics.sample_blocks((1, 1, 1)) == [(0, 0, 0)]
    assert len(metrics.sample_blocks((10, 10, 10), 7)) == 7


def test_estimate_for_a_uniform_gemm_equals_the_full_trace_and_2mnk():
    from tests.corpus.correct import gemm

    m, n, k, tm, tn, tk = 128, 96, 64, 32, 32, 16
    grid = (m // tm, n // tn)
    est = metrics.estimate_flops(gemm, grid, (*_gemm(m, n, k), tm, tn, tk))
    full = tile_lab.trace(gemm, grid, (*_gemm(m, n, k), tm, tn, tk))
    assert est.flops == full.mma_flops == metrics.matmul_flops(m, n, k)
    assert est.uniform and not est.exact and est.blocks_emulated == 3
    assert est.source == "mma shapes, 3 of 12 blocks emulated, uniform"
    exact = metrics.flops_from_trace(full)
    assert exact.flops == est.flops and exact.exact
    assert exact.source == "mma shapes, all 12 blocks emulated"


def test_estimate_for_a_ragged_gemm_counts_the_padded_tiles_like_the_hardware():
    from tests.corpus.correct import gemm

    m, n, k, tm, tn, tk = 80, 96, 72, 32, 32, 16  # M and K are not multiples of their tiles
    grid = (3, 3)
    est = metrics.estimate_flops(gemm, grid, (*_gemm(m, n, k), tm, tn, tk))
    full = tile_lab.trace(gemm, grid, (*_gemm(m, n, k), tm, tn, tk))
    assert est.flops == full.mma_flops and est.uniform
    # the tensor cores multiply whole tiles: 96 rows (not 80) and 80 K (not 72)
    assert est.flops == metrics.matmul_flops(96, 96, 80) > metrics.matmul_flops(m, n, k)


def test_estimate_leaves_the_callers_arrays_untouched():
    from tests.corpus.correct import gemm

    a, b, c = _gemm(64, 64, 32)
    c[...] = 7.0
    metrics.estimate_flops(gemm, (2, 2), (a, b, c, 32, 32, 16))
    assert (c == 7.0).all()


def test_blocks_doing_different_work_are_labelled_not_uniform():
    from tests.corpus.correct import persistent_gemm

    args = (*_gemm(80, 96, 72), 32, 32, 16)  # 9 output tiles over 4 blocks: 3, 2, 2, 2
    est = metrics.estimate_flops(persistent_gemm, (4,), args)
    assert not est.uniform and not est.exact
    assert "NOT uniform" in est.source and "3 of 4 blocks" in est.source
    per_tile = 2 * 32 * 32 * 16 * 5
    assert dict(est.per_block) == {(0, 0, 0): 3 * per_tile, (2, 0, 0): 2 * per_tile,
                                   (3, 0, 0): 2 * per_tile}
    assert est.flops == round((3 + 2 + 2) / 3 * per_tile * 4)
    # emulating every block gives the exact count, non-uniform or not
    every = metrics.estimate_flops(persistent_gemm, (4,), args, samples=4)
    assert every.exact and every.flops == 9 * per_tile


def test_a_kernel_without_mma_has_no_flops():
    from tests.corpus.correct import vector_add

    n = 1000
    est = metrics.estimate_flops(vector_add, (8,), (np.ones(n, np.float32),
                                                    np.ones(n, np.float32),
                                                    np.zeros(n, np.float32), 128))
    assert est.flops is None and est.source == "no mma in 3 of 8 blocks emulated"


def test_flops_from_a_trace_without_mma_records_is_an_error():
    trace = Trace("k", (1, 1, 1), (), ())
    with pytest.raises(ValueError, match="did not record"):
        metrics.flops_from_trace(trace)


def test_measurement_keeps_the_derived_flops_source():
    m = _measurement("gemm", "cold", (32, 32), [1e-3] * 3, 1, (), bytes=None, flops=2 * 10**12,
                     trace=None, label=None, params={}, fresh=False, notes=[], peaks=H100,
                     provenance=None, flops_source="mma shapes, 3 of 1024 blocks emulated, "
                                                 "uniform")
    assert m.flops_source.startswith("mma shapes") and m.tflops == pytest.approx(2000.0)
    user = _measurement("gemm", "cold", (32, 32), [1e-3] * 3, 1, (), bytes=None, flops=10,
                        trace=None, label=None, params={}, fresh=False, notes=[], peaks=H100,
                        provenance=None)
    assert user.flops_source == "user"
