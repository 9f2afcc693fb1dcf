"""tile_lab.cpp: CUDA Tile C++ compiled with the pip nvcc, launched on CuPy, compared with Python.

The C++ examples live in tests/cpp_examples/*.cu (the CUDA guide's paired patterns) and their
cuTile Python twins in tests/cpp_examples/py_twins.py. Lines are looked up by the text on
them, never by hard-coded numbers.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tile_lab
from tile_lab.cpp import compare, find_kernel_names, inspect_cpp, launch_cpp
from tile_lab.cpp.compare import OpLine, align_ops, kernel_ops
from tile_lab.cpp.diagnostics import parse_diagnostics
from tile_lab.cpp.launch import Param, _pack_scalar, entry_params, kernel_args
from tile_lab.cpp.source import match_symbol, symbol_base_name
from tile_lab.errors import CompileError, NoGPUError, SignatureError, ToolchainError

EXAMPLES = Path(__file__).parent / "cpp_examples"
sys.path.insert(0, str(EXAMPLES))
import py_twins  # noqa: E402

ARCHS = ("sm_80", "sm_90", "sm_100")

# example -> Tile IR ops its kernel must contain (the pattern the example teaches)
EXPECTED_OPS = {
    "vector_add": ("get_tile_block_id", "assume", "load_view_tko", "addf", "store_view_tko"),
    "vector_add_masked": ("load_view_tko", "addf", "store_view_tko"),
    "gather": ("load_view_tko", "broadcast", "offset", "load_ptr_tko", "store_view_tko"),
    "tile_sum": ("for", "load_view_tko", "addf", "continue", "reduce", "store_view_tko"),
    "gemm": ("for", "load_view_tko", "mmaf", "continue", "store_view_tko"),
    "block_sum": ("load_view_tko", "reduce", "atomic_red_view_tko"),
}
# example -> (op, text on the C++ line it must map to)
EXPECTED_LINES = {
    "vector_add": [("addf", "vc.store(ta + tb"), ("store_view_tko", "vc.store("),
                   ("get_tile_block_id", "ct::bid()")],
    "vector_add_masked": [("load_view_tko", "va.load_masked(bid)")],
    "gather": [("load_ptr_tko", "ct::load(ptrs)"), ("offset", "+ offsets")],
    "tile_sum": [("addf", "acc = acc + vx.load"), ("reduce", "ct::sum(acc")],
    "gemm": [("mmaf", "ct::mma("), ("store_view_tko", "vc.store(acc")],
    "block_sum": [("reduce", "ct::sum("),
                  ("atomic_red_view_tko", "ct::thread_scope_device_t{}, 0)")],
}
PY_SPECS = {
    "vector_add": "f32[4096], f32[4096], f32[4096]",
    "gemm": "f32[256,256], f32[256,256], f32[256,256]",
}


def line_of(source: str, snippet: str) -> int:
    """1-based line of the only line of ``source`` containing ``snippet``."""
    hits = [i + 1 for i, t in enumerate(source.splitlines()) if snippet in t]
    assert len(hits) == 1, f"{snippet!r} is on lines {hits}"
    return hits[0]


def kernel_body_lines(source: str, name: str) -> range:
    """Lines from the kernel's ``__tile_global__`` line to its closing brace."""
    lines = source.splitlines()
    start = next(i for i, t in enumerate(lines) if "__tile_global__" in t and f" {name}(" in t)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("}"))
    return range(start + 1, end + 2)


def op_lines(insp, op: str) -> list[int | None]:
    """Source lines the Tile IR maps each ``op`` to."""
    st = insp.stages["tileir"]
    pat = re.compile(r"^\s*(?:%[^=]*?=\s*)?" + re.escape(op) + r"\b")
    return [ln for text, ln in zip(st.lines(), st.line_map) if pat.match(text)]


# -- reading source ----------------------------------------------------------------------

def test_find_kernel_names_skips_comments_and_handles_attributes():
    src = """
// __tile_global__ void commented_out(float* a) {}
/* __tile_global__ void also_commented(int) */
[[ cutile::hint(0, num_cta_per_cga=2) ]]
__tile_global__ void first(float* a, std::size_t n) { }
template <int T>
__tile_global__
void second_one (int* x) { }
extern "C" __tile_global__ void third(float* y) { }
__device__ void not_a_kernel(float* z) { }
"""
    assert find_kernel_names(src) == ["first", "second_one", "third"]


def test_symbols_match_kernel_names():
    assert symbol_base_name("_Z10vector_addPfS_S_m") == "vector_add"
    assert symbol_base_name("_ZN2ns4gemmEPfS_S_iii") == "gemm"
    assert symbol_base_name("plain_c_name") == "plain_c_name"
    syms = ["_Z3addPfS_", "_Z10vector_addPfS_S_m"]
    assert match_symbol(syms, "vector_add") == "_Z10vector_addPfS_S_m"
    assert match_symbol(syms, "vector") is None


# -- compiling the guide's examples ------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("example", sorted(EXPECTED_OPS))
def test_example_compiles_with_ops_and_line_map(example, arch):
    path = EXAMPLES / f"{example}.cu"
    insp = inspect_cpp(path, arch=arch)
    source = path.read_text()
    assert insp.kernel_name == example and insp.arch == arch and insp.filename == path.name
    assert insp.cubin[:4] == b"\x7fELF"
    for op in EXPECTED_OPS[example]:
        assert op_lines(insp, op), f"{op} missing from the {arch} Tile IR of {example}"
    # every located Tile IR line points into the kernel, and most ops are located
    body = kernel_body_lines(source, example)
    tileir_lines = [ln for ln in insp.stages["tileir"].line_map if ln is not None]
    assert tileir_lines and all(ln in body for ln in tileir_lines)
    for op, snippet in EXPECTED_LINES[example]:
        assert line_of(source, snippet) in op_lines(insp, op), (op, snippet)
    # SASS: instructions are located too, inside the kernel
    sass_lines = [ln for ln in insp.stages["sass"].line_map if ln is not None]
    assert len(sass_lines) >= 10 and all(ln in body for ln in sass_lines)
    assert re.search(r"/\*[0-9a-f]{4}\*/", insp.sass)


def test_stage_text_has_no_temporary_or_install_paths(monkeypatch, tmp_path):
    from tile_lab.cpp.build import _inspect_cached

    monkeypatch.setenv("TILE_LAB_CACHE_DIR", str(tmp_path / "tools"))  # empty: nvcc runs
    _inspect_cached.cache_clear()
    insp = inspect_cpp(EXAMPLES / "vector_add.cu", arch="sm_90")
    for name, st in insp.stages.items():
        assert "/tmp" not in st.text and "tile_lab_" not in st.text, name
        assert "site-packages" not in st.text, name
    assert all("/tmp" not in r.message for r in insp.remarks)
    assert any(line is not None for line in insp.stages["sass"].line_map)
    # compiling again in a fresh temporary folder gives the very same text (the cubin's
    # debug section still names the temporary folder: it is binary and never shown)...
    monkeypatch.setenv("TILE_LAB_CACHE_DIR", "off")
    _inspect_cached.cache_clear()
    again = inspect_cpp(EXAMPLES / "vector_add.cu", arch="sm_90")
    assert again.stages == insp.stages and again.remarks == insp.remarks
    # ...and so does the first run's bytecode from the disk cache, though it names the
    # first run's folder, gone now (line maps and scrubbing follow that folder)
    monkeypatch.setenv("TILE_LAB_CACHE_DIR", str(tmp_path / "tools"))
    _inspect_cached.cache_clear()
    cached = inspect_cpp(EXAMPLES / "vector_add.cu", arch="sm_90")
    assert cached.stages == insp.stages and cached.remarks == insp.remarks


def test_remarks_point_at_cpp_lines():
    path = EXAMPLES / "vector_add.cu"
    insp = inspect_cpp(path, arch="sm_100")
    body = kernel_body_lines(path.read_text(), "vector_add")
    located = [r for r in insp.remarks if r.line is not None]
    assert located and all(r.line in body for r in located)


def test_defines_set_template_constants():
    src = """#include "cuda_tile.h"
namespace ct = cuda::tiles;
__tile_global__ void scale(float* x, std::size_t n) {
  auto v = ct::partition_view{ct::tensor_span{x, ct::extents{n}},
                              ct::shape{ct::integral_constant<TILE>{}}};
  auto b = ct::bid().x;
  v.store(v.load(b) * 2.0f, b);
}
"""
    small = inspect_cpp(src, "scale", arch="sm_90", defines={"TILE": 256})
    big = inspect_cpp(src, "scale", arch="sm_90", defines={"TILE": 1024})
    assert "tile=(256)" in small.tileir and "tile=(256)" not in big.tileir
    assert "tile=(1024)" in big.tileir
    assert small.hints == {"defines": ["-DTILE=256"]} and "-DTILE=256" in small.signature
    with pytest.raises(CompileError, match="macro name"):
        inspect_cpp(src, "scale", defines={"not valid": 1})


def test_includes_next_to_a_cu_file_and_from_include_dirs(tmp_path):
    (tmp_path / "tiles.cuh").write_text("#define TILE 128\n")
    kernel = """#include "cuda_tile.h"
#include "tiles.cuh"
namespace ct = cuda::tiles;
__tile_global__ void twice(float* x, std::size_t n) {
  auto v = ct::partition_view{ct::tensor_span{x, ct::extents{n}},
                              ct::shape{ct::integral_constant<TILE>{}}};
  v.store(v.load(ct::bid().x) * 2.0f, ct::bid().x);
}
"""
    (tmp_path / "twice.cu").write_text(kernel)
    assert "tile=(128)" in inspect_cpp(tmp_path / "twice.cu", arch="sm_90").tileir
    assert "tile=(128)" in inspect_cpp(kernel, arch="sm_90", include_dirs=[tmp_path]).tileir
    with pytest.raises(CompileError, match=r"tiles\.cuh"):
        inspect_cpp(kernel, arch="sm_90")


def test_inspection_round_trips_through_json():
    insp = inspect_cpp(EXAMPLES / "vector_add.cu", arch="sm_90")
    back = tile_lab.Inspection.from_json(insp.to_json())
    assert back == insp


# -- compile errors point at the cell line -----------------------------------------------

def cell(*lines: str) -> str:
    """Cell text as the %%tile magic passes it: one blank line first, so line N of the
    text is line N of the cell (the %%tile line being line 1)."""
    return "\n" + "\n".join(lines) + "\n"


CELL_HEAD = ('#include "cuda_tile.h"', "namespace ct = cuda::tiles;",
             "using namespace ct::literals;")


def test_syntax_error_points_at_cell_line_and_column():
    text = cell(*CELL_HEAD,
                "__tile_global__ void k(float* a, std::size_t n) {",
                "  auto v = ct::partition_view{ct::tensor_span{a, ct::extents{n}}, "
                "ct::shape{128_ic}};",
                "  auto t = v.load(ct::bid().x) + undefined_thing;",
                "  v.store(t, ct::bid().x);",
                "}")
    with pytest.raises(CompileError) as info:
        inspect_cpp(text, "k", arch="sm_90", filename="<cell>")
    err = info.value
    bad = line_of(text, "undefined_thing")
    assert err.location.line == bad and err.location.filename == "<cell>"
    assert err.location.text.strip().startswith("auto t = v.load")
    assert err.location.col == text.splitlines()[bad - 1].index("undefined_thing")
    assert "undefined_thing" in err.message
    assert f"line {bad}" in err.render()


def test_error_inside_cuda_tile_h_points_at_the_instantiating_line():
    # a non-power-of-two tile is rejected by a static_assert inside cuda_tile.h
    text = cell(*CELL_HEAD,
                "__tile_global__ void k(float* a, std::size_t n) {",
                "  auto i = ct::bid().x;",
                "  auto v = ct::partition_view{ct::tensor_span{a, ct::extents{n}}, "
                "ct::shape{012_ic}};",
                "  v.store(v.load(i), i);",
                "}")
    with pytest.raises(CompileError) as info:
        inspect_cpp(text, "k", arch="sm_90", filename="<cell>")
    assert info.value.location.line == line_of(text, "012_ic")
    assert "/tmp" not in info.value.message and "/tmp" not in (info.value.hint or "")


FAKE_OLD_NVCC = """#!/bin/sh
case "$1" in
  --version) echo "nvcc: NVIDIA (R) Cuda compiler driver"
             echo "Cuda compilation tools, release 13.0, V13.0.88" ;;
  *) echo "nvcc fatal   : 'ilebc': expected a number" >&2; exit 1 ;;
esac
"""


@pytest.fixture
def old_nvcc_on_path(tmp_path, monkeypatch):
    """A CUDA 13.0 nvcc (no CUDA Tile C++) on PATH and no pip nvcc: a GPU box's toolkit."""
    from tile_lab.compile import toolchain
    from tile_lab.cpp.build import _inspect_cached

    fake = tmp_path / "nvcc"
    fake.write_text(FAKE_OLD_NVCC)
    fake.chmod(0o755)
    caches = (toolchain.find_tool, toolchain.tool_version, _inspect_cached)
    for c in caches:
        c.cache_clear()
    monkeypatch.setattr(toolchain, "_pip_bin_dirs", lambda: [])
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    yield fake
    monkeypatch.undo()
    for c in caches:
        c.cache_clear()


def test_an_nvcc_without_cuda_tile_cpp_is_named_too_old(old_nvcc_on_path):
    # it failed with nvcc's own "nvcc fatal : 'ilebc': expected a number"
    with pytest.raises(ToolchainError) as info:
        inspect_cpp((EXAMPLES / "vector_add.cu").read_text(), "vector_add", arch="sm_90")
    text = info.value.render()
    assert f"nvcc 13.0.88 ({old_nvcc_on_path}) is too old for CUDA Tile C++" in text
    assert "need nvcc 13.4 or newer" in text and "ilebc" not in text
    assert "pip install 'nvidia-cuda-nvcc>=13.4'" in text


def test_missing_kernel_and_ambiguous_kernels_are_clear():
    src = "\n".join([*CELL_HEAD, "__tile_global__ void a(float* x) { }",
                     "__tile_global__ void b(float* x) { }"])
    with pytest.raises(CompileError, match="several kernels"):
        inspect_cpp(src, arch="sm_90")
    with pytest.raises(CompileError, match="no __tile_global__ kernel named 'c'"):
        inspect_cpp(src, "c", arch="sm_90")
    with pytest.raises(CompileError, match="arch"):
        inspect_cpp(src, "a", arch="sm_75")


def test_parse_diagnostics_reads_nvcc_and_gcc_formats():
    out = ("/t/k.cu(7): error: identifier \"x\" is undefined\n    y = x;\n        ^\n\n"
           "/t/k.cu:2:10: fatal error: nope.h: No such file or directory\n")
    d = parse_diagnostics(out)
    assert [(x.path, x.line, x.severity) for x in d] == [("/t/k.cu", 7, "error"),
                                                         ("/t/k.cu", 2, "fatal error")]
    assert d[1].col == 9


# -- compare with the Python twin --------------------------------------------------------

@pytest.fixture(scope="module")
def vector_add_pair():
    py = tile_lab.inspect(py_twins.vector_add, PY_SPECS["vector_add"], arch="sm_90")
    cpp = inspect_cpp(EXAMPLES / "vector_add.cu", arch="sm_90")
    return py, cpp


def test_compare_aligns_load_add_store(vector_add_pair):
    py, cpp = vector_add_pair
    cmp = compare(py, cpp)
    assert len(cmp.matched("load_view_tko")) == 2
    assert len(cmp.matched("addf")) == 1 and len(cmp.matched("store_view_tko")) == 1
    # aligned ops come from the lines doing the same thing in each language
    py_src, cpp_src = py.source, cpp.source
    add = cmp.matched("addf")[0]
    assert add.kind == "same"
    assert add.py.source_line == py.first_line + line_of(py_src, "tile=ta + tb") - 1
    assert add.cpp.source_line == line_of(cpp_src, "ta + tb")
    # every op of both kernels appears exactly once, in its original order
    assert [p.py for p in cmp.pairs if p.py] == kernel_ops(py)
    assert [p.cpp for p in cmp.pairs if p.cpp] == kernel_ops(cpp)


def test_compare_html_is_escaped_and_deterministic(vector_add_pair):
    py, cpp = vector_add_pair
    html_a = compare(py, cpp)._repr_html_()
    html_b = compare(py, cpp)._repr_html_()
    assert html_a == html_b
    assert "tile&lt;1024xf32&gt;" in html_a and "<script" not in html_a
    assert "class='same'" in html_a and "only in" in html_a


def test_compare_accepts_a_kernel_and_cpp_text():
    cpp_text = (EXAMPLES / "vector_add.cu").read_text()
    cmp = compare(py_twins.vector_add, cpp_text, py_args=PY_SPECS["vector_add"], arch="sm_90")
    assert cmp.py_arch == cmp.cpp_arch == "sm_90"
    assert "addf" in cmp.common_ops
    with pytest.raises(tile_lab.TileLabError, match="py_args"):
        compare(py_twins.vector_add, cpp_text)


def test_align_ops_anchors_work_ops_across_bookkeeping():
    def ops(*names):
        return [OpLine(n, f"%x = {n} : t", None, None) for n in names]

    pairs = align_ops(ops("assume", "assume", "load", "addf", "store"),
                      ops("muli", "addi", "load", "cmpi", "addf", "store"))
    kinds = [(p.kind, p.py.op if p.py else None, p.cpp.op if p.cpp else None) for p in pairs]
    assert ("same", "load", "load") in kinds and ("same", "addf", "addf") in kinds
    assert ("cpp_only", None, "cmpi") in kinds
    assert sum(1 for k in kinds if k[0] == "same") == 3


# -- launching ---------------------------------------------------------------------------

def test_entry_params_and_scalar_packing():
    insp = inspect_cpp(EXAMPLES / "gemm.cu", arch="sm_90")
    symbol = re.search(r"entry @(\w+)\(", insp.tileir).group(1)
    params = entry_params(insp.tileir, symbol)
    assert [(p.type, p.pointer) for p in params] == [("f32", True)] * 3 + [("i32", False)] * 3
    assert _pack_scalar(Param(0, "i64", False), 5, "n").dtype == np.int64
    assert _pack_scalar(Param(0, "i64", False), 2**63, "n").dtype == np.uint64
    assert _pack_scalar(Param(0, "f32", False), 1.5, "s").dtype == np.float32
    with pytest.raises(SignatureError, match="does not fit"):
        _pack_scalar(Param(3, "i32", False), 2**40, "argument 3")
    with pytest.raises(SignatureError, match="scalar"):
        _pack_scalar(Param(3, "i32", False), 1.5, "argument 3")


def test_kernel_args_check_arrays_against_the_abi():
    # NumPy stands in for CuPy: the checks only use ndarray, dtype and flags
    import types
    fake_cupy = types.SimpleNamespace(ndarray=np.ndarray, asarray=np.asarray)
    params = (Param(0, "f32", True), Param(1, "i64", False))
    x = np.zeros(8, np.float32)
    packed = kernel_args(fake_cupy, params, [x, 8])
    assert packed[0] is x and packed[1].dtype == np.int64
    with pytest.raises(SignatureError, match=r"argument 0.*float64"):
        kernel_args(fake_cupy, params, [x.astype(np.float64), 8])
    with pytest.raises(SignatureError, match="C-contiguous"):
        kernel_args(fake_cupy, params, [np.zeros(16, np.float32)[::2], 8])
    with pytest.raises(SignatureError, match="takes 2 arguments"):
        kernel_args(fake_cupy, params, [x])
    with pytest.raises(SignatureError, match="CuPy array"):
        kernel_args(fake_cupy, params, [[0.0] * 8, 8])
    with pytest.raises(SignatureError, match="bare cubin"):
        kernel_args(fake_cupy, None, [x, 8])


def _no_gpu() -> bool:
    from tile_lab.gpu.device import gpu_available
    return not gpu_available()


@pytest.mark.skipif(not _no_gpu(), reason="checks the behaviour without a GPU")
def test_launch_without_gpu_raises_clear_nogpuerror():
    insp = inspect_cpp(EXAMPLES / "vector_add.cu", arch="sm_90")
    a = np.ones(4096, np.float32)
    with pytest.raises(NoGPUError) as info:
        launch_cpp(insp, None, (4,), [a, a, a.copy(), a.size])
    assert "Python kernels only" in info.value.hint


def _gpu_inspection(cu_name, arch):
    # On the lent GPU the C++ examples arrive precompiled (tools/precompile_cpp.py).
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from precompile_cpp import cpp_inspection

    return cpp_inspection(EXAMPLES / cu_name, arch)


@pytest.mark.gpu
def test_gpu_launch_vector_add_and_masked_edge():
    import cupy as cp

    from tile_lab.gpu.device import local_arch
    arch = local_arch()
    n = 1 << 20
    a = cp.random.rand(n, dtype=cp.float32)
    b = cp.random.rand(n, dtype=cp.float32)
    c = cp.zeros_like(a)
    launch_cpp(_gpu_inspection("vector_add.cu", arch), None, (n // 1024,),
               [a, b, c, n])
    cp.testing.assert_allclose(c, a + b)
    m = 1000 + 256 * 7  # not a multiple of the 256-element tile
    a2, b2 = a[:m].copy(), b[:m].copy()
    c2 = cp.full(m + 64, -1.0, dtype=cp.float32)  # guard past the end must stay -1
    launch_cpp(_gpu_inspection("vector_add_masked.cu", arch), None,
               ((m + 255) // 256,), [a2, b2, c2, m])
    cp.testing.assert_allclose(c2[:m], a2 + b2)
    assert bool((c2[m:] == -1).all())


@pytest.mark.gpu
def test_gpu_launch_gemm():
    import cupy as cp

    from tile_lab.gpu.device import local_arch
    M, N, K = 256, 192, 128
    A = cp.random.rand(M, K, dtype=cp.float32)
    B = cp.random.rand(K, N, dtype=cp.float32)
    C = cp.zeros((M, N), dtype=cp.float32)
    launch_cpp(_gpu_inspection("gemm.cu", local_arch()), None, (M // 64, N // 64),
               [A, B, C, M, N, K])
    # tensor cores may use TF32 for f32 inputs: compare with a TF32-sized tolerance
    cp.testing.assert_allclose(C, A @ B, rtol=2e-2, atol=1e-2)


@pytest.mark.gpu
def test_gpu_launch_block_sum_and_bad_args():
    import cupy as cp

    from tile_lab.gpu.device import local_arch
    insp = _gpu_inspection("block_sum.cu", local_arch())
    x = cp.random.rand(5000, dtype=cp.float32)
    total = cp.zeros(1, dtype=cp.float32)
    launch_cpp(insp, None, ((x.size + 1023) // 1024,), [x, total, x.size])
    # float32 sums in a different order: compare with the float64 sum, relatively
    exact = float(x.astype(cp.float64).sum())
    assert abs(float(total[0]) - exact) <= 1e-4 * exact
    with pytest.raises(SignatureError, match="float64"):
        launch_cpp(insp, None, (1,), [x.astype(cp.float64), total, x.size])
    with pytest.raises(SignatureError, match="takes 3 arguments"):
        launch_cpp(insp, None, (1,), [x, total])


@pytest.mark.gpu
def test_gpu_launch_gather_and_tile_sum():
    import cupy as cp

    from tile_lab.gpu.device import local_arch
    arch = local_arch()
    n = 128 * 32
    x = cp.random.rand(n, dtype=cp.float32)
    idx = cp.random.randint(0, n, size=n, dtype=cp.int32)
    out = cp.zeros(n, dtype=cp.float32)
    launch_cpp(_gpu_inspection("gather.cu", arch), None, (n // 128,),
               [x, idx, out, n])
    cp.testing.assert_array_equal(out, x[idx])
    rows, cols = 256, 512
    m = cp.random.rand(rows, cols, dtype=cp.float32)
    sums = cp.zeros(rows, dtype=cp.float32)
    launch_cpp(_gpu_inspection("tile_sum.cu", arch), None, (rows // 16,),
               [m, sums, rows, cols])
    cp.testing.assert_allclose(sums, m.sum(axis=1), rtol=1e-5)


def test_the_nvcc_cache_key_follows_included_headers(tmp_path):
    from tile_lab.cpp.source import include_fingerprint

    (tmp_path / "sizes.h").write_text('#pragma once\n#include "more.h"\n#define TILE 128\n')
    (tmp_path / "more.h").write_text("#define MORE 1\n")
    source = '#include <cuda_tile.h>\n#include "sizes.h"\n// #include "commented.h"\n'
    before = include_fingerprint(source, [str(tmp_path)])
    assert before is not None and b"#define TILE 128" in before and b"#define MORE 1" in before
    assert b"commented.h" not in before
    (tmp_path / "more.h").write_text("#define MORE 2\n")  # a header the header includes
    assert include_fingerprint(source, [str(tmp_path)]) != before
    assert include_fingerprint('#include HEADER_FROM_A_MACRO\n', [str(tmp_path)]) is None
