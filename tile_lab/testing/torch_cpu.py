"""torch's CUDA device played by the CPU, for test suites written for a GPU.

A cuTile project's tests allocate with ``device="cuda"``, move with ``.cuda()`` / ``.to("cuda")``,
launch on ``torch.cuda.current_stream()`` and ask ``torch.cuda.get_device_capability()``. On a
machine without CUDA every one of those fails. :func:`cuda_on_cpu` makes them work on the CPU:

* a :class:`torch.overrides.TorchFunctionMode` rewrites every ``device`` that names CUDA
  (``"cuda"``, ``"cuda:0"``, ``torch.device("cuda")``, a bare index ``0``) to the CPU, in
  keyword and positional form; ``.cuda()``, ``.to(<cuda>)`` and ``.pin_memory()`` return a
  CPU copy, as a host-to-device copy would (``pin_memory=True`` is dropped);
* products with ``out_dtype=`` (CUDA-only kernels in torch) widen their operands first, and
  ``abs`` of a bool tensor (also CUDA-only) is the tensor;
* float32 ``sin cos tan sinh cosh tanh exp exp2 log log2 rsqrt sqrt`` return CUDA's results, bit
  for bit, as the emulated kernels do (:mod:`tile_lab.testing.torch_device_math`; torch's CPU
  kernels round differently on a few percent of inputs);
* ``torch.cuda``'s queries answer for one emulated device (``is_available()`` True,
  ``get_device_capability()`` the emulated arch, ``device_count()`` 1, a name that says it
  is the emulator, the host's memory for ``mem_get_info()`` and ``total_memory``; the
  allocation statistics read 0: torch counts no host allocations); its seeds seed the host
  generator that ``"cuda"`` tensors are drawn from; its streams, events and ``synchronize()``
  are host-side stand-ins: work is done when it is issued, so an event's ``elapsed_time``
  is the host's wall time between the two ``record()`` calls, the emulator's time, not a
  GPU's.

What it cannot do (said in README too): tensors report ``device.type == "cpu"`` and
``is_cuda`` False; there is no real stream ordering, graph capture, ``torch.Generator`` on
``"cuda"``, CUDA-only dtypes or kernels torch only has on the GPU.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from .torch_device_math import device_result

_CPU = torch.device("cpu")
_ACTIVE: list[tuple[int, int]] = []  # the capability of the cuda_on_cpu in force, if any


def active() -> bool:
    """Whether torch's CUDA device is played by the CPU right now."""
    return bool(_ACTIVE)


def _names_cuda(device: Any) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.split(":", 1)[0].strip() == "cuda"
    # device=0: torch reads a bare index as a CUDA device
    return isinstance(device, int) and not isinstance(device, bool)


class _CudaArgumentsToCpu(TorchFunctionMode):
    """Every torch call sees the CPU wherever its arguments name the CUDA device."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda or func is torch.Tensor.pin_memory:
            return args[0].clone()  # pinned host memory is host memory
        if kwargs.get("pin_memory"):
            kwargs["pin_memory"] = False
        device_math = device_result(func, args, kwargs)
        if device_math is not None:
            return device_math
        copy = False
        if "device" in kwargs and _names_cuda(kwargs["device"]):
            kwargs["device"] = _CPU
            copy = func is torch.Tensor.to
        if func is torch.Tensor.to and len(args) > 1 and _names_cuda(args[1]):
            args = (args[0], _CPU, *args[2:])  # .to("cuda", ...), .to(0, ...)
            copy = True
        try:
            result = func(*args, **kwargs)
        except NotImplementedError:
            if "out_dtype" in kwargs:
                result = _wide_product(func, args, kwargs)
            elif _is_abs_of_bool(func, args):
                result = args[0].clone()  # CUDA's abs of a bool tensor: the tensor itself
            else:
                raise
        if copy and result is args[0]:
            return result.clone()  # a move to "the GPU" is a copy, never an alias
        return result


def _is_abs_of_bool(func: Any, args: tuple) -> bool:
    """``abs(t)`` of a bool tensor: torch has that kernel on CUDA only."""
    return (func in (torch.abs, torch.Tensor.abs, torch.Tensor.__abs__) and len(args) == 1
            and isinstance(args[0], torch.Tensor) and args[0].dtype == torch.bool)


def _wide_product(func: Any, args: tuple, kwargs: dict) -> Any:
    """``torch.mm(a, b, out_dtype=torch.float32)`` and kin exist only as CUDA kernels: on the
    CPU the operands are widened to ``out_dtype`` first, which is what accumulating in it does
    (up to summation order)."""
    out_dtype = kwargs.pop("out_dtype")
    wide = tuple(a.to(out_dtype) if isinstance(a, torch.Tensor) and a.is_floating_point()
                 else a for a in args)
    return func(*wide, **kwargs).to(out_dtype)


class _Stream:
    """``torch.cuda.Stream`` on the host: work is done when it is issued."""

    def __init__(self, device: Any = None, priority: int = 0, **_: Any) -> None:
        self.device = _CPU
        self.priority = priority
        self.cuda_stream = 0

    def synchronize(self) -> None:
        pass

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> _Event:
        event = event or _Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def __repr__(self) -> str:
        return "<torch.cuda.Stream on tile_lab's CPU stand-in>"


class _Event:
    """``torch.cuda.Event`` on the host; ``elapsed_time`` is host wall time in ms."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, **_: Any) -> None:  # external=, newer flags
        self._at: float | None = None

    def record(self, stream: Any = None) -> None:
        self._at = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _Event) -> float:
        if self._at is None or end._at is None:
            raise RuntimeError("both events must be recorded before elapsed_time")
        return (end._at - self._at) * 1e3


_DEFAULT_STREAM = _Stream()


def _seed_host(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


def _host_memory() -> tuple[int, int]:
    """(available, total) bytes of the host's memory."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return min(int(line.split()[1]) * 1024, total), total
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"), total


def _cuda_namespace(capability: tuple[int, int]) -> dict[str, Any]:
    """What replaces ``torch.cuda``'s attributes while the CPU plays the device."""
    major, minor = capability
    name = f"tile_lab CPU emulator (sm_{major}{minor})"
    # the memory is the host's: a program sizing its problem by the device's memory sizes it
    # by what it can really use here
    total_memory = _host_memory()[1]
    properties = SimpleNamespace(name=name, major=major, minor=minor,
                                 multi_processor_count=132, total_memory=total_memory,
                                 L2_cache_size=50 * 2**20, warp_size=32)

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    return {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "init": nothing,
        "_lazy_init": nothing,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": nothing,
        "get_device_capability": lambda device=None: capability,
        "get_device_name": lambda device=None: name,
        "get_device_properties": lambda device=None: properties,
        "synchronize": nothing,
        "empty_cache": nothing,
        "current_stream": lambda device=None: _DEFAULT_STREAM,
        "default_stream": lambda device=None: _DEFAULT_STREAM,
        "Stream": _Stream,
        "Event": _Event,
        "stream": lambda stream=None: contextlib.nullcontext(stream),
        "device": lambda device=None: contextlib.nullcontext(),
        # torch.manual_seed calls torch.cuda.manual_seed_all: these seed the host generator
        # ("cuda" tensors are drawn from it) without calling back into torch.manual_seed
        "manual_seed": _seed_host,
        "manual_seed_all": _seed_host,
        "seed": lambda: None,
        "seed_all": lambda: None,
        "initial_seed": torch.initial_seed,
        "get_rng_state": lambda device="cuda": torch.get_rng_state(),
        "set_rng_state": lambda state, device="cuda": torch.set_rng_state(state),
        # torch counts no host allocations: the statistics read 0
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "max_memory_reserved": lambda device=None: 0,
        "reset_peak_memory_stats": nothing,
        "reset_max_memory_allocated": nothing,
        "mem_get_info": lambda device=None: _host_memory(),
    }


@contextlib.contextmanager
def cuda_on_cpu(capability: tuple[int, int] = (9, 0)) -> Iterator[None]:
    """While inside, torch's CUDA device is the CPU (see the module docstring). Inside an
    outer ``cuda_on_cpu`` (the start-up hook's, for a pytest worker that inherited
    ``TILE_LAB_DEVICE``, and the plugin's) it does nothing: one mode rewrites each call."""
    if _ACTIVE:
        yield
        return
    _ACTIVE.append(capability)
    try:
        with _cuda_on_cpu(capability):
            yield
    finally:
        _ACTIVE.pop()


@contextlib.contextmanager
def _cuda_on_cpu(capability: tuple[int, int]) -> Iterator[None]:
    replacements = _cuda_namespace(capability)
    missing = object()
    saved = {name: torch.cuda.__dict__.get(name, missing) for name in replacements}
    for name, value in replacements.items():
        setattr(torch.cuda, name, value)
    mode = _CudaArgumentsToCpu()
    mode.__enter__()
    try:
        yield
    finally:
        mode.__exit__(None, None, None)
        for name, value in saved.items():
            if value is missing:
                delattr(torch.cuda, name)
            else:
                setattr(torch.cuda, name, value)
