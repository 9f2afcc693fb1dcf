"""TMA verdicts (tile_lab.analysis.tma) from real sm_90 compiles (fixtures: cuda-tile 1.7.0,
tileiras 13.4), and the Tile IR reasons on small texts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from fixture_files import inspection_fixture

import tile_lab.render.tma as drawing
from tile_lab.analysis.tma import TmaLine, TmaReport, tma_report
from tile_lab.compile.artifacts import Inspection, StageText

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> Inspection:
    return inspection_fixture(name)


def test_gemm_k_loop_loads_and_store_are_tma():
    r = tma_report(load("tma_gemm_sm_90"))
    assert [(t.line, t.kind, t.tma, t.sass_ops) for t in r.lines] == [
        (34, "load", True, ("UTMALDG",)), (35, "load", True, ("UTMALDG",)),
        (37, "store", True, ("UTMASTG",))]
    assert r.summary() == "3 of 3 tile loads/stores became TMA copies (sm_90)"


def test_a_row_stride_off_16_bytes_loses_tma_on_that_load_only():
    r = tma_report(load("tma_gemm_k1004_sm_90"))  # A is f16[512, 1004]: 2008-byte rows
    a, b, c = r.lines
    assert (a.tma, a.sass_ops) == (False, ("LDG",))
    assert a.reason.startswith("compiler: stride not 16-byte aligned; ")  # its own remark
    assert "multiple of 16 bytes" in a.reason and "divide by 8" in a.reason
    assert b.tma and c.tma
    assert r.line(34) is a
    with pytest.raises(KeyError, match="lines: 34, 35, 37"):
        r.line(36)


def test_allow_tma_false_is_named():
    r = tma_report(load("tma_gemm_allow_tma_false_sm_90"))
    first = r.lines[0]
    assert not first.tma and first.reason == "allow_tma=False on this load/store"
    assert r.lines[1].tma


def test_a_plain_copy_keeps_ldg_and_says_no_rule_explains_it():
    r = tma_report(load("tma_copy2d_sm_90"))
    assert [t.tma for t in r.lines] == [False, False]
    assert "preconditions hold" in r.lines[0].reason


def test_no_tma_before_hopper():
    insp = load("tma_copy2d_sm_90")
    old = dataclasses.replace(insp, arch="sm_80")
    assert "sm_80 has no TMA" in tma_report(old).lines[0].reason


def test_the_drawing_module_re_exports_the_analysis():
    assert (drawing.tma_report, drawing.TmaReport, drawing.TmaLine) == (
        tma_report, TmaReport, TmaLine)


def _with_tileir(insp: Inspection, edit) -> Inspection:
    tir = insp.stages["tileir"]
    stages = {**insp.stages, "tileir": StageText("tileir", edit(tir.text), tir.line_map)}
    return dataclasses.replace(insp, stages=stages, remarks=())


_LOAD = "load_view_tko weak %pview[%blockId_x, %blockId_y_20] token = %0 : partition_view<tile="


@pytest.mark.parametrize("edit, reason", [
    # A's tensor view with a non-unit innermost stride
    (lambda t: t.replace("strides = [%assume_assume_assume_11, 1]",
                         "strides = [%assume_assume_assume_11, 2]"), "not contiguous"),
    # A's base pointer known to divide by 8 only
    (lambda t: t.replace("%assume = assume div_by<16>, %arg0", "%assume = assume div_by<8>, %arg0"),
     "base address is not known to be 16-byte aligned"),
    # A's row stride known to divide by 2 elements only (8 bytes of f32), along its assumes
    (lambda t: t.replace("div_by<4>, %arg3", "div_by<2>, %arg3").replace(
        "div_by<4>, %assume_assume_10", "div_by<2>, %assume_assume_10"),
     "stride of axis 0 is not known to be a multiple of 16 bytes"),
    # A's load reading 64x2 tiles: rows of 8 bytes
    (lambda t: t.replace(_LOAD + "(64x64)", _LOAD + "(64x2)"), "rows are narrower than 16 bytes"),
])
def test_the_tile_ir_reasons(edit, reason):
    """The copy2d kernel (LDG although every precondition holds) with one fact of A's view
    changed in its Tile IR: the verdict names that fact."""
    insp = load("tma_copy2d_sm_90")
    assert "preconditions hold" in tma_report(insp).lines[0].reason
    edited = _with_tileir(insp, edit)
    assert edited.stages["tileir"].text != insp.stages["tileir"].text
    assert reason in tma_report(edited).lines[0].reason
