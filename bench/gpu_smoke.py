"""What tile_lab sees of this GPU: properties, roofs, clocks, provenance, versions.

Cheap; run it first on a new machine (``python bench/gpu_smoke.py``).
"""

from __future__ import annotations

from dataclasses import asdict

import gpu_common  # noqa: F401  (puts the checkout on sys.path)


def main() -> None:
    from tile_lab.gpu.device import clock_state, device_info, provenance
    from tile_lab.gpu.peaks import device_peaks

    info = device_info()
    print("device:", asdict(info))
    peaks = device_peaks()
    print(f"peaks: DRAM {peaks.dram_gbps:.0f} GB/s, FP32 {peaks.fp32_tflops} TFLOPS, "
          f"tensor {peaks.tensor_tflops} TFLOPS")
    print("clocks:", asdict(clock_state()))
    print("provenance:", asdict(provenance()))


if __name__ == "__main__":
    main()
