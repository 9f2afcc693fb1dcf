"""tile_lab.testing: a GPU-minded test file passes unmodified on a CPU-only machine."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(300)

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
         "-p", "no:cacheprovider", "--tile-lab-device=cpu", str(tmp_path)],
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
         str(tmp_path)], capture_output=True, text=True, timeout=280, cwd=tmp_path)
    assert run.returncode != 0
