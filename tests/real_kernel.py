"""A real Jupyter kernel (ipykernel through jupyter_client) running this checkout's tile_lab,
for the tests that need what only a kernel does: execution counts, interrupts, tracebacks."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextlib.contextmanager
def started_kernel() -> Iterator[tuple[Any, Any]]:
    """(kernel manager, client) of a fresh kernel, shut down afterwards."""
    import jupyter_client

    km = jupyter_client.KernelManager(kernel_name="python3")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    km.kernel_spec.argv[0] = sys.executable  # this environment's Python, with tile_lab
    km.start_kernel(env=env)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def shown(error: dict) -> str:
    """An error message's traceback as the notebook shows it, without colours."""
    return ANSI.sub("", "\n".join(error["traceback"]))
