"""Whether this machine can run the ``gpu`` tests (a module of its own: ``notebooks/`` has a
``conftest.py`` too, so test modules cannot import from ``conftest`` by name)."""

from __future__ import annotations

import functools


@functools.cache
def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False
