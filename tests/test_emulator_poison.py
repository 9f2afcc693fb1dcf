"""Undetermined values (``PaddingMode.UNDETERMINED`` padding) are poison: the taint follows
the data through every op family, and only taint written to in-bounds elements is reported,
with the load that padded and the op that mixed it into kept lanes."""

from __future__ import annotations

import inspect
import warnings

import cuda.tile as ct
import numpy as np
import pytest

from tile_lab.emulator import emulate_kernel as emulate
from tile_lab.emulator import trace_kernel as trace
from tile_lab.emulator.poison import UndeterminedValueWarning
from tile_lab.sanitizer.checks import sanitize_kernel as sanitize

N, TN = 1000, 1024  # a ragged row: 24 padded lanes


def _line(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel._pyfunc if hasattr(kernel, "_pyfunc")
                                          else kernel)
    hits = [first + i for i, t in enumerate(lines) if text in t]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def _written(kernel, grid, args):
    t = trace(kernel, grid, args)
    return t.undetermined


# ---- the ragged RMSNorm ------------------------------------------------------------------------

@ct.kernel
def rmsnorm(x, y, n: ct.Constant[int], tn: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, tn))
    ss = ct.sum(t * t, axis=1, keepdims=True)
    ct.store(y, index=(row, 0), tile=t * ct.rsqrt(ss / n + 1e-6))


@ct.kernel
def rmsnorm_zero(x, y, n: ct.Constant[int], tn: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, tn), padding_mode=ct.PaddingMode.ZERO)
    ss = ct.sum(t * t, axis=1, keepdims=True)
    ct.store(y, index=(row, 0), tile=t * ct.rsqrt(ss / n + 1e-6))


@ct.kernel
def rmsnorm_where(x, y, n: ct.Constant[int], tn: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, tn))
    t = ct.where(ct.arange(tn, dtype=ct.int32)[None, :] < n, t, 0.0)
    ss = ct.sum(t * t, axis=1, keepdims=True)
    ct.store(y, index=(row, 0), tile=t * ct.rsqrt(ss / n + 1e-6))


def _rows():
    x = np.random.default_rng(0).standard_normal((4, N)).astype(np.float32)
    ref = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)
    return x, np.zeros_like(x), ref


def test_ragged_rmsnorm_is_flagged_with_the_load_and_the_sum_lines():
    x, y, _ = _rows()
    report = sanitize(rmsnorm, (4,), (x, y, N, TN))
    [f] = report.of_kind("undetermined_value")
    assert f.severity == "error" and not report.ok
    assert f.arg == "y" and f.line == _line(rmsnorm, "ct.store(y")
    assert f.load_line == _line(rmsnorm, "t = ct.load(")
    assert f.mix_line == _line(rmsnorm, "ct.sum(")
    assert f.boxes == (((0, 0), (4, N)),) and f.count == 4 * N and f.occurrences == 4
    assert f"line {f.load_line}" in f.message and f"ct.sum at line {f.mix_line}" in f.message
    assert "y[0:4, 0:1000]" in f.message


def test_plain_emulate_poisons_and_warns_once_at_the_store():
    x, y, _ = _rows()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        emulate(rmsnorm, (4,), (x, y, N, TN))
    assert np.isnan(y).all()  # every kept lane mixed with the poisoned padding
    [w] = [w for w in caught if issubclass(w.category, UndeterminedValueWarning)]
    assert w.lineno == _line(rmsnorm, "ct.store(y")
    assert f"load at line {_line(rmsnorm, 't = ct.load(')}" in str(w.message)
    assert f"sum at line {_line(rmsnorm, 'ct.sum(')}" in str(w.message)


def test_padding_zero_keeps_the_old_values_but_still_reports():
    x, y, ref = _rows()
    with pytest.warns(UndeterminedValueWarning):
        emulate(rmsnorm, (4,), (x, y, N, TN), padding="zero")
    np.testing.assert_allclose(y, ref, rtol=1e-5)
    assert trace(rmsnorm, (4,), (x, y, N, TN), padding="zero").undetermined


@pytest.mark.parametrize("kernel", [rmsnorm_zero, rmsnorm_where], ids=["ZERO", "where"])
def test_zero_padding_or_a_where_mask_is_clean(kernel):
    x, y, ref = _rows()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = sanitize(kernel, (4,), (x, y, N, TN))
    assert report.ok and not report.findings, str(report)
    np.testing.assert_allclose(y, ref, rtol=1e-5)


# ---- per op family ---------------------------------------------------------------------------

@ct.kernel
def elementwise_only(x, y):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(y, index=(0,), tile=ct.exp(t * 2.0 + 1.0))


def test_elementwise_on_padded_lanes_that_the_store_discards_is_fine():
    x, y = np.ones(5, np.float32), np.zeros(5, np.float32)
    assert _written(elementwise_only, (1,), (x, y)) == ()
    np.testing.assert_allclose(y, np.exp(3.0))


def test_padded_lanes_stored_into_a_bigger_array_are_reported_without_a_mix_line():
    x, y = np.ones(5, np.float32), np.zeros(8, np.float32)
    [u] = _written(elementwise_only, (1,), (x, y))
    assert (u.box_start, u.box_stop, u.elements, u.mix_line) == ((5,), (8,), 3, None)
    assert np.isnan(y[5:]).all() and (y[:5] > 0).all()


@ct.kernel
def broadcast_scalar(x, y):
    t = ct.load(x, index=(0,), shape=(8,))
    s = ct.max(t)  # the reduction mixes; its scalar broadcasts into every lane
    ct.store(y, index=(0,), tile=ct.full((8,), 1.0, ct.float32) + s)


@ct.kernel
def scan_kernel(x, y):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(y, index=(0,), tile=ct.cumsum(t, 0, reverse=True))


@ct.kernel
def scan_forward(x, y):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(y, index=(0,), tile=ct.cumsum(t, 0))


def test_reduction_and_broadcast_taint_every_lane():
    x, y = np.ones(5, np.float32), np.zeros(5, np.float32)
    [u] = _written(broadcast_scalar, (1,), (x, y))
    assert u.elements == 5 and u.mix_op == "max"


def test_scans_taint_only_lanes_that_accumulate_padding():
    x, y = np.ones(5, np.float32), np.zeros(5, np.float32)
    [u] = _written(scan_kernel, (1,), (x, y))  # reverse: every lane sums the padded tail
    assert u.elements == 5 and u.mix_op == "cumsum"
    y[:] = 0
    assert _written(scan_forward, (1,), (x, y)) == ()  # forward: padding only reaches itself
    np.testing.assert_allclose(y, np.arange(1, 6))


@ct.kernel
def gemm(a, b, c):
    ta = ct.load(a, index=(0, 0), shape=(4, 8))
    tb = ct.load(b, index=(0, 0), shape=(8, 4), padding_mode=ct.PaddingMode.ZERO)
    ct.store(c, index=(0, 0), tile=ct.mma(ta, tb, ct.zeros((4, 4), ct.float32)))


def test_mma_over_a_ragged_k_is_reported():
    a, b, c = np.ones((4, 6), np.float32), np.ones((6, 4), np.float32), np.zeros((4, 4),
                                                                              np.float32)
    [u] = _written(gemm, (1,), (a, b, c))
    assert u.elements == 16 and u.mix_op == "mma" and u.load_arg == "a"


@ct.kernel
def shapes_and_casts(x, y):
    t = ct.load(x, index=(0, 0), shape=(2, 4))  # padded column 3
    u = ct.transpose(t).astype(ct.float16)  # (4, 2): padded row 3
    ct.store(y, index=(0,), tile=ct.reshape(u, (8,)).astype(ct.float32))


def test_shape_ops_and_casts_move_the_taint_with_the_lanes():
    x, y = np.ones((2, 3), np.float32), np.zeros(8, np.float32)
    [u] = _written(shapes_and_casts, (1,), (x, y))
    assert (u.box_start, u.box_stop, u.elements) == ((6,), (8,), 2)  # row 3 of (4, 2)
    assert np.isnan(y[6:]).all() and (y[:6] == 1).all()


@ct.kernel
def tile_methods(x, y):
    t = ct.load(x, index=(0, 0), shape=(2, 4))  # padded column 3
    u = t.transpose().astype(ct.float16)[:, :, None]  # (4, 2, 1): padded row 3
    ct.store(y, index=(0,), tile=u.reshape((8,)).astype(ct.float32))


@ct.kernel
def method_matmul(x, y):
    t = ct.load(x, index=(0, 0), shape=(2, 4))  # padded column 3: every lane of K
    ct.store(y, index=(0, 0), tile=t @ ct.ones((4, 2), dtype=ct.float32))


def test_tile_methods_move_the_taint_like_the_ops_they_stand_for():
    # t.transpose(), t.astype(), t[...], t.reshape() and t @ w reach the registered ops
    # (through the registry) and so carry their taint rules
    x, y = np.ones((2, 3), np.float32), np.zeros(8, np.float32)
    [u] = _written(tile_methods, (1,), (x, y))
    assert (u.box_start, u.box_stop, u.elements) == ((6,), (8,), 2)
    assert np.isnan(y[6:]).all() and (y[:6] == 1).all()
    [u] = _written(method_matmul, (1,), (x, np.zeros((2, 2), np.float32)))
    assert u.elements == 4 and u.mix_op == "matmul" and u.load_arg == "x"


@ct.kernel
def where_kernel(x, y, pick_padded: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(8,))
    lane = ct.arange(8, dtype=ct.int32)
    keep = lane < 5 if pick_padded == 0 else lane >= 0
    ct.store(y, index=(0,), tile=ct.sum(ct.where(keep, t, 0.0)) + ct.zeros((8,), ct.float32))


def test_where_clears_taint_only_in_lanes_it_masks_out():
    x, y = np.ones(5, np.float32), np.zeros(8, np.float32)
    assert _written(where_kernel, (1,), (x, y, 0)) == ()
    assert (y == 5).all()
    [u] = _written(where_kernel, (1,), (x, y, 1))
    assert u.elements == 8 and u.mix_op == "sum"


@ct.kernel
def int_and_atomic(x, total):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.atomic_add(total, ct.zeros((8,), ct.int32), t)


def test_integer_poison_pattern_and_atomics():
    x, total = np.arange(5, dtype=np.int32), np.zeros(1, np.int32)
    [u] = _written(int_and_atomic, (1,), (x, total))
    assert u.op == "atomic_add" and u.elements == 3 and (u.box_start, u.box_stop) == ((0,), (1,))
    assert total[0] == np.int32(10 + 3 * np.int32(np.uint32(0xDBDBDBDB).view(np.int32)))


@ct.kernel
def scatter_kernel(x, y):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.scatter(y, ct.arange(8, dtype=ct.int32), t)


def test_scatter_reports_only_lanes_inside_the_array():
    x = np.ones(5, np.float32)
    assert _written(scatter_kernel, (1,), (x, np.zeros(5, np.float32))) == ()
    [u] = _written(scatter_kernel, (1,), (x, np.zeros(7, np.float32)))
    assert (u.op, u.box_start, u.box_stop, u.elements) == ("scatter", (5,), (7,), 2)


@ct.kernel
def gather_by_loaded_index(idx, x, out, n: ct.Constant[int]):
    i = ct.load(idx, index=(0,), shape=(8,))  # lanes >= n padded: undetermined indices
    valid = ct.arange(8, dtype=ct.int32) < n
    ct.store(out, index=(0,), tile=ct.sum(ct.gather(x, i, mask=valid)) + ct.zeros((1,),
                                                                              ct.float32))


def test_gathers_masked_off_where_the_index_is_undetermined_are_clean():
    idx, x = np.array([0, 1, 2, 3, 4], np.int32), np.arange(10, dtype=np.float32)
    out = np.zeros(1, np.float32)
    assert _written(gather_by_loaded_index, (1,), (idx, x, out, 5)) == ()
    assert out[0] == 10
    [u] = _written(gather_by_loaded_index, (1,), (idx, x, out, 8))  # mask lets padding in
    assert u.mix_op == "sum"


def test_undetermined_writes_survive_trace_json():
    from tile_lab.tracing.trace import Trace
    x, y, _ = _rows()
    t = trace(rmsnorm, (4,), (x, y, N, TN))
    assert Trace.from_json(t.to_json()).undetermined == t.undetermined


# ---- the partition diagram draws poison -------------------------------------------------------

@ct.kernel
def rows_norm(x, y, n: ct.Constant[int], tn: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(2, tn))
    ss = ct.sum(t * t, axis=1, keepdims=True)
    ct.store(y, index=(row, 0), tile=t * ct.rsqrt(ss / n + 1e-6))


def test_diagram_marks_undetermined_padding_and_the_elements_it_reaches():
    import tile_lab
    from tile_lab.render.diagram_legend import POISON
    x = np.ones((8, 12), np.float32)
    d = tile_lab.diagram(trace(rows_norm, (4,), (x, np.zeros_like(x), 12, 16)), block=1)
    [load] = d.geometry.panel("x").footprints
    assert load.undetermined and load.outside  # the 2x4 padded lanes
    [(box, why)] = d.geometry.panel("y").poisoned
    assert (box.start, box.stop) == ((2, 0), (4, 12))
    assert f"ct.sum at line {_line(rows_norm, 'ct.sum(')}" in why
    svg = d._repr_svg_()
    assert POISON in svg and "undetermined padding (poison)" in svg
    clean = tile_lab.diagram(trace(rows_norm, (4,), (np.ones((8, 16), np.float32),
                                                     np.zeros((8, 16), np.float32), 16, 16)))
    assert POISON not in clean._repr_svg_()


@ct.kernel
def _rows_times_padded_v(X, V, Out, TM: ct.Constant[int], TK: ct.Constant[int]):
    x = ct.load(X, index=(ct.bid(0), 0), shape=(TM, TK))  # its last block has a padded row
    v = ct.load(V, index=(0, 0), shape=(TK, TM))  # one padded row: mixes into every lane
    ct.store(Out, index=(ct.bid(0), 0), tile=ct.mma(x, v, ct.full((TM, TM), 0.0, ct.float32)))


def test_mma_names_the_operand_whose_padding_reaches_the_kept_lanes():
    # X's padded row only taints a row the store discards; V's padded row taints every lane:
    # the report must name V's load, in every block (not X's, which came first)
    x = np.ones((15, 16), np.float16)
    v = np.ones((15, 8), np.float16)
    out = np.zeros((15, 8), np.float32)
    tr = trace(_rows_times_padded_v, (2,), (x, v, out, 8, 16))
    src, first = inspect.getsourcelines(_rows_times_padded_v._annotated_function.pyfunc)
    v_line = first + next(i for i, t in enumerate(src) if "v = ct.load" in t)
    assert {(w.block, w.load_arg, w.load_line) for w in tr.undetermined} == {
        ((0, 0, 0), "V", v_line), ((1, 0, 0), "V", v_line)}
