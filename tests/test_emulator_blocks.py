"""The block loop: launches over budget are refused before anything runs, long runs show
progress, Ctrl-C stops between blocks naming the block, and tiles entirely outside their
array warn in plain emulate."""

from __future__ import annotations

import _thread
import threading
import warnings

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.emulator import blocks
from tile_lab.emulator.blocks import EmulationInterrupted, OutOfArrayTileWarning
from tile_lab.errors import EmulationError


@ct.kernel
def bump(x, tile: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(x, index=(pid,), tile=ct.load(x, index=(pid,), shape=(tile,)) + 1)


def test_a_huge_grid_is_refused_with_the_estimate_before_anything_runs():
    x = np.zeros(1024, np.float32)
    with pytest.raises(EmulationError) as info:
        tile_lab.emulate(bump, (10**9,), (x, 1))
    text = str(info.value)
    assert "would take about" in text and "1,000,000,000 blocks ×" in text
    assert "memory ops each" in text and "nothing was run" in text
    assert "blocks=[" in info.value.hint and "set_limits(max_seconds" in info.value.hint
    assert (x == 0).all()  # the probe ran on copies


def test_the_limit_is_configurable():
    x = np.zeros(4096, np.float32)
    with blocks.limits(max_seconds=1e-9, probe_blocks=16), pytest.raises(EmulationError):
        tile_lab.emulate(bump, (4096,), (x, 1))
    assert (x == 0).all()
    with blocks.limits(probe_blocks=16):  # the default limit is far above a few ms
        tile_lab.emulate(bump, (4096,), (x, 1))
    assert (x == 1).all()


def test_env_var_sets_the_limit(monkeypatch):
    monkeypatch.setenv("TILE_LAB_EMULATE_MAX_SECONDS", "0.000001")
    assert blocks.current_limits().max_seconds == 1e-6
    with pytest.raises(EmulationError, match="over the limit of 1 µs"):
        tile_lab.emulate(bump, (10**6,), (np.zeros(4096, np.float32), 1))
    monkeypatch.setenv("TILE_LAB_EMULATE_MAX_SECONDS", "lots")
    with pytest.raises(EmulationError, match="not a number of seconds"):
        blocks.current_limits()


def test_ctrl_c_stops_between_blocks_and_names_the_block():
    n = 200_000
    x = np.zeros(n, np.int32)
    timer = threading.Timer(0.5, _thread.interrupt_main)  # Ctrl-C half a second in
    timer.start()
    try:
        with pytest.raises(EmulationInterrupted) as info:
            tile_lab.emulate(bump, (n,), (x, 1))
    finally:
        timer.cancel()
    stop = info.value.block[0]
    assert 0 < info.value.done == stop < n
    assert f"before block ({stop}, 0, 0)" in str(info.value)
    assert (x[:stop] == 1).all() and (x[stop:] == 0).all()  # no block ran halfway
    assert isinstance(info.value, KeyboardInterrupt)


def test_progress_bar_appears_only_for_long_runs(monkeypatch):
    opened = []
    real = blocks._open_bar
    monkeypatch.setattr(blocks, "_open_bar", lambda *a: opened.append(a[1]) or real(*a))
    tile_lab.emulate(bump, (64,), (np.zeros(64, np.float32), 1))
    assert opened == []
    clock = iter(np.arange(0.0, 1e6, 0.5))  # every clock read half a second later
    monkeypatch.setattr(blocks.time, "perf_counter", lambda: float(next(clock)))
    tile_lab.emulate(bump, (256,), (np.zeros(256, np.float32), 1))
    assert opened == [256]


@ct.kernel
def past_the_end(x, y):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid + 2,), shape=(4,))  # blocks 0..1 read tiles 2..3: outside
    ct.store(y, index=(pid,), tile=t)


def test_tiles_outside_the_array_warn_once_per_line_in_plain_emulate():
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tile_lab.emulate(past_the_end, (2,), (x, y))
    outside = [w for w in caught if issubclass(w.category, OutOfArrayTileWarning)]
    assert len(outside) == 1
    assert "tile (2,) of 'x'" in str(outside[0].message) and "2 times" in str(outside[0].message)
    assert outside[0].lineno == past_the_end._pyfunc.__code__.co_firstlineno + 3  # @, def, pid
