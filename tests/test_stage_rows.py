"""Compiled stages parsed once into typed rows (tile_lab.compile.stage_rows,
``StageText.rows``): real stages (the Inspection fixtures, cuda-tile 1.7.0 / tileiras 13.4,
and one compile here), the patterns the consumers used before this parser checked against it
on every real line, and edge cases (empty stage, no line map, SASS without offsets)."""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path

import pytest
from fixture_files import inspection_fixture

import tile_lab
from tile_lab.compile.artifacts import Inspection, StageText
from tile_lab.compile.stage_rows import (
    Row,
    SassRow,
    TileIRRow,
    TileType,
    displacement,
    entry_symbols,
    normalised_op_text,
    parse_rows,
    sass_offset,
    sass_opcode,
    stack_adjustment,
    tile_views,
    without_ssa_names,
)

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
INSPECTIONS = ("tma_gemm_sm_90", "tma_gemm_k1004_sm_90", "pipeline_gemm_persistent_sm_90",
               "inspect_vadd_sm_90")


def load(name: str) -> Inspection:
    return inspection_fixture(name)


@pytest.fixture(scope="module")
def compiled() -> Inspection:
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import kernels_inspect as k
    finally:
        sys.path.remove(str(Path(__file__).parent))
    return tile_lab.inspect(k.gemm, "f16[256,256], f16[256,256], f32[256,256], 64, 64, 32",
                            arch="sm_100")


def _stages(compiled: Inspection) -> list[StageText]:
    out = [st for name in INSPECTIONS for st in load(name).stages.values()]
    return out + list(compiled.stages.values())


# -- every stage: one row per text line ------------------------------------------------------

def test_rows_follow_the_text_and_the_line_map(compiled):
    for st in _stages(compiled):
        rows = st.rows
        assert [r.text for r in rows] == st.text.split("\n"), st.name
        assert [r.index for r in rows] == list(range(len(rows)))
        assert tuple(r.line for r in rows) == st.line_map
        kind = {"sass": SassRow, "tileir": TileIRRow}.get(st.name, Row)
        assert {type(r) for r in rows} == {kind}
        assert st.rows is rows  # parsed once, then kept


def test_rows_are_frozen():
    row = load("inspect_vadd_sm_90").stages["sass"].rows[3]
    with pytest.raises(AttributeError):
        row.line = 1  # type: ignore[misc]


def test_an_inspection_loaded_from_json_and_a_pickled_one_get_the_same_rows(compiled):
    again = Inspection.from_json(compiled.to_json())
    assert again.stages["sass"].rows == compiled.stages["sass"].rows
    st = compiled.stages["tileir"]
    assert st.rows  # made: a pickle must still carry only the text
    copy = pickle.loads(pickle.dumps(st))
    assert "rows" not in copy.__dict__ and copy == st and copy.rows == st.rows


# -- SASS ------------------------------------------------------------------------------------

# The patterns the consumers matched SASS lines with before this parser (html.py's compaction,
# profile_view.py / compile/pipeline.py / profiling's offsets, artifacts.py's opcode): on every real
# line, the row's fields say the same.
OLD_OFFSET = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;?\s*$")
OLD_OPCODE = re.compile(r"^\s*(?:/\*[0-9a-fA-F]+\*/)?\s*(?:@!?U?P\w+\s+)?"
                        r"([A-Z][A-Z0-9]*)(?=[.\s;]|$)")
OLD_ADDRESS = re.compile(r"^[ \t]*(/\*[0-9a-fA-F]{4,}\*/)( +)")


def test_sass_rows_agree_with_the_patterns_they_replace(compiled):
    sass = [st for st in _stages(compiled) if st.name == "sass"]
    instructions = 0
    for st in sass:
        for row in st.rows:
            m = OLD_OFFSET.match(row.text)
            assert row.offset == (int(m.group(1), 16) if m else None), row.text
            if m:
                instructions += 1
                assert row.instruction == m.group(2)
            o = OLD_OPCODE.match(row.text)
            assert row.opcode == (o.group(1) if o else None), row.text
            if a := OLD_ADDRESS.match(row.text):
                assert (row.indent + row.address, row.gap) == (a.group(0).rstrip(" "),
                                                               a.group(2))
    assert len(sass) == 5 and instructions > 2000


def test_a_sass_instruction_row():
    text = "\n".join(["gemm_kernel:",
                      "        /*0040*/               @P0 BRA `(.L_x_1) ;",
                      "        /*0110*/                   SYNCS.EXCH.64 URZ, [UR8+0x1a000], UR4 ;",
                      ".L_x_1:"])
    label, bra, syncs, target = parse_rows("sass", text, (None, 3, 4, None))
    assert (label.offset, label.opcode, label.operands) == (None, None, ())
    assert (bra.offset, bra.line, bra.predicate, bra.opcode, bra.mnemonic, bra.operands) == (
        0x40, 3, "@P0", "BRA", "BRA", ("`(.L_x_1)",))
    assert bra.address == "/*0040*/" and bra.indent == " " * 8 and len(bra.gap) == 15
    assert bra.instruction == "@P0 BRA `(.L_x_1)"
    assert (syncs.predicate, syncs.opcode, syncs.mnemonic) == ("", "SYNCS", "SYNCS.EXCH.64")
    assert syncs.operands == ("URZ", "[UR8+0x1a000]", "UR4")
    assert displacement(syncs.operands[1]) == ("UR8", 0x1a000)
    assert displacement("UR4") is None and target.offset is None


def test_sass_opcode_with_and_without_address():
    assert sass_opcode("        /*0070*/                   LDL.64 R2, [R1+0x8] ;") == "LDL"
    assert sass_opcode("@!P1  BRA 0x7f10177ad060") == "BRA"  # as Nsight Compute prints it
    assert sass_opcode("HGMMA.64x128x16.F32 R24, gdesc[UR4], R24") == "HGMMA"
    assert sass_opcode(".L_x_3:") is None and sass_opcode("") is None
    assert sass_offset("  /*1a0*/ NOP ;") == 0x1a0 and sass_offset("NOP ;") is None


def test_stack_adjustment():
    assert stack_adjustment("VIADD R1, R1, -0xe98") == -0xe98
    assert stack_adjustment("IADD3 R1, PT, R1, 0xfffff168, RZ") == -0xe98  # two's complement
    assert stack_adjustment("IADD3 R2, R1, -0x10, RZ") is None


def test_sass_without_offsets():
    """A SASS stage of labels, headers and blank lines only: rows without offsets; opcode
    still read where an instruction stands without its address."""
    rows = StageText("sass", "\t.target\tsm_90a\n\n.L_x_0:\n        EXIT ;", (None,) * 4).rows
    assert [r.offset for r in rows] == [None] * 4
    assert [r.opcode for r in rows] == [None, None, None, "EXIT"]


# -- Tile IR ---------------------------------------------------------------------------------

def test_tile_ir_rows_of_a_gemm():
    rows = load("tma_gemm_sm_90").stages["tileir"].rows
    entry = rows[0]
    assert entry.op == "entry" and entry.symbol.startswith("gemm_")
    assert entry.params[:2] == ("ptr<f16>", "i32") and len(entry.params) == 15
    assert entry_symbols(rows) == [entry.symbol]
    loads = [r for r in rows if r.op == "load_view_tko"]
    assert len(loads) == 2 and all(r.access.kind == "load" for r in loads)
    assert loads[0].results == ("%tile", "%result_token")
    assert loads[0].result_tile == TileType((64, 32), "f16")
    assert loads[0].access.tile == (64, 32) and not loads[0].access.allow_tma_false
    store = next(r for r in rows if r.op == "store_view_tko")
    assert store.access.kind == "store" and store.access.tile == (64, 64)
    mma = next(r for r in rows if r.op == "mmaf")
    assert mma.line == 36 and mma.results == ("%3",)
    assert [r.op for r in rows if r.op in ("for", "continue")] == ["for", "continue"]


def test_tile_views_follow_the_assume_chains():
    rows = load("tma_gemm_sm_90").stages["tileir"].rows
    views = tile_views(rows)
    a = views.tensor_view_of(next(r for r in rows if r.op == "load_view_tko").access.view)
    assert a is not None and a.elem == "f16" and a.strides[-1] == "1"
    assert views.divisor(a.base) == 16
    assert views.divisor(a.strides[0]) == 8  # div_by<8> of the argument, kept along the chain
    assert views.divisor("%not_a_value") == 1
    assert len(views.tensor_views) == 3 and len(views.partition_views) == 4


def test_latency_hints_and_the_tile_types_of_loads():
    rows = load("pipeline_gemm_latency4_sm_90").stages["tileir"].rows
    loads = [r for r in rows if r.op == "load_view_tko"]
    assert {r.latency for r in loads} == {4}
    assert {r.result_tile for r in loads} == {TileType((128, 64), "f16"),
                                              TileType((64, 128), "f16")}


def test_op_text_normalisations():
    line = "%tile_3, %tok = load_view_tko weak %pview_1[%x, %1#1] token = %0 : tile<64xf32>"
    assert normalised_op_text(line) == "%, % = load_view_tko weak %[%, %] : tile<64xf32>"
    assert without_ssa_names(line + " loc(#loc12)") == \
        "%, % = load_view_tko weak %[%, %#1] token = % : tile<64xf32>"


# -- edge cases ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sass", "tileir", "ptx", "cutile"])
def test_an_empty_stage_has_no_rows(name):
    assert StageText(name, "", ()).rows == ()


def test_a_missing_or_short_line_map_gives_no_lines():
    st = load("inspect_vadd_sm_90").stages["tileir"]
    bare = StageText("tileir", st.text, ())
    assert [r.line for r in bare.rows] == [None] * len(st.rows)
    assert [r.op for r in bare.rows] == [r.op for r in st.rows]  # the rest does not need it
    short = parse_rows("sass", "  /*0000*/ NOP ;\n  /*0010*/ EXIT ;", (7,))
    assert [(r.offset, r.line) for r in short] == [(0, 7), (0x10, None)]
