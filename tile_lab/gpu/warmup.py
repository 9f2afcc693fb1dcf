"""Pay a measuring process's first-use costs early, while something else waits anyway.

The first measurement in a process pays for more than the kernel: cuTile's first launch (its
launch machinery, its tileiras queries, loading the module, and, when torch is installed,
importing torch) and the pinned buffers the byte comparisons use. A tuner calls
:func:`start_warm_up` right after starting its compile workers, so these costs overlap the
compiles instead of delaying the first measurement, and joins the thread before it measures
(so nothing the warm-up launches can overlap a timed sample).
"""

from __future__ import annotations

import contextlib
import threading

import cuda.tile as ct

from .arrays import same_bytes
from .device import require_gpu


@ct.kernel
def _touch(x):
    # one block rewrites one 16-element tile: the smallest real trip through ct.launch
    ct.store(x, index=(0,), tile=ct.load(x, index=(0,), shape=(16,)))


def warm_up_measurement() -> None:
    """Launch a one-block cuTile kernel on its own stream, wait for it, and compare two small
    arrays the way a measurement does. Cheap once warm; safe to call again."""
    cupy = require_gpu("tile_lab.gpu.warmup")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        probe = cupy.zeros(16, dtype=cupy.float32)
        ct.launch(stream, (1,), _touch, (probe,))
        same_bytes(cupy, probe, probe)
    stream.synchronize()


def start_warm_up() -> threading.Thread:
    """Run :func:`warm_up_measurement` in a daemon thread; join it before measuring. A failure
    there is ignored: the measurement that follows meets (and reports) the same problem."""
    def run() -> None:
        with contextlib.suppress(Exception):
            warm_up_measurement()

    thread = threading.Thread(target=run, name="tile_lab-warm-up", daemon=True)
    thread.start()
    return thread
