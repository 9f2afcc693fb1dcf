"""tile_lab.cpp.bench_cpp / tune_cpp: C++ kernels timed and tuned like Python kernels.

CPU tests compile every config with the pip nvcc for real and replace only the GPU timing with
a fake that reads the tile size and occupancy hint back *from the compiled Tile IR* -- so they
prove each config's ``-D`` defines reached the compiler, and test the tuner's decisions, never
timing numbers. GPU tests (``@pytest.mark.gpu``) time and tune on the lent GPU.

On the lent GPU the image's nvcc predates CUDA Tile C++: carry the pip nvcc there
(``tools/gpu_split_bundle.sh --cpp``, part ``.gpu_tc3``), or prebuild the tuned configs here:
    python tests/test_cpp_bench_tune.py --prebuild sm_90 .gpu_cpp
and run the tests with TILE_LAB_CPP_PREBUILT=.gpu_cpp.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from fake_cupy import FakeCupy, fake_timing
from tune_fakes import FakeMeasurement

from tile_lab.compile.artifacts import Inspection
from tile_lab.cpp import CppKernel, bench_cpp, compile_configs, inspect_cpp, tune_cpp
from tile_lab.cpp.tune import CppBuildOptions
from tile_lab.errors import NoGPUError, TileLabError
from tile_lab.gpu.options import BenchOptions, TimingOptions
from tile_lab.tuning import RaceOptions, Space, SpaceError, TuneOptions, TuningStore

EXAMPLES = Path(__file__).parent / "cpp_examples"

# x[i] *= 2 in TILE-element slices; OCC reaches the kernel's occupancy hint
SCALE = """#include "cuda_tile.h"
namespace ct = cuda::tiles;

[[ cutile::hint(0, occupancy=OCC) ]]
__tile_global__ void scale(float* x, float* y, std::size_t n) {
  auto vx = ct::partition_view{ct::tensor_span{x, ct::extents{n}},
                               ct::shape{ct::integral_constant<TILE>{}}};
  auto vy = ct::partition_view{ct::tensor_span{y, ct::extents{n}},
                               ct::shape{ct::integral_constant<TILE>{}}};
  auto b = ct::bid().x;
  vy.store(vx.load(b) * 2.0f, b);
}
"""
N = 1 << 12
ARCH = "sm_90"


def _args(cfg):
    x = np.arange(N, dtype=np.float32)
    return (x, np.zeros_like(x), N)


def _grid(cfg):
    return (N // cfg["TILE"],)


class FakeTimer:
    """``measure(inspection, grid, args, n)``: time from what the *Tile IR* says."""

    def __init__(self):
        self.calls = []

    def __call__(self, insp, grid, args, n):
        assert isinstance(insp, Inspection) and insp.arch == ARCH
        tile = int(re.search(r"tile=\((\d+)\)", insp.tileir).group(1))
        occ = int(re.search(r"occupancy = (\d+)", insp.tileir).group(1))
        self.calls.append((tile, occ, grid, n))
        t = 1e-5 * (1 + abs(tile - 256) / 64) * (1 + abs(occ - 2) / 4)
        return FakeMeasurement(mean_s=t, ci95_s=t * 0.01, samples=n)


def _no_gpu() -> bool:
    from tile_lab.gpu.device import gpu_available
    return not gpu_available()


# ---- tuning on the CPU (real compiles, fake timing) -----------------------------------------
def test_tune_cpp_compiles_each_config_with_its_defines_and_finds_the_best(monkeypatch):
    from tile_lab.compile import disassembly, pipeline
    from tile_lab.cpp.build import _inspect_cached

    _inspect_cached.cache_clear()  # compiled here, not found from an earlier test
    # outside an IPython session nobody reads the configs' SASS: no nvdisasm runs
    monkeypatch.delenv(pipeline.ENV_WHEN, raising=False)
    monkeypatch.setattr(pipeline, "_in_ipython", lambda: False)
    disassembled = []
    monkeypatch.setattr(disassembly, "_nvdisasm", lambda *a: disassembled.append(a) or "")
    timer = FakeTimer()
    space = Space(TILE=[128, 256, 512], OCC=[1, 2])
    r = tune_cpp(SCALE, "scale", space, _grid, _args, measure=timer,
                 options=TuneOptions(arch=ARCH, strategy="exhaustive", progress=False, workers=2,
                                     timing=TimingOptions(samples=7)))
    assert r.kernel_name == "scale" and not r.failures and len(r.successes) == 6
    # the tile and hint the fake read back from each compiled Tile IR are the config's
    assert sorted((t, o) for t, o, _, _ in timer.calls) == sorted(
        (c["TILE"], c["OCC"]) for c in space.configs())
    assert all(g == (N // t,) and n == 7 for t, _, g, n in timer.calls)
    assert r.best.config.as_dict() == {"TILE": 256, "OCC": 2}
    assert r.context["language"] == "c++" and r.context["arch"] == ARCH
    assert r.context["arrays"] == [f"({N},):float32", f"({N},):float32"]
    assert disassembled == []


def test_tune_cpp_race_measures_contenders_fully():
    timer = FakeTimer()
    r = tune_cpp(SCALE, "scale", Space(TILE=[64, 256, 1024], OCC=[2]), _grid, _args, measure=timer,
                 options=TuneOptions(arch=ARCH, progress=False, race=RaceOptions(samples=2),
                                     timing=TimingOptions(samples=9)))
    full = [t for t, _, _, n in timer.calls if n == 9]
    assert full == [256]  # 64 and 1024 are > 1.5x slower in the fake's model
    assert r.best.config["TILE"] == 256 and len(r.successes) == 3


def test_defines_fn_maps_knobs_to_macros():
    timer = FakeTimer()
    r = tune_cpp(SCALE, "scale", Space(tile=[128, 256]), lambda c: (N // c["tile"],), _args,
                 measure=timer,
                 options=TuneOptions(arch=ARCH, strategy="exhaustive", progress=False),
                 build=CppBuildOptions(defines_fn=lambda c: {"TILE": c["tile"], "OCC": 3}))
    assert sorted(timer.calls)[0][:2] == (128, 3) and len(r.successes) == 2


def test_a_config_that_does_not_compile_is_a_compile_failure_with_the_cpp_error():
    timer = FakeTimer()
    r = tune_cpp(SCALE, "scale", Space(TILE=[3, 256], OCC=[2]), lambda c: (1,), _args,
                 measure=timer,
                 options=TuneOptions(arch=ARCH, strategy="exhaustive", progress=False))
    assert [s.config["TILE"] for s in r.successes] == [256]
    (fail,) = r.failures
    assert fail.config["TILE"] == 3 and fail.stage == "compile"
    assert "partition_view" in fail.error and "CompileError" in fail.error
    assert [t for t, *_ in timer.calls] == [256]  # the broken config was never "launched"


def test_without_precompile_the_measure_compiles_and_failures_stay_data():
    timer = FakeTimer()
    r = tune_cpp(SCALE, "scale", Space(TILE=[3, 128], OCC=[1]), lambda c: (1,), _args,
                 measure=timer,
                 options=TuneOptions(arch=ARCH, strategy="exhaustive", progress=False,
                                     precompile=False))
    assert [f.stage for f in r.failures] == ["compile"] and len(r.successes) == 1


def test_unknown_knob_is_named_not_silently_ignored():
    with pytest.raises(SpaceError, match=r"'TILE_M'.*no macro of that name.*kernel.cu"):
        tune_cpp(SCALE, "scale", Space(TILE_M=[64]), _grid, _args, measure=FakeTimer(),
                 options=TuneOptions(arch=ARCH, progress=False))
    with pytest.raises(SpaceError, match=r"defines_fn returns 'TYLE'"):
        tune_cpp(SCALE, "scale", Space(t=[64]), _grid, _args, measure=FakeTimer(),
                 options=TuneOptions(arch=ARCH, progress=False),
                 build=CppBuildOptions(defines_fn=lambda c: {"TYLE": c["t"]}))


def test_knobs_may_be_read_in_an_included_header(tmp_path):
    (tmp_path / "tiles.cuh").write_text("#define TILE_SIZE TILE\n#define OCCUPANCY OCC\n")
    cu = tmp_path / "k.cu"
    cu.write_text(SCALE.replace('#include "cuda_tile.h"', '#include "cuda_tile.h"\n'
                                                          '#include "tiles.cuh"')
                  .replace("integral_constant<TILE>", "integral_constant<TILE_SIZE>")
                  .replace("occupancy=OCC", "occupancy=OCCUPANCY"))
    kernel = CppKernel(cu, None, arch=ARCH)
    assert kernel.knob_kinds(Space(TILE=[128], OCC=[1])) == {"TILE": "define", "OCC": "define"}


def test_store_resumes_and_a_changed_source_is_a_new_context(tmp_path):
    path = str(tmp_path / "cpp.jsonl")
    space = Space(TILE=[128, 256], OCC=[2])
    first = FakeTimer()
    tune_cpp(SCALE, "scale", space, _grid, _args, measure=first, store=path,
             options=TuneOptions(arch=ARCH, strategy="exhaustive", progress=False))
    assert len(first.calls) == 2
    again = FakeTimer()
    r = tune_cpp(SCALE, "scale", space, _grid, _args, measure=again, store=path,
                 options=TuneOptions(arch=ARCH, strategy="exhaustive", progress=False))
    assert again.calls == [] and len(r.successes) == 2
    assert all(s.from_store for s in r.successes)
    edited = FakeTimer()
    tune_cpp(SCALE.replace("2.0f", "3.0f"), "scale", space, _grid, _args, measure=edited,
             store=path, options=TuneOptions(arch=ARCH, strategy="exhaustive", progress=False))
    assert len(edited.calls) == 2
    contexts = {json.dumps(rec.context, sort_keys=True) for rec in TuningStore(path).records()}
    assert len(contexts) == 2


def test_compile_configs_feeds_prebuilt_inspections_without_running_nvcc(monkeypatch):
    space = Space(TILE=[128, 256], OCC=[1])
    built = compile_configs(SCALE, "scale", space, arch=ARCH, workers=2)
    assert len(built) == 2
    # round trip through JSON, as when carried to a GPU machine
    built = {k: Inspection.from_json(v.to_json()) for k, v in built.items()}
    import tile_lab.cpp.tune as cpp_tune

    def no_nvcc(*a, **k):
        raise AssertionError("nvcc must not run when every config is prebuilt")

    monkeypatch.setattr(cpp_tune, "inspect_cpp", no_nvcc)
    timer = FakeTimer()
    r = tune_cpp(SCALE, "scale", space, _grid, _args, measure=timer,
                 options=TuneOptions(arch=ARCH, strategy="exhaustive", progress=False),
                 build=CppBuildOptions(prebuilt=built))
    assert len(r.successes) == 2 and sorted(t for t, *_ in timer.calls) == [128, 256]
    with pytest.raises(TileLabError, match=r"prebuilt Inspection.*sm_90, not sm_100"):
        CppKernel(SCALE, "scale", arch="sm_100", prebuilt=built).compile(space.configs()[0])


# ---- without a GPU --------------------------------------------------------------------------
@pytest.mark.skipif(not _no_gpu(), reason="checks the behaviour without a GPU")
def test_bench_and_tune_without_gpu_raise_nogpuerror_naming_the_emulator_scope():
    insp = inspect_cpp(EXAMPLES / "vector_add.cu", arch=ARCH)
    a = np.ones(4096, np.float32)
    with pytest.raises(NoGPUError) as info:
        bench_cpp(insp, (4,), [a, a, a.copy(), a.size])
    assert "Python kernels only" in info.value.hint
    with pytest.raises(NoGPUError) as info:
        tune_cpp(SCALE, "scale", Space(TILE=[128], OCC=[1]), _grid, _args,
                 options=TuneOptions(progress=False))
    assert "Python kernels only" in info.value.hint


def test_bench_cpp_rejects_what_is_not_a_cpp_inspection():
    with pytest.raises(TileLabError, match=r"Inspection from tile_lab\.inspect_cpp"):
        bench_cpp(b"\x7fELF", (1,), [])


# ---- bench_cpp's bookkeeping on the CPU: NumPy stands in for CuPy, a kernel for the GPU ------
@pytest.fixture
def fake_gpu(monkeypatch):
    """bench_cpp with a fake CuPy; ``kernel(args)`` runs as the launch; the kernel job's timing
    step runs the work for its warm-ups and samples and counts them in ``state["timed"]``."""
    import tile_lab.cpp.bench as cpp_bench

    state = {"launches": 0, "timed": 0}

    def prepare(cupy, insp, name, dims, dev_args):
        def launch(stream):
            state["launches"] += 1
            state["kernel"](dev_args)
        return launch

    monkeypatch.setattr(cpp_bench, "_require_gpu", lambda: FakeCupy)
    monkeypatch.setattr(cpp_bench, "prepare_launch", prepare)
    fake_timing(monkeypatch, state)
    return state


def _vector_add_inspection():
    return inspect_cpp(EXAMPLES / "vector_add.cu", arch=ARCH)


def test_bench_cpp_out_of_place_checks_and_copies_back(fake_gpu):
    fake_gpu["kernel"] = lambda d: np.add(d[0], d[1], out=d[2])
    a, b = np.arange(4096, dtype=np.float32), np.ones(4096, np.float32)
    c = np.zeros_like(a)
    m = bench_cpp(_vector_add_inspection(), (4,), [a, b, c, a.size],
                  timing=TimingOptions(samples=4), check=lambda a, b, c, n: np.add(a, b, out=c))
    assert np.array_equal(c, a + 1)  # the NumPy output got the device result back
    assert m.kernel == "vector_add" and m.label is None and m.grid == (4,)
    assert m.bytes == 3 * 4 * 4096 and m.bytes_source == "array sizes"
    assert m.max_abs_err == 0 and not any("in-place" in n for n in m.notes)
    assert "sm_90" in m.notes[0] and fake_gpu["timed"] == 5  # 4 samples + 1 warm-up


def test_bench_cpp_check_mismatch_raises(fake_gpu):
    from tile_lab.errors import CheckMismatch

    fake_gpu["kernel"] = lambda d: np.subtract(d[0], d[1], out=d[2])  # a wrong kernel
    a = np.arange(4096, dtype=np.float32)
    with pytest.raises(CheckMismatch, match="argument 2 differs"):
        bench_cpp(_vector_add_inspection(), (4,), [a, a.copy(), np.zeros_like(a), a.size],
                  timing=TimingOptions(samples=2), check=lambda a, b, c, n: np.add(a, b, out=c))


def test_bench_cpp_in_place_kernel_is_noted_and_left_with_one_result(fake_gpu):
    fake_gpu["kernel"] = lambda d: np.multiply(d[0], 2, out=d[0])
    x = np.ones(4096, np.float32)
    m = bench_cpp(_vector_add_inspection(), (4,), [x, x.copy(), x.copy(), x.size],
                  timing=TimingOptions(samples=3), bytes=123,
                  options=BenchOptions(label="twice"))
    assert any("in-place" in n for n in m.notes)
    assert np.array_equal(x, np.full(4096, 2, np.float32))  # one launch from the original
    assert m.label == "twice" and m.bytes == 123 and m.bytes_source == "user"


# ---- on the lent GPU ------------------------------------------------------------------------
TUNE_SPACE = Space(TILE=[256, 1024, 4096], OCC=[1, 2])
GPU_N = 1 << 24


def _gpu_arch():
    from tile_lab.gpu.device import local_arch
    return local_arch()


INPLACE_DEFINES = {"TILE": 1024, "OCC": 1}


def _inplace_source():
    return SCALE.replace("vy.store", "vx.store")  # x *= 2 in place


def _prebuilt(arch):
    """(config key -> Inspection for TUNE_SPACE, the in-place kernel's Inspection), from
    ``--prebuild`` output when TILE_LAB_CPP_PREBUILT names it, else (None, None)."""
    folder = os.environ.get("TILE_LAB_CPP_PREBUILT")
    path = Path(folder or ".") / f"tune_scale_{arch}.json"
    if not folder or not path.exists():
        return None, None
    data = json.loads(path.read_text())
    return ({k: Inspection.from_json(v) for k, v in data["configs"].items()},
            Inspection.from_json(data["inplace"]))


def _cpp_inspection(cu_name, arch):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from precompile_cpp import cpp_inspection

    return cpp_inspection(EXAMPLES / cu_name, arch)


@pytest.mark.gpu
def test_gpu_bench_cpp_vector_add_checked_with_statistics():
    import cupy as cp

    arch = _gpu_arch()
    a = cp.random.rand(GPU_N, dtype=cp.float32)
    b = cp.random.rand(GPU_N, dtype=cp.float32)
    c = cp.zeros_like(a)
    m = bench_cpp(_cpp_inspection("vector_add.cu", arch), (GPU_N // 1024,), [a, b, c, GPU_N],
                  check=lambda a, b, c, n: np.copyto(c, a + b), timing=TimingOptions(samples=10))
    assert m.kernel == "vector_add" and m.mode == "cold" and m.n == 10
    assert m.bytes == 3 * 4 * GPU_N and m.bytes_source == "array sizes"
    assert m.gbps and m.gbps > 0 and m.max_abs_err == 0
    assert m.peak_gbps is None or m.gbps < 1.2 * m.peak_gbps
    assert not m.fresh_outputs and "C++" in m.notes[0]
    cp.testing.assert_allclose(c, a + b)


@pytest.mark.gpu
def test_gpu_bench_cpp_in_place_kernel_leaves_one_result_and_says_so():
    import cupy as cp

    arch = _gpu_arch()
    insp = _prebuilt(arch)[1] or inspect_cpp(_inplace_source(), "scale", arch=arch,
                                             defines=INPLACE_DEFINES)
    x = cp.ones(GPU_N, dtype=cp.float32)
    m = bench_cpp(insp, (GPU_N // 1024,), [x, cp.empty_like(x), GPU_N],
                  timing=TimingOptions(mode="warm", samples=5))
    assert any("in-place" in note for note in m.notes)
    assert bool((x == 2).all())


@pytest.mark.gpu
def test_gpu_tune_cpp_scale_checked():
    import cupy as cp

    arch = _gpu_arch()
    x = cp.random.rand(GPU_N, dtype=cp.float32)
    y = cp.empty_like(x)
    r = tune_cpp(SCALE, "scale", TUNE_SPACE, lambda c: (GPU_N // c["TILE"],),
                 lambda c: (x, y, GPU_N), check=lambda x, y, n: np.multiply(x, 2, out=y),
                 options=TuneOptions(arch=arch, progress=False, timing=TimingOptions(samples=10)),
                 build=CppBuildOptions(prebuilt=_prebuilt(arch)[0]))
    assert not r.failures and len(r.successes) == len(TUNE_SPACE)
    assert r.best.measurement.gbps > 0 and r.best.measurement.max_abs_err == 0
    cp.testing.assert_allclose(y, 2 * x)


def _prebuild(arch: str, out: str) -> None:
    built = compile_configs(SCALE, "scale", TUNE_SPACE, arch=arch)
    Path(out).mkdir(parents=True, exist_ok=True)
    path = Path(out) / f"tune_scale_{arch}.json"
    inplace = inspect_cpp(_inplace_source(), "scale", arch=arch, defines=INPLACE_DEFINES)
    path.write_text(json.dumps({"configs": {k: v.to_json() for k, v in built.items()},
                                "inplace": inplace.to_json()}))
    print(f"{path}: {len(built)} configs and the in-place kernel")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--prebuild":
        _prebuild(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
