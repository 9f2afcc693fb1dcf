"""tile_lab.profiling.target: host arguments go to the device through CuPy, or through torch
for the dtypes CuPy lacks (bfloat16, float8). Scripted CuPy and torch stand-ins: the real
upload needs a GPU (the bf16 GEMM rows of the sweep were profiled with it on the H100)."""

from __future__ import annotations

import sys
import types

import ml_dtypes
import numpy as np

from tile_lab.profiling.target import device_array


class _Tensor:
    def __init__(self, array, dtype=None, device="cpu"):
        self.array, self.dtype, self.device = array, dtype or str(array.dtype), device

    def cuda(self):
        return _Tensor(self.array, self.dtype, "cuda")

    def view(self, dtype):
        return _Tensor(self.array, dtype, self.device)


def _fake_torch(monkeypatch):
    torch = types.SimpleNamespace(from_numpy=_Tensor, bfloat16="torch.bfloat16",
                                  float8_e4m3fn="torch.float8_e4m3fn",
                                  float8_e5m2="torch.float8_e5m2")
    monkeypatch.setitem(sys.modules, "torch", torch)


class _Cupy:
    def __init__(self):
        self.uploaded = []

    def asarray(self, a):
        self.uploaded.append(a)
        return ("cupy", a)


def test_dtypes_cupy_has_go_through_cupy(monkeypatch):
    _fake_torch(monkeypatch)
    cupy = _Cupy()
    a = np.arange(4, dtype=np.float16)
    assert device_array(cupy, a) == ("cupy", a) and cupy.uploaded == [a]


def test_bfloat16_goes_up_through_torch_from_its_bits(monkeypatch):
    _fake_torch(monkeypatch)
    cupy = _Cupy()
    a = np.array([1.5, -2.0, 3.25], dtype=ml_dtypes.bfloat16)
    t = device_array(cupy, a)
    assert cupy.uploaded == []  # CuPy has no bfloat16: it failed in the child before
    assert t.device == "cuda" and t.dtype == "torch.bfloat16"
    assert t.array.dtype == np.int16 and (t.array == a.view(np.int16)).all()
    f8 = np.zeros(2, dtype=ml_dtypes.float8_e4m3fn)
    assert device_array(cupy, f8).dtype == "torch.float8_e4m3fn"


def test_a_torch_bfloat16_argument_is_copied_to_the_host_as_bfloat16():
    # tile_lab.profile pickles host copies for its Nsight Compute child; a bfloat16 tensor
    # came back as raw '<V2' bytes through CuPy, which the child could not launch with
    torch = __import__("pytest").importorskip("torch")
    from tile_lab.gpu.arrays import host_copy

    t = torch.tensor([1.5, -2.0, 3.25], dtype=torch.bfloat16)
    h = host_copy(t)
    assert h.dtype == ml_dtypes.bfloat16 and h.astype(np.float32).tolist() == [1.5, -2.0, 3.25]
