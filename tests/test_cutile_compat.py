"""Every private cuTile entry point tile_lab uses, exercised directly.

When a cuTile upgrade moves or changes one of them, the failure shows up here, named.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import cuda.tile as ct
import kernels_inspect as K
import pytest

from tile_lab import _cutile_compat as compat
from tile_lab._cutile_compat import kernel_compile
from tile_lab.compile.signature import signature_from_spec
from tile_lab.errors import ToolchainError

VADD_SPEC = "f32[1024], f32[1024], f32[1024], 128"


def test_installed_version_is_supported():
    assert compat.installed_version().startswith("1.7.")
    assert compat.version_problem() is None
    compat.require_supported_cutile()


@pytest.mark.parametrize("version", ["1.6.2", "1.8.0", "2.0.0"])
def test_other_versions_fail_loudly(monkeypatch, version):
    assert version in compat.version_problem(version)
    monkeypatch.setattr(compat, "installed_version", lambda: version)
    with pytest.raises(ToolchainError, match=version.replace(".", r"\.")):
        compat.require_supported_cutile()


def test_kernel_introspection():
    assert compat.is_kernel(K.vector_add) and not compat.is_kernel(K._twice)
    assert compat.python_function(K.vector_add).__name__ == "vector_add"
    params = compat.kernel_parameters(K.vector_add)
    assert [(p.name, p.constant) for p in params] == [
        ("a", False), ("b", False), ("c", False), ("TILE", True)]
    annotated = compat.kernel_parameters(K.annotated)
    assert annotated[0].annotation is ct.Array and annotated[1].annotation is int


def test_kernel_facts_carry_the_changed_options_as_plain_data():
    facts = compat.kernel_facts(K.vector_add, {"num_ctas": ct.ByTarget(sm_100=2, default=1),
                                              "occupancy": 2})
    assert facts.name == "vector_add" and [p.name for p in facts.parameters][-1] == "TILE"
    assert compat.opt_level(facts.options, "sm_90") == 3
    # a ct.ByTarget as its repr: what an Inspection's hints (JSON) hold
    assert facts.changed_options == {"num_ctas": "ByTarget(sm_100=2, default=1)",
                                     "occupancy": 2}
    assert compat.kernel_facts(K._twice) is None


def test_compiler_options_and_hints():
    names = compat.hint_names()
    assert {"num_ctas", "occupancy", "opt_level", "num_worker_warps"} <= set(names)
    opts = compat.compiler_options(K.vector_add, {"num_ctas": 2})
    assert compat.options_as_dict(opts) == {"num_ctas": 2}
    assert compat.options_as_dict(compat.compiler_options(K.vector_add)) == {}
    assert compat.opt_level(compat.compiler_options(K.vector_add, {"opt_level": 1}),
                            "sm_90") == 1
    with pytest.raises(ValueError, match="power of 2"):
        compat.compiler_options(K.vector_add, {"num_ctas": 3})
    with pytest.raises(TypeError):
        compat.compiler_options(K.vector_add, {"bogus": 1})


def test_frontend_gives_located_ir_and_bytecode():
    sig = signature_from_spec(K.vector_add, VADD_SPEC).kernel_signature
    front = compat.compile_frontend(K.vector_add, sig, "sm_90",
                                    compat.compiler_options(K.vector_add))
    assert front.symbol.startswith("vector_add_")
    assert "tile_load" in front.cutile_ir and "tile_store" in front.cutile_ir
    assert f"// {K.__file__}:" in front.cutile_ir  # per-op source locations
    assert front.bytecode[:8] == b"\x7fTileIR\x00"


def test_cutile_own_compile_gives_a_cubin():
    sig = signature_from_spec(K.vector_add, VADD_SPEC).kernel_signature
    cubin = compat.compile_cubin_like_cutile(K.vector_add, sig, "sm_90",
                                             compat.compiler_options(K.vector_add))
    assert cubin[:4] == b"\x7fELF"


def test_tile_errors_and_their_locations():
    sig = signature_from_spec(K.bad_tile_shape, "f32[128], f32[128]").kernel_signature
    with pytest.raises(Exception) as info:
        compat.compile_frontend(K.bad_tile_shape, sig, "sm_90",
                                compat.compiler_options(K.bad_tile_shape))
    exc = info.value
    assert compat.is_tile_error(exc) and not compat.is_tile_error(ValueError())
    assert "power of two" in compat.tile_error_message(exc)
    filename, line, col = compat.tile_error_location(exc)
    assert filename == K.__file__ and col == 8
    assert compat.tile_error_call_sites(exc) == [(filename, line, col)]
    assert compat.tile_error_location(ValueError()) is None


def test_parse_tileiras_stderr():
    msg, loc = compat.parse_tileiras_stderr(
        'loc("/home/u/k.py":12:4): error: unsupported tile shape\n')
    assert msg == "unsupported tile shape" and loc == ("/home/u/k.py", 12, 4)
    msg, loc = compat.parse_tileiras_stderr("error: failed to compile Tile IR program\n")
    assert "failed to compile" in msg and loc is None


def test_gpu_queries_never_raise():
    cc = compat.gpu_compute_capability()
    assert cc is None or (isinstance(cc, tuple) and len(cc) == 2)
    drv = compat.driver_cuda_version()
    assert drv is None or (isinstance(drv, tuple) and drv[0] >= 11)


def test_empty_module_bytecode():
    assert compat.empty_module_bytecode()[:8] == b"\x7fTileIR\x00"


def test_warm_compiler_queries_fills_cutiles_per_process_caches():
    from cuda.tile._compile import (
        _get_compiler_version_string,
        _get_max_supported_bytecode_version,
    )

    compat.warm_compiler_queries()
    # both are functools caches: after the warm-up, the first compile finds them filled
    assert _get_compiler_version_string.cache_info().currsize == 1
    assert _get_max_supported_bytecode_version.cache_info().currsize >= 1


def test_select_tileiras_runs_the_chosen_build_and_gives_cutiles_own_back(tmp_path):
    from tile_lab._cutile_compat.tileiras_choice import select_tileiras
    from tile_lab.compile.toolchain import find_tool

    log = tmp_path / "calls.log"
    chosen = tmp_path / "bin"
    chosen.mkdir()
    wrapper = chosen / "tileiras"  # logs each run, then runs the real build (its ptxas, libnvvm)
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {find_tool("tileiras")} "$@"\n')
    wrapper.chmod(0o755)

    def compile_once(spec: str, cache: str) -> bytes:
        sig = signature_from_spec(K.vector_add, spec).kernel_signature
        with compat.use_cache_dir(str(tmp_path / cache)):  # empty: cuTile runs tileiras
            return compat.compile_cubin_like_cutile(K.vector_add, sig, "sm_90",
                                                    compat.compiler_options(K.vector_add))

    try:
        assert "release 13." in select_tileiras(chosen)
        assert "--version" in log.read_text()
        assert compile_once(VADD_SPEC, "a")[:4] == b"\x7fELF"
        runs = log.read_text().splitlines()
        assert any("sm_90" in r and "-o" in r for r in runs)
    finally:
        select_tileiras(None)
    before = log.read_text()
    assert compile_once("f32[2048], f32[2048], f32[2048], 256", "b")[:4] == b"\x7fELF"
    assert log.read_text() == before  # cuTile's own lookup again: the wrapper ran no more
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ToolchainError, match=r"no tileiras executable in .*empty"):
        select_tileiras(empty)


@ct.kernel
def _tuple_params(out, cfg: tuple[int, ct.Constant[int]], rest: tuple[ct.Constant[int], ...]):
    ct.scatter(out, (0,), cfg[0])


def test_kernel_parameters_read_tuple_item_annotations():
    _, cfg, rest = compat.kernel_parameters(_tuple_params)
    assert cfg.is_tuple and [i.constant for i in cfg.items] == [False, True]
    assert rest.is_tuple and rest.items is None and rest.each.constant


def test_check_launch_arguments_raises_cuTiles_own_TypeError():
    import numpy as np

    if compat._driver_loads():
        pytest.skip("a CUDA driver loads: host arrays are the emulator's and go unchecked")
    out = np.zeros(1, np.int32)
    compat.check_launch_arguments(_tuple_params, (out, (1, 2), (3,)))  # fine: no error
    with pytest.raises(TypeError, match="Received a tuple of length 3 for a parameter "
                                        "annotated as a tuple of length 2"):
        compat.check_launch_arguments(_tuple_params, (out, (1, 2, 3), (3,)))
    with pytest.raises(TypeError, match="Kernel expects 3 arguments but 2 were given"):
        compat.check_launch_arguments(_tuple_params, (out, (1, 2)))


def test_rejections_and_parameter_errors_are_told_apart():
    from cuda.tile._exception import InternalError, TileTypeError

    assert compat.is_kernel_rejection(TileTypeError("x"))
    assert not compat.is_kernel_rejection(InternalError("x"))
    assert not compat.is_kernel_rejection(TypeError("x"))
    assert not compat.is_parameter_error(TypeError("raised here, not by cuTile"))


def test_native_dtype_reads_foreign_dtypes_as_cutile_does():
    torch = pytest.importorskip("torch")
    assert compat.native_dtype(torch.bfloat16) is ct.bfloat16
    assert compat.native_dtype(3) is None and compat.native_dtype([1]) is None


def test_signatures_without_driver_builds_cutiles_signature_on_the_cpu():
    import numpy as np
    from cuda.tile._cext import CallingConvention
    from cuda.tile.compilation import KernelSignature

    from tile_lab.compile.signature import constraints_from_args

    if compat.gpu_compute_capability() is not None:
        pytest.skip("a CUDA driver is present: cuTile derives the signature itself")
    args = (np.zeros(1, np.int32), (1, 2), (3,))
    cc = CallingConvention.cutile_python_v2()
    original = KernelSignature.from_kernel_args
    with pytest.raises(OSError):  # cuTile's own: it loads libcuda
        KernelSignature.from_kernel_args(_tuple_params, args, cc)
    with compat.signatures_without_driver(lambda k, a, cc: constraints_from_args(k, a)):
        sig = KernelSignature.from_kernel_args(_tuple_params, args, cc)
        named = KernelSignature.from_kernel_args(_tuple_params, args, cc, symbol="k0")
        with pytest.raises(TypeError, match="Received a tuple of length 3"):
            KernelSignature.from_kernel_args(_tuple_params, (args[0], (1, 2, 3), (3,)), cc)
    assert KernelSignature.from_kernel_args is original  # put back
    assert sig.calling_convention.code == cc.code and named.symbol == "k0"
    assert "_tuple_params" in sig.symbol
    assert sig.parameters[1].items[1].value == 2  # the Constant item: a compile-time value
    compat.check_frontend(_tuple_params, sig)  # cuTile's front end accepts it


def test_a_device_array_whose_interface_raises_keyerror_is_not_a_host_array():
    # torch (2.11) answers __cuda_array_interface__ of a CUDA float8 tensor with KeyError
    class Float8OnCuda:
        device = type("Device", (), {"type": "cuda"})()

        @property
        def __cuda_array_interface__(self):
            raise KeyError("torch.float8_e4m3fn")

    assert compat._host_array((Float8OnCuda(),)) is False


def _run_fresh(tmp_path: Path, name: str, code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh Python (nothing imported yet), with tile_lab and tests/ on its path."""
    script = tmp_path / name
    script.write_text(code)
    here = Path(__file__).resolve().parent
    env = dict(os.environ)  # (keeping a PYTHONPATH that holds cuTile, as on the GPU machine)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(here.parent), str(here),
                                                    env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=100, env=env)


@pytest.mark.timeout(120)
def test_the_front_end_leaves_torch_unimported_and_reads_its_dtypes_once_imported(tmp_path):
    """cuda-tile 1.7's C extension imports torch (2.5-3 s of CPU, and a Ctrl-C landing in that
    C-level import was lost) on its first dtype question; torch_deferral.py answers without it
    until torch is imported. A fresh process: compile the front end and the signature of a
    kernel, nothing imports torch; then import torch, and its dtypes read as cuTile reads them."""
    pytest.importorskip("torch")
    proc = _run_fresh(tmp_path, "no_torch.py", (
        "import sys\n"
        "import cuda.tile as ct\n"
        "import kernels_inspect as K\n"
        "from tile_lab import _cutile_compat as compat\n"
        "from tile_lab.compile.signature import signature_from_spec\n"
        f"sig = signature_from_spec(K.vector_add, {VADD_SPEC!r}).kernel_signature\n"
        "compat.check_frontend(K.vector_add, sig)\n"
        "opts = compat.compiler_options(K.vector_add)\n"
        "front = compat.compile_frontend(K.vector_add, sig, 'sm_90', opts)\n"
        "print('compiled', len(front.bytecode) > 0, 'torch' in sys.modules)\n"
        "import torch\n"
        "print('torch dtype', compat.native_dtype(torch.bfloat16) is ct.bfloat16)\n"))
    assert proc.stdout.split("\n")[:2] == ["compiled True False", "torch dtype True"], (
        proc.stdout + proc.stderr)


# every kind of value cuTile's front end classifies: Python scalars and their subclasses (an
# IntEnum is an int, numpy's float64 a float), numpy scalars (none), strings (exactly str),
# enums, cuTile's and foreign dtypes (numpy's and ml_dtypes', as types and as dtypes, but not
# with metadata or byte-swapped), and things that are none of these
def _values_cutile_classifies() -> list:
    import enum
    import fractions

    import ml_dtypes
    import numpy as np

    class Color(enum.Enum):
        RED = 1

    class Level(enum.IntEnum):
        LOW = 1

    class Scale(float, enum.Enum):
        HALF = 0.5

    class Name(str, enum.Enum):
        A = "a"

    class MyInt(int):
        pass

    class MyStr(str):
        pass

    scalar_types = sorted(set(np.sctypeDict.values()), key=str) + [
        getattr(ml_dtypes, n) for n in dir(ml_dtypes) if isinstance(getattr(ml_dtypes, n), type)]
    dtypes = []
    for t in scalar_types:
        with contextlib.suppress(TypeError):  # a scalar type numpy has no dtype for
            dtypes.append(np.dtype(t))
    return [True, False, 0, -7, 2**70, 1.5, float("nan"), "x", "", MyStr("s"), b"x", None,
            Color.RED, Color, Level.LOW, Scale.HALF, Name.A, MyInt(3), np.int32(1),
            np.float64(1), np.float16(1), np.bool_(True), np.array(1), 1j, (1, 2), [1], {},
            len, divmod, np, Ellipsis, slice(1), object(), fractions.Fraction(1, 2), int,
            float, str, ct.float16, ct.bool_, ct.bfloat16, np.dtype(">f4"), np.dtype("<i8"),
            np.dtype(np.float32, metadata={"a": 1}), np.dtype([("a", "f4")]),
            *scalar_types, *dtypes]


def test_answers_without_torch_are_cutiles_own():
    """Each answer the deferring functions give while torch is not imported is the one cuTile's
    C functions give (asked here, where torch may be imported: torch's own dtypes cannot exist
    in a process that has not imported it)."""
    from tile_lab._cutile_compat import torch_deferral

    c = torch_deferral.c_functions()
    assert set(c) == {"foreign_dtype_object_to_native", "classify_constant",
                      "foreign_dtype_object_register"}
    values = _values_cutile_classifies()
    assert len(values) > 80
    for v in values:
        assert (torch_deferral.answer_without_torch("foreign_dtype_object_to_native", v)
                is c["foreign_dtype_object_to_native"](v)), v
        for kernel_arg in (False, True):
            assert (torch_deferral.answer_without_torch("classify_constant", v, kernel_arg)
                    is c["classify_constant"](v, kernel_arg)), (v, kernel_arg)


@pytest.mark.timeout(120)
def test_a_dtype_registered_by_hand_is_asked_of_cutile(tmp_path):
    """A foreign dtype registered with cuTile is only in the C table: from then on every
    question goes there (here torch cannot be imported at all, as where it is not installed)."""
    proc = _run_fresh(tmp_path, "register.py", (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch':\n"
        "            raise ModuleNotFoundError(\"No module named 'torch'\")\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "import cuda.tile as ct\n"
        "from tile_lab import _cutile_compat as compat\n"
        "import cuda.tile._cext as cext\n"
        "class Half: pass\n"
        "print(compat.native_dtype(Half) is None)\n"
        "cext.foreign_dtype_object_register(Half, ct.float16)\n"
        "print(compat.native_dtype(Half) is ct.float16,\n"
        "      cext.classify_constant(Half, False) is cext.ConstantKind.ForeignDType)\n"))
    assert proc.stdout.split("\n")[:2] == ["True", "True True"], proc.stdout + proc.stderr


def test_cutiles_own_kernel_compile_is_told_from_a_replaced_one(monkeypatch):
    """``overridden_compile`` recognises cuTile's ``kernel._compile`` by where it is defined
    (``cuda.tile._execution``, ``kernel._compile``): if cuTile moves it, this fails loudly
    instead of the gate compiling every launch with tileiras."""
    assert kernel_compile.overridden_compile(K.vector_add) is None

    def replaced(self, signature, context, compute_capability):
        raise AssertionError("not called here")

    monkeypatch.setattr(ct.kernel, "_compile", replaced)
    assert kernel_compile.overridden_compile(K.vector_add).__func__ is replaced
