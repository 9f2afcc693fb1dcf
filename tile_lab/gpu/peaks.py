"""Theoretical peaks of a GPU: DRAM bandwidth and FP32 / tensor-core FLOPS; and the SM
counts of known GPUs by name (``sm_count``), for pictures drawn without a GPU.

Formulas (all inputs read from the device, see :mod:`tile_lab.gpu.device`):

* DRAM bandwidth = memory clock × bus width / 8 × 2. The 2 is the double data rate: the
  driver reports HBM2e/HBM3 clocks (A100: 1215 MHz, H100 SXM: 2619 MHz, H200: 3201 MHz) and,
  for GDDR6/6X/7, half the per-pin data rate (RTX 4090: 10501 MHz for 21 Gbps), so the same
  factor 2 gives the published bandwidth for both families.
* FLOPS = SM count × SM clock × FLOPs per SM per clock (one FMA counts as 2 FLOPs). The clock
  is the maximum SM clock the device reports; datasheets sometimes quote tensor peaks at a
  lower boost clock (H100 SXM: 989 TFLOPS dense FP16 implies 1830 MHz, the device reports
  1980 MHz), so tile_lab's tensor roof is an upper bound, never an underestimate.

Per-SM throughput table (FLOPs / clock / SM). Sources: NVIDIA's architecture whitepapers
(A100 "Ampere GA100", "GA102", "Ada Lovelace", "H100 Hopper", "Blackwell") and the product
datasheets, cross-checked as SM count × clock × rate against the datasheet peak:

=======  ====  ===================  ====================================================
arch     FP32  FP16/BF16 tensor      cross-check
=======  ====  ===================  ====================================================
sm_80    128   2048                 A100: 108 × 1410 MHz → 19.5 / 312 TFLOPS
sm_86    256   1024                 RTX A6000: 84 × 1800 MHz → 38.7 / 154.8 TFLOPS
sm_89    256   1024                 L40S: 142 × 2520 MHz → 91.6 / 366 (datasheet 362)
sm_90    256   4096                 H100 SXM: 132 × 1980 → 66.9; × 1830 → 989 TFLOPS
sm_100   256   8192                 B200: Blackwell doubles Hopper's dense tensor rate/SM
sm_120   256   1024                 RTX 5090: 170 × 2407 MHz → 104.8 TFLOPS FP32
=======  ====  ===================  ====================================================

The tensor column is dense FP16/BF16 with FP32 accumulation at full rate (datacenter and
professional parts). GeForce parts of sm_86/89/120 run FP32-accumulate MMA at half that
rate, so their real tensor roof is half the table's: a measurement there can look far from
the roof without being slow.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# arch -> (FP32 FLOPs/clk/SM, dense FP16/BF16 tensor FLOPs/clk/SM with FP32 accumulation)
PER_SM_FLOPS_PER_CLOCK: dict[str, tuple[int, int]] = {
    "sm_80": (128, 2048),
    "sm_86": (256, 1024),
    "sm_89": (256, 1024),
    "sm_90": (256, 4096),
    "sm_100": (256, 8192),
    "sm_120": (256, 1024),
}

# SM counts from NVIDIA's published specifications.
GPU_SM_COUNTS: dict[str, int] = {
    "H100 SXM": 132, "H100 PCIe": 114, "H100 NVL": 132, "H200": 132, "GH200": 132,
    "B200": 148, "GB200": 152, "A100": 108, "L40S": 142, "L4": 58, "RTX 4090": 128,
    "RTX 5090": 170,
}

# Variants that share their base architecture's throughput (sm_90a, sm_100a, sm_103, sm_121...).
_ARCH_FAMILY = {"sm_87": "sm_86", "sm_101": "sm_100", "sm_103": "sm_100", "sm_110": "sm_100",
                "sm_121": "sm_120"}


def dram_bandwidth_gbps(mem_clock_mhz: float, bus_width_bits: int) -> float:
    """Peak DRAM bandwidth in GB/s (10^9 bytes/s): clock × bus width / 8 × 2 (DDR)."""
    return mem_clock_mhz * 1e6 * (bus_width_bits / 8) * 2 / 1e9


def per_sm_rates(arch: str) -> tuple[int, int] | None:
    """(FP32, tensor) FLOPs per clock per SM for ``arch`` ("sm_90", "sm_90a"...), or None."""
    base = arch.rstrip("af")
    base = _ARCH_FAMILY.get(base, base)
    return PER_SM_FLOPS_PER_CLOCK.get(base)


def flops_tflops(sm_count: int, sm_clock_mhz: float, flops_per_clock_per_sm: int) -> float:
    """SM count × clock × per-SM rate, in TFLOPS (10^12 FLOP/s)."""
    return sm_count * sm_clock_mhz * 1e6 * flops_per_clock_per_sm / 1e12


def sm_count(gpu: str | int) -> int:
    """SMs of ``gpu``: an int is taken as is; a name is looked up in ``GPU_SM_COUNTS``
    (case-insensitive, "NVIDIA H100 80GB HBM3" matches "H100 SXM" via "H100")."""
    if isinstance(gpu, int):
        if gpu < 1:
            raise ValueError(f"gpu={gpu}: an SM count must be positive")
        return gpu
    want = gpu.lower().replace("nvidia", "").strip()
    for name, n in GPU_SM_COUNTS.items():
        if name.lower() == want:
            return n
    for name, n in GPU_SM_COUNTS.items():  # "H100 80GB HBM3" → the first H100 entry (SXM)
        if name.lower().split()[0] in want.split():
            return n
    raise ValueError(f"gpu={gpu!r}: unknown GPU; pass its SM count as an int or one of "
                     f"{', '.join(GPU_SM_COUNTS)}")


@dataclass(frozen=True)
class Peaks:
    """The roofs of one GPU. FLOPS fields are None for an architecture not in the table."""

    gpu: str
    arch: str
    sm_count: int
    sm_clock_mhz: float
    mem_clock_mhz: float
    bus_width_bits: int
    dram_gbps: float
    fp32_tflops: float | None
    tensor_tflops: float | None  # dense FP16/BF16, FP32 accumulate

    @property
    def top_tflops(self) -> float | None:
        """The highest compute roof known (tensor if known, else FP32)."""
        return self.tensor_tflops if self.tensor_tflops is not None else self.fp32_tflops

    def to_json_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json_dict(cls, data: dict) -> Peaks:
        return cls(**data)


def compute_peaks(*, gpu: str, arch: str, sm_count: int, sm_clock_mhz: float,
                  mem_clock_mhz: float, bus_width_bits: int) -> Peaks:
    """Peaks from raw device numbers (used for the current device and for known GPUs)."""
    rates = per_sm_rates(arch)
    fp32 = tensor = None
    if rates is not None:
        fp32 = flops_tflops(sm_count, sm_clock_mhz, rates[0])
        tensor = flops_tflops(sm_count, sm_clock_mhz, rates[1])
    return Peaks(gpu=gpu, arch=arch, sm_count=sm_count, sm_clock_mhz=sm_clock_mhz,
                 mem_clock_mhz=mem_clock_mhz, bus_width_bits=bus_width_bits,
                 dram_gbps=dram_bandwidth_gbps(mem_clock_mhz, bus_width_bits),
                 fp32_tflops=fp32, tensor_tflops=tensor)


def device_peaks(index: int | None = None) -> Peaks:
    """Peaks of the current (or ``index``) CUDA device; raises NoGPUError without one."""
    from .device import device_info

    info = device_info(index)
    return compute_peaks(gpu=info.name, arch=info.arch, sm_count=info.sm_count,
                         sm_clock_mhz=info.max_sm_clock_mhz,
                         mem_clock_mhz=info.max_mem_clock_mhz,
                         bus_width_bits=info.bus_width_bits)
