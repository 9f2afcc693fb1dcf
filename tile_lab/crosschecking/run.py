"""``crosscheck_kernel`` (``tile_lab.crosscheck``): one kernel on the GPU and on the emulator
from identical inputs.

Identical means byte for byte *and* layout: every array argument is cloned with its whole
underlying buffer, so a view keeps its byte offset (modulo 256), its strides and its
neighbours — a slice two bytes off 16-byte alignment is two bytes off on both sides, and two
arguments that are views of one buffer stay views of one buffer. (A GPU reads what lies next
to a view when it pads a ragged tile with undetermined values; alignment decides whether a
load can be TMA.) The emulator side records a trace (which tiles each store wrote, which
lanes were undetermined); the GPU side is any :class:`GpuSide` — :class:`CupyGpu` launches
through tile_lab's launch path, tests pass a scripted one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..array_like import as_launch_args, is_array_like
from ..errors import NoGPUError, TileLabError
from .budget import Budget
from .compare import compare_outputs, hazards_of
from .flow import site_dtypes
from .result import CrossCheck
from .sites import design_sites

MIN_CC = (9, 0)  # cuTile launches need Hopper or newer
_ALIGN = 256  # clones keep each buffer's address modulo this


@dataclass(frozen=True)
class CrossCheckOptions:
    """``outputs``: the array arguments to compare (default: every array the kernel
    writes); ``budget``: how far a by-design difference may go; ``padding``: what the
    emulator puts in undetermined lanes (``"poison"``: NaN / 0xDB, the default, which makes
    them visible; ``"zero"``)."""

    outputs: tuple[str, ...] | None = None
    budget: Budget = field(default_factory=Budget)
    padding: str = "poison"


@runtime_checkable
class GpuSide(Protocol):
    """Runs a kernel on a GPU. ``device()`` names it (and raises :class:`NoGPUError` saying
    what is missing when it cannot run); ``run`` launches ``kernel`` on ``args`` — the
    crosscheck's clones, NumPy arrays — and returns the arguments after the launch as NumPy
    arrays (scalars and constants as given), in the same order and nesting."""

    def device(self) -> str: ...

    def run(self, kernel: Any, grid: tuple[int, ...], args: tuple[Any, ...]) -> tuple[Any, ...]:
        ...


class CupyGpu:
    """The real GPU side: CuPy device clones of the arguments (same offsets modulo 256, same
    strides, views of one buffer kept together), one launch through tile_lab's launch path,
    results copied back."""

    def __init__(self, hints: dict[str, Any] | None = None) -> None:
        self.hints = hints

    def device(self) -> str:
        missing = gpu_requirements()
        if missing:
            raise NoGPUError("tile_lab.crosscheck needs " + "; ".join(missing) + ".",
                             hint="without a GPU, tile_lab.emulate / tile_lab.sanitize run "
                                  "the kernel on the CPU; a crosscheck recorded on a GPU can "
                                  "be loaded with CrossCheck.from_json")
        from ..gpu.device import clock_state, device_info

        info = device_info()
        return f"{info.name} ({info.arch}, driver {clock_state(info.index).driver})"

    def run(self, kernel: Any, grid: tuple[int, ...], args: tuple[Any, ...]) -> tuple[Any, ...]:
        import cupy

        from ..gpu.inprocess import launch_in_process

        roots: dict[int, tuple[Any, int]] = {}
        dev = _map_arrays(args, lambda a: _device_clone(cupy, a, roots))
        launch_in_process(cupy, kernel, grid, dev, hints=self.hints, sync=True)
        return _map_arrays(dev, lambda d: cupy.asnumpy(d))


def gpu_requirements() -> list[str]:
    """What this machine lacks to launch cuTile kernels (empty: nothing)."""
    from ..gpu.device import device_info, require_gpu

    try:
        require_gpu("crosscheck")
    except NoGPUError as exc:  # "... needs a CUDA GPU, but CuPy cannot be imported (...)"
        return ["CuPy and a CUDA GPU of sm_90 or newer: " +
                exc.message.split(", but ", 1)[-1].rstrip(".")]

    info = device_info()
    if info.compute_capability < MIN_CC:
        return [f"a GPU of sm_90 or newer (this one, {info.name}, is {info.arch})"]
    return []


def crosscheck_kernel(kernel: Any, grid: Sequence[int], args: Sequence[Any], *,
               options: CrossCheckOptions | None = None,
               gpu: GpuSide | None = None) -> CrossCheck:
    """The engine of :func:`tile_lab.crosscheck` (its docstring says what it does), called by
    the core (``tile_lab._run.crosscheck_request``) with a request's pieces."""
    from ..emulator.runtime import trace_kernel as emulate_trace

    opts = options or CrossCheckOptions()
    side: GpuSide = gpu if gpu is not None else CupyGpu()
    if not isinstance(side, GpuSide):
        raise TileLabError(f"gpu={side!r} is not a GpuSide (needs device() and run())")
    device = side.device()  # fails first, and cheaply, without a GPU
    grid = tuple(int(g) for g in grid)
    host = _map_arrays(as_launch_args(tuple(args)), _host_array)
    emu_roots: dict[int, tuple[Any, int]] = {}
    gpu_roots: dict[int, tuple[Any, int]] = {}
    emu_args = _map_arrays(host, lambda a: _host_clone(a, emu_roots))
    gpu_args = _map_arrays(host, lambda a: _host_clone(a, gpu_roots))
    tr = emulate_trace(kernel, grid, emu_args, padding=opts.padding)
    after = side.run(kernel, grid, gpu_args)
    names = _array_names(kernel, emu_args)
    emu_by_name = dict(zip(names, _flat_arrays(emu_args)))
    gpu_by_name = dict(zip(names, _flat_arrays(tuple(after))))
    written = [n for n in names if any(a.arg == n and a.is_write for a in tr.accesses)]
    wanted = list(opts.outputs) if opts.outputs is not None else written
    unknown = [n for n in wanted if n not in emu_by_name]
    if unknown:
        raise TileLabError(f"outputs={opts.outputs!r}: {unknown[0]!r} is not an array "
                           f"argument of {tr.kernel} (its arrays: {', '.join(names)})")
    sites = design_sites(kernel)
    dtypes = site_dtypes(kernel, {a.name: a.dtype for a in tr.arrays})
    outputs = compare_outputs(wanted, gpu_by_name, emu_by_name, tr, sites, opts.budget, dtypes)
    notes = () if written else (f"{tr.kernel} wrote no array on the emulator: nothing to "
                                "compare",)
    return CrossCheck(kernel=tr.kernel, grid=grid, device=device, outputs=outputs,
                      sites=sites, hazards=hazards_of(tr), filename=tr.filename,
                      source=tr.source, first_line=tr.first_line, notes=notes)


# ---- cloning arguments -----------------------------------------------------------------------

def _map_arrays(args: Sequence[Any], fn: Any) -> tuple[Any, ...]:
    out = []
    for a in args:
        if isinstance(a, (list, tuple)) and not is_array_like(a):
            out.append(type(a)(_map_arrays(a, fn)))
        elif is_array_like(a):
            out.append(fn(a))
        else:
            out.append(a)
    return tuple(out)


def _flat_arrays(args: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for a in args:
        if isinstance(a, (list, tuple)) and not is_array_like(a):
            out += _flat_arrays(a)
        elif is_array_like(a):
            out.append(a)
    return out


def _array_names(kernel: Any, args: Sequence[Any]) -> list[str]:
    """The trace's names for the array arguments: the parameter name, ``name[i]`` inside a
    list or tuple (as the emulator names them)."""
    import inspect

    from .sites import _pyfunc

    fn = _pyfunc(kernel)
    params = list(inspect.signature(fn).parameters) if fn is not None else []
    names: list[str] = []

    def walk(name: str, value: Any) -> None:
        if isinstance(value, (list, tuple)) and not is_array_like(value):
            for i, v in enumerate(value):
                walk(f"{name}[{i}]", v)
        elif is_array_like(value):
            names.append(name)

    for name, value in zip(params, args):
        walk(name, value)
    return names


def _host_array(a: Any) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    from ..gpu.arrays import host_copy

    return np.asarray(host_copy(a))


def _root(a: np.ndarray) -> tuple[np.ndarray, int] | None:
    """The C-contiguous array owning ``a``'s memory and ``a``'s byte offset in it (None when
    ``a`` has negative strides or lies outside an ndarray's buffer)."""
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not root.flags.c_contiguous or any(s < 0 for s in a.strides):
        return None
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    span = sum((n - 1) * s for n, s in zip(a.shape, a.strides)) + a.itemsize if a.size else 0
    if offset < 0 or offset + span > root.nbytes:
        return None
    return root, offset


def _host_clone(a: np.ndarray, roots: dict[int, tuple[Any, int]]) -> np.ndarray:
    found = _root(a)
    if found is None:
        return a.copy()
    root, offset = found
    if id(root) not in roots:
        addr = root.__array_interface__["data"][0]
        buf = np.empty(root.nbytes + 2 * _ALIGN, np.uint8)
        start = (addr - buf.__array_interface__["data"][0]) % _ALIGN
        buf[start:start + root.nbytes] = root.reshape(-1).view(np.uint8)
        roots[id(root)] = (buf, start)
    buf, start = roots[id(root)]
    return np.ndarray(a.shape, a.dtype, buffer=buf, offset=start + offset, strides=a.strides)


def _device_clone(cupy: Any, a: np.ndarray, roots: dict[int, tuple[Any, int]]) -> Any:
    found = _root(a)
    if found is None:
        return cupy.asarray(a)
    root, offset = found
    if id(root) not in roots:
        addr = root.__array_interface__["data"][0]
        buf = cupy.empty(root.nbytes + 2 * _ALIGN, np.uint8)
        start = (addr - buf.data.ptr) % _ALIGN
        buf[start:start + root.nbytes] = cupy.asarray(root.reshape(-1).view(np.uint8))
        roots[id(root)] = (buf, start)
    buf, start = roots[id(root)]
    return cupy.ndarray(a.shape, a.dtype, memptr=buf.data + start + offset, strides=a.strides)
