"""Run ``tile_lab.tune`` against a recording fake Measurer and return what it was asked, in order.

``trace(name)`` runs one scenario of :data:`SCENARIOS` and returns a list of short strings: each
config sent to compile, each measurement asked for (config, samples, early-stop bound), and then
the result's successes, failures and the store's lines, in order. ``test_tuning_strategies`` pins
these traces (recorded from the tuner before the strategies moved into their own modules), so a
change in which configs a strategy tries, or in what order, fails a test.

``python tests/strategy_trace.py`` prints the traces of every scenario as JSON (how they were
recorded; ``tests/fixtures/strategy_traces.json.gz`` keeps that text gzipped).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from tune_fakes import FakeMeasurement
from tune_kernels import scale_copy

from tile_lab.errors import LaunchError
from tile_lab.gpu.options import TimingOptions
from tile_lab.tuning import Config, MeasureRequest, RaceOptions, Space, TuneOptions, tune
from tile_lab.tuning.cluster import ClusterOptions
from tile_lab.tuning.store import config_key

N = 1 << 12
SPACE = Space(TILE=[64, 128, 256, 512], LAT=[1, 3, 6])


def scale_args(cfg: Config) -> tuple[Any, ...]:
    x = np.ones(N, np.float32)
    return (x, np.empty_like(x), cfg["TILE"], cfg["LAT"])


def scale_grid(cfg: Config) -> tuple[int, ...]:
    return (N // cfg["TILE"],)


def short(cfg: Config) -> str:
    return "/".join(str(v) for _, v in cfg.items)


@dataclass
class FakePrecompiles:
    """Compiles ahead: configs with LAT=1 have a (finished) compile future, the others none, so
    the strategy sees the uncompiled ones first; ``broken`` configs fail to compile."""

    configs: Sequence[Config]
    broken: tuple[str, ...]
    log: list[str]

    @property
    def futures(self) -> dict[str, Future[Any]]:
        out = {}
        for cfg in self.configs:
            if cfg["LAT"] == 1:
                fut: Future[Any] = Future()
                fut.set_result(None)
                out[config_key(cfg)] = fut
        return out

    def error(self, cfg: Config) -> str | None:
        return "tileiras: out of registers" if short(cfg) in self.broken else None

    def close(self) -> None:
        self.log.append("close")


@dataclass
class RecordingMeasurer:
    """A Measurer whose time is a fixed function of (TILE, LAT); it records every call."""

    fail_tiles: tuple[int, ...] = ()
    precompiling: bool = False
    broken: tuple[str, ...] = ()
    log: list[str] = field(default_factory=list)

    def precompile(self, kernel: Any, configs: Sequence[Config],
                   args_fn: Callable[[Config], Sequence[Any]], kinds: dict[str, str],
                   arch: str | None, workers: int | None) -> FakePrecompiles | None:
        from tile_lab.tuning.parallel_compile import _CURRENT_EXECUTOR

        where = " on ray" if _CURRENT_EXECUTOR.get() is not None else ""
        self.log.append(f"compile{where} " + " ".join(short(c) for c in configs))
        return FakePrecompiles(list(configs), self.broken, self.log) if self.precompiling \
            else None

    def warm_up(self) -> None:
        self.log.append("warm_up")

    def measure(self, kernel: Any, config: Config, grid: tuple[int, ...],
                args: tuple[Any, ...], request: MeasureRequest) -> FakeMeasurement:
        stop = "-" if request.stop_above_s is None else f"{request.stop_above_s:.6g}"
        self.log.append(f"measure {short(config)} n={request.samples} stop={stop}")
        tile, lat = args[2], args[3]
        if tile in self.fail_tiles:
            raise LaunchError(f"CUDA_ERROR_ILLEGAL_ADDRESS for TILE={tile}")
        t = 1e-5 * (1 + abs(tile - 256) / 64) * (1 + abs(lat - 3) / 10)
        return FakeMeasurement(mean_s=t, ci95_s=t * 0.01, gbps=1.0 / t, tflops=t * 1e6,
                               samples=request.samples)


class FakeClusterRun:
    """Stands in for :class:`tile_lab.tuning.cluster.ClusterRun` (no Ray): ``options.gpus``
    measuring "actors", each measuring in this process with the function the tuner's factory
    makes; every call the tuner makes of it is logged."""

    log: ClassVar[list[str]] = []

    def __init__(self, options: Any, factory: Callable[[], Any] | None) -> None:
        try:  # what the real one sends to each actor must pickle (the kernel object does not)
            from ray import cloudpickle
        except ImportError:
            cloudpickle = None
        if cloudpickle is not None and factory is not None:
            cloudpickle.dumps(factory)
        self.executor = "ray"
        self.pool = factory if options.gpus else None
        self._gpus = options.gpus
        self._measure: Any = None

    @property
    def gpu_count(self) -> int:
        return self._gpus if self.pool is not None else 0

    def progress_note(self) -> str:
        return ""

    def placement(self) -> dict[str, Any]:
        return {"fake": True}

    def measure(self, cfg: Config, request: MeasureRequest) -> Any:
        stop = "-" if request.stop_above_s is None else f"{request.stop_above_s:.6g}"
        self.log.append(f"actor {short(cfg)} n={request.samples} stop={stop}")
        if self._measure is None:
            self._measure = self.pool()  # type: ignore[misc]
        return self._measure(cfg, request)

    def prefetching(self, configs: Any, request: MeasureRequest) -> Any:
        for cfg in configs:
            self.log.append(f"prefetch {short(cfg)} n={request.samples}")
            yield cfg

    def cross_check(self, successes: dict[str, Any], request: MeasureRequest) -> dict[str, Any]:
        self.log.append(f"cross_check {len(successes)} n={request.samples}")
        return successes

    def close(self) -> None:
        self.log.append("cluster closed")


def _prefill(store: Path) -> None:
    """Two stored results for SPACE: 512/6 measured, 64/6 failed."""
    tune(scale_copy, Space(TILE=[64, 512], LAT=[6]), scale_grid, scale_args, store=str(store),
         measure=RecordingMeasurer(fail_tiles=(64,)),
         options=TuneOptions(strategy="exhaustive", progress=False))


RACE = RaceOptions(samples=3, keep=1.3)
T20 = TimingOptions(samples=20)

# name -> (options, measurer settings, prefilled store?)
SCENARIOS: dict[str, tuple[TuneOptions, dict[str, Any], bool]] = {
    "exhaustive": (TuneOptions(strategy="exhaustive", timing=TimingOptions(samples=7)), {},
                   False),
    "exhaustive-precompiled": (TuneOptions(strategy="exhaustive"),
                               {"precompiling": True, "broken": ("512/3",)}, False),
    "exhaustive-stored": (TuneOptions(strategy="exhaustive"), {"fail_tiles": (128,)}, True),
    "race": (TuneOptions(strategy="race", race=RACE, timing=T20), {}, False),
    "race-default": (TuneOptions(strategy="race"), {}, False),
    "race-precompiled": (TuneOptions(strategy="race", race=RACE, timing=T20),
                         {"precompiling": True, "broken": ("256/1",)}, False),
    "race-stored-failing": (TuneOptions(strategy="race", race=RACE, timing=T20),
                            {"fail_tiles": (128,)}, True),
    "random-seed0": (TuneOptions(strategy="random", budget=4, seed=0), {}, False),
    "random-seed1": (TuneOptions(strategy="random", budget=4, seed=1), {}, False),
    "random-seed7-stored": (TuneOptions(strategy="random", budget=5, seed=7), {}, True),
    "random-precompiled": (TuneOptions(strategy="random", budget=6, seed=3),
                           {"precompiling": True}, False),
    "coordinate": (TuneOptions(strategy="coordinate"), {}, False),
    "coordinate-tflops": (TuneOptions(strategy="coordinate", objective="tflops"), {}, False),
    "coordinate-budget3": (TuneOptions(strategy="coordinate", budget=3), {}, False),
    "coordinate-stored-failing": (TuneOptions(strategy="coordinate"), {"fail_tiles": (64,)},
                                  True),
    # on a (fake) cluster: 2 measuring GPUs, 1, or none (compiles there, measures here)
    "cluster2-exhaustive": (TuneOptions(strategy="exhaustive", cluster=ClusterOptions(gpus=2)),
                            {"precompiling": True, "broken": ("512/3",)}, False),
    "cluster2-race": (TuneOptions(strategy="race", race=RACE, timing=T20,
                                  cluster=ClusterOptions(gpus=2)), {"fail_tiles": (128,)}, True),
    "cluster2-random": (TuneOptions(strategy="random", budget=4, seed=1,
                                    cluster=ClusterOptions(gpus=2)), {}, False),
    "cluster2-coordinate": (TuneOptions(strategy="coordinate", cluster=ClusterOptions(gpus=2)),
                            {}, False),
    "cluster1-race": (TuneOptions(strategy="race", race=RACE, timing=T20,
                                  cluster=ClusterOptions(gpus=1)), {}, False),
    "cluster0-race": (TuneOptions(strategy="race", race=RACE, timing=T20,
                                  cluster=ClusterOptions(gpus=0)), {"precompiling": True}, False),
}


def trace(name: str) -> list[str]:
    """The scenario's calls and results, in order (see the module docstring)."""
    from tile_lab.tuning import cluster

    options, settings, stored = SCENARIOS[name]
    measurer = RecordingMeasurer(**settings)
    FakeClusterRun.log = measurer.log
    real, cluster.ClusterRun = cluster.ClusterRun, FakeClusterRun  # type: ignore[misc]
    try:
        return _trace(options, measurer, stored)
    finally:
        cluster.ClusterRun = real  # type: ignore[misc]


def _trace(options: TuneOptions, measurer: RecordingMeasurer, stored: bool) -> list[str]:
    from dataclasses import replace

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "tune.jsonl"
        if stored:
            _prefill(store)
        before = len(store.read_text().splitlines()) if stored else 0
        r = tune(scale_copy, SPACE, scale_grid, scale_args, store=str(store), measure=measurer,
                 options=replace(options, progress=False))
        lines = store.read_text().splitlines()[before:] if store.exists() else []
    out = list(measurer.log)
    out += ["ok " + " ".join(f"{short(s.config)}{'*' if s.from_store else ''}"
                             for s in r.successes)]
    out += ["failed " + " ".join(f"{short(f.config)}:{f.stage}{'*' if f.from_store else ''}"
                                 for f in r.failures)]
    out += ["stored " + " ".join(
        "/".join(str(v) for _, v in rec["config"]) + ("" if rec["status"] == "ok" else "!")
        for rec in map(json.loads, lines))]
    out += [f"best {short(r.best.config)}" if r.successes else "best -"]
    return out


if __name__ == "__main__":
    # the text of tests/fixtures/strategy_traces.json.gz (kept gzipped: level 9, no timestamp)
    print(json.dumps({scenario: trace(scenario) for scenario in SCENARIOS}, indent=1))
