"""Tuning strategies: each tries the same configs in the same order as before they moved into
``tile_lab.tuning.strategies`` (traces recorded from the tuner at f96559c, before the move, with
``python tests/strategy_trace.py``); the registry; a user-defined strategy runs through tune()."""

from __future__ import annotations

import json

import pytest
from fixture_files import fixture_text
from strategy_trace import SCENARIOS, SPACE, RecordingMeasurer, scale_args, scale_grid, short, trace
from tune_kernels import scale_copy

from tile_lab.tuning import (
    BaseStrategy,
    Strategy,
    TuneError,
    TuneOptions,
    register_strategy,
    strategy_names,
    tune,
    unregister_strategy,
)
from tile_lab.tuning.strategies import get_strategy

# scenario -> what the tuner asked of the fake Measurer (and of the fake cluster), in order, then
# the result's successes and failures (* = from the store), the store's new lines (! = failed)
# and the best config. Recorded before the strategies moved; never edit by hand. Kept gzipped in
# tests/fixtures/strategy_traces.json.gz (the JSON that ``python tests/strategy_trace.py`` prints).
RECORDED: dict[str, list[str]] = json.loads(fixture_text("strategy_traces.json"))


def test_every_scenario_is_pinned():
    assert set(RECORDED) == set(SCENARIOS)


@pytest.mark.parametrize("scenario", sorted(RECORDED))
def test_a_strategy_tries_the_same_configs_in_the_same_order(scenario):
    assert trace(scenario) == RECORDED[scenario]


# ---- the registry, and a strategy of your own --------------------------------------------------
class LargestTilesFirst(BaseStrategy):
    """Largest tiles first, fully measured; stops at the first config slower than the best so
    far. Only LAT=3 configs are compiled (``choose``); it needs ``budget`` unset (``check``)."""

    def check(self, options):
        return "largest-first takes no budget" if options.budget is not None else None

    def choose(self, configs, options):
        return [c for c in configs if c["LAT"] == 3]

    def search(self, configs, trials):
        best = None
        for cfg in sorted(configs, key=lambda c: -c["TILE"]):
            out = trials.measure(cfg, 4)
            yield out
            if best is not None and out.time_s > best:
                return
            best = out.time_s if best is None else min(best, out.time_s)


@pytest.fixture
def largest_first():
    strategy = register_strategy("largest-first", LargestTilesFirst())
    yield strategy
    unregister_strategy("largest-first")


def test_a_strategy_of_your_own_runs_through_tune(largest_first, tmp_path):
    # the built-ins come first, then what users registered (README's example may be one of them)
    names = strategy_names()
    assert names[:4] == ("race", "exhaustive", "random", "coordinate")
    assert names[-1] == "largest-first"
    gpu = RecordingMeasurer()
    store = tmp_path / "tune.jsonl"
    r = tune(scale_copy, SPACE, scale_grid, scale_args, measure=gpu, store=str(store),
             options=TuneOptions(strategy="largest-first", progress=False))
    # only its chosen configs were compiled; it measured in its own order and stopped itself
    assert gpu.log == ["compile 64/3 128/3 256/3 512/3", "warm_up",
                       "measure 512/3 n=4 stop=-", "measure 256/3 n=4 stop=-",
                       "measure 128/3 n=4 stop=-"]
    assert [short(s.config) for s in r.successes] == ["512/3", "256/3", "128/3"]
    assert short(r.best.config) == "256/3"
    assert len(store.read_text().splitlines()) == 3  # each yielded outcome was stored
    with pytest.raises(TuneError, match="largest-first takes no budget"):
        TuneOptions(strategy="largest-first", budget=3)


def test_registering_checks_the_name_and_the_object(largest_first):
    with pytest.raises(ValueError, match="'race' is a built-in strategy"):
        register_strategy("race", LargestTilesFirst())
    with pytest.raises(TypeError, match=r"pass an instance, e.g. LargestTilesFirst\(\)"):
        register_strategy("mine", LargestTilesFirst)
    with pytest.raises(TypeError, match="object is not a Strategy"):
        register_strategy("mine", object())
    # a re-run notebook cell registers the name again: the new strategy replaces the old
    again = LargestTilesFirst()
    register_strategy("largest-first", again)
    assert get_strategy("largest-first") is again
    unregister_strategy("largest-first")
    with pytest.raises(TuneError, match="unknown strategy 'largest-first'; choose one of race, "
                                        "exhaustive, random, coordinate"):
        TuneOptions(strategy="largest-first")
    with pytest.raises(ValueError, match="built-in"):
        unregister_strategy("exhaustive")


def test_the_built_in_strategies_are_strategies():
    for name in strategy_names():
        assert isinstance(get_strategy(name), Strategy)


def test_coordinate_over_a_fully_stored_space_measures_nothing(tmp_path):
    """Before the strategies moved, this raised IndexError (the search started at todo[0])."""
    store = str(tmp_path / "tune.jsonl")
    tune(scale_copy, SPACE, scale_grid, scale_args, store=store, measure=RecordingMeasurer(),
         options=TuneOptions(strategy="exhaustive", progress=False))
    gpu = RecordingMeasurer()
    r = tune(scale_copy, SPACE, scale_grid, scale_args, store=store, measure=gpu,
             options=TuneOptions(strategy="coordinate", progress=False))
    assert gpu.log == [] and len(r.successes) == 12
    assert all(s.from_store for s in r.successes) and short(r.best.config) == "256/3"
