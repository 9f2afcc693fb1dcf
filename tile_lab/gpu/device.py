"""The GPU boundary: is there a usable CUDA GPU, what is it, and what are its clocks now.

Everything here imports CuPy lazily, so importing this module never needs a GPU. Every
GPU-only entry point calls :func:`require_gpu`, which raises :class:`NoGPUError` saying what
is missing and what still works without a GPU.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from ..errors import NoGPUError
from .state import StateReader

# What tile_lab still does without a GPU: quoted in every NoGPUError.
WORKS_WITHOUT_GPU = (
    "Without a GPU you can still compile and inspect kernels (tile_lab.inspect), run them on the "
    "CPU emulator (tile_lab.emulate, tile_lab.trace, tile_lab.sanitize), draw diagrams "
    "(tile_lab.diagram), and load and plot recorded measurements (tile_lab.load_measurements, "
    "tile_lab.roofline)."
)

# cudaDeviceAttr numbers (CUDA runtime API; stable since CUDA 5). The CUDA 13 runtime dropped
# clockRate/memoryClockRate from cudaDeviceProp, but the attributes are still answered.
_ATTR_CLOCK_RATE_KHZ = 13
_ATTR_SM_COUNT = 16
_ATTR_MEMORY_CLOCK_RATE_KHZ = 36
_ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37
_ATTR_L2_CACHE_SIZE = 38
_ATTR_CC_MAJOR = 75
_ATTR_CC_MINOR = 76


@functools.cache
def _probe() -> tuple[Any, str | None]:
    """(cupy module or None, reason it is unusable or None). Cached: a GPU does not appear."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CuPy that cannot find libcuda
        return None, (f"CuPy cannot be imported ({type(exc).__name__}: {exc}); install the GPU "
                      "extra: pip install 'tile_lab[gpu]' (cupy-cuda13x)")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return None, f"CuPy found no usable CUDA driver or device ({type(exc).__name__}: {exc})"
    if count < 1:
        return None, "CuPy reports 0 CUDA devices"
    return cupy, None


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    return _probe()[0] is not None


def require_gpu(what: str = "this operation") -> Any:
    """Return the ``cupy`` module, or raise :class:`NoGPUError` naming ``what`` needed it."""
    cupy, reason = _probe()
    if cupy is None:
        raise NoGPUError(f"{what} needs a CUDA GPU, but {reason}.", hint=WORKS_WITHOUT_GPU)
    return cupy


@dataclass(frozen=True)
class DeviceInfo:
    """Static properties of one CUDA device, read from the driver."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    max_sm_clock_mhz: float
    max_mem_clock_mhz: float
    bus_width_bits: int
    l2_bytes: int
    total_memory_bytes: int
    cuda_driver_api: int  # e.g. 13000 (cudaDriverGetVersion), not the driver release

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"


def current_device_index() -> int:
    cupy = require_gpu("reading the current device")
    return int(cupy.cuda.runtime.getDevice())


def device_info(index: int | None = None) -> DeviceInfo:
    """Properties of device ``index`` (default: CuPy's current device)."""
    return _device_info(current_device_index() if index is None else index)


@functools.cache
def _device_info(index: int) -> DeviceInfo:
    cupy = require_gpu("reading GPU properties")
    rt = cupy.cuda.runtime

    def attr(code: int) -> int:
        return int(rt.deviceGetAttribute(code, index))

    props = rt.getDeviceProperties(index)
    name = props["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    return DeviceInfo(
        index=index, name=name,
        compute_capability=(attr(_ATTR_CC_MAJOR), attr(_ATTR_CC_MINOR)),
        sm_count=attr(_ATTR_SM_COUNT),
        max_sm_clock_mhz=attr(_ATTR_CLOCK_RATE_KHZ) / 1000.0,
        max_mem_clock_mhz=attr(_ATTR_MEMORY_CLOCK_RATE_KHZ) / 1000.0,
        bus_width_bits=attr(_ATTR_GLOBAL_MEMORY_BUS_WIDTH),
        l2_bytes=attr(_ATTR_L2_CACHE_SIZE),
        total_memory_bytes=int(props.get("totalGlobalMem", 0)),
        cuda_driver_api=int(rt.driverGetVersion()),
    )


@dataclass(frozen=True)
class ClockState:
    """Clocks at the moment of asking, and whether they were locked.

    ``locked`` is "yes", "no" or "unknown": "yes" when NVML reports the applications-clocks
    (or locked-clocks) setting as an active clock limiter, "no" when it reports it inactive,
    "unknown" when neither NVML nor ``nvidia-smi`` answered.
    """

    sm_mhz: float | None
    mem_mhz: float | None
    locked: str
    driver: str | None
    source: str  # "nvml" | "nvidia-smi" | "none"


# nvmlClocksEventReasonApplicationsClocksSetting (same bit as the older ...ThrottleReason...)
_NVML_REASON_APP_CLOCKS = 0x2


def clock_state(index: int | None = None) -> ClockState:
    """Read current SM/memory clocks and the lock state through NVML, else ``nvidia-smi``."""
    if index is None:
        index = current_device_index() if gpu_available() else 0
    state = _clock_state_nvml(index)
    if state is None:
        state = _clock_state_smi(index)
    return state or ClockState(None, None, "unknown", None, "none")


@functools.cache
def _nvml() -> Any:
    """pynvml, initialised once per process (nvmlInit costs tens of ms and every measurement
    reads clocks), or None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    import atexit

    atexit.register(pynvml.nvmlShutdown)
    return pynvml


def _clock_state_nvml(index: int) -> ClockState | None:
    pynvml = _nvml()
    if pynvml is None:
        return None
    try:
        handle = _nvml_handle(pynvml, index)
        sm = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        mem = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else str(driver)
        try:
            reasons = pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
        except AttributeError:  # older nvidia-ml-py
            reasons = pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)
        locked = "yes" if reasons & _NVML_REASON_APP_CLOCKS else "no"
        return ClockState(float(sm), float(mem), locked, driver, "nvml")
    except Exception:
        return None


def _nvml_handle(pynvml: Any, index: int) -> Any:
    # NVML numbers GPUs by PCI order, CUDA by speed unless CUDA_DEVICE_ORDER says otherwise:
    # match them through the PCI bus id when CuPy can give it.
    cupy = _probe()[0]
    if cupy is not None:
        try:
            bus_id = cupy.cuda.runtime.deviceGetPCIBusId(index)
            return pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
        except Exception:
            pass
    return pynvml.nvmlDeviceGetHandleByIndex(index)


def _clock_state_smi(index: int) -> ClockState | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    fields = "clocks.sm,clocks.mem,driver_version,clocks_event_reasons.applications_clocks_setting"
    try:
        out = subprocess.run([smi, f"--id={index}", f"--query-gpu={fields}",
                              "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    parts = [p.strip() for p in out.strip().splitlines()[0].split(",")] if out.strip() else []
    if len(parts) != 4:
        return None

    def num(text: str) -> float | None:
        try:
            return float(text)
        except ValueError:
            return None

    locked = {"active": "yes", "not active": "no"}.get(parts[3].lower(), "unknown")
    return ClockState(num(parts[0]), num(parts[1]), locked, parts[2] or None, "nvidia-smi")


def nvml_reader(index: int | None = None) -> StateReader:
    """A :class:`~tile_lab.gpu.state.NvmlReader` for CUDA device ``index`` (default: the
    current one), or a :class:`~tile_lab.gpu.state.NullReader` when NVML is unavailable."""
    from .state import NullReader, NvmlReader

    pynvml = _nvml()
    if pynvml is None:
        return NullReader()
    if index is None:
        index = current_device_index() if gpu_available() else 0
    try:
        return NvmlReader(_nvml_handle(pynvml, index), pynvml)
    except Exception:
        return NullReader()


def device_identity() -> dict[str, Any]:
    """``{"gpu": name, "driver": driver release}`` of the current device (for result stores)."""
    info = device_info()
    return {"gpu": info.name, "driver": clock_state(info.index).driver}


def local_arch() -> str | None:
    """The current GPU's ``sm_XY``, or None without a GPU."""
    if not gpu_available():
        return None
    return device_info().arch


def software_versions() -> dict[str, str | None]:
    """cuda.tile, tileiras and CuPy versions (None where not installed)."""
    out: dict[str, str | None] = {"cuda.tile": None, "tileiras": None, "cupy": None}
    try:
        import cuda.tile

        out["cuda.tile"] = cuda.tile.__version__
    except Exception:
        pass
    try:
        from ..compile.toolchain import tool_version

        out["tileiras"] = tool_version("tileiras")
    except Exception:
        pass
    cupy = _probe()[0]
    if cupy is not None:
        out["cupy"] = cupy.__version__
    return out


def provenance(*, isolated: bool = False) -> Any:
    """A :class:`~tile_lab.gpu.measurement.Provenance` for the current device, now."""
    from .measurement import Provenance

    info = device_info()
    clocks = clock_state(info.index)
    versions = software_versions()
    return Provenance(gpu=info.name, arch=info.arch, sm_count=info.sm_count,
                      driver=clocks.driver, cuda_driver_api=info.cuda_driver_api,
                      cuda_tile=versions["cuda.tile"], tileiras=versions["tileiras"],
                      cupy=versions["cupy"], sm_clock_mhz=clocks.sm_mhz,
                      mem_clock_mhz=clocks.mem_mhz, max_sm_clock_mhz=info.max_sm_clock_mhz,
                      clocks_locked=clocks.locked, isolated=isolated)
