"""GPU-measured float32 math results (tests/fixtures/device_math_h100.json, kept gzipped) for the
tests."""

from __future__ import annotations

import json

import numpy as np
from fixture_files import fixture_text


def gpu_cases(key: str) -> tuple[np.ndarray, np.ndarray]:
    """(float32 inputs, the GPU's output bits as uint32) for ``ct.<key>`` measured on an H100
    where it differs from the correctly rounded result (see the fixture's ``_about``)."""
    pairs = json.loads(fixture_text("device_math_h100.json"))[key]
    bits = np.array([[int(h, 16) for h in p.split(":")] for p in pairs], np.uint32)
    return bits[:, 0].view(np.float32), bits[:, 1]
