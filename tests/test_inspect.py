"""tile_lab.inspect on real kernels, for sm_80, sm_90 and sm_100 (CPU only: tileiras runs here)."""

from __future__ import annotations

import inspect as pyinspect
import json
import re
import threading

import kernels_inspect as K
import numpy as np
import pytest

import tile_lab
from tile_lab.compile import disassembly, pipeline
from tile_lab.compile.artifacts import Inspection
from tile_lab.errors import CompileError, SignatureError, ToolchainError

ARCHES = ("sm_80", "sm_90", "sm_100")

# kernel name -> (kernel, spec)
CASES = {
    "vector_add": (K.vector_add, "f32[4096], f32[4096], f32[4096], 128"),
    "gather_scatter": (K.gather_scatter, "f32[4096], i32[4096], f32[4096], 128"),
    "gemm": (K.gemm, "f16[1024,1024], f16[1024,1024], f32[1024,1024], 128, 128, 32"),
    "row_softmax": (K.row_softmax, "f32[256,1024], f32[256,1024], 4, 1024"),
}


def marker_line(marker: str) -> int:
    """Line number in kernels_inspect.py of the line ending in ``# <-- marker``."""
    lines = pyinspect.getsource(K).splitlines()
    hits = [i + 1 for i, t in enumerate(lines) if t.rstrip().endswith(f"# <-- {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def lines_with(stage_text: str, line_map, pattern: str) -> list[int | None]:
    """Source lines mapped to the stage lines matching ``pattern``."""
    rx = re.compile(pattern)
    return [m for t, m in zip(stage_text.splitlines(), line_map, strict=True) if rx.search(t)]


@pytest.fixture(scope="module")
def inspections() -> dict[tuple[str, str], Inspection]:
    # 12 compiles, shared by every test in this module
    return {(name, arch): tile_lab.inspect(kernel, spec, arch=arch)
            for name, (kernel, spec) in CASES.items() for arch in ARCHES}


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("name", list(CASES))
def test_every_mapped_line_is_inside_the_kernel(inspections, name, arch):
    insp = inspections[(name, arch)]
    kernel = CASES[name][0]
    src_lines, first = pyinspect.getsourcelines(kernel._pyfunc)
    last = first + len(src_lines) - 1
    assert insp.first_line == first and insp.source == "".join(src_lines)
    assert insp.arch == arch and insp.kernel_name == name
    for stage in ("cutile", "tileir", "sass"):
        st = insp.stages[stage]
        assert len(st.line_map) == len(st.lines())
        mapped = [m for m in st.line_map if m is not None]
        assert mapped, f"{stage} has no line info"
        assert all(first <= m <= last for m in mapped), (stage, sorted(set(mapped)), first, last)
        # line info covers the body, not just the def line
        assert len(set(mapped)) >= 3, (stage, set(mapped))


@pytest.mark.parametrize("arch", ARCHES)
def test_vector_add_loads_and_stores(inspections, arch):
    insp = inspections[("vector_add", arch)]
    tileir = insp.tileir
    assert tileir.count("load_view_tko") == 2
    assert tileir.count("store_view_tko") == 1
    assert lines_with(tileir, insp.line_map["tileir"], r"load_view_tko")[0] == \
        marker_line("vadd load a")
    assert lines_with(tileir, insp.line_map["tileir"], r"store_view_tko") == \
        [marker_line("vadd store")]
    assert lines_with(insp.cutile_ir, insp.line_map["cutile"], r"tile_store") == \
        [marker_line("vadd store")]
    # SASS: global loads/stores carry the source line of the ct.load/ct.store
    sass_store_lines = set(lines_with(insp.sass, insp.line_map["sass"], r"\bSTG\b"))
    assert marker_line("vadd store") in sass_store_lines
    assert insp.cubin[:4] == b"\x7fELF"
    # PTX, read from the cubin: global loads/stores at the ct.load/ct.store lines
    ptx_map = insp.line_map["ptx"]
    assert marker_line("vadd load a") in lines_with(insp.ptx, ptx_map, r"\bld\.global\.")
    assert marker_line("vadd store") in lines_with(insp.ptx, ptx_map, r"\bst\.global\.")
    assert re.search(r"^\.target sm_\d+a?$", insp.ptx, re.M)


@pytest.mark.parametrize("arch", ARCHES)
def test_gather_scatter_ops(inspections, arch):
    insp = inspections[("gather_scatter", arch)]
    m = insp.line_map["tileir"]
    assert marker_line("gather") in lines_with(insp.tileir, m, r"load_ptr_tko")
    assert marker_line("scatter") in lines_with(insp.tileir, m, r"store_ptr_tko")


@pytest.mark.parametrize("arch", ARCHES)
def test_gemm_mma_and_tensor_cores(inspections, arch):
    insp = inspections[("gemm", arch)]
    mma_line = marker_line("mma")
    assert lines_with(insp.tileir, insp.line_map["tileir"], r"\bmmaf\b") == [mma_line]
    assert re.search(r"\bfor %loopIdx", insp.tileir)  # the K loop survives into Tile IR
    tensor_core = {"sm_80": r"\bHMMA\.", "sm_90": r"\bHGMMA\.", "sm_100": r"\bUTC\w*MMA\b"}[arch]
    tc_lines = lines_with(insp.sass, insp.line_map["sass"], tensor_core)
    assert tc_lines, f"no tensor-core instruction in {arch} SASS"
    assert mma_line in tc_lines
    ptx_mma = {"sm_80": r"\bmma\.sync\.", "sm_90": r"\bwgmma\.mma_async\.",
               "sm_100": r"\btcgen05\.mma\."}[arch]
    ptx_mma_lines = lines_with(insp.ptx, insp.line_map["ptx"], ptx_mma)
    assert ptx_mma_lines
    if arch != "sm_90":
        # on sm_90 tileiras' line info puts the wgmma instructions on a line after the
        # kernel (a blank line), which tile_lab drops: those PTX lines stay unmapped
        assert set(ptx_mma_lines) == {mma_line}
    tc_remarks = [r for r in insp.remarks if r.category == "tensorcore"]
    assert tc_remarks and all(r.line == mma_line for r in tc_remarks)


@pytest.mark.parametrize("arch", ARCHES)
def test_softmax_reductions(inspections, arch):
    insp = inspections[("row_softmax", arch)]
    m = insp.line_map["tileir"]
    reduce_lines = lines_with(insp.tileir, m, r"\breduce\b")
    assert marker_line("softmax max") in reduce_lines
    assert marker_line("softmax sum") in reduce_lines
    assert marker_line("softmax exp") in lines_with(insp.tileir, m, r"\bexp2?\b")


def test_texts_hold_no_paths(inspections):
    for insp in inspections.values():
        for st in insp.stages.values():
            assert "/tmp" not in st.text and "kernels_inspect" not in st.text
        for r in insp.remarks:
            assert "/" not in r.message or "kernels_inspect" not in r.message


def test_spec_and_numpy_args_give_the_same_tileir(inspections):
    a = np.zeros((1024, 1024), np.float16)
    c = np.zeros((1024, 1024), np.float32)
    from_args = tile_lab.inspect(K.gemm, (a, a, c, 128, 128, 32), arch="sm_90")
    from_spec = inspections[("gemm", "sm_90")]
    assert from_args.tileir == from_spec.tileir
    assert from_args.signature == from_spec.signature == \
        "f16[1024,1024], f16[1024,1024], f32[1024,1024], TM=128, TN=128, TK=32"


def test_same_input_gives_identical_output(inspections):
    again = tile_lab.inspect(K.vector_add, CASES["vector_add"][1], arch="sm_90")
    assert again.to_json() == inspections[("vector_add", "sm_90")].to_json()


def test_json_round_trip(inspections):
    insp = inspections[("row_softmax", "sm_100")]
    back = Inspection.from_json(insp.to_json())
    assert back == insp
    assert json.loads(insp.to_json())["versions"]["cuda.tile"].startswith("1.7")


def test_hints_reach_the_bytecode():
    insp = tile_lab.inspect(K.vector_add, CASES["vector_add"][1], arch="sm_100",
                            hints="num_ctas=2,occupancy=4")
    assert insp.hints == {"num_ctas": 2, "occupancy": 4}
    assert "num_cta_in_cga = 2" in insp.tileir and "occupancy = 4" in insp.tileir
    plain = tile_lab.inspect(K.vector_add, CASES["vector_add"][1], arch="sm_100")
    assert "num_cta_in_cga" not in plain.tileir and plain.hints == {}


def test_inlined_helper_maps_to_its_own_line():
    insp = tile_lab.inspect(K.with_helper, "f32[1024], f32[1024], 128", arch="sm_90")
    assert lines_with(insp.tileir, insp.line_map["tileir"], r"\baddf\b") == \
        [marker_line("helper body")]


def test_type_error_points_at_the_mma_line():
    with pytest.raises(CompileError) as info:
        tile_lab.inspect(K.bad_mma_shapes, "f16[64,64], f16[64,64], f32[64,64]", arch="sm_90")
    err = info.value
    assert "Incompatible shapes" in err.message
    assert err.location.line == marker_line("bad mma")
    assert err.location.text.strip().startswith("acc = ct.mma(")
    assert err.location.text[err.location.col:].startswith("ct.mma")
    assert "^" in err.render()


def test_non_power_of_two_tile_points_at_the_load():
    with pytest.raises(CompileError) as info:
        tile_lab.inspect(K.bad_tile_shape, "f32[128], f32[128]", arch="sm_100")
    assert "power of two" in info.value.message
    assert info.value.location.line == marker_line("bad shape")
    assert info.value.location.filename == K.__file__


def test_bad_arguments_raise_clear_errors():
    spec = CASES["vector_add"][1]
    with pytest.raises(CompileError, match="sm_75"):
        tile_lab.inspect(K.vector_add, spec, arch="sm_75")
    with pytest.raises(CompileError, match="unknown kernel hint 'num_warps'"):
        tile_lab.inspect(K.vector_add, spec, hints={"num_warps": 4})
    with pytest.raises(CompileError, match="num_ctas should be power of 2"):
        tile_lab.inspect(K.vector_add, spec, hints="num_ctas=3")
    with pytest.raises(CompileError, match="unknown pane 'asm'"):
        tile_lab.inspect(K.vector_add, spec, show="source,asm")
    with pytest.raises(SignatureError, match=r"@ct\.kernel"):
        tile_lab.inspect(lambda: None, spec)
    with pytest.raises(SignatureError, match=r"takes 4 arguments \(a, b, c, TILE\)"):
        tile_lab.inspect(K.vector_add, "f32[16], f32[16]")


def test_show_and_arch_spellings():
    insp = tile_lab.inspect(K.vector_add, CASES["vector_add"][1], arch="9.0",
                            show="source, sass")
    assert insp.arch == "sm_90" and insp.show == ("source", "sass")
    assert tile_lab.inspect(K.vector_add, CASES["vector_add"][1], arch=(10, 0)).arch == "sm_100"
    from tile_lab.compile.inspect import resolve_arch

    assert [resolve_arch(a) for a in ("sm_90a", "SM_80", "compute_120", 121, "12.0")] == \
        ["sm_90", "sm_80", "sm_120", "sm_121", "sm_120"]


def test_default_arch_without_gpu(monkeypatch):
    from tile_lab import _cutile_compat
    from tile_lab.compile import inspect as _inspect

    monkeypatch.setattr(_cutile_compat, "gpu_compute_capability", lambda device=0: None)
    _inspect.default_arch.cache_clear()
    try:
        assert _inspect.resolve_arch(None) == "sm_90"  # the tour's target
        monkeypatch.setattr(_cutile_compat, "gpu_compute_capability", lambda device=0: (10, 0))
        _inspect.default_arch.cache_clear()
        assert _inspect.resolve_arch(None) == "sm_100"  # the local GPU's
    finally:
        _inspect.default_arch.cache_clear()


def test_kernel_from_linecache_registered_code():
    # what the %%tile magic does: the cell body, registered with linecache under a
    # cell filename with one blank line prepended so line 1 is the "%%tile" line
    import linecache

    cell = ("import cuda.tile as ct\n"
            "@ct.kernel\n"
            "def cell_kernel(x, y, TILE: ct.Constant[int]):\n"
            "    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))\n"
            "    ct.store(y, index=(ct.bid(0),), tile=t * 3)\n")
    filename = "<tile-cell-test-1>"
    source = "\n" + cell
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    insp = tile_lab.inspect(namespace["cell_kernel"], "f32[256], f32[256], 64", arch="sm_90")
    assert insp.filename == filename and insp.first_line == 3
    assert lines_with(insp.tileir, insp.line_map["tileir"], r"\bmulf\b") == [6]
    assert lines_with(insp.tileir, insp.line_map["tileir"], r"load_view_tko") == [5]
    assert {m for m in insp.line_map["sass"] if m} <= {3, 4, 5, 6}
    assert filename not in insp.tileir + insp.sass + insp.cutile_ir


def test_kernel_without_source_is_a_clear_error():
    namespace: dict = {}
    exec(compile("import cuda.tile as ct\n@ct.kernel\ndef nosrc(x):\n    pass\n",
                 "<no-such-file>", "exec"), namespace)
    with pytest.raises(CompileError, match="source of kernel 'nosrc' is not available"):
        tile_lab.inspect(namespace["nosrc"], "f32[16]")


def test_static_shapes_and_int64_scalars_follow_the_annotations():
    insp = tile_lab.inspect(K.static_shape, "f32[4096], i64, 128", arch="sm_100")
    assert "tensor_view<4096xf32, strides=[1]>" in insp.tileir  # shape baked in
    from_args = tile_lab.inspect(K.static_shape, (np.zeros(4096, np.float32), 5, 128),
                                 arch="sm_100")
    assert from_args.tileir == insp.tileir and from_args.signature == "f32[4096], i64, TILE=128"
    # cuTile checks the scalar dtype against ct.ScalarInt64 itself: a SignatureError
    with pytest.raises(SignatureError, match=r"parameter 'n'.*int64"):
        tile_lab.inspect(K.static_shape, "f32[4096], i32, 128", arch="sm_100")


# -- SASS/PTX are made in the background or when first read ---------------------------------

def test_inspect_returns_before_nvdisasm_finishes(monkeypatch):
    monkeypatch.setenv(pipeline.ENV_WHEN, "background")
    real_nvdisasm = disassembly._nvdisasm
    release = threading.Event()
    runs = []

    def held_nvdisasm(cubin, arch):
        runs.append(arch)
        if not release.wait(timeout=60):
            raise AssertionError("nvdisasm was never released")
        return real_nvdisasm(cubin, arch)

    monkeypatch.setattr(disassembly, "_nvdisasm", held_nvdisasm)
    try:
        insp = tile_lab.inspect(K.gemm, CASES["gemm"][1], arch="sm_90")
        # inspect came back while the (held) nvdisasm could not have finished
        assert not insp.stages.is_ready()
        for _ in range(200):  # it started without anyone reading the SASS
            if runs:
                break
            threading.Event().wait(0.05)
        assert runs == ["sm_90"]
        assert "mmaf" in insp.tileir and insp.cutile_ir and insp.remarks
        assert list(insp.stages) == ["cutile", "tileir", "ptx", "sass"]
    finally:
        release.set()
    sass, ptx = insp.sass, insp.ptx  # these wait for it
    assert runs == ["sm_90"]  # one nvdisasm run gives both SASS and PTX
    monkeypatch.undo()
    # the same text and line maps as the eager one-stage-at-a-time functions give
    assert insp.stages["sass"] == disassembly.sass_from_cubin(insp.cubin, "sm_90",
                                                               filename=insp.filename)
    assert insp.stages["ptx"] == disassembly.ptx_from_cubin(insp.cubin, "sm_90",
                                                             filename=insp.filename)
    assert re.search(r"\bHGMMA\.", sass) and "wgmma.mma_async" in ptx
    assert Inspection.from_json(insp.to_json()) == insp


def test_outside_ipython_nvdisasm_runs_only_when_the_sass_is_read(monkeypatch):
    """A script (or a tuner) that reads no SASS runs no nvdisasm; the first read runs it
    once, in the reading thread, and gives the same stages as the eager functions."""
    monkeypatch.delenv(pipeline.ENV_WHEN, raising=False)
    monkeypatch.setattr(pipeline, "_in_ipython", lambda: False)
    real_nvdisasm = disassembly._nvdisasm
    runs = []

    def counted_nvdisasm(cubin, arch):
        runs.append(threading.current_thread().name)
        return real_nvdisasm(cubin, arch)

    monkeypatch.setattr(disassembly, "_nvdisasm", counted_nvdisasm)
    insp = tile_lab.inspect(K.row_softmax, CASES["row_softmax"][1], arch="sm_90")
    assert insp.tileir and insp.cutile_ir and list(insp.stages) == ["cutile", "tileir",
                                                                     "ptx", "sass"]
    threading.Event().wait(0.5)  # time a background start would have had
    assert runs == [] and not insp.stages.is_ready()
    readers = [threading.Thread(target=lambda: insp.sass) for _ in range(3)]
    for t in readers:
        t.start()
    for t in readers:
        t.join(timeout=120)
    assert len(runs) == 1 and runs[0] != "MainThread"  # one run, in one of the readers
    assert insp.stages.is_ready()
    monkeypatch.undo()
    assert insp.stages["sass"] == disassembly.sass_from_cubin(insp.cubin, "sm_90",
                                                               filename=insp.filename)
    assert Inspection.from_json(insp.to_json()) == insp


def test_in_an_ipython_session_nvdisasm_starts_with_the_compile(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.delenv(pipeline.ENV_WHEN, raising=False)
    had_shell = InteractiveShell.initialized()
    assert pipeline.when_machine_code() == ("background" if had_shell else "on-read")
    InteractiveShell.instance()
    try:
        assert pipeline.when_machine_code() == "background"
    finally:
        if not had_shell:
            InteractiveShell.clear_instance()
    monkeypatch.setenv(pipeline.ENV_WHEN, "on-read")
    assert pipeline.when_machine_code() == "on-read"
    monkeypatch.setenv(pipeline.ENV_WHEN, "soon")
    with pytest.raises(tile_lab.TileLabError, match=r"TILE_LAB_SASS='soon': use background"):
        tile_lab.inspect(K.vector_add, CASES["vector_add"][1], arch="sm_80")


@pytest.mark.parametrize("when", ["background", "on-read"])
def test_nvdisasm_failure_surfaces_when_sass_is_read(monkeypatch, when):
    monkeypatch.setenv(pipeline.ENV_WHEN, when)
    def failing_nvdisasm(cubin, arch):
        raise ToolchainError(f"disassembling the {arch} cubin: nvdisasm crashed")

    monkeypatch.setattr(disassembly, "_nvdisasm", failing_nvdisasm)
    insp = tile_lab.inspect(K.vector_add, CASES["vector_add"][1], arch="sm_80")
    assert insp.tileir.count("load_view_tko") == 2  # everything else is there
    with pytest.raises(ToolchainError) as lazy_error:
        insp.sass  # noqa: B018
    with pytest.raises(ToolchainError) as eager_error:
        disassembly.sass_from_cubin(insp.cubin, "sm_80")
    assert lazy_error.value.message == eager_error.value.message == \
        "disassembling the sm_80 cubin: nvdisasm crashed"
    for read in (lambda: insp.ptx, lambda: insp.line_map, insp.to_json,
                 insp._repr_mimebundle_):
        with pytest.raises(ToolchainError, match="nvdisasm crashed"):
            read()
