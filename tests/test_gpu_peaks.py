"""Peak formulas against published specifications of known GPUs.

Inputs are what the driver reports for each GPU (memory clock in MHz as
``cudaDevAttrMemoryClockRate`` gives it, bus width in bits, SM count, max SM clock); the
expected values are the datasheet figures, which the formulas must reproduce within a few %.
"""

from __future__ import annotations

import pytest

from tile_lab.gpu.peaks import (
    PER_SM_FLOPS_PER_CLOCK,
    compute_peaks,
    dram_bandwidth_gbps,
    per_sm_rates,
    sm_count,
)

# name, reported memory clock (MHz), bus width (bits), datasheet bandwidth (GB/s)
BANDWIDTH = [
    ("A100 SXM4 40GB", 1215, 5120, 1555),
    ("A100 SXM4 80GB", 1593, 5120, 2039),
    ("H100 SXM5 80GB", 2619, 5120, 3350),
    ("H200 SXM 141GB", 3201, 6144, 4800),
    ("RTX 4090", 10501, 384, 1008),
    ("L40S", 9001, 384, 864),
    ("RTX A6000", 8001, 384, 768),
    ("RTX 5090", 14001, 512, 1792),
]

# name, arch, SMs, clock (MHz) the datasheet figure is quoted at, FP32 TFLOPS, dense FP16
# tensor TFLOPS with FP32 accumulation (None: not a full-rate part / not quoted)
FLOPS = [
    ("A100 SXM4", "sm_80", 108, 1410, 19.5, 312),
    ("RTX A6000", "sm_86", 84, 1800, 38.7, 154.8),
    ("L40S", "sm_89", 142, 2520, 91.6, 362),
    ("RTX 4090", "sm_89", 128, 2520, 82.6, None),
    ("H100 SXM5 (FP32 at 1980 MHz)", "sm_90", 132, 1980, 66.9, None),
    ("H100 SXM5 (tensor at 1830 MHz)", "sm_90", 132, 1830, None, 989.4),
    ("RTX 5090", "sm_120", 170, 2407, 104.8, None),
]


@pytest.mark.parametrize(("name", "mem_mhz", "bus", "published"), BANDWIDTH,
                         ids=[b[0] for b in BANDWIDTH])
def test_dram_bandwidth_matches_the_datasheet(name, mem_mhz, bus, published):
    assert dram_bandwidth_gbps(mem_mhz, bus) == pytest.approx(published, rel=0.03)


@pytest.mark.parametrize(("name", "arch", "sms", "mhz", "fp32", "tensor"), FLOPS,
                         ids=[f[0] for f in FLOPS])
def test_flops_match_the_datasheet(name, arch, sms, mhz, fp32, tensor):
    peaks = compute_peaks(gpu=name, arch=arch, sm_count=sms, sm_clock_mhz=mhz,
                          mem_clock_mhz=1000, bus_width_bits=512)
    if fp32 is not None:
        assert peaks.fp32_tflops == pytest.approx(fp32, rel=0.02)
    if tensor is not None:
        assert peaks.tensor_tflops == pytest.approx(tensor, rel=0.02)


def test_h100_tensor_roof_from_the_reported_clock_is_an_upper_bound():
    # the device reports 1980 MHz; the datasheet's 989 TFLOPS implies 1830 MHz
    peaks = compute_peaks(gpu="H100", arch="sm_90", sm_count=132, sm_clock_mhz=1980,
                          mem_clock_mhz=2619, bus_width_bits=5120)
    assert peaks.tensor_tflops > 989.4
    assert peaks.tensor_tflops == pytest.approx(132 * 1980e6 * 4096 / 1e12)
    assert peaks.top_tflops == peaks.tensor_tflops


def test_arch_variants_share_their_family_rates():
    assert per_sm_rates("sm_90a") == PER_SM_FLOPS_PER_CLOCK["sm_90"]
    assert per_sm_rates("sm_100a") == PER_SM_FLOPS_PER_CLOCK["sm_100"]
    assert per_sm_rates("sm_103") == PER_SM_FLOPS_PER_CLOCK["sm_100"]
    assert per_sm_rates("sm_121") == PER_SM_FLOPS_PER_CLOCK["sm_120"]


def test_unknown_arch_has_bandwidth_but_no_flops_roof():
    peaks = compute_peaks(gpu="future", arch="sm_200", sm_count=10, sm_clock_mhz=1000,
                          mem_clock_mhz=1000, bus_width_bits=1024)
    assert peaks.fp32_tflops is None and peaks.tensor_tflops is None and peaks.top_tflops is None
    assert peaks.dram_gbps == pytest.approx(256.0)


def test_every_documented_arch_is_in_the_table():
    assert set(PER_SM_FLOPS_PER_CLOCK) == {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100",
                                           "sm_120"}


def test_peaks_round_trip_through_json():
    from tile_lab.gpu.peaks import Peaks

    peaks = compute_peaks(gpu="H200", arch="sm_90", sm_count=132, sm_clock_mhz=1980,
                          mem_clock_mhz=3201, bus_width_bits=6144)
    assert Peaks.from_json_dict(peaks.to_json_dict()) == peaks


def test_sm_counts_by_name():
    assert sm_count("H100 SXM") == 132 and sm_count("NVIDIA H100 80GB HBM3") == 132
    assert sm_count("h200") == 132 and sm_count(108) == 108
    with pytest.raises(ValueError, match="unknown GPU"):
        sm_count("Voodoo 2")
    with pytest.raises(ValueError, match="positive"):
        sm_count(0)
