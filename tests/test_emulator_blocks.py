"""The block loop: launches over budget are refused before anything runs, long runs show
progress, Ctrl-C stops between blocks naming the block, and tiles entirely outside their
array warn in plain emulate."""

from __future__ import annotations

import _thread
import sys
import threading
import time
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


def test_ctrl_c_stops_between_blocks_and_names_the_block(ctrl_c_delivered):
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
    assert f"before block ({stop},)" in str(info.value)
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


@ct.kernel
def spin_in_block_5(x, tile: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(tile,))
    if pid == 5:
        while True:
            t = t + 1
    ct.store(x, index=(pid,), tile=t + 1)


SPIN_LINE = spin_in_block_5._pyfunc.__code__.co_firstlineno + 6  # `t = t + 1`


def test_one_ctrl_c_stops_a_block_that_never_ends_naming_the_block_and_line(ctrl_c_delivered):
    x = np.zeros(64, np.float32)
    sent = []

    def ctrl_c():
        sent.append(time.process_time())
        _thread.interrupt_main()

    timer = threading.Timer(1.0, ctrl_c)  # ONE Ctrl-C, while block 5 spins
    timer.start()
    try:
        with pytest.raises(EmulationInterrupted) as info:
            tile_lab.emulate(spin_in_block_5, (8,), (x, 8))
    finally:
        timer.cancel()
    # stopped within the grace period: bounded in this process's CPU time (the block spins
    # until it is stopped), which other jobs on the machine do not stretch as they do wall time
    assert time.process_time() - sent[0] < blocks.GRACE_SECONDS + 1.0
    err = info.value
    assert err.block == (5, 0, 0) and err.done == 5
    # the Ctrl-C lands in the loop: at its `while True:` head or in its body, both true
    assert err.location.line in (SPIN_LINE - 1, SPIN_LINE)
    text = str(err)
    where = f"{err.location.line} `{err.location.text.strip()}`"
    assert f"interrupted in block (5,), at {__file__}:{where}" in text
    assert "5 of 8 blocks ran completely and the arrays hold their writes" in text
    assert "(block (5,)'s own writes are partial)" in text
    assert (x[:40] == 1).all() and (x[48:] == 0).all()
    assert err._render_traceback_()[1].endswith(err.location.text.strip())


def test_a_step_budget_stops_a_block_that_never_ends():
    x = np.zeros(64, np.float32)
    with blocks.limits(max_steps=10_000), pytest.raises(EmulationError) as info:
        tile_lab.emulate(spin_in_block_5, (8,), (x, 8))
    err = info.value
    assert err.location.line == SPIN_LINE and err.location.text.strip() == "t = t + 1"
    assert "block (5,) executed more than 10,000 kernel lines" in err.message
    assert "5 of 8 blocks ran completely" in err.message and "max_steps" in err.hint
    assert (x[:40] == 1).all() and (x[48:] == 0).all()
    assert sys.gettrace() is None or "coverage" in type(sys.gettrace()).__module__
    # a generous budget does not disturb a kernel that ends; a budget counts per block
    y = np.zeros(64, np.float32)
    with blocks.limits(max_steps=20):
        tile_lab.emulate(bump, (64,), (y, 1))
    assert (y == 1).all()


def test_the_step_budget_is_off_by_default_and_bad_values_are_refused(monkeypatch):
    assert blocks.current_limits().max_steps == 0
    for bad in (-1, 1.5, "100", True, None):
        with pytest.raises(EmulationError, match=r"max_steps=.*must be an int >= 0"):
            blocks.limits(max_steps=bad).__enter__()
    with pytest.raises(EmulationError, match=r"max_seconds=-1.*must be a number of seconds"):
        blocks.set_limits(max_seconds=-1)
    with pytest.raises(EmulationError, match="unknown emulator limit 'max_step'"):
        blocks.set_limits(max_step=5)
    monkeypatch.setenv("TILE_LAB_EMULATE_MAX_STEPS", "1_000")
    assert blocks.current_limits().max_steps == 1000
    for bad in ("many", "2.5"):
        monkeypatch.setenv("TILE_LAB_EMULATE_MAX_STEPS", bad)
        with pytest.raises(EmulationError, match=r"TILE_LAB_EMULATE_MAX_STEPS=.*whole number"):
            blocks.current_limits()
    monkeypatch.setenv("TILE_LAB_EMULATE_MAX_STEPS", "-3")
    with pytest.raises(EmulationError, match=r"max_steps=-3.*from the environment"):
        blocks.current_limits()
