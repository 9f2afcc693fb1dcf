"""The Tile IR / cuTile IR / SASS lexers on real toolchain output (tests/fixtures)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_files import fixture_text
from pygments.lexers import get_lexer_by_name
from pygments.token import Comment, Error, Keyword, Name, Number, String

from tile_lab.render.lexers import CuTileIRLexer, PtxLexer, SassLexer, TileIRLexer

FIXTURES = Path(__file__).parent / "fixtures"



def fixture_names(suffix: str) -> list[str]:
    """The text fixtures named ``*suffix``, stored plain or gzipped (``NAME.gz``)."""
    return sorted(p.name.removesuffix(".gz")
                  for p in (*FIXTURES.glob(f"*{suffix}"), *FIXTURES.glob(f"*{suffix}.gz")))


TILEIR_FIXTURES = fixture_names(".tileir.mlir")
SASS_FIXTURES = fixture_names(".sass")
PTX_FIXTURES = fixture_names(".ptx")


def tokens(lexer, text):
    """(token type, value) pairs, whitespace dropped."""
    return [(t, v) for t, v in lexer.get_tokens(text) if v.strip()]


def kinds(lexer, text, value):
    return {t for t, v in tokens(lexer, text) if v == value}


def test_fixtures_present():
    # tileirdisasm -g output of 4 kernels; nvdisasm -g output for sm_80/90/100
    assert len(TILEIR_FIXTURES) == 4
    names = " ".join(SASS_FIXTURES)
    assert all(f"_sm_{cc}" in names for cc in (80, 90, 100))


def lexer_for(name):
    if name.endswith(".mlir"):
        return TileIRLexer()
    return PtxLexer() if name.endswith(".ptx") else SassLexer()


@pytest.mark.parametrize("name", TILEIR_FIXTURES + SASS_FIXTURES + PTX_FIXTURES)
def test_no_error_tokens_and_lossless(name):
    text = fixture_text(name)
    lexer = lexer_for(name)
    toks = list(lexer.get_tokens(text))
    errors = [v for t, v in toks if t in Error]
    assert errors == []
    # nothing dropped or invented (Pygments adds a final newline where there is none)
    assert "".join(v for _, v in toks).rstrip("\n") == text.rstrip("\n")


def test_cutile_ir_fixture_no_errors():
    text = (FIXTURES / "softmax.cutile.txt").read_text()
    assert [v for t, v in CuTileIRLexer().get_tokens(text) if t in Error] == []


# -- Tile IR -----------------------------------------------------------------------------

def test_tileir_op_line():
    line = ("    %tile, %result_token = load_view_tko weak %pview_16[%blockId_x, %loopIdx] "
            "token = %0 : partition_view<tile=(64x32), tensor_view<?x?xf16, strides=[?,?]>>, "
            "tile<i32> -> tile<64x32xf16>, token loc(#loc18)")
    toks = tokens(TileIRLexer(), line)
    assert toks[0] == (Name.Variable, "%tile")
    assert (Name.Function, "load_view_tko") in toks
    assert (Name.Variable, "%pview_16") in toks
    assert (Keyword.Type, "partition_view") in toks
    assert (Keyword.Type, "f16") in toks  # element type after the 64x32x shape
    assert (Number.Integer, "64x32x") in toks
    assert (Comment.Special, "loc(#loc18)") in toks
    assert (Name.Attribute, "token") in toks  # `token = %0` is an attribute here


def test_tileir_mma_and_control_flow():
    text = (FIXTURES / "gemm.tileir.mlir").read_text()
    toks = tokens(TileIRLexer(), text)
    assert (Name.Function, "mmaf") in toks
    assert (Keyword, "for") in toks  # control-flow ops read as keywords
    assert (Keyword, "entry") in toks
    assert (Keyword, "continue") in toks
    assert any(t is Name.Function and v.startswith("@gemm_") for t, v in toks)


def test_tileir_loc_table():
    text = ('#loc3 = loc("/fixtures/kernels.py":14:10)\n'
            "#loc15 = #cuda_tile.di_loc<#loc3 in #di_subprogram>\n")
    toks = tokens(TileIRLexer(), text)
    assert toks[0] == (Name.Label, "#loc3")
    assert (Comment.Special, 'loc("/fixtures/kernels.py":14:10)') in toks
    assert (Name.Label, "#cuda_tile.di_loc") in toks


def test_tileir_constants_and_pointer_types():
    toks = tokens(TileIRLexer(), "%r = reduce %t dim=1 identities=[0xFF800000 : f32] "
                                 ": tile<1xptr<f32>> -> tile<?x?xbf16>")
    assert (Number.Hex, "0xFF800000") in toks
    assert (Keyword.Type, "ptr") in toks
    assert (Keyword.Type, "bf16") in toks
    assert (Name.Attribute, "dim") in toks


# -- SASS --------------------------------------------------------------------------------

def test_sass_instruction():
    line = "        /*01f0*/              @!P0 BRA `(.L_x_0) ;"
    toks = tokens(SassLexer(), line)
    assert toks[0] == (Comment.Special, "/*01f0*/")
    assert (Name.Decorator, "@!P0") in toks
    assert (Keyword, "BRA") in toks
    assert (Name.Label, ".L_x_0") in toks


def test_sass_registers_constants_modifiers():
    line = "  /*0270*/   ISETP.GE.U32.AND P0, PT, R2.reuse, c[0x0][0x218], PT ;"
    toks = tokens(SassLexer(), line)
    assert (Keyword, "ISETP") in toks
    assert (Name.Attribute, ".GE.U32.AND") in toks
    assert {(Name.Variable, "P0"), (Name.Variable, "PT"), (Name.Variable, "R2.reuse")} <= set(toks)
    assert (Name.Constant, "c[0x0][0x218]") in toks


def test_sass_memory_and_immediates():
    toks = tokens(SassLexer(), "  /*02f0*/   LDG.E R6, desc[UR6][R4.64] ;\n"
                               "  /*0340*/   IMAD.MOV.U32 R7, RZ, RZ, 0x7fc00000 ;\n"
                               "  /*1f00*/   FSETP.NEU.FTZ.AND P3, PT, |R26|.reuse, +INF , PT ;")
    assert (Name.Builtin, "desc") in toks
    assert (Name.Variable, "UR6") in toks and (Name.Variable, "R4.64") in toks
    assert (Number.Hex, "0x7fc00000") in toks
    assert (Number.Float, "+INF") in toks


@pytest.mark.parametrize("path,opcode", [
    ("gemm_sm_80_excerpt.sass", "HMMA"),
    ("gemm_sm_90_excerpt.sass", "HGMMA"),
    ("gemm_sm_100_excerpt.sass", "UTCHMMA"),
])
def test_sass_tensor_core_opcodes(path, opcode):
    toks = tokens(SassLexer(), (FIXTURES / path).read_text())
    assert (Keyword, opcode) in toks


def test_sass_header_labels_line_info():
    text = fixture_text("vadd_sm_90.sass")
    toks = tokens(SassLexer(), text)
    assert (Keyword.Pseudo, ".section") in toks
    assert (String.Double, '@"STO_CUDA_ENTRY STV_DEFAULT"') in toks
    assert (Name.Label, ".L_x_1") in toks
    assert (Comment.Special, '//## File "/fixtures/kernels.py", line 5') in toks


# -- cuTile IR ---------------------------------------------------------------------------

def test_cutile_ir_line():
    line = ("$58: Tile[float32,(1,1024)], $59: Token = tile_load(view=$57, index=($17, $32), "
            "token=$token)  // line 24")
    toks = tokens(CuTileIRLexer(), line)
    assert toks[0] == (Name.Variable, "$58")
    assert (Keyword.Type, "Tile") in toks and (Keyword.Type, "float32") in toks
    assert (Name.Function, "tile_load") in toks
    assert (Name.Attribute, "view") in toks
    assert (Comment.Single, "// line 24") in toks


# -- registration ------------------------------------------------------------------------

@pytest.mark.parametrize("alias,cls", [
    ("tileir", TileIRLexer), ("cuda-tile-ir", TileIRLexer), ("nvsass", SassLexer),
])
def test_lookup_through_entry_points(alias, cls):
    assert type(get_lexer_by_name(alias)) is cls


def test_sass_alias_is_still_css():
    # Pygments' "sass" is the CSS language: we must never claim it.
    assert "sass" not in SassLexer.aliases
    assert type(get_lexer_by_name("sass")) is not SassLexer
    assert get_lexer_by_name("sass").name == "Sass"


def test_ptx_builds_on_pygments_lexer():
    assert issubclass(PtxLexer, type(get_lexer_by_name("ptx")))
    assert type(get_lexer_by_name("ptx")) is not PtxLexer  # "ptx" stays Pygments' own
    text = (FIXTURES / "gemm_sm_100_excerpt.ptx").read_text()
    # what Pygments' lexer alone trips on in real tileiras PTX, and we do not
    assert any(t in Error for t, _ in get_lexer_by_name("ptx").get_tokens(text))
    toks = tokens(PtxLexer(), text)
    assert (Name.Decorator, "@%p3") in toks
    assert any(t is Keyword and v.startswith("tcgen05.alloc.cta_group::1") for t, v in toks)


def test_ptx_embedded_tile_ir_is_lexed_as_tile_ir():
    toks = tokens(PtxLexer(), (FIXTURES / "vadd_sm_80.ptx").read_text())
    assert (Keyword.Pseudo, ".source_begin") in toks and (Keyword.Pseudo, ".source_end") in toks
    assert (Name.Function, "load_view_tko") in toks or (Name.Function, "make_token") in toks
