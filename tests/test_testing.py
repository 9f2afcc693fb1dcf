"""tile_lab.testing: a GPU-minded test file passes unmodified on a CPU-only machine."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[1]
# The pytest runs below test no notebook: nbval, which pytest would load into each of them,
# imports jsonschema, whose IRI format check builds a grammar parser at import (3 s of CPU).
NO_NBVAL = ("-p", "no:nbval")

GPU_MINDED_TESTS = '''
import cuda.tile as ct
import numpy as np
import torch
from cuda.tile._cext import get_compute_capability


@ct.kernel
def doubled(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(TILE,)) * 2)


def test_cuda_tensors_launch_on_the_emulator():
    assert torch.cuda.is_available()
    assert torch.cuda.get_device_capability() == (9, 0)
    assert get_compute_capability() == (9, 0)
    x = torch.arange(256, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    ct.launch(torch.cuda.current_stream(), (4,), doubled, (x, y, 64))
    torch.cuda.synchronize()
    torch.testing.assert_close(y.cpu(), torch.arange(256, dtype=torch.float32) * 2)


def test_moving_to_the_device_copies():
    host = torch.ones(8)
    on_device = host.cuda()
    on_device += 1
    assert host.sum().item() == 8 and on_device.to("cuda").sum().item() == 16


def test_numpy_only_code_runs_too():
    x = np.arange(128, dtype=np.float32)
    y = np.zeros_like(x)
    ct.launch(None, (2,), doubled, (x, y, 64))
    np.testing.assert_array_equal(y, x * 2)
'''


def test_plugin_runs_a_cuda_suite_on_the_cpu(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "test_gpu_minded.py").write_text(textwrap.dedent(GPU_MINDED_TESTS))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tile_lab.testing", "-q", "-o", "addopts=",
         "-p", "no:cacheprovider", *NO_NBVAL, "--tile-lab-device=cpu", str(tmp_path)],
        capture_output=True, text=True, timeout=280, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout


def test_without_the_plugin_the_same_file_fails(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a real GPU answers device='cuda'")
    (tmp_path / "test_gpu_minded.py").write_text(textwrap.dedent(GPU_MINDED_TESTS))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
         *NO_NBVAL, str(tmp_path)], capture_output=True, text=True, timeout=280, cwd=tmp_path)
    assert run.returncode != 0


MORE_GPU_HABITS = '''
import cuda.tile as ct
import numpy as np
import torch
from cuda.tile import tune


@ct.kernel
def plus_one(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(TILE,)) + 1)


def test_tuning_picks_a_valid_config():
    x = torch.ones(256, device="cuda")
    result = tune.exhaustive_search([96, 64, 128], torch.cuda.current_stream(),
                                    grid_fn=lambda t: (256 // t,), kernel=plus_one,
                                    args_fn=lambda t: (x, torch.empty_like(x), t), quiet=True)
    assert result.best.config == 64  # 96 is refused by cuTile; 64 is the first valid


def test_kernels_export_from_cuda_tensors():
    import io
    from cuda.tile.compilation import CallingConvention, KernelSignature

    x = torch.ones(256, device="cuda")
    sig = KernelSignature.from_kernel_args(plus_one, (x, torch.empty_like(x), 64),
                                           CallingConvention.cutile_python_v1())
    out = io.BytesIO()
    ct.compilation.export_kernel(plus_one, [sig], out, gpu_code="sm_90",
                                 output_format="tileir_bytecode")
    assert sig.symbol.startswith("plus_one") and len(out.getvalue()) > 100


def test_size_one_dims_are_constants_under_the_v2_convention():
    from cuda.tile.compilation import CallingConvention, KernelSignature

    x = torch.zeros((8, 1), device="cuda")
    v1, v2 = (KernelSignature.from_kernel_args(plus_one, (x, x, 64), cc)
              for cc in (CallingConvention.cutile_python_v1(),
                         CallingConvention.cutile_python_v2()))
    assert v1.parameters[0].shape_constant == (None, None)
    assert v2.parameters[0].shape_constant == (None, 1)


def test_products_with_an_out_dtype_run_on_the_cpu():
    a = torch.full((4, 8), 1.5, dtype=torch.bfloat16, device="cuda")
    c = torch.mm(a, a.T, out_dtype=torch.float32)
    assert c.dtype == torch.float32 and float(c[0, 0]) == 18.0


def test_the_limits_are_what_readme_says():
    x = torch.ones(4, device="cuda")
    assert x.device.type == "cpu" and not x.is_cuda  # tensors live on the CPU
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    end.record()
    assert start.elapsed_time(end) >= 0  # host wall time, not a GPU timing
'''


def test_the_environment_variable_chooses_the_cpu_for_the_plugin(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "test_more.py").write_text(textwrap.dedent(MORE_GPU_HABITS))
    env = {**os.environ, "TILE_LAB_DEVICE": "cpu", "TILE_LAB_ARCH": "sm_100"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tile_lab.testing", "-q", "-o", "addopts=",
         "-p", "no:cacheprovider", *NO_NBVAL, "-W", "ignore", str(tmp_path)],
        capture_output=True, text=True, timeout=280, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "5 passed" in run.stdout


PROGRAM = '''
{first}
{second}
from cuda.tile._cext import get_compute_capability


@ct.kernel
def doubled(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(TILE,)) * 2)


assert torch.cuda.is_available()
x = torch.arange(128, dtype=torch.float32, device="cuda")
y = torch.zeros_like(x)
ct.launch(torch.cuda.current_stream(), (2,), doubled, (x, y, 64))
torch.cuda.synchronize()
print("arch", get_compute_capability(), torch.cuda.get_device_capability(), float(y.sum()))
'''


def _program(tmp_path, torch_first: bool, **env_vars: str) -> subprocess.CompletedProcess:
    imports = ["import torch", "import cuda.tile as ct"]
    if not torch_first:
        imports.reverse()
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM.format(first=imports[0], second=imports[1]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILE_LAB_")}
    env.update(PYTHONPATH=str(ROOT), **env_vars)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=280, cwd=tmp_path, env=env)


@pytest.mark.parametrize("torch_first", [True, False], ids=["torch-first", "cuda.tile-first"])
def test_a_plain_program_runs_with_two_variables(tmp_path, torch_first):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a real GPU answers device='cuda'")
    run = _program(tmp_path, torch_first, TILE_LAB_EMULATE="1", TILE_LAB_DEVICE="cpu",
                   TILE_LAB_ARCH="sm_100")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "arch (10, 0) (10, 0) 16256.0" in run.stdout


def test_without_the_device_variable_the_program_needs_a_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a real GPU answers device='cuda'")
    run = _program(tmp_path, True, TILE_LAB_EMULATE="1")
    assert run.returncode != 0 and "AssertionError" in run.stderr


def test_a_bad_device_value_is_one_line(tmp_path):
    pytest.importorskip("torch")
    run = _program(tmp_path, True, TILE_LAB_EMULATE="1", TILE_LAB_DEVICE="gpu")
    assert run.returncode == 1
    assert run.stderr.strip() == "tile_lab: TILE_LAB_DEVICE='gpu': expected one of auto, cpu, cuda"


COUNTED_KERNEL = '''
import cuda.tile as ct


@ct.kernel
def tripled(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(TILE,)) * 3)
'''

COUNTS_COMPILES = '''
from unittest.mock import patch

import cuda.tile as ct
import cuda.tile._compile
import torch

from counted_kernel import tripled


def test_each_signature_compiles_once_per_process():
    x = torch.arange(64, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    with patch("cuda.tile._compile.compile_tile",
               side_effect=cuda.tile._compile.compile_tile) as compile_tile:
        for _ in range(2):
            ct.launch(torch.cuda.current_stream(), (4,), tripled, (x, y, 16))
    assert compile_tile.call_count == 1
    assert torch.equal(y, 3 * x)
'''


def test_a_suite_counting_cutiles_compiles_sees_them_despite_earlier_runs(tmp_path, monkeypatch):
    """A verdict an earlier process stored on disk does not hide the compile from a suite
    under the plugin (cuTile compiles each kernel signature once per process)."""
    pytest.importorskip("torch")
    import numpy as np

    import tile_lab
    from tile_lab.emulator import gate

    (tmp_path / "counted_kernel.py").write_text(textwrap.dedent(COUNTED_KERNEL))
    (tmp_path / "test_counts.py").write_text(textwrap.dedent(COUNTS_COMPILES))
    verdicts = tmp_path / "xdg" / "tile_lab" / "frontend"
    monkeypatch.setenv("TILE_LAB_FRONTEND_CACHE", str(verdicts))
    monkeypatch.syspath_prepend(str(tmp_path))
    from counted_kernel import tripled  # an earlier run accepts this very signature

    gate.clear_cache()
    x = np.arange(64, dtype=np.float32)
    tile_lab.emulate(tripled, (4,), (x, np.zeros_like(x), 16))
    gate.clear_cache()
    assert len(list(verdicts.iterdir())) == 1

    env = {k: v for k, v in os.environ.items() if k != "TILE_LAB_FRONTEND_CACHE"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), PYTHONPATH=os.pathsep.join(
        [str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tile_lab.testing", "-q", "-o", "addopts=",
         "-p", "no:cacheprovider", *NO_NBVAL, "--tile-lab-device=cpu", "test_counts.py"],
        capture_output=True, text=True, timeout=280, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout


def test_abs_of_a_bool_tensor_works_as_on_cuda():
    """torch has abs for bool tensors on CUDA only; with CUDA played by the CPU it is there."""
    torch = pytest.importorskip("torch")
    from tile_lab.testing.torch_cpu import cuda_on_cpu

    flags = torch.tensor([True, False, True])
    with pytest.raises(NotImplementedError):
        abs(flags)  # the CPU's own torch
    with cuda_on_cpu():
        x = flags.to("cuda")
        for result in (abs(x), torch.abs(x), x.abs()):
            assert result.dtype == torch.bool and result.tolist() == [True, False, True]
            assert result.data_ptr() != x.data_ptr()  # a new tensor, as abs makes
    with pytest.raises(NotImplementedError):
        abs(flags)


CHILD_PROGRAM = '''
import cuda.tile as ct
import torch


@ct.kernel
def checked(x, TILE: ct.Constant[int]):
    ct.assert_(ct.load(x, index=(ct.bid(0),), shape=(TILE,)) > 0, "found a zero")


x = torch.ones(64, device="cuda")
ct.launch(torch.cuda.current_stream(), (4,), checked, (x, 16))
x[20] = 0
ct.launch(torch.cuda.current_stream(), (4,), checked, (x, 16))
'''

STARTS_A_CHILD = '''
import subprocess
import sys


def test_a_program_the_suite_starts_runs_like_the_suite():
    child = subprocess.run([sys.executable, "child.py"], capture_output=True, text=True)
    assert child.returncode != 0, child.stderr
    assert child.stdout.splitlines() == ["found a zero"], child.stderr
    assert "ct.assert_ failed: found a zero" in child.stderr
'''


def test_programs_a_suite_starts_inherit_the_emulation(tmp_path):
    """A test that runs a Python program (a device-side assert is tested in a child process)
    gets the plugin's emulation, device and arch in that program too; the assert's message is
    printed on stdout, as cuTile documents."""
    pytest.importorskip("torch")
    (tmp_path / "child.py").write_text(textwrap.dedent(CHILD_PROGRAM))
    (tmp_path / "test_child.py").write_text(textwrap.dedent(STARTS_A_CHILD))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILE_LAB_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tile_lab.testing", "-q", "-o", "addopts=",
         "-p", "no:cacheprovider", *NO_NBVAL, "--tile-lab-device=cpu", "test_child.py"],
        capture_output=True, text=True, timeout=280, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout


def test_cuda_on_cpu_inside_another_adds_no_second_layer():
    """A pytest worker that inherited TILE_LAB_DEVICE=cpu has the start-up hook's switch on
    when the plugin switches: the inner one must neither stack a second rewrite of every torch
    call nor, on leaving, switch off the outer one."""
    torch = pytest.importorskip("torch")
    from torch.overrides import _get_current_function_mode_stack

    from tile_lab.testing.torch_cpu import cuda_on_cpu

    before = len(_get_current_function_mode_stack())
    with cuda_on_cpu():
        with cuda_on_cpu():
            assert len(_get_current_function_mode_stack()) == before + 1
        assert torch.cuda.is_available() and torch.ones(2, device="cuda").device.type == "cpu"
    assert len(_get_current_function_mode_stack()) == before
