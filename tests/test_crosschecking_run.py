"""tile_lab.crosscheck on the CPU with a scripted GPU side (tests/crosscheck_fakes.py), and on a
real GPU (marked gpu)."""

from __future__ import annotations

import json

import cuda.tile as ct
import numpy as np
import pytest
from corpus import correct, line_of
from crosscheck_fakes import ScriptedGpu

import tile_lab
from tile_lab.crosschecking import CrossCheck, CrossCheckOptions, gpu_requirements
from tile_lab.errors import NoGPUError, TileLabError
from tile_lab.examples.decode import decode_attention, decode_inputs, decode_launch

CASES = {c.name: c for c in correct.CASES}


@ct.kernel
def exp2_rows(X, Y, TILE: ct.Constant[int]):
    x = ct.load(X, index=(ct.bid(0),), shape=(TILE,))
    ct.store(Y, index=(ct.bid(0),), tile=ct.exp2(x, flush_to_zero=True))


def _exp2_args():
    x = np.linspace(-4, 4, 256, dtype=np.float32)
    return (4,), (x, np.zeros(256, np.float32), 64)


def test_identical_results_agree_bit_for_bit_with_blocks_and_lines():
    case = CASES["vector_add"]
    grid, args = case.build()
    cc = tile_lab.crosscheck(case.kernel, grid, args, gpu=ScriptedGpu())
    assert cc.agreement == "identical" and cc.ok
    (out,) = cc.outputs
    assert out.arg == "c" and len(out.tiles) == grid[0]
    store = line_of(case.kernel, "ct.store(c")
    assert {t.line for t in out.tiles} == {store}
    assert [t.block for t in out.tiles] == [(i, 0, 0) for i in range(grid[0])]
    assert out.tiles[-1].box_stop == (1000,)  # the ragged last tile, clipped to the array
    assert cc.summary().endswith("all identical, bit for bit.")


def test_nan_in_undetermined_lanes_is_expected_and_names_the_load_and_the_mma():
    q, k, v, o = decode_inputs(misaligned=True)
    grid, args = decode_launch(q, k, v, o)

    def nan_in_two(a):  # what a GPU's garbage padding did on the H100: a few NaNs
        a[3][0, 1, 3, 5] = np.nan
        a[3][0, 2, 9, 0] = np.nan

    cc = tile_lab.crosscheck(decode_attention, grid, args, gpu=ScriptedGpu(nan_in_two))
    assert cc.agreement == "explained" and cc.ok
    assert {t.verdict for t in cc.tiles} == {"undetermined"}
    load = line_of(decode_attention, "v = ct.load(V, index=(b, hkv, j, 0), shape=(1, 1, TN, D))")
    mma = line_of(decode_attention, "acc = ct.mma(p.astype")
    (hazard,) = cc.hazards
    assert (hazard.load_arg, hazard.load_line, hazard.mix_op, hazard.mix_line) == \
        ("V", load, "mma", mma)
    reason = cc.tiles[0].reason
    assert f"'V' load at line {load}" in reason and f"mma at line {mma}" in reason
    assert sum(t.nan_gpu for t in cc.tiles) == 2
    assert sum(t.nan_emulator for t in cc.tiles) == 1920  # poison: every output


def test_one_ulp_after_approximate_exp2_is_by_design_and_names_the_line():
    grid, args = _exp2_args()

    def one_ulp(a):
        a[1][:] = np.nextafter(a[1], np.float32(np.inf))

    cc = tile_lab.crosscheck(exp2_rows, grid, args, gpu=ScriptedGpu(one_ulp))
    assert cc.agreement == "explained"
    assert {t.verdict for t in cc.tiles} == {"design"}
    assert {t.max_ulp for t in cc.tiles} == {1}
    line = line_of(exp2_rows, "ct.exp2(x, flush_to_zero=True)")
    assert f"exp2 at line {line} (approximate math, flush-to-zero)" in cc.tiles[0].reason


def test_a_wrong_value_is_an_emulator_bug_with_its_place():
    case = CASES["vector_add"]
    grid, args = case.build()

    def wrong(a):
        a[2][300] += 1.0

    cc = tile_lab.crosscheck(case.kernel, grid, args, gpu=ScriptedGpu(wrong))
    assert cc.agreement == "mismatch" and not cc.ok
    (bad,) = cc.mismatches
    assert bad.block == (2, 0, 0) and bad.example[0] == (300,) and bad.differing == 1
    assert "emulator bug" in bad.reason and "bit for bit" in bad.reason
    assert "MISMATCH (emulator bug)" in cc.summary()


def test_beyond_the_budget_of_approximate_math_is_a_mismatch_too():
    grid, args = _exp2_args()

    def far(a):
        a[1][10] *= 1.01

    cc = tile_lab.crosscheck(exp2_rows, grid, args, gpu=ScriptedGpu(far))
    (bad,) = cc.mismatches
    assert bad.example[0] == (10,) and "beyond the error allowed by exp2" in bad.reason


def test_nan_outside_undetermined_lanes_is_a_mismatch():
    grid, args = _exp2_args()

    def nan(a):
        a[1][7] = np.nan

    cc = tile_lab.crosscheck(exp2_rows, grid, args, gpu=ScriptedGpu(nan))
    (bad,) = cc.mismatches
    assert bad.nan_mismatch == 1 and "NaN/Inf on one side only" in bad.reason


def test_a_write_where_the_kernel_wrote_nothing_is_a_mismatch():
    case = CASES["vector_add"]
    grid, args = case.build()
    grid = (grid[0] - 1,)  # the last 1000 - 7*128 = 104 elements stay unwritten

    def stray(a):
        a[2][-1] = 5.0

    cc = tile_lab.crosscheck(case.kernel, grid, args, gpu=ScriptedGpu(stray))
    assert cc.outputs[0].unwritten_differing == 1 and not cc.ok
    assert any("no emulated store wrote" in e for e in cc.explanations())


def test_the_callers_arrays_are_not_written():
    case = CASES["vector_add"]
    grid, args = case.build()
    before = [np.copy(a) for a in args[:3]]
    tile_lab.crosscheck(case.kernel, grid, args, gpu=ScriptedGpu())
    for a, b in zip(args[:3], before):
        np.testing.assert_array_equal(a, b)


def test_both_sides_get_the_same_layout_offsets_and_shared_buffer():
    q, k, v, o = decode_inputs(misaligned=True)
    grid, args = decode_launch(q, k, v, o)
    side = ScriptedGpu()
    tile_lab.crosscheck(decode_attention, grid, args, gpu=side)
    gk, gv = side.seen[1], side.seen[2]
    assert gk.ctypes.data % 16 == k.ctypes.data % 16 == 2
    assert gv.ctypes.data - gk.ctypes.data == v.ctypes.data - k.ctypes.data  # one buffer
    assert gk.base is gv.base
    np.testing.assert_array_equal(gk, k)


def test_outputs_option_and_a_bad_name():
    case = CASES["vector_add"]
    grid, args = case.build()
    cc = tile_lab.crosscheck(case.kernel, grid, args, gpu=ScriptedGpu(),
                             options=CrossCheckOptions(outputs=("c",)))
    assert [o.arg for o in cc.outputs] == ["c"]
    with pytest.raises(TileLabError, match="'out' is not an array argument of vector_add"):
        tile_lab.crosscheck(case.kernel, grid, args, gpu=ScriptedGpu(),
                            options=CrossCheckOptions(outputs=("out",)))


def test_result_is_frozen_and_round_trips_through_json():
    q, k, v, o = decode_inputs(misaligned=False)
    grid, args = decode_launch(q, k, v, o)
    cc = tile_lab.crosscheck(decode_attention, grid, args, gpu=ScriptedGpu())
    text = json.dumps(cc.to_json(), allow_nan=False)
    back = CrossCheck.from_json(json.loads(text))
    assert back == cc and back.summary() == cc.summary()
    with pytest.raises(AttributeError):
        cc.device = "x"  # type: ignore[misc]


def test_without_a_gpu_it_says_what_is_missing():
    if not gpu_requirements():
        pytest.skip("this machine has a usable GPU")
    case = CASES["vector_add"]
    grid, args = case.build()
    with pytest.raises(NoGPUError, match="needs CuPy and a CUDA GPU of sm_90 or newer"):
        tile_lab.crosscheck(case.kernel, grid, args)


def test_a_gpu_side_must_have_device_and_run():
    with pytest.raises(TileLabError, match="is not a GpuSide"):
        tile_lab.crosscheck(exp2_rows, (1,), (), gpu=lambda *a: a)  # type: ignore[arg-type]


# ---- on a real GPU (the corpus: tests/test_corpus_emulated.py) -----------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("misaligned", [False, True])
def test_decode_attention_differs_only_in_undetermined_lanes_on_the_gpu(misaligned):
    q, k, v, o = decode_inputs(misaligned=misaligned)
    grid, args = decode_launch(q, k, v, o)
    cc = tile_lab.crosscheck(decode_attention, grid, args)
    assert cc.ok, str(cc)
    assert {t.verdict for t in cc.tiles} <= {"undetermined", "agree"}
