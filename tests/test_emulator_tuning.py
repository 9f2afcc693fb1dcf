"""``ct.tune.exhaustive_search`` under emulation: every config runs on the emulator, a config
cuTile or the emulator rejects is a failure, nothing is timed (0 us) so the first valid config
wins, and ``single_run_timeout_sec`` stops an emulated launch that never ends."""

from __future__ import annotations

import math
import warnings

import cuda.tile as ct
import numpy as np
import pytest
from cuda.tile import tune as ct_tune

import tile_lab
from tile_lab.emulator import tuning


@ct.kernel
def add_one(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(TILE,)) + 1)


@ct.kernel
def spin_unless_zero(x, n: int, TILE: ct.Constant[int]):
    i = 0
    while n != 0:  # never ends for n != 0: only the time limit stops it
        i = i + 1
    ct.store(x, index=(0,), tile=ct.full((TILE,), 7, ct.int32))


def _search(space, x, outputs, **kw):
    return ct_tune.exhaustive_search(
        space, None, grid_fn=lambda t: (math.ceil(x.shape[0] / t),), kernel=add_one,
        args_fn=lambda t: (x, outputs.setdefault(t, np.zeros_like(x)), t), quiet=True, **kw)


def test_without_emulation_no_config_is_valid_on_a_cpu_machine():
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU answers")
    x = np.arange(256, dtype=np.float32)
    with pytest.raises(ValueError, match="No valid config found"):
        _search([64], x, {})


def test_the_first_valid_config_wins_and_every_config_really_ran():
    x = np.arange(256, dtype=np.float32)
    outputs: dict[int, np.ndarray] = {}
    with tile_lab.emulation(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # 48 is not a power of two: cuTile's front end refuses the tile shape
        result = _search([48, 128, 64], x, outputs)
    assert result.best.config == 128  # first valid in search-space order, not the "fastest"
    assert sorted(m.config for m in result.successes) == [64, 128]
    assert all(m.mean_us == tuning.EMULATED_TIME_US and m.num_samples >= 5
               for m in result.successes)
    assert [cfg for cfg, _, _ in result.failures] == [48]
    for t in (64, 128):  # the launches ran on the emulator: their outputs hold x + 1
        np.testing.assert_array_equal(outputs[t], x + 1)
    assert any(tuning.NOT_TIMED in str(w.message) for w in caught)


def test_switching_off_gives_cutile_its_benchmarks_back():
    from cuda.tile.tune import _tune

    before = _tune._benchmark
    with tile_lab.emulation():
        assert _tune._benchmark is tuning.emulated_benchmark
        assert _tune.benchmark_with_timeout is tuning.emulated_benchmark_with_timeout
    assert _tune._benchmark is before


def test_a_launch_past_the_time_limit_is_a_timeout_failure():
    x = np.zeros(16, dtype=np.int32)
    with tile_lab.emulation(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ct_tune.exhaustive_search(
            [1, 0], None, grid_fn=lambda n: (1,), kernel=spin_unless_zero,
            args_fn=lambda n: (x, n, 16), quiet=True, single_run_timeout_sec=0.5)
    assert result.best.config == 0
    (cfg, kind, message), = result.failures
    assert cfg == 1 and kind.__name__ == "TileLaunchTimeoutError"
    assert "exceeded timeout 0.5 sec" in message
    np.testing.assert_array_equal(x, 7)
