"""Measurement records: JSON round trip, file format checks, summaries."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fixed_measurements import fixed_measurement as _measurement

from tile_lab import load_measurements
from tile_lab.gpu.measurement import Measurement, Provenance, save_measurements
from tile_lab.gpu.peaks import compute_peaks

H200 = compute_peaks(gpu="NVIDIA H200", arch="sm_90", sm_count=132, sm_clock_mhz=1980,
                     mem_clock_mhz=3201, bus_width_bits=6144)
PROV = Provenance(gpu="NVIDIA H200", arch="sm_90", sm_count=132, driver="580.159.03",
                  cuda_driver_api=13000, cuda_tile="1.7.0", tileiras="13.4.92", cupy="14.2.0",
                  sm_clock_mhz=1980.0, mem_clock_mhz=3201.0, max_sm_clock_mhz=1980.0,
                  clocks_locked="no")


def make(label="vadd", tile=1024, times=(1.0e-3, 1.1e-3, 0.9e-3), flops=None, mode="cold"):
    a = np.zeros(1 << 20, np.float32)
    return _measurement("vector_add", mode, ((1 << 20) // tile,), list(times), 1, (a, a, a),
                        bytes=None, flops=flops, trace=None, label=label,
                        params={"tile": tile}, fresh=False, notes=[], peaks=H200,
                        provenance=PROV)


def test_round_trip_through_a_file_keeps_every_field(tmp_path):
    ms = [make(), make(label="other", tile=512, flops=1 << 20, mode="graph")]
    path = tmp_path / "m.json"
    save_measurements(ms, path)
    loaded = load_measurements(path)
    assert loaded == ms
    assert loaded[1].provenance == PROV and loaded[1].params == {"tile": 512}
    assert isinstance(loaded[0].samples_s, tuple) and isinstance(loaded[0].grid, tuple)


def test_a_gz_name_round_trips_gzipped_with_reproducible_bytes(tmp_path):
    import gzip
    import json

    ms = [make(), make(label="other", tile=512)]
    packed, plain = tmp_path / "m.json.gz", tmp_path / "m.json"
    save_measurements(ms, packed)
    save_measurements(ms, plain)
    assert load_measurements(packed) == ms
    assert json.loads(gzip.decompress(packed.read_bytes())) == json.loads(plain.read_text())
    first = packed.read_bytes()
    save_measurements(ms, packed)
    assert packed.read_bytes() == first  # no timestamp in the gzip header


def test_state_fields_round_trip_and_show_in_the_summary(tmp_path):
    from dataclasses import replace

    from tile_lab.gpu.state import SampleState

    states = (SampleState(1980.0, 2619.0, 310.5, 48.0, 0, False),
              SampleState(1305.0, 2619.0, 699.0, 61.0, 0x4, True),
              SampleState(None, None, None, None, 0, False))
    m = replace(make(), regime="sustained", states=states, throttled_samples=1,
                discarded_samples=0, throttle_policy="keep",
                baseline="torch.matmul (cuBLAS), torch 2.11.0")
    save_measurements([m], tmp_path / "s.json")
    (back,) = load_measurements(tmp_path / "s.json")
    assert back == m and back.states[1].reasons == 0x4 and back.states[2].sm_mhz is None
    assert back.sm_mhz == pytest.approx((1980 + 1305) / 2) and back.power_w == pytest.approx(
        (310.5 + 699.0) / 2)
    assert "at SM 1642 MHz, 505 W (sustained, 1 throttled)" in back.summary()
    # records written before the state fields existed still load, with empty states
    data = make().to_json_dict()
    for key in ("regime", "states", "throttled_samples", "discarded_samples",
                "throttle_policy", "baseline"):
        data.pop(key)
    old = Measurement.from_json_dict(data)
    assert old.states == () and old.regime is None and old.sm_mhz is None


def test_saved_files_are_deterministic_and_carry_provenance(tmp_path):
    save_measurements([make()], tmp_path / "a.json")
    save_measurements([make()], tmp_path / "b.json")
    text = (tmp_path / "a.json").read_text()
    assert text == (tmp_path / "b.json").read_text()
    doc = json.loads(text)
    assert doc["format"] == "tile_lab.measurements" and doc["version"] == 1
    prov = doc["measurements"][0]["provenance"]
    for key in ("gpu", "driver", "cuda_tile", "tileiras", "sm_clock_mhz", "clocks_locked"):
        assert key in prov


def test_loading_a_file_that_is_not_measurements_says_so(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a tile_lab measurements file"):
        load_measurements(path)
    path.write_text('{"format": "tile_lab.measurements", "version": 99, "measurements": []}')
    with pytest.raises(ValueError, match="version 99"):
        load_measurements(path)


def test_unknown_keys_from_a_newer_writer_are_ignored():
    data = make().to_json_dict()
    data["something_new"] = 1
    data["provenance"]["also_new"] = 2
    assert Measurement.from_json_dict(data) == make()


def test_summary_names_mode_ci_and_gpu():
    text = make().summary()
    assert "[cold]" in text and "95% CI, n=3" in text and "NVIDIA H200" in text
    assert "% of peak" in text


def test_rate_interval_brackets_the_mean_rate():
    m = make()
    low, high = m.rate_interval("gbps")
    assert low < m.gbps < high
    assert low == pytest.approx(m.bytes / (m.mean_s + m.ci95_s) / 1e9)
    # 3 noisy samples: the CI of the mean reaches below the fastest sample, which caps it
    assert m.mean_s - m.ci95_s < m.min_s
    assert high == pytest.approx(m.bytes / m.min_s / 1e9)
    assert m.rate_interval("tflops") is None  # no FLOP count
