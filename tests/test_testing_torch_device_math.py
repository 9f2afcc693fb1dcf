"""tile_lab.testing.torch_device_math: torch's float32 transcendentals answer as CUDA's while
the CPU plays the device, and only then."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from device_math_cases import gpu_cases

from tile_lab.emulator import device_math
from tile_lab.testing.torch_cpu import cuda_on_cpu


def _bits(t: torch.Tensor) -> list[int]:
    return t.detach().numpy().view(np.uint32).tolist()


@pytest.mark.parametrize("name", ["sin", "cos", "tan", "sinh", "cosh", "tanh", "exp",
                                  "exp2", "log", "log2", "rsqrt"])
def test_torch_answers_with_the_gpus_bits(name):
    x, gpu = gpu_cases(name)
    with cuda_on_cpu():
        t = torch.tensor(x, device="cuda")
        assert _bits(getattr(torch, name)(t)) == gpu.tolist()
        assert _bits(getattr(t, name)()) == gpu.tolist()
        out = torch.empty(len(x), device="cuda")
        getattr(torch, name)(t, out=out)
        assert _bits(out) == gpu.tolist()
        getattr(t, name + "_")()
        assert _bits(t) == gpu.tolist()


def test_integer_and_bool_tensors_compute_in_float32():
    with cuda_on_cpu():
        ints = torch.arange(-8, 8, dtype=torch.int16, device="cuda")
        got = torch.sin(ints)
        flags = torch.log(torch.tensor([True, False], device="cuda"))
    assert got.dtype == torch.float32
    assert _bits(got) == device_math.sin(np.arange(-8, 8).astype(np.float32)).view(
        np.uint32).tolist()
    assert flags.tolist() == [0.0, float("-inf")]


def test_outside_the_cpu_device_and_for_other_dtypes_torch_keeps_its_kernels():
    x, gpu = gpu_cases("sin")
    cpu_own = torch.sin(torch.tensor(x))
    with cuda_on_cpu():
        wide = torch.sin(torch.tensor(x, dtype=torch.float64, device="cuda"))
        graded = torch.sin(torch.tensor(x, requires_grad=True))
    assert wide.dtype == torch.float64
    assert wide.tolist() == np.sin(x.astype(np.float64)).tolist()
    assert graded.grad_fn is not None and _bits(graded) == _bits(cpu_own)
    # torch's CPU sin is not CUDA's on these inputs (why the plugin steps in)
    assert _bits(torch.sin(torch.tensor(x))) == _bits(cpu_own) != gpu.tolist()
