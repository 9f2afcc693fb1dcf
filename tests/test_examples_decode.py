"""tile_lab.examples.decode: the decode-attention kernel of notebook 18, its inputs (K/V views
of one fused buffer, aligned or 2 bytes off), what the emulator predicts, and the recording."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from corpus import line_of

import tile_lab
from tile_lab.examples.decode import (
    decode_attention,
    decode_inputs,
    decode_launch,
    decode_reference,
)

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "notebooks" / "data" / "decode_alignment.json.gz"


@pytest.mark.parametrize("misaligned,offset", [(False, 0), (True, 2)])
def test_k_and_v_are_views_of_one_buffer_at_the_asked_alignment(misaligned, offset):
    q, k, v, out = decode_inputs(misaligned=misaligned)
    assert k.base is v.base and k.ctypes.data % 16 == v.ctypes.data % 16 == offset
    assert q.shape == out.shape == (1, 4, 15, 32) and k.shape == v.shape == (1, 2, 63, 32)
    assert q.dtype == k.dtype == np.float16


def test_undetermined_padding_of_v_poisons_every_output_and_is_named():
    grid, args = decode_launch(*decode_inputs(misaligned=True))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tile_lab.emulate(decode_attention, grid, args)
    assert np.isnan(args[3]).all()
    load = line_of(decode_attention, "v = ct.load(V, index=(b, hkv, j, 0), shape=(1, 1, TN, D))")
    mma = line_of(decode_attention, "acc = ct.mma(p.astype")
    (w,) = [w for w in seen if "undetermined values reach 'Out'" in str(w.message)]
    assert f"load at line {load}" in str(w.message) and f"mma at line {mma}" in str(w.message)


def test_zero_padding_v_matches_the_float64_reference():
    q, k, v, out = decode_inputs(misaligned=True)
    grid, args = decode_launch(q, k, v, out, zero_pad=True)
    report = tile_lab.sanitize(decode_attention, grid, args)
    assert report.ok, str(report)
    err = np.abs(out.astype(np.float64) - decode_reference(q, k, v, 62))
    assert err.max() < 2e-3  # float16 outputs of magnitude ~1


def test_reference_is_causal_from_input_pos():
    q, k, v, _ = decode_inputs(misaligned=False)
    full = decode_reference(q, k, v, 62)
    # query 0 sits at position 62: it sees keys 0..62, i.e. all 63 of them
    kk = np.repeat(k.astype(np.float64), 2, axis=1)[0, 1]
    s = q[0, 1, 0].astype(np.float64) @ kk.T / np.sqrt(32)
    p = np.exp(s - s.max())
    want = (p / p.sum()) @ np.repeat(v.astype(np.float64), 2, axis=1)[0, 1]
    np.testing.assert_allclose(full[0, 1, 0], want, rtol=1e-12)


def test_the_recording_is_complete_or_the_notebook_says_there_is_none():
    notebook = (ROOT / "notebooks" / "src" / "18_emulator_vs_gpu.py").read_text()
    if not RECORDING.exists():
        assert "no recording yet" in notebook and "bench/record_decode_alignment.py" in notebook
        return
    data = json.loads(gzip.decompress(RECORDING.read_bytes()))
    prov = data["provenance"]
    assert prov["gpu"] and prov["driver"] and prov["cuda_tile"] and prov["recorded"]
    cases = {c["case"]: c for c in data["cases"]}
    assert set(cases) == {"aligned", "2 bytes off", "2 bytes off, V zero-padded"}
    for c in cases.values():
        assert c["runs"] and c["elements"] == 1920
        cc = tile_lab.CrossCheck.from_json(c["crosscheck"])
        assert cc.ok, cc.summary()  # no emulator bug on the GPU
    assert all(r["nan"] == 0 for r in cases["2 bytes off, V zero-padded"]["runs"])
