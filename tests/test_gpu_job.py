"""tile_lab.gpu.job and tile_lab.kernel_source: one kernel job, shipped to another process and
rebuilt there (cuTile kernels by module or by the source of their def, C++ kernels by their
compiled Inspection), and measured around its timed samples by one piece of code for both
kinds. CPU: a fresh Python process rebuilds shipped jobs and runs them on the emulator;
NumPy stands in for CuPy in the measuring steps. GPU: the same jobs launched, isolated and
profiled (tests/test_gpu_isolate.py, test_gpu_bench.py, test_cpp_bench_tune.py)."""

from __future__ import annotations

import linecache
import pickle
import subprocess
import sys
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path

import cuda.tile as ct
import numpy as np
import pytest
from fake_cupy import FakeCupy, fake_timing

from tile_lab.gpu.inprocess import Amounts
from tile_lab.gpu.job import (
    JobKernel,
    KernelJob,
    KernelRecipe,
    TileKernel,
    TileRecipe,
    Writes,
    measure_job,
)
from tile_lab.gpu.options import BenchOptions, TimingOptions
from tile_lab.kernel_source import KernelNotShippable, kernel_spec
from tile_lab.tuning.parallel_compile import compile_recipe

ROOT = Path(__file__).resolve().parent.parent

CELL = '''import cuda.tile as ct
import numpy as np
OFFSET = np.float32(0.5)

def noisy():
    print("the cell ran again")

@ct.function
def shifted(t):
    return t + OFFSET

@ct.function
def doubled(t):
    return shifted(t) + shifted(t)

@ct.kernel(occupancy=2)
def cell_kernel(x, y, tile: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), doubled(ct.load(x, (i,), (tile,))) + shifted(0.0))

noisy()
'''


def _exec_cell(source: str, filename: str) -> dict:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns: dict = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), ns)
    return ns


@ct.kernel
def add_one(x, tile: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(x, (i,), ct.load(x, (i,), (tile,)) + 1)


def _in_fresh_process(tmp_path: Path, payload: object, body: str, *,
                      tests_on_path: bool = True) -> str:
    """Pickle ``payload`` to a file and run ``body`` (``job`` is the unpickled payload) in a
    fresh interpreter, as the isolation worker, the profiler's child or a compile worker is
    (with this folder's modules importable there, or not)."""
    (tmp_path / "job.pkl").write_bytes(pickle.dumps(payload))
    path = f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n" if tests_on_path else ""
    code = (f"import pickle, sys\n{path}"
            f"job = pickle.loads(open({str(tmp_path / 'job.pkl')!r}, 'rb').read())\n"
            + textwrap.dedent(body))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


# ---- shipping a cuTile kernel job ---------------------------------------------------------------
def test_a_cell_kernel_job_rebuilds_in_a_fresh_process_and_runs_there(tmp_path):
    ns = _exec_cell(CELL, "<tile-cell-job>")
    x = np.arange(256, dtype=np.float32)
    y = np.zeros(256, np.float32)
    shipped = KernelJob(TileKernel(ns["cell_kernel"], {"num_ctas": 1}), (2,),
                        (x, y, 128)).shipped()
    assert shipped.args[0] is not x and np.array_equal(shipped.args[0], x)  # host copies
    out = _in_fresh_process(tmp_path, shipped, """
        import linecache
        import numpy as np
        from tile_lab import emulate
        from tile_lab._cutile_compat import compiler_options
        from tile_lab.gpu.job import TileKernel

        j = job.rebuild()
        assert isinstance(j.kernel, TileKernel) and j.kernel.hints == {"num_ctas": 1}
        k = j.kernel.hinted()
        print("options", compiler_options(k).occupancy, compiler_options(k).num_ctas)
        print("line", linecache.getlines("<tile-cell-job>")[16].strip())
        emulate(k, j.grid, j.args)
        print("y", j.args[1][:3].tolist(), j.args[1][-1])
    """)
    lines = out.splitlines()
    assert "the cell ran again" not in out  # only the kernel's def and its helpers ran there
    assert lines[0] == "options 2 1"  # the decorator's hint and the launch's hint
    assert lines[1] == "line def cell_kernel(x, y, tile: ct.Constant[int]):"  # the user's lines
    # 2 * (x + 0.5) + 0.5, with OFFSET a NumPy scalar and two helpers naming one another
    assert lines[2] == "y [1.5, 3.5, 5.5] 511.5"


def test_a_module_kernel_travels_by_reference_and_keeps_replaced_hints(tmp_path):
    from tune_kernels import scale_copy

    spec = kernel_spec(scale_copy.replace_hints(occupancy=4))
    assert (spec.module, spec.qualname) == ("tune_kernels", "scale_copy")
    out = _in_fresh_process(tmp_path, spec, """
        from tile_lab._cutile_compat import compiler_options
        from tune_kernels import scale_copy
        k = job.build()
        print(k is not scale_copy, compiler_options(k).occupancy)
        base = job.__class__(job.name, job.module, job.qualname)  # without the hints
        print(base.build() is scale_copy)
    """)
    assert out.split() == ["True", "4", "True"]
    # where the module cannot be imported, the kernel is rebuilt from the source of its def
    out = _in_fresh_process(tmp_path, spec, """
        from tile_lab._cutile_compat import compiler_options
        k = job.build()
        print("tune_kernels" in sys.modules, type(k).__name__, compiler_options(k).occupancy)
    """, tests_on_path=False)
    assert out.split() == ["False", "kernel", "4"]


def test_a_global_that_cannot_travel_is_named_and_a_compile_worker_declines(tmp_path):
    cell = CELL.replace("OFFSET = np.float32(0.5)",
                        "class Offset:\n    pass\nOFFSET = Offset()")
    ns = _exec_cell(cell, "<tile-cell-missing>")
    spec = kernel_spec(ns["cell_kernel"])
    assert spec.source is not None and spec.source.missing == ()
    assert spec.source.unshippable() == [("OFFSET", "Offset"), ("OFFSET", "Offset")]
    with pytest.raises(KernelNotShippable, match=r"global 'OFFSET' \(Offset\)"):
        compile_recipe(ns["cell_kernel"])
    # the isolation worker still gets the kernel: cuTile then names the undefined global
    pickle.dumps(TileKernel(ns["cell_kernel"]).recipe())


VALUES_CELL = """import fractions
import numpy as np

class Local:
    pass

SIZES = [64, (128, 256)]
TABLE = np.arange(3, dtype=np.int32)
HALF = fractions.Fraction(1, 2)
LOCAL = Local()
PI = 3.25

def uses_them():
    return SIZES, TABLE, HALF, LOCAL, PI
"""


def test_values_travel_by_pickle_only_where_another_process_can_unpickle_them(tmp_path):
    from tile_lab.kernel_source import function_source

    ns = _exec_cell(VALUES_CELL, "<tile-cell-values>")
    src = function_source(ns["uses_them"])
    assert {g.name: g.kind for g in src.globals} == {
        "SIZES": "value", "TABLE": "value", "HALF": "value", "PI": "value"}
    assert src.missing == (("LOCAL", "Local"),)  # its class lives in the cell (__main__)
    out = _in_fresh_process(tmp_path, src, """
        ns = {}
        job.rebuild(ns)
        print(ns["SIZES"], ns["TABLE"].tolist(), ns["TABLE"].dtype, ns["HALF"], ns["PI"],
              "LOCAL" in ns)
    """)
    assert out.strip() == "[64, (128, 256)] [0, 1, 2] int32 1/2 3.25 False"


def test_a_closure_kernel_is_not_shippable():
    scale = 2

    @ct.kernel
    def closure(x, tile: ct.Constant[int]):
        ct.store(x, (0,), ct.load(x, (0,), (tile,)) * scale)

    with pytest.raises(KernelNotShippable, match="closure"):
        kernel_spec(closure)


# ---- shipping a C++ kernel job ------------------------------------------------------------------
def test_a_cpp_kernel_job_ships_its_compiled_inspection_without_nvcc(tmp_path):
    from tile_lab.cpp import inspect_cpp
    from tile_lab.cpp.bench import CppJobKernel, CppRecipe

    insp = inspect_cpp(ROOT / "tests" / "cpp_examples" / "vector_add.cu", arch="sm_90")
    a = np.ones(4096, np.float32)
    job = KernelJob(CppJobKernel(insp), (4,), (a, a.copy(), np.zeros_like(a), a.size))
    shipped = job.shipped()
    assert isinstance(shipped.recipe, CppRecipe) and isinstance(shipped.recipe, KernelRecipe)
    out = _in_fresh_process(tmp_path, shipped, r"""
        import os
        os.environ["PATH"] = ""  # no nvcc, no tileiras: the recipe carries the cubin
        import re
        from tile_lab.cpp.launch import entry_params
        from tile_lab.cpp.source import match_symbol
        j = job.rebuild()
        insp = j.kernel.inspection
        print(j.name, insp.arch, len(insp.cubin) > 0, j.grid, j.args[3])
        symbols = re.findall(r"^\s*entry @([\w.$]+)\(", insp.tileir, flags=re.MULTILINE)
        symbol = match_symbol(symbols, insp.kernel_name)
        print([(p.type, p.pointer) for p in entry_params(insp.tileir, symbol)])
    """)
    first, params = out.splitlines()
    assert first == "vector_add sm_90 True (4,) 4096"
    assert params == str([("f32", True)] * 3 + [("i64", False)])
    assert shipped.recipe.key == pickle.loads(pickle.dumps(shipped.recipe)).key


# ---- the steps around the timed samples, on NumPy ------------------------------------------------
@dataclass(frozen=True)
class _NumpyKernel:
    """A JobKernel whose launch is a NumPy function of the device arguments; it records what
    the first array held at every launch."""

    fn: object
    seen: list
    fresh_outputs: bool = True
    name: str = "numpy_kernel"

    def bind(self, cupy, grid, dev_args):
        def launch(stream):
            self.seen.append(float(dev_args[0][0]))
            self.fn(*dev_args)
        return launch

    def recipe(self):
        raise NotImplementedError

    def notes(self, writes):
        return ("kind note",) if writes.in_place else ()


@pytest.fixture
def timing_on_numpy(monkeypatch):
    fake_timing(monkeypatch)


def _measure(kernel: JobKernel, args: tuple, writes: Writes | None = None, mode: str = "cold"):
    timing = TimingOptions(samples=3, warmup=3, mode=mode)
    return measure_job(FakeCupy, KernelJob(kernel, (1,), args, writes), timing,
                       BenchOptions(label="lab"), Amounts())


def test_an_in_place_job_restarts_every_sample_from_the_original_and_ends_with_one(
        timing_on_numpy):
    seen: list = []
    x = np.zeros(8, np.float32)
    m = _measure(_NumpyKernel(lambda a, n: np.add(a, 1, out=a), seen), (x, 8))
    # two probes (0 then 1: in place), 1 more warm-up, 3 samples from 0, the final launch
    assert seen == [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert np.array_equal(x, np.ones(8, np.float32))  # copied back: one application
    assert m.fresh_outputs and m.kernel == "numpy_kernel" and m.label == "lab"
    assert m.notes[0] == "kind note" and m.bytes == 32 and m.bytes_source == "array sizes"


def test_a_kind_without_fresh_outputs_lets_samples_accumulate_and_says_so(timing_on_numpy):
    seen: list = []
    x = np.zeros(8, np.float32)
    m = _measure(_NumpyKernel(lambda a, n: np.add(a, 1, out=a), seen, fresh_outputs=False),
                 (x, 8), mode="graph")
    assert seen == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.0]  # as bench_cpp always did
    assert np.array_equal(x, np.ones(8, np.float32))
    assert not m.fresh_outputs and m.notes[0] == "kind note"
    assert not any("graph replays" in n for n in m.notes)


def test_an_out_of_place_job_is_not_restored_and_known_writes_skip_the_probes(timing_on_numpy):
    seen: list = []
    a, out = np.full(8, 3, np.float32), np.zeros(8, np.float32)
    m = _measure(_NumpyKernel(lambda a, o: np.multiply(a, 2, out=o), seen), (a, out))
    assert len(seen) == 2 + 1 + 3 and not m.fresh_outputs
    assert np.array_equal(out, np.full(8, 6, np.float32)) and (a == 3).all()
    seen.clear()
    _measure(_NumpyKernel(lambda a, o: np.multiply(a, 2, out=o), seen), (a, out),
             writes=Writes((1,), False))
    assert len(seen) == 1 + 2 + 3  # one launch before timing instead of two probes


def test_a_job_detects_what_it_writes_and_restores_it():
    seen: list = []
    x, y = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    job = KernelJob(_NumpyKernel(lambda a, b, n: np.add(a, b, out=b), seen), (1,), (x, y, 4))
    assert set(job.arrays()) == {0, 1}
    dev = job.on_device(FakeCupy)
    writes, before = dev.detect_writes(lambda: dev.launch_and_wait(FakeCupy.cuda.stream))
    assert writes == Writes((1,), True)  # y += x changes y again on the second launch
    dev.restore({i: before[i] for i in writes.indices})
    dev.finish()
    assert np.array_equal(y, np.zeros(4)) and np.array_equal(x, np.arange(4))


def test_a_cuda_error_at_launch_names_the_kernel_and_a_tile_lab_error_passes_through():
    from tile_lab.errors import LaunchError, TileLabError

    def fail(exc):
        def fn(*_):
            raise exc
        return fn

    dev = KernelJob(_NumpyKernel(fail(RuntimeError("illegal address")), []), (1,),
                    (np.zeros(2),)).on_device(FakeCupy)
    with pytest.raises(LaunchError, match="launching numpy_kernel failed: RuntimeError"):
        dev.launch_and_wait(FakeCupy.cuda.stream)
    dev = KernelJob(_NumpyKernel(fail(TileLabError("mine")), []), (1,),
                    (np.zeros(2),)).on_device(FakeCupy)
    with pytest.raises(TileLabError, match="mine"):
        dev.launch_and_wait(FakeCupy.cuda.stream)


def test_both_kinds_of_kernel_are_job_kernels():
    from tile_lab.cpp.bench import CppJobKernel

    assert isinstance(TileKernel(add_one), JobKernel)
    assert isinstance(_NumpyKernel(None, []), JobKernel)
    cpp = CppJobKernel(types.SimpleNamespace(kernel_name="vector_add"))
    assert isinstance(cpp, JobKernel) and cpp.name == "vector_add"
    assert not cpp.fresh_outputs  # bench_cpp never restored outputs between samples


# ---- a compile worker's cubin is the one the launch here looks up --------------------------------
def test_a_shipped_cell_kernel_compiles_under_the_cache_key_of_the_kernel_here(tmp_path):
    """The compile worker rebuilds a cell kernel from its def; its cubin must land under the
    cache key cuTile computes for the parent's own kernel, or ct.launch would compile again."""
    from tile_lab import _cutile_compat as compat
    from tile_lab.compile.signature import signature_from_args
    from tile_lab.tuning.parallel_compile import portable_signature

    ns = _exec_cell(CELL, "<tile-cell-cache>")
    kernel = ns["cell_kernel"].replace_hints(num_ctas=1)
    x = np.zeros(256, np.float32)
    sig = signature_from_args(kernel, (x, x, 128)).kernel_signature
    with compat.use_cache_dir(str(tmp_path / "here")):
        compat.compile_cubin_like_cutile(kernel, sig, "sm_90", compat.compiler_options(kernel))
    recipe = compile_recipe(ns["cell_kernel"])
    job = ("cfg", TileRecipe(recipe.spec, (("num_ctas", 1),)), portable_signature(sig), "sm_90")
    _in_fresh_process(tmp_path, job, f"""
        from tile_lab._cutile_compat import use_cache_dir
        from tile_lab.tuning.parallel_compile import _compile_job
        with use_cache_dir({str(tmp_path / "worker")!r}):
            assert _compile_job(job)[1] is None
    """)
    here = {key for key, _, _ in compat.cache_rows(str(tmp_path / "here"))}
    worker = {key for key, _, _ in compat.cache_rows(str(tmp_path / "worker"))}
    assert len(here) == 1 and worker == here


# ---- on the lent GPU ----------------------------------------------------------------------------
IN_PLACE_CELL = '''import cuda.tile as ct
STEP = 1.0

@ct.kernel
def bump(x, tile: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(x, (i,), ct.load(x, (i,), (tile,)) + STEP)
'''


@pytest.mark.gpu
def test_gpu_an_isolated_bench_of_a_cell_kernel_restores_samples_and_copies_back():
    import tile_lab

    bump = _exec_cell(IN_PLACE_CELL, "<tile-cell-gpu-job>")["bump"]
    x = np.zeros(1 << 20, np.float32)
    m = tile_lab.bench(bump, ((1 << 20) // 1024,), (x, 1024), timing=TimingOptions(samples=5),
                       options=BenchOptions(isolate=True, timeout=180, hints={"occupancy": 2}),
                       check=lambda x, tile: x + 1)
    assert m.provenance.isolated and m.fresh_outputs and m.n == 5
    assert m.max_abs_err == 0.0 and (x == 1).all()  # one application, copied back


@pytest.mark.gpu
def test_gpu_the_profiler_child_launches_a_shipped_cell_kernel_job(tmp_path):
    from tile_lab.profiling.api import launch_job

    bump = _exec_cell(IN_PLACE_CELL, "<tile-cell-gpu-profile>")["bump"]
    x = np.zeros(4096, np.float32)
    (tmp_path / "job.pkl").write_bytes(pickle.dumps(launch_job(bump, (4,), (x, 1024))))
    out = subprocess.run([sys.executable, "-m", "tile_lab.profiling.target",
                          str(tmp_path / "job.pkl")], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0 and "launched" in out.stdout, out.stderr[-3000:]
    assert (x == 0).all()  # the caller's arrays are not written


@pytest.mark.gpu
def test_gpu_an_isolated_bench_cpp_runs_the_shipped_inspection_in_the_worker():
    import cupy as cp

    sys.path.insert(0, str(ROOT / "tools"))
    from precompile_cpp import cpp_inspection

    from tile_lab.cpp import bench_cpp
    from tile_lab.gpu.device import local_arch

    insp = cpp_inspection(ROOT / "tests" / "cpp_examples" / "vector_add.cu", local_arch())
    n = 1 << 20
    a, b = cp.random.rand(n, dtype=cp.float32), cp.random.rand(n, dtype=cp.float32)
    c = cp.zeros_like(a)
    m = bench_cpp(insp, (n // 1024,), [a, b, c, n], timing=TimingOptions(samples=5),
                  check=lambda a, b, c, n: np.copyto(c, a + b),
                  options=BenchOptions(isolate=True, timeout=180))
    assert m.provenance.isolated and m.kernel == "vector_add" and "C++" in m.notes[0]
    assert m.max_abs_err == 0
    cp.testing.assert_allclose(c, a + b)
