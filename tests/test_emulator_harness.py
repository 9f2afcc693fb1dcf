"""Shared harness for the emulator's differential tests (no tests of its own).

A :class:`Case` is (kernel, grid, inputs, NumPy reference). The same case runs two ways:
``check_numpy`` compares the emulator with the NumPy reference on the CPU, and
``check_gpu`` (for ``@pytest.mark.gpu`` tests) launches the kernel with ``ct.launch`` on
CuPy copies of the inputs and compares the device result with the emulator's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tile_lab


@dataclass
class Case:
    name: str
    kernel: Any
    grid: tuple[int, ...]
    make_args: Callable[[np.random.Generator], Sequence[Any]]
    # reference(args) -> {argument position: expected array}, computed from fresh inputs
    reference: Callable[[Sequence[Any]], dict[int, np.ndarray]]
    rtol: float = 1e-6
    atol: float = 1e-6
    gpu_rtol: float | None = None  # device math may differ more (approximate transcendentals)
    gpu_atol: float | None = None
    seed: int = 0
    marks: tuple = field(default_factory=tuple)

    def __str__(self) -> str:
        return self.name


def _args(case: Case) -> list[Any]:
    return list(case.make_args(np.random.default_rng(case.seed)))


def _compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if got.dtype.kind in "biu" and want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def check_numpy(case: Case) -> list[Any]:
    """Emulate ``case`` and compare every reference output; returns the emulated args."""
    args = _args(case)
    expected = case.reference(copy.deepcopy(args))
    tile_lab.emulate(case.kernel, case.grid, args)
    for pos, want in expected.items():
        _compare(args[pos], want, case.rtol, case.atol, f"{case.name}: argument {pos}")
    return args


_TORCH_ONLY = {"bfloat16": "bfloat16", "float8_e4m3fn": "float8_e4m3fn",
               "float8_e5m2": "float8_e5m2"}  # NumPy dtype name -> torch dtype name


def _to_device(a: Any) -> tuple[Any, Callable[[], np.ndarray] | None]:
    """A device copy of a host argument, and how to read it back (None for scalars)."""
    import pytest

    if not isinstance(a, np.ndarray):
        return a, None
    if a.dtype.name in _TORCH_ONLY:  # CuPy has no bfloat16 / float8: go through torch
        torch = pytest.importorskip("torch", reason=f"{a.dtype.name} on the GPU needs torch")
        tdt = getattr(torch, _TORCH_ONLY[a.dtype.name])
        raw = {1: (np.uint8, torch.uint8), 2: (np.int16, torch.int16)}[a.dtype.itemsize]
        t = torch.from_numpy(a.view(raw[0]).copy()).view(tdt).cuda()
        return t, lambda: t.cpu().view(raw[1]).numpy().view(a.dtype)
    import cupy

    d = cupy.asarray(a)
    return d, lambda: cupy.asnumpy(d)


def check_gpu(case: Case) -> None:
    """Launch ``case`` on the GPU and compare with the emulator on the same inputs."""
    import cuda.tile as ct
    import cupy

    emulated = check_numpy(case)
    pairs = [_to_device(a) for a in _args(case)]
    device = tuple(d for d, _ in pairs)
    ct.launch(cupy.cuda.get_current_stream(), case.grid, case.kernel, device)
    cupy.cuda.runtime.deviceSynchronize()
    rtol = case.gpu_rtol if case.gpu_rtol is not None else max(case.rtol, 1e-5)
    atol = case.gpu_atol if case.gpu_atol is not None else max(case.atol, 1e-5)
    for pos in case.reference(copy.deepcopy(_args(case))):
        _compare(pairs[pos][1](), emulated[pos], rtol, atol,
                 f"{case.name}: GPU vs emulator, argument {pos}")
