"""Shared test configuration: the ``gpu`` marker skips where no CUDA GPU is usable."""

from __future__ import annotations

import functools
import os

import pytest

# Plots render headless in tests; notebooks choose their own backend.
os.environ.setdefault("MPLBACKEND", "Agg")


@functools.cache
def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU here (run with the lent GPU: see README)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
