"""The launch-time probe (``emulator/probe.py``): a large launch's estimate comes from a few
blocks run on stand-ins for the arrays, never on the user's arrays, and without copying the
arrays it only reads."""

from __future__ import annotations

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.emulator import blocks
from tile_lab.errors import EmulationError


@ct.kernel
def bump(x, tile: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(x, index=(pid,), tile=ct.load(x, index=(pid,), shape=(tile,)) + 1)


@ct.kernel
def copy_tiles(x, y, tile: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(y, index=(pid,), tile=ct.load(x, index=(pid,), shape=(tile,)) * 2)


@ct.kernel
def copy_into_a_slice(x, y, tile: ct.Constant[int]):
    pid = ct.bid(0)
    part = y.slice(0, 0, y.shape[0])
    ct.store(part, index=(pid,), tile=ct.load(x, index=(pid,), shape=(tile,)))


def test_the_probe_copies_no_array_it_only_reads():
    """The probe used to copy every array first: 3x the arrays for a vector add. Now the
    arrays it reads are read-only views, and an array it writes but did not read is zeros
    (pages the OS hands out where the probed blocks write; tracemalloc counts them all)."""
    import tracemalloc

    n = 1 << 22
    x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
    for kernel in (copy_tiles, copy_into_a_slice, bump):
        args = (x, 1) if kernel is bump else (x, y, 1)
        tracemalloc.start()
        try:
            with blocks.limits(max_seconds=1e-9, probe_blocks=16), \
                    pytest.raises(EmulationError, match="would take about"):
                tile_lab.emulate(kernel, (n,), args)  # refused: the probe gave an estimate
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert (x == 1).all() and (y == 0).all()  # the probe wrote nothing the user passed
        if kernel is copy_tiles:
            assert peak < 1.5 * y.nbytes  # y's stand-in only, not x's copy too
        else:  # written through a slice, or loaded and stored: copies, as before
            assert peak >= x.nbytes
