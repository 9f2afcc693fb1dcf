"""Launch a compiled CUDA Tile C++ kernel on the GPU with CuPy.

A ``__tile_global__`` kernel is an ordinary CUDA kernel in the cubin (language
TILEIR): the grid is the grid of tile blocks and the block size is 1, the driver
picks the threads. Its parameters are its C++ parameters (a ``float*`` is one
device pointer, a ``std::size_t`` one 64-bit integer) -- unlike a cuTile Python
kernel, no array is expanded into pointer + shape + strides. The Tile IR entry
signature (``tile<ptr<f32>>``, ``tile<i64>``) says the width of each parameter, so
Python ints and floats are packed to the right size here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compile.artifacts import Inspection
from ..compile.stage_rows import Row, TileIRRow, entry_symbols, parse_rows
from ..errors import LaunchError, NoGPUError, SignatureError
from . import source as src

CPU_NOTE = ("CUDA Tile C++ kernels run only on a GPU: the CPU emulator (tile_lab.emulate, "
            "tile_lab.trace) covers cuTile Python kernels only. Without a GPU, "
            "tile_lab.inspect_cpp still compiles the kernel and shows its Tile IR and SASS, "
            "and tile_lab.compare lines it up with the Python version.")

# Tile IR element type -> NumPy dtypes an argument array may have
_ELEMENT_DTYPES = {
    "f16": ("float16",), "bf16": ("bfloat16",), "f32": ("float32",), "f64": ("float64",),
    "i1": ("bool",), "i8": ("int8", "uint8"), "i16": ("int16", "uint16"),
    "i32": ("int32", "uint32"), "i64": ("int64", "uint64"),
}
_FLOAT_SCALARS = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
_INT_WIDTHS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}


@dataclass(frozen=True)
class Param:
    """One kernel parameter as the Tile IR entry declares it."""

    index: int
    type: str  # the Tile IR element type, e.g. "f32", "i64"
    pointer: bool


def entry_params(tileir: str, symbol: str) -> tuple[Param, ...]:
    """Parameters of entry ``symbol`` in Tile IR text, in order."""
    return _params(parse_rows("tileir", tileir, ()), symbol)


def _params(rows: Sequence[Row], symbol: str) -> tuple[Param, ...]:
    entry = next((r for r in rows if isinstance(r, TileIRRow) and r.symbol == symbol), None)
    if entry is None or entry.params is None:
        raise LaunchError(f"entry @{symbol} not found in the Tile IR")
    return tuple(Param(i, t[4:-1] if t.startswith("ptr<") else t, t.startswith("ptr<"))
                 for i, t in enumerate(entry.params))


def _pack_scalar(p: Param, value: Any, what: str) -> Any:
    if isinstance(value, np.generic):
        return value  # the caller chose the width
    if p.type in _FLOAT_SCALARS:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise SignatureError(f"{what}: the kernel takes a {p.type} scalar, got {value!r}")
        return _FLOAT_SCALARS[p.type](value)
    if p.type == "i1":
        return np.bool_(value)
    bits = _INT_WIDTHS.get(p.type)
    if bits is None or not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise SignatureError(f"{what}: the kernel takes a {p.type} scalar, got {value!r}")
    if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        return np.dtype(f"int{bits}").type(value)
    if 0 <= value < 2 ** bits:
        return np.dtype(f"uint{bits}").type(value)
    raise SignatureError(f"{what}: {value} does not fit the kernel's {p.type} parameter")


def _check_array(cupy: Any, p: Param, value: Any, what: str) -> Any:
    if not isinstance(value, cupy.ndarray):
        if hasattr(value, "__cuda_array_interface__"):
            value = cupy.asarray(value)  # a view of the same device memory, no copy
        else:
            raise SignatureError(f"{what}: the kernel takes a {p.type} pointer; pass a CuPy "
                                 f"array, not {type(value).__name__}")
    allowed = _ELEMENT_DTYPES.get(p.type)
    if allowed and str(value.dtype) not in allowed:
        raise SignatureError(f"{what}: the kernel takes a {p.type} pointer but the array is "
                             f"{value.dtype}")
    if not value.flags.c_contiguous:
        raise SignatureError(f"{what}: the array must be C-contiguous (the C++ kernel sees "
                             "a raw pointer); pass cupy.ascontiguousarray(x)")
    return value


def kernel_args(cupy: Any, params: Sequence[Param] | None, args: Sequence[Any]) -> tuple:
    """The argument tuple for CuPy's launch: arrays checked, scalars sized to the ABI."""
    if params is None:  # a bare cubin: widths must be explicit
        out = []
        for i, a in enumerate(args):
            if isinstance(a, (cupy.ndarray, np.generic)):
                out.append(a)
            else:
                raise SignatureError(f"argument {i}: with a bare cubin pass CuPy arrays and "
                                     "NumPy scalars (np.int64(n)), or pass the Inspection")
        return tuple(out)
    if len(args) != len(params):
        raise SignatureError(f"the kernel takes {len(params)} arguments, got {len(args)}")
    return tuple(_check_array(cupy, p, a, f"argument {p.index}") if p.pointer
                 else _pack_scalar(p, a, f"argument {p.index}") for p, a in zip(params, args))


def _require_gpu() -> Any:
    from ..gpu.device import require_gpu

    try:
        return require_gpu("launching a CUDA Tile C++ kernel")
    except NoGPUError as e:
        raise NoGPUError(e.message, hint=CPU_NOTE) from None


def _check_arch(cupy: Any, arch: str) -> None:
    cc = cupy.cuda.Device().compute_capability  # e.g. "90"
    m = re.match(r"sm_(\d+?)(\d)$", arch)
    if m and (m.group(1) != cc[:-1] or int(m.group(2)) > int(cc[-1])):
        raise LaunchError(f"the kernel was compiled for {arch} but this GPU is sm_{cc}",
                          hint=f"compile it for this GPU: inspect_cpp(..., arch='sm_{cc}')")


_MODULES: dict[bytes, Any] = {}  # cubin -> loaded module (loading costs milliseconds)


def _function(cupy: Any, cubin: bytes, symbol: str) -> Any:
    module = _MODULES.get(cubin)
    if module is None:
        module = cupy.cuda.function.Module()
        module.load(cubin)
        _MODULES[cubin] = module
    return module.get_function(symbol)


@dataclass(frozen=True)
class PreparedLaunch:
    """A C++ kernel ready to launch again and again (a benchmark's inner loop): the function,
    the 3-d grid and the packed arguments are resolved once, so a launch is one driver call."""

    symbol: str
    function: Any
    grid: tuple[int, int, int]
    args: tuple

    def __call__(self, stream: Any) -> None:
        try:
            self.function(self.grid, (1, 1, 1), self.args, stream=stream)
        except Exception as exc:
            raise LaunchError(f"launching C++ kernel {self.symbol} failed: "
                              f"{type(exc).__name__}: {exc}",
                              hint="check the grid against the sizes the kernel indexes") from exc


def prepare_launch(cupy: Any, inspection_or_cubin: Inspection | bytes, kernel_name: str | None,
                   dims: tuple[int, ...], dev_args: Sequence[Any]) -> PreparedLaunch:
    """Resolve the kernel symbol, check the arch and pack ``dev_args`` (device arrays and
    scalars) for repeated launches over ``dims``."""
    if isinstance(inspection_or_cubin, Inspection):
        insp = inspection_or_cubin
        name = kernel_name or insp.kernel_name
        rows = insp.stages["tileir"].rows if "tileir" in insp.stages else ()
        symbols = entry_symbols(rows)
        symbol = src.match_symbol(symbols, name)
        if symbol is None:
            raise LaunchError(f"no kernel {name!r} in this inspection (has: "
                              f"{', '.join(src.symbol_base_name(s) for s in symbols)})")
        params: tuple[Param, ...] | None = _params(rows, symbol)
        cubin = insp.cubin
        _check_arch(cupy, insp.arch)
    elif isinstance(inspection_or_cubin, (bytes, bytearray)):
        if not kernel_name:
            raise LaunchError("launch_cpp(cubin, kernel_name, ...) needs the kernel's symbol")
        symbol, params, cubin = kernel_name, None, bytes(inspection_or_cubin)
    else:
        raise LaunchError("launch_cpp expects an Inspection from inspect_cpp or cubin bytes, "
                          f"not {type(inspection_or_cubin).__name__}")
    packed = kernel_args(cupy, params, dev_args)
    try:
        fn = _function(cupy, cubin, symbol)
    except Exception as exc:
        raise LaunchError(f"loading C++ kernel {symbol} failed: {type(exc).__name__}: {exc}") \
            from exc
    return PreparedLaunch(symbol, fn, tuple(dims) + (1,) * (3 - len(dims)), packed)


def launch_cpp(inspection_or_cubin: Inspection | bytes, kernel_name: str | None, grid: Any,
               args: Sequence[Any], *, stream: Any = None) -> None:
    """Launch a C++ tile kernel over ``grid`` tile blocks (block size 1) on CuPy arrays.

    ``inspection_or_cubin``: an Inspection from ``inspect_cpp`` (``kernel_name`` None means
    its kernel) or raw cubin bytes (then ``kernel_name`` is the exact symbol and scalars
    must be NumPy scalars). NumPy array arguments are copied to the GPU and back. The
    launch is asynchronous on ``stream`` (default: CuPy's current stream). Without a GPU
    raises NoGPUError: the CPU emulator runs Python kernels only.
    """
    from ..gpu.launcher import as_stream, check_grid, copy_back, device_args

    dims = check_grid(grid)
    cupy = _require_gpu()
    dev_args, back = device_args(cupy, list(args))
    prepared = prepare_launch(cupy, inspection_or_cubin, kernel_name, dims, dev_args)
    _, s = as_stream(cupy, stream)  # the CuPy stream: the launch and its synchronisation
    prepared(s)
    if back:
        s.synchronize()
        copy_back(cupy, args, back)
