"""tile_lab.launch: argument checks and NoGPUError here; correctness on the lent GPU."""

from __future__ import annotations

import copy

import cuda.tile as ct
import numpy as np
import pytest
from corpus import correct
from gpu_presence import gpu_available

import tile_lab
from tile_lab.errors import LaunchError, NoGPUError
from tile_lab.gpu import launcher


@ct.kernel
def add_one(x, tile: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(x, (i,), ct.load(x, (i,), (tile,)) + 1)


# ---- CPU -------------------------------------------------------------------------------
@pytest.mark.parametrize("grid", [(), (1, 2, 3, 4), (0,), (2, -1), ("4",), (1.5,), (True,)])
def test_bad_grid_is_a_launch_error_naming_the_grid(grid):
    with pytest.raises(LaunchError, match="grid must be a tuple of 1 to 3 positive ints"):
        launcher.check_grid(grid)


def test_grid_accepts_an_int_and_numpy_ints():
    assert launcher.check_grid(4) == (4,)
    assert launcher.check_grid((np.int64(2), 3)) == (2, 3)


def test_kernel_work_takes_a_label_and_defaults_to_the_kernel_name():
    # no launch: a KernelWork only records what to launch (torch CPU tensors stand in)
    torch = pytest.importorskip("torch")
    from tile_lab.errors import TileLabError
    from tile_lab.gpu import kernel_work

    x = torch.zeros(8)
    assert kernel_work(add_one, (2,), (x, 4)).name == "add_one"
    labelled = kernel_work(add_one, 2, (x, 4), name="add_one tile=4")
    assert labelled.name == "add_one tile=4" and labelled.grid == (2,)
    with pytest.raises(TileLabError, match="device arrays"):
        kernel_work(add_one, (2,), (np.zeros(8), 4), name="numpy")


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_launch_without_gpu_raises_nogpu_error_saying_what_still_works():
    with pytest.raises(NoGPUError) as info:
        tile_lab.launch(add_one, (1,), (np.zeros(16, np.float32), 16))
    text = info.value.render()
    assert "tile_lab.launch needs a CUDA GPU" in text
    for works in ("tile_lab.inspect", "tile_lab.emulate", "tile_lab.diagram",
                  "tile_lab.load_measurements"):
        assert works in text


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_bench_without_gpu_raises_nogpu_error():
    with pytest.raises(NoGPUError, match=r"tile_lab\.bench needs a CUDA GPU"):
        tile_lab.bench(add_one, (1,), (np.zeros(16, np.float32), 16))


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_fallback_emulate_prints_one_notice_and_runs_the_emulator(capsys):
    x = np.arange(32, dtype=np.float32)
    tile_lab.launch(add_one, (2,), (x, 16), fallback="emulate")
    out = capsys.readouterr().out
    assert out.splitlines() == [launcher.EMULATOR_NOTICE]
    np.testing.assert_array_equal(x, np.arange(32, dtype=np.float32) + 1)


def test_unknown_fallback_is_rejected():
    with pytest.raises(tile_lab.TileLabError, match="only fallback is 'emulate'"):
        tile_lab.launch(add_one, (1,), (np.zeros(16, np.float32), 16), fallback="cpu")


def test_args_must_be_a_sequence():
    with pytest.raises(LaunchError, match="args must be a tuple or list"):
        tile_lab.launch(add_one, (1,), np.zeros(16, np.float32))


# ---- GPU -------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("case", correct.CASES, ids=lambda c: c.name)
def test_corpus_kernels_launch_correctly_with_numpy_args(case):
    grid, args = case.build(seed=1)
    expected = case.reference(copy.deepcopy(args))
    tile_lab.launch(case.kernel, grid, args)
    actual = case.actual(args)
    for name, want in expected.items():
        np.testing.assert_allclose(np.asarray(actual[name], np.float64), want,
                                   rtol=case.rtol, atol=case.atol, err_msg=name)


@pytest.mark.gpu
def test_launch_on_cupy_arrays_on_the_current_stream():
    import cupy

    rng = np.random.default_rng(0)
    host = rng.standard_normal(4096).astype(np.float32)
    x = cupy.asarray(host)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        tile_lab.launch(add_one, (4096 // 256,), (x, 256))
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(x), host + 1)


@pytest.mark.gpu
def test_launch_applies_hints_and_reuses_the_hinted_kernel():
    import cupy

    x = cupy.zeros(1024, dtype=cupy.float32)
    tile_lab.launch(add_one, (4,), (x, 256), hints={"occupancy": 2})
    tile_lab.launch(add_one, (4,), (x, 256), hints={"occupancy": 2})
    cupy.cuda.get_current_stream().synchronize()
    assert float(x.min()) == 2.0 and float(x.max()) == 2.0
    assert launcher.with_hints(add_one, {"occupancy": 2}) is launcher.with_hints(
        add_one, {"occupancy": 2})


@pytest.mark.gpu
def test_launch_accepts_torch_tensors_when_torch_is_there():
    torch = pytest.importorskip("torch")
    x = torch.arange(512, dtype=torch.float32, device="cuda")
    tile_lab.launch(add_one, (2,), (x, 256), stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    assert torch.equal(x.cpu(), torch.arange(512, dtype=torch.float32) + 1)
