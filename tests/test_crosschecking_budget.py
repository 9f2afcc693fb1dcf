"""The per-element budget: one ULP of the output at the element plus each by-design site's
error relative to the output's scale (tile_lab.crosschecking.budget)."""

from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from tile_lab.crosschecking.budget import Budget, ErrorModel, Term, error_model, ulp, within
from tile_lab.crosschecking.sites import DesignSite
from tile_lab.tracing.trace import ArrayInfo, MemoryAccess, MmaCall

F32, F16, BF16 = 2.0 ** -23, 2.0 ** -10, 2.0 ** -7
ALL = np.ones(1, bool)


@dataclass
class _Trace:  # the parts of a Trace the model reads
    arrays: tuple = ()
    accesses: tuple = ()
    mma_calls: tuple | None = ()
    undetermined: tuple = field(default_factory=tuple)


def _ok(g, e, dtype, model, scale, flush=False) -> bool:
    return bool(within(np.array([g], np.float64), np.array([e], np.float64), ALL, dtype, model,
                       scale, flush)[0])


def test_ulp_is_the_spacing_at_the_value_in_each_dtype():
    assert ulp(np.array([1.0]), "float16")[0] == F16
    assert ulp(np.array([1.99]), "float16")[0] == F16
    assert ulp(np.array([2.0]), "float16")[0] == 2 * F16
    assert ulp(np.array([48.0]), "bfloat16")[0] == 32 * BF16
    assert ulp(np.array([0.0]), "float32")[0] == 2.0 ** -149  # the subnormal spacing
    assert ulp(np.array([np.inf]), "float32")[0] == np.inf


def test_the_outputs_own_rounding_is_one_ulp_at_the_element_not_at_the_scale():
    model = ErrorModel(())
    for dtype, eps, cast in (("float16", F16, np.float16), ("bfloat16", BF16, ml_dtypes.bfloat16),
                             ("float32", F32, np.float32)):
        x = float(np.array(1.5, cast))
        assert _ok(x + eps, x, dtype, model, 100.0)  # neighbours: a rounding difference
        assert not _ok(x + 2 * eps, x, dtype, model, 100.0)  # two ULPs: not, whatever S is
        assert not _ok(x * 1.01, x, dtype, model, 100.0)


def test_a_sum_is_allowed_n_eps_of_the_outputs_scale():
    # a row's mean that cancelled to -0.00048, 8.4e-9 apart on two sides (287 of its own
    # float32 ULPs): a 128-term sum in float32 allows 128·2^-23 of the output's 0.156...
    model = ErrorModel((Term(5, "sum", 128 * F32, "128 terms"),))
    mean_e, mean_g = -0.0004812383558601141, -0.0004812467086594552
    assert _ok(mean_g, mean_e, "float32", model, 0.156)
    # ...but measured against the mean alone (an output of one such value) it is too far
    assert not _ok(mean_g, mean_e, "float32", model, 0.00048)


def test_a_matrix_products_k_and_accumulator_come_from_the_trace():
    def mma(block, k, acc):
        return MmaCall(block, "mma", 64, 64, k, 1, "float16", 9, 0, "k.py", acc)

    site = DesignSite(9, "mma", "order", "device default", "k.py")
    t = _Trace(arrays=(ArrayInfo("C", (64, 64), "float16"),),
               mma_calls=(mma((0, 0, 0), 32, "float32"), mma((0, 0, 0), 32, "float32"),
                          mma((1, 0, 0), 32, "float32")))
    (term,) = error_model(t, [site], Budget()).terms
    assert term.rel == 64 * F32 and "K=64 summed in float32" in term.why  # per block
    t.mma_calls = (mma((0, 0, 0), 32, "float16"),)  # fp16 partial sums
    assert error_model(t, [site], Budget()).rho == 32 * F16
    t.mma_calls = ()  # the line never ran
    assert error_model(t, [site], Budget()).terms == ()


def test_a_reductions_length_is_a_loaded_extent_times_the_loop_trips():
    loads = tuple(MemoryAccess(i, (0, 0, 0), "load", "load", "X", 4, i, tile_index=(0, i),
                               tile_shape=(16, 32), box_start=(0, 32 * i),
                               box_stop=(16, 32 * (i + 1))) for i in range(8))
    t = _Trace(arrays=(ArrayInfo("X", (16, 256), "float32"),), accesses=loads)
    along = DesignSite(6, "sum", "order", "device default", "k.py", "axis")
    whole = DesignSite(7, "sum", "order", "device default", "k.py", "all")
    assert error_model(t, [along], Budget()).rho == 32 * 8 * F32
    assert error_model(t, [whole], Budget()).rho == 16 * 32 * 8 * F32


def test_approximate_math_in_the_dtype_the_site_computes_in():
    t = _Trace(arrays=(ArrayInfo("X", (64,), "float16"),))
    site = DesignSite(3, "exp2", "approx", "device default")
    assert error_model(t, [site], Budget(), {(3, "exp2"): "float32"}).rho == 2.0 ** -21
    assert error_model(t, [site], Budget()).rho == F16 / 2  # unknown: the fp16 array's
    tanh = DesignSite(4, "tanh", "approx", "device default")
    assert error_model(t, [tanh], Budget(), {(4, "tanh"): "float32"}).rho == 2.0 ** -10


def test_integer_multiply_adds_and_widening_casts_add_nothing():
    t = _Trace(arrays=(ArrayInfo("X", (64,), "float16"),))
    fma = DesignSite(3, "a * b ± c", "fma", "compiler contraction")
    cast = DesignSite(4, "astype", "cast", "device default")
    s = DesignSite(5, "sum", "order", "device default", "", "axis")
    dts = {(3, "a * b ± c"): "int32", (4, "astype"): "float32"}
    assert [x.op for x in error_model(t, [fma, cast, s], Budget(), dts).terms] == ["sum"]
    dts[(4, "astype")] = "float16"  # a narrowing cast before a sum: one fp16 ULP
    assert error_model(t, [cast, s], Budget(), dts).terms[0].rel == F16


def test_a_flushed_subnormal_agrees_only_where_the_kernel_flushes():
    model = ErrorModel(())
    assert not _ok(0.0, 1e-40, "float32", model, 0.0)
    assert _ok(0.0, 1e-40, "float32", model, 0.0, flush=True)


def test_budget_multipliers_scale_each_part():
    site = DesignSite(3, "exp2", "approx", "device default")
    t = _Trace(arrays=(ArrayInfo("X", (64,), "float32"),))
    assert error_model(t, [site], Budget(approx=4)).rho == 4 * 2.0 ** -21
    assert error_model(t, [site], Budget(output_ulps=2)).output_ulps == 2


def test_the_budget_in_words():
    model = ErrorModel((Term(16, "mma", 1024 * F32, "K=1024 summed in float32"),))
    words = model.describe("float16", 41.3)
    assert words == ("1 ULP of float16 + 0.00012 × 41.3 (mma at line 16: K=1024 summed in "
                     "float32)")
