"""What tile_lab accepts as an array, and how it reads one without copying device data.

One module answers, for every entry point (``inspect``/``--args`` signatures, the emulator,
``launch``/``bench``), the same two questions about a kernel argument:

* :func:`array_info` — dtype, shape, strides, device and address, read from the object's
  metadata only: NumPy arrays, torch tensors (CPU or CUDA, bfloat16 and float8 included),
  CuPy and anything with ``__cuda_array_interface__``, ``__array_interface__`` objects, and
  any DLPack producer (``__dlpack__``: the DLTensor header is read from the capsule, no
  data is touched, and the unconsumed capsule releases the producer's reference as usual).
* :func:`host_view` / :func:`to_host` — a NumPy array to compute on: host-resident arrays
  as zero-copy views (so results land in the caller's memory), device arrays copied to the
  host with a copy-back scheduled.

and, for the signatures a kernel is compiled for, :func:`describe_array`: the argument as an
:class:`ArrayDesc` (short dtype code from :data:`DTYPE_CODES`, strides in elements, alignment).

Problems with one argument raise :class:`ArgumentProblem`, which callers re-raise naming
the argument by position and name.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

__all__ = [
    "ALIGN_BYTES",
    "DTYPE_CODES",
    "ArgumentProblem",
    "ArrayDesc",
    "ArrayInfo",
    "array_info",
    "as_launch_args",
    "code_for_numpy_dtype",
    "contiguous_strides",
    "describe_array",
    "host_view",
    "is_array_like",
    "to_host",
]

# NumPy dtype names that have a cuTile dtype (ml_dtypes provides bfloat16 and float8)
SUPPORTED_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float16", "bfloat16", "float32", "float64", "float8_e4m3fn",
                    "float8_e5m2", "float8_e8m0fnu")  # e8m0: ct.mma_scaled's scales


# tile_lab's short dtype codes (signatures, spec strings, reproducers)
# -> (cuTile dtype name, NumPy dtype name)
DTYPE_CODES: dict[str, tuple[str, str]] = {
    "bool": ("bool_", "bool"),
    "i8": ("int8", "int8"), "i16": ("int16", "int16"),
    "i32": ("int32", "int32"), "i64": ("int64", "int64"),
    "u8": ("uint8", "uint8"), "u16": ("uint16", "uint16"),
    "u32": ("uint32", "uint32"), "u64": ("uint64", "uint64"),
    "f16": ("float16", "float16"), "bf16": ("bfloat16", "bfloat16"),
    "f32": ("float32", "float32"), "f64": ("float64", "float64"),
    "f8e4m3": ("float8_e4m3fn", "float8_e4m3fn"), "f8e5m2": ("float8_e5m2", "float8_e5m2"),
}
_CODE_BY_NUMPY_NAME = {np_name: code for code, (_, np_name) in DTYPE_CODES.items()}
ALIGN_BYTES = 16  # what cuTile's launcher checks base addresses and strides against


class ArgumentProblem(ValueError):
    """A problem with one kernel argument; the caller re-raises it naming the argument."""


@dataclass(frozen=True)
class ArrayInfo:
    """An array argument as its metadata describes it (no data read)."""

    dtype: np.dtype  # ml_dtypes types for bfloat16 / float8
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None  # in bytes; None: C-contiguous
    device: str  # "cpu" or "cuda"
    data_ptr: int | None  # address of element 0 (None when the producer does not say)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def on_host(self) -> bool:
        return self.device == "cpu"


def is_array_like(value: Any) -> bool:
    """True for anything tile_lab treats as an array argument (see module docstring)."""
    if isinstance(value, (bool, int, float, complex, str, bytes, np.generic)) or value is None:
        return False
    return (isinstance(value, np.ndarray) or _is_torch(value)
            or hasattr(value, "__cuda_array_interface__")
            or hasattr(value, "__array_interface__") or hasattr(value, "__dlpack__"))


def array_info(value: Any) -> ArrayInfo | None:
    """Metadata of an array-like ``value`` (None for anything else); raises ArgumentProblem
    for an array whose dtype or layout cuTile cannot take."""
    if not is_array_like(value):
        return None
    if isinstance(value, np.ndarray):
        return _checked(value.dtype, value.shape, value.strides, "cpu",
                        value.__array_interface__["data"][0])
    if _is_torch(value):
        return _torch_info(value)
    cai = _interface(value, "__cuda_array_interface__")
    if cai is not None:
        return _checked(_typestr_dtype(cai["typestr"]), cai["shape"], cai.get("strides"),
                        "cuda", int(cai["data"][0]))
    ai = _interface(value, "__array_interface__")
    if ai is not None:
        return _checked(_typestr_dtype(ai["typestr"]), ai["shape"], ai.get("strides"), "cpu",
                        int(ai["data"][0]))
    return _dlpack_info(value)


def host_view(value: Any) -> np.ndarray | None:
    """A NumPy array sharing memory with a host-resident array-like ``value`` (writes go to
    the caller's array); None for device arrays. Raises ArgumentProblem when the dtype has
    no cuTile equivalent."""
    info = array_info(value)
    if info is None:
        raise ArgumentProblem(f"expected an array, got {type(value).__name__}")
    if not info.on_host:
        return None
    if isinstance(value, np.ndarray):
        return value
    if _is_torch(value):
        t = value.detach()
        if t.dtype.is_floating_point and t.element_size() <= 2 and info.dtype.name not in (
                "float16",):  # bfloat16 / float8: NumPy cannot take them; view the bits
            raw = t.view(_torch_int_of_size(t.element_size())).numpy()
            return raw.view(info.dtype)
        return t.numpy()
    if _interface(value, "__array_interface__") is not None:
        return np.asarray(value)
    try:
        return np.from_dlpack(value)
    except (TypeError, ValueError, BufferError, RuntimeError) as exc:
        raise ArgumentProblem(f"NumPy cannot read this {type(value).__name__} through "
                              f"DLPack: {exc}") from None


def to_host(value: Any, copy_back: list[Callable[[], None]]) -> np.ndarray:
    """A NumPy array to compute on: host arrays as zero-copy views; device arrays copied to
    the host, with a function appended to ``copy_back`` that writes the results back."""
    view = host_view(value)
    if view is not None:
        return view
    if _is_torch(value):
        t = value.detach()
        cpu = t.cpu()
        host = host_view(cpu)  # shares memory with cpu
        assert host is not None
        copy_back.append(lambda: _copy_into_torch(t, cpu))
        return host
    try:
        import cupy
    except ImportError:
        raise ArgumentProblem(f"this {type(value).__name__} lives on the GPU; copying it to "
                              "the host needs CuPy (pip install 'tile_lab[gpu]')") from None
    device = value if type(value).__module__.split(".")[0] == "cupy" else (
        cupy.asarray(value) if hasattr(value, "__cuda_array_interface__")
        else cupy.from_dlpack(value))  # zero-copy wrappers around the caller's memory
    host = device.get()
    copy_back.append(lambda: device.set(host))
    return host


def _copy_into_torch(target: Any, result: Any) -> None:
    """Write ``result`` (the host copy, after the kernel ran) back into torch tensor
    ``target``. An axis of stride 0 (``expand``) repeats one element in memory, and torch
    refuses to write into such a tensor; writing index 0 of that axis writes every element
    of its memory once (the GPU leaves one of the lanes' values there too)."""
    for axis, (n, stride) in enumerate(zip(target.shape, target.stride(), strict=True)):
        if stride == 0 and n > 1:
            target = target.narrow(axis, 0, 1)
            result = result.narrow(axis, 0, 1)
    target.copy_(result)


def as_launch_args(args: Any) -> Any:
    """``args`` for a GPU launch: each host-resident array that is not NumPy (a torch CPU
    tensor, a CPU DLPack or ``__array_interface__`` object) replaced by a zero-copy NumPy
    view of its memory, so the launcher's NumPy path (copy to the device, run, copy the
    results back into the view, i.e. into the caller's tensor) serves it; device arrays,
    NumPy arrays and scalars stay as they are (lists/tuples inside too). Returns ``args``
    itself when nothing needs a view: the common CuPy/NumPy launch pays only a type check
    per argument (no CUDA-array-interface dict is built)."""
    if not isinstance(args, (list, tuple)):
        return args  # the launcher reports a non-sequence itself
    verdicts = _VERDICT_BY_TYPE
    for v in args:  # a plain loop: this runs on every launch
        if verdicts.get(type(v)) != "no" and _needs_host_view(v):
            break
    else:
        return args
    out = [type(v)(as_launch_args(v)) if isinstance(v, (list, tuple))
           else host_view(v) if _needs_host_view(v) else v for v in args]
    return tuple(out) if isinstance(args, tuple) else out


def _needs_host_view(value: Any) -> bool:
    verdict = _VERDICT_BY_TYPE.get(type(value))
    if verdict is None:  # first argument of this type: decide what its type alone says
        verdict = _VERDICT_BY_TYPE[type(value)] = _type_verdict(type(value))
    if verdict != "per value":
        return verdict == "yes"
    if isinstance(value, (list, tuple)):
        return any(_needs_host_view(v) for v in value)
    if _is_torch(value):
        return value.device.type == "cpu"
    return is_array_like(value) and not hasattr(value, "__cuda_array_interface__")


def _type_verdict(kind: type) -> str:
    if kind in (np.ndarray, int, float, bool, type(None), str) or issubclass(kind, np.generic) \
            or kind.__module__.split(".")[0] == "cupy":
        return "no"  # NumPy: the launcher's own path; CuPy: device memory
    return "per value"


_VERDICT_BY_TYPE: dict[type, str] = {}


# -- producers ------------------------------------------------------------------------------

def _is_torch(value: Any) -> bool:
    return type(value).__module__.split(".")[0] == "torch" and hasattr(value, "data_ptr")


def _interface(value: Any, name: str) -> dict | None:
    try:
        d = getattr(value, name, None)
    except (TypeError, AttributeError, RuntimeError):  # e.g. torch refuses for bfloat16
        return None
    return d if isinstance(d, dict) else None


def _typestr_dtype(typestr: Any) -> np.dtype:
    try:
        dt = np.dtype(typestr)
    except TypeError:
        raise ArgumentProblem(f"unknown array element type {typestr!r}") from None
    if dt.kind == "V" and dt.itemsize == 2:  # bfloat16 through array interfaces ("<V2")
        return np.dtype(ml_dtypes.bfloat16)
    return dt


def _checked(dtype: Any, shape: Any, strides: Any, device: str, ptr: int | None) -> ArrayInfo:
    dt = np.dtype(dtype)
    if dt.name not in SUPPORTED_DTYPES:
        raise ArgumentProblem(f"arrays of dtype {dt.name} have no cuTile equivalent "
                              f"(supported: {', '.join(SUPPORTED_DTYPES)})")
    shape_t = tuple(int(n) for n in shape)
    strides_t = None if strides is None else tuple(int(s) for s in strides)
    if strides_t is not None and any(s % dt.itemsize for s in strides_t):
        raise ArgumentProblem("strides are not a whole number of elements")
    return ArrayInfo(dt, shape_t, strides_t, device, ptr)


_TORCH_NAMES = {"bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32",
                "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
                "uint64": "uint64", "float16": "float16", "bfloat16": "bfloat16",
                "float32": "float32", "float64": "float64",
                "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
                "complex64": "complex64", "complex128": "complex128"}


def _torch_info(t: Any) -> ArrayInfo:
    name = str(t.dtype).removeprefix("torch.")
    np_name = _TORCH_NAMES.get(name)
    if np_name is None:
        raise ArgumentProblem(f"torch tensors of dtype {name} have no cuTile equivalent "
                              f"(supported: {', '.join(SUPPORTED_DTYPES)})")
    dt = _numpy_dtype(np_name)
    device = "cpu" if t.device.type == "cpu" else "cuda"
    strides = tuple(int(s) * dt.itemsize for s in t.stride())
    return _checked(dt, tuple(t.shape), strides, device, int(t.data_ptr()))


def _numpy_dtype(name: str) -> np.dtype:
    """NumPy's dtype of that name, taking bfloat16 and float8 from ml_dtypes."""
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def _torch_int_of_size(size: int) -> Any:
    import torch

    return {1: torch.uint8, 2: torch.int16}[size]


# -- DLPack: read the DLTensor header of an unconsumed capsule ------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DL_HOST = {1, 3}  # kDLCPU, kDLCUDAHost (pinned host memory)
_DL_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool",
             10: "float8_e4m3fn", 12: "float8_e5m2"}
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack_info(value: Any) -> ArrayInfo:
    try:
        capsule = value.__dlpack__()
        tensor = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    except Exception as exc:  # any producer failure: say what it was
        raise ArgumentProblem(f"could not read this {type(value).__name__} through DLPack "
                              f"({type(exc).__name__}: {exc})") from None
    code = _DL_CODES.get(tensor.dtype.code)
    bits = tensor.dtype.bits
    if code is None or tensor.dtype.lanes != 1:
        raise ArgumentProblem(f"DLPack dtype code {tensor.dtype.code} ({bits} bits) has no "
                              "cuTile equivalent")
    name = {"bfloat": "bfloat16", "bool": "bool"}.get(code, code if code.startswith("float8")
                                                      else f"{code}{bits}")
    dt = _numpy_dtype(name)
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = (None if not tensor.strides
               else tuple(tensor.strides[i] * dt.itemsize for i in range(ndim)))
    device = "cpu" if tensor.device.device_type in _DL_HOST else "cuda"
    ptr = (tensor.data or 0) + tensor.byte_offset
    del capsule  # unconsumed: its destructor returns the producer's reference
    return _checked(dt, shape, strides, device, ptr)


# -- describing an array for a signature ------------------------------------------------

@dataclass(frozen=True)
class ArrayDesc:
    """What a signature needs to know about one array argument."""

    code: str  # dtype code, e.g. "f32"
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    aligned: bool  # base address divisible by 16 bytes

    @property
    def itemsize(self) -> int:
        return _numpy_dtype(DTYPE_CODES[self.code][1]).itemsize

    @property
    def contiguous(self) -> bool:
        return self.strides == contiguous_strides(self.shape)

    def display(self) -> str:
        text = f"{self.code}[{','.join(str(n) for n in self.shape)}]"
        if not self.contiguous:
            text += "(strides " + ",".join(str(s) for s in self.strides) + ")"
        return text


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides, in elements."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(out))


def code_for_numpy_dtype(dt: Any) -> str | None:
    """The short code of a NumPy dtype ("f32", "bf16" ...), None for one cuTile lacks."""
    dt = np.dtype(dt)
    code = _CODE_BY_NUMPY_NAME.get(dt.name)
    if code is None and dt.kind == "V" and dt.itemsize == 2:  # bfloat16 via array interfaces
        code = "bf16"
    return code


def describe_array(obj: Any) -> ArrayDesc | None:
    """An ArrayDesc for an array-like example argument, None for anything else.

    Anything :func:`array_info` reads (NumPy, torch, CuPy, ``__cuda_array_interface__``,
    DLPack) is described from its metadata, never by copying device data. Host arrays are
    assumed to be copied into a fresh, aligned device buffer before a launch, so their host
    address does not matter; device arrays report their real alignment.
    """
    info = array_info(obj)
    if info is None:
        return None
    code = code_for_numpy_dtype(info.dtype)
    if code is None:  # array_like accepts only dtypes with a cuTile equivalent
        raise ArgumentProblem(f"arrays of dtype {info.dtype.name} are not supported by cuTile")
    strides = (contiguous_strides(info.shape) if info.strides is None
               else tuple(s // info.dtype.itemsize for s in info.strides))
    device_ptr = None if info.on_host or info.data_ptr is None else info.data_ptr
    aligned = True if device_ptr is None else device_ptr % ALIGN_BYTES == 0
    return ArrayDesc(code, info.shape, strides, aligned)
