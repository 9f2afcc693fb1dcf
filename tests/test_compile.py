"""The compile stages one by one: parsers on known tool output, then the real tools."""

from __future__ import annotations

import os
import subprocess

import kernels_inspect as K
import pytest

from tile_lab import _cutile_compat as compat
from tile_lab.compile.artifacts import LazyStages
from tile_lab.compile.disassembly import (
    _ptx_statement_lines,
    cubin_stage_names,
    disassemble_cubin,
    elf_section,
    ptx_from_cubin,
    sass_from_cubin,
    sass_stage,
)
from tile_lab.compile.pipeline import (
    clear_caches,
    compile_kernel,
    cutile_stage,
    machine_code_work,
    parse_remarks,
    run_tileiras,
)
from tile_lab.compile.signature import signature_from_spec
from tile_lab.compile.tileir import disassemble_tileir, tileir_stage
from tile_lab.compile.toolchain import find_tool
from tile_lab.errors import CompileError, ToolchainError

KFILE = "/src/k.py"

TILEIR_SAMPLE = f'''entry @k(%arg0: tile<ptr<f32>>) optimization_hints=<default = {{}}> {{
  %0 = make_token : token loc(#loc10)
  %1 = addf %a, %b  : tile<128xf32> loc(#loc12)
  %r = reduce %t dim=1 identities=[0.0 : f32] : tile<4x8xf32> -> tile<4xf32>
  (%lhs: tile<f32>, %rhs: tile<f32>) {{
    %5 = maxf %lhs, %rhs : tile<f32> loc(#loc11)
    yield %5 : tile<f32> loc(#loc11)
  }} loc(#loc11)
  %2 = mulf %1, %1 : tile<128xf32> loc(#loc13)
  %3 = negf %2 : tile<128xf32> loc("{KFILE}":9:2)
  return loc(#loc9)
}} loc(#loc10)
#di_file = #cuda_tile.di_file<"k.py" in "/src">
#loc = loc("{KFILE}":4:0)
#loc1 = loc("{KFILE}":7:4)
#loc2 = loc("/other/helper.py":3:8)
#loc3 = loc("{KFILE}":8:6)
#loc4 = loc("{KFILE}":6:2)
#loc9 = loc(unknown)
#di_subprogram = #cuda_tile.di_subprogram<file = #di_file, line = 3, name = "k">
#loc10 = #cuda_tile.di_loc<#loc in #di_subprogram>
#loc11 = #cuda_tile.di_loc<#loc4 in #di_subprogram>
#loc12 = #cuda_tile.di_loc<#loc1 in #di_subprogram>
#loc13 = loc(callsite(#loc2 at #loc3))
'''


def test_tileir_stage_resolves_aliases_and_strips_locations():
    st = tileir_stage(TILEIR_SAMPLE, KFILE)
    lines = st.lines()
    assert len(lines) == len(st.line_map) == 12
    assert not any("loc(" in t or "#di_" in t or "/src" in t for t in lines)
    by_text = dict(zip([t.strip() for t in lines], st.line_map, strict=True))
    assert by_text["%0 = make_token : token"] == 4
    assert by_text["%1 = addf %a, %b  : tile<128xf32>"] == 7
    # a helper in another file maps to its call site in the kernel file
    assert by_text["%2 = mulf %1, %1 : tile<128xf32>"] == 8
    assert by_text["%3 = negf %2 : tile<128xf32>"] == 9  # inline loc(...)
    assert by_text["return"] is None  # loc(unknown)
    # region ops get their location from the closing brace, incl. the op header line
    assert by_text["%r = reduce %t dim=1 identities=[0.0 : f32] : tile<4x8xf32> -> tile<4xf32>"] \
        == 6
    assert st.line_map[0] == 4  # "entry ... {" closed by "} loc(#loc10)"


def test_tileir_stage_defaults_to_the_entry_file():
    assert tileir_stage(TILEIR_SAMPLE).line_map == tileir_stage(TILEIR_SAMPLE, KFILE).line_map
    other = tileir_stage(TILEIR_SAMPLE, "/other/helper.py")
    assert other.line_map[2] is None and other.line_map[8] == 3


SASS_SAMPLE = f'''\t.target\tsm_90a

\t.elftype\t@"ET_EXEC"


//--------------------- .text.k --------------------------
\t.section\t.text.k,"ax",@progbits
\t.align\t128
        .global         k
k:
.text.k:
\t//## File "{KFILE}", line 3
        /*0000*/                   LDC R1, c[0x0][0x28] ;
\t//## File "{KFILE}", line 6
        /*0010*/                   LDG.E R2, desc[UR4][R2.64] ;
        /*0020*/              @!P0 BRA `(.L_x_0) ;
.L_x_0:
\t//## File "/other/helper.py", line 2
        /*0030*/                   FADD R2, R2, R2 ;
\t//## File "{KFILE}", line 7
        /*0040*/                   EXIT ;
'''


def test_sass_stage_maps_instructions():
    st = sass_stage(SASS_SAMPLE, KFILE)
    rows = list(zip(st.lines(), st.line_map, strict=True))
    assert not any("//##" in t or ".section" in t or ".global" in t or t == ".text.k:"
                   for t, _ in rows)
    instr = [(t.split("*/")[1].strip(), m) for t, m in rows if "/*0" in t]
    assert instr == [("LDC R1, c[0x0][0x28] ;", 3), ("LDG.E R2, desc[UR4][R2.64] ;", 6),
                     ("@!P0 BRA `(.L_x_0) ;", 6), ("FADD R2, R2, R2 ;", None), ("EXIT ;", 7)]
    assert ("k:", None) in rows and (".L_x_0:", None) in rows


def test_sass_stage_ignores_ptx_line_info():
    text = SASS_SAMPLE.replace('\t//## File "/other/helper.py", line 2\n',
                               '\t//## File ".nv_debug_ptx_txt", line 40\n')
    st = sass_stage(text, KFILE)
    assert "FADD R2, R2, R2 ;" in st.text
    assert [m for t, m in zip(st.lines(), st.line_map, strict=True) if "FADD" in t] == [6]


def test_ptx_statements_pool_their_votes():
    from collections import Counter

    raw = ["", ".version 9.4", ".visible .entry k(", ".param .u32 k_param_0", ")", "{",
           "mma.sync.aligned.m16n8k16", "{%r1, %r2},", "{%r3, %r4};", "", "add.s32 %r5, 1;",
           "$L__BB0_1:", "}"]
    votes = {9: Counter({34: 3}), 8: Counter({30: 1}), 11: Counter({35: 1, 36: 1})}
    got = _ptx_statement_lines(raw, votes)
    assert got == {7: 34, 8: 34, 9: 34, 11: 35}


def test_sass_stage_drops_lines_that_are_not_code(tmp_path):
    src = tmp_path / "k.py"
    src.write_text("import x\n\ndef k():\n    pass\n\n# note\n")
    text = (f'\t//## File "{src}", line 4\n        /*0000*/  EXIT ;\n'
            f'\t//## File "{src}", line 5\n        /*0010*/  NOP ;\n'
            f'\t//## File "{src}", line 6\n        /*0020*/  NOP ;\n')
    assert sass_stage(text, str(src)).line_map == (4, None, None)


def test_cutile_stage():
    text = (f"(a_0: Tile[int32,()]):\n$token: Token = make_token()  // {KFILE}:4:0\n"
            f"$1 = add(x=$0)  // /other/helper.py:2:4\nreturn  // <unknown>:0:0")
    st = cutile_stage(text, KFILE)
    assert st.lines() == ["(a_0: Tile[int32,()]):", "$token: Token = make_token()  // line 4",
                          "$1 = add(x=$0)  // helper.py:2", "return"]
    assert st.line_map == (None, 4, None, None)


REMARKS_SAMPLE = f"""--- !Passed
Pass:            Tensor-core
Name:            RemarkTensorCoreMMA
DebugLoc:        {{ File: '{KFILE}', Line: 34, Column: 14 }}
Function:        gemm
Args:
  - RemarkId:    2
  - Remark:      MMA operation successfully optimized to use Tensor Cores
  - Shape:       '[64, 128, 16]'
...
--- !Failure
Pass:            Memory
Name:            RemarkMemoryTmaLoadFailed
DebugLoc:        {{ File: '{KFILE}', Line: 33, Column: 12 }}
Function:        gemm
Args:
  - RemarkId:    5
  - Remark:      Failed to select TMA load instruction
  - Reason:      'loc("{KFILE}":33:12): stride not 16-byte aligned'
  - Reason:      'loc("{KFILE}":33:12): stride not 16-byte aligned'
...
--- !Passed
Pass:            Tensor-core
Name:            RemarkTensorCoreMMA
DebugLoc:        {{ File: '{KFILE}', Line: 34, Column: 14 }}
Function:        gemm
Args:
  - RemarkId:    2
  - Remark:      MMA operation successfully optimized to use Tensor Cores
  - Shape:       '[64, 128, 16]'
...
"""


def test_parse_remarks():
    remarks = parse_remarks(REMARKS_SAMPLE, KFILE)
    assert len(remarks) == 2  # duplicate dropped, sorted by line
    tma, mma = remarks
    assert (tma.kind, tma.category, tma.line, tma.col, tma.pass_name) == \
        ("failed", "memory", 33, 12, "RemarkMemoryTmaLoadFailed")
    assert tma.message == "Failed to select TMA load instruction: stride not 16-byte aligned"
    assert (mma.kind, mma.category, mma.line) == ("passed", "tensorcore", 34)
    assert mma.message == ("MMA operation successfully optimized to use Tensor Cores "
                           "(Shape: [64, 128, 16])")
    assert parse_remarks(REMARKS_SAMPLE, "/elsewhere.py")[0].line is None
    assert parse_remarks("") == ()


# -- the real tools ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def vadd_front():
    sig = signature_from_spec(K.vector_add, "f32[1024], f32[1024], f32[1024], 128")
    return compat.compile_frontend(K.vector_add, sig.kernel_signature, "sm_100",
                                   compat.compiler_options(K.vector_add))


def test_disassemble_real_bytecode(vadd_front):
    st = disassemble_tileir(vadd_front.bytecode)
    assert st.lines()[0].startswith(f"entry @{vadd_front.symbol}(")
    assert st.text.count("load_view_tko") == 2
    assert K.__file__ not in st.text
    assert {m for m in st.line_map if m} >= {K.vector_add._pyfunc.__code__.co_firstlineno + 2}


def test_tileiras_and_sass(vadd_front):
    clear_caches()
    cubin, remarks_yaml = run_tileiras(vadd_front.bytecode, "sm_100")
    assert cubin[:4] == b"\x7fELF" and "--- !Passed" in remarks_yaml
    st = sass_from_cubin(cubin, "sm_100", filename=K.__file__)
    assert any("LDG" in t for t in st.lines()) and "EXIT" in st.text
    assert all(m is None or m > 0 for m in st.line_map)
    assert sass_from_cubin(cubin, "sm_100") == st  # default file: the one the line info names
    assert elf_section(cubin, ".nv_debug_ptx_txt").count(b"\0") > 10
    assert elf_section(cubin, ".no_such_section") is None and elf_section(b"junk", ".x") is None
    ptx = ptx_from_cubin(cubin, "sm_100", filename=K.__file__)
    assert f".visible .entry {vadd_front.symbol}(" in ptx.text
    assert "ld.global" in ptx.text and any(m is not None for m in ptx.line_map)
    # memoised: the same bytes give the same object back without running tileiras again
    assert run_tileiras(vadd_front.bytecode, "sm_100")[0] is cubin


def test_one_nvdisasm_run_gives_the_eager_sass_and_ptx(vadd_front):
    cubin, _ = run_tileiras(vadd_front.bytecode, "sm_90")
    clear_caches()
    both = machine_code_work(lambda: disassemble_cubin(cubin, "sm_90", filename=K.__file__)
                             ).result(timeout=300)
    assert tuple(both) == cubin_stage_names(cubin) == ("ptx", "sass")
    assert both["sass"] == sass_from_cubin(cubin, "sm_90", filename=K.__file__)
    assert both["ptx"] == ptx_from_cubin(cubin, "sm_90", filename=K.__file__)
    assert disassemble_cubin(cubin, "sm_90") == {"ptx": ptx_from_cubin(cubin, "sm_90"),
                                                 "sass": sass_from_cubin(cubin, "sm_90")}
    assert cubin_stage_names(b"not an ELF image") == ("sass",)


def test_nvdisasm_failure_comes_out_of_the_future():
    junk = b"\x7fELF" + bytes(60)
    with pytest.raises(ToolchainError, match="disassembling the sm_90 cubin") as eager:
        sass_from_cubin(junk, "sm_90")
    with pytest.raises(ToolchainError) as lazy:
        machine_code_work(lambda: disassemble_cubin(junk, "sm_90")).result(timeout=300)
    assert lazy.value.message == eager.value.message  # no temporary path in either
    assert "kernel.cubin is an invalid ELF file" in eager.value.message


def test_tileiras_failure_is_a_compile_error():
    with pytest.raises(CompileError, match="tileiras failed for sm_90"):
        run_tileiras(b"\x7fTileIR\x00garbage", "sm_90")


def test_compile_kernel_end_to_end():
    sig = signature_from_spec(K.row_softmax, "f32[64,256], f32[64,256], 4, 256")
    res = compile_kernel(K.row_softmax, sig.kernel_signature, arch="sm_80",
                         options=compat.compiler_options(K.row_softmax), filename=K.__file__)
    assert isinstance(res.stages, LazyStages)
    assert set(res.stages) == {"cutile", "tileir", "ptx", "sass"}
    assert any("MUFU.EX2" in t for t in res.stages["sass"].lines())
    assert res.symbol.startswith("row_softmax_") and res.symbol in res.stages["tileir"].text
    assert res.bytecode[:8] == b"\x7fTileIR\x00" and res.cubin[:4] == b"\x7fELF"
    assert all(r.line is None or r.line > 0 for r in res.remarks)


def test_a_compile_needs_no_tileirdisasm_until_its_tile_ir_is_read(monkeypatch):
    import tile_lab.compile.tileir as tileir

    def missing(bytecode):
        raise ToolchainError("tileirdisasm not found")

    monkeypatch.setattr(tileir, "_tileirdisasm", missing)
    sig = signature_from_spec(K.row_softmax, "f32[64,256], f32[64,256], 4, 256")
    res = compile_kernel(K.row_softmax, sig.kernel_signature, arch="sm_90",
                         options=compat.compiler_options(K.row_softmax), filename=K.__file__)
    assert "tileir" in res.stages and res.cubin[:4] == b"\x7fELF"
    assert any("MUFU.EX2" in t for t in res.stages["sass"].lines())  # SASS needs none
    with pytest.raises(ToolchainError, match="tileirdisasm not found"):
        res.stages["tileir"]


def test_tileiras_is_immune_to_an_old_cuda_home(vadd_front, tmp_path, monkeypatch):
    # the trap: tileiras loads libnvvm from $CUDA_HOME/nvvm/lib64 when CUDA_HOME is set
    fake = tmp_path / "cuda-12.0"
    (fake / "nvvm" / "lib64").mkdir(parents=True)
    (fake / "nvvm" / "lib64" / "libnvvm.so").write_bytes(b"not a shared library")
    src = tmp_path / "k.tileirbc"
    src.write_bytes(vadd_front.bytecode)
    direct = subprocess.run([str(find_tool("tileiras")), str(src), "-o", str(tmp_path / "k.cubin"),
                             "--gpu-name=sm_90"], capture_output=True,
                            env={**os.environ, "CUDA_HOME": str(fake)}, check=False)
    assert direct.returncode != 0  # the trap is real...
    assert b"failed to compile Tile IR program" in direct.stderr
    monkeypatch.setenv("CUDA_HOME", str(fake))
    monkeypatch.setenv("TILE_LAB_CACHE_DIR", "off")  # tileiras must really run
    clear_caches()
    cubin, _ = run_tileiras(vadd_front.bytecode, "sm_90")  # ...and tile_lab avoids it
    assert cubin[:4] == b"\x7fELF"


GEMM_ENDING_AT_LAST_LINE = """import cuda.tile as ct


@ct.kernel
def gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK))
        b = ct.load(B, index=(k, bn), shape=(TK, TN))
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))"""


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
def test_line_maps_name_only_code_lines_of_the_kernels_file(tmp_path, arch):
    # tileiras' sm_90 line info puts wgmma instructions one line past a file that ends
    # with the kernel's last line; no pane may point at a line the file does not have
    import importlib.util

    import tile_lab

    path = tmp_path / "gemm_last_line.py"
    path.write_text(GEMM_ENDING_AT_LAST_LINE)
    spec = importlib.util.spec_from_file_location("gemm_last_line", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    insp = tile_lab.inspect(module.gemm, "f16[512,512], f16[512,512], f32[512,512], 64, 64, 32",
                            arch=arch)
    lines = GEMM_ENDING_AT_LAST_LINE.splitlines()
    code_lines = {i for i, t in enumerate(lines, start=1)
                  if t.strip() and not t.strip().startswith("#")}
    for stage, line_map in insp.line_map.items():
        named = {ln for ln in line_map if ln is not None}
        assert named, stage
        assert named <= code_lines, (stage, sorted(named - code_lines), len(lines))
    assert {r.line for r in insp.remarks if r.line is not None} <= code_lines
