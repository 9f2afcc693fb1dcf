"""A deterministic stand-in for GPU measurement, so the tuner's logic is testable on a CPU.

The cost model is arbitrary but fixed; tests assert the tuner's *decisions* (which configs it
measured, which it kept, what it stored), never timing numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tile_lab.errors import LaunchError


@dataclass(frozen=True)
class FakeMeasurement:
    mean_s: float
    ci95_s: float
    gbps: float | None = None
    tflops: float | None = None
    mode: str = "cold"
    samples: int = 0
    gpu_name: str = "fake"

    def to_json_dict(self) -> dict:
        return asdict(self)


@dataclass
class FakeGPU:
    """``measure(kernel, grid, args, n)``: time = cost(config constants and hints)."""

    calls: list = field(default_factory=list)
    fail_tiles: tuple = ()
    crash_after: int | None = None  # raise KeyboardInterrupt on this call (a crash mid-sweep)

    def __call__(self, kernel, grid, args, n):
        tile, lat = args[2], args[3]
        occ = getattr(kernel, "_tl_occ", None)
        self.calls.append((tile, lat, n))
        if self.crash_after is not None and len(self.calls) > self.crash_after:
            raise KeyboardInterrupt("simulated crash")
        if tile in self.fail_tiles:
            # what the GPU path raises for a faulting launch (its stage is data: "launch")
            raise LaunchError(f"CUDA_ERROR_ILLEGAL_ADDRESS for TILE={tile}")
        # best at TILE=256, LAT=3; far worse at small tiles
        t = 1e-5 * (1 + abs(tile - 256) / 64) * (1 + abs(lat - 3) / 10)
        del occ
        return FakeMeasurement(mean_s=t, ci95_s=t * 0.01, gbps=1.0 / t, samples=n)
