"""``tile_lab.tune``: search a Space for the best config; compile in parallel, measure serially.

``tune`` is a strategy (:mod:`tile_lab.tuning.strategies`, chosen by ``TuneOptions.strategy``)
run against the run's measuring side (:mod:`tile_lab.tuning.run_measurer`, made from a
:class:`~tile_lab.tuning.measurer.Measurer`: on this machine or on a Ray cluster). The pipeline,
one call per stage:
  1. ``space.split(arch)``        — valid configs, and the rejected ones with the reason;
  2. ``store.done(context)``      — skip configs already measured in this exact context;
  3. ``strategy.choose(...)``     — the configs the strategy may measure (e.g. random's draw);
  4. ``measuring.start(...)``     — compile them ahead in worker processes (compilation
                                    dominates tuning time), largest tiles first; this fills
                                    cuTile's on-disk cubin cache, so the launches in step 5 do
                                    not run tileiras again;
  5. ``strategy.search(...)``     — the strategy takes configs in the order their compiles
                                    finish; each is measured through the Measurer (on a GPU:
                                    ``tile_lab.bench`` with the ``cold`` protocol in one regime,
                                    ``TuneOptions.timing.regime``, "burst" by default;
                                    optionally in an isolated worker, and checked against a
                                    reference before its time is accepted), and each final
                                    outcome is appended to the store the moment it is yielded.

While the first compiles run, the measuring process warms what its first measurement would
otherwise pay for (CuPy's own kernels, cuTile's compiler queries). In a race, a config whose
first timed sample is ``RaceOptions.prune``× slower than the best so far is not timed further.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ..errors import ArgumentTypeError
from ..kernel_source import source_identity
from ..progress import ProgressBar, progress
from .measurer import GpuMeasurer, Measurer, MeasureRequest, as_measurer, measure_config
from .options import RaceOptions, TuneError, TuneOptions
from .result import Failure, Success, TuningResult
from .run_measurer import RunMeasurer, TuneTarget, run_measurer
from .space import Config, Space
from .store import StoredRecord, TuningStore, config_key, recorded_measurement
from .strategies import get_strategy

__all__ = ["RaceOptions", "TuneError", "TuneOptions", "kernel_display_name", "measure_config",
           "tune", "tuning_context"]


def tune(kernel: Any, space: Space, grid_fn: Callable[[Config], Sequence[int]],
         args_fn: Callable[[Config], Sequence[Any]], *, check: Callable[..., Any] | None = None,
         store: TuningStore | str | None = None, options: TuneOptions | None = None,
         measure: Measurer | Callable[..., Any] | None = None) -> TuningResult:
    """Tune ``kernel`` over ``space``; returns a TuningResult (best, successes, failures).

    ``args_fn(config)`` returns the full argument tuple (Constant values included, as for
    ``ct.launch``); ``grid_fn(config)`` the grid. ``check(*args)`` (optional) verifies a config's
    output before its time is accepted (see ``tile_lab.bench``). ``store``: a resumable
    TuningStore (or its path). ``options``: a :class:`TuneOptions` (strategy, objective, budget,
    race, timing and regime, flops/bytes, arch, workers, isolation, progress, cluster).
    ``measure``: a :class:`~tile_lab.tuning.measurer.Measurer`, or a plain function
    ``(kernel, grid, args, samples) -> measurement`` (tests, recorded-result replays); default:
    the GPU.

    ``kernel`` is a ``@ct.kernel``, or any object that describes itself to the tuner with
    ``knob_kinds(space) -> {knob: kind}`` and ``tuning_identity() -> dict`` (what the results
    are valid for) -- e.g. ``tile_lab.cpp.tune_cpp``'s C++ kernel, whose knobs are ``-D``
    defines; such a kernel comes with its own measurer.

    The search is the registered strategy ``options.strategy``
    (:mod:`tile_lab.tuning.strategies`); where configs compile and are measured is the
    :class:`~tile_lab.tuning.run_measurer.RunMeasurer`'s business (this machine or a cluster).
    """
    opts = options or TuneOptions()
    if not isinstance(opts, TuneOptions):
        raise TuneError(f"options= must be a TuneOptions, not {type(opts).__name__}")
    if not isinstance(space, Space):
        raise ArgumentTypeError(f"tile_lab.tune: argument 2 (space) must be a tile_lab.Space, "
                                f"got {type(space).__name__}",
                                hint="e.g. tile_lab.Space(TILE=[256, 512, 1024])")
    strategy = get_strategy(opts.strategy)
    own_kinds = getattr(kernel, "knob_kinds", None)
    kinds = own_kinds(space) if own_kinds is not None else space.classify(kernel)
    arch = opts.arch
    measurer = as_measurer(measure)
    if measurer is None:
        measurer = GpuMeasurer(timing=opts.timing, isolate=opts.isolate, check=check,
                               flops=opts.flops, nbytes=opts.bytes)
        if arch is None:
            arch = _local_arch()
    started = time.perf_counter()
    configs, rejected = space.split(arch)
    if not configs:
        raise TuneError(f"no valid config in {space!r} for {arch}: "
                        + "; ".join(r.reason for r in rejected[:3]))

    first_args = tuple(args_fn(configs[0]))
    context = tuning_context(kernel, first_args, arch)
    context["regime"] = opts.regime
    store = TuningStore(store) if isinstance(store, str) else store
    done = store.done(context) if store is not None else {}
    # The store may hold other spaces' configs for the same kernel and shapes: keep this space's.
    in_space = {config_key(c) for c in configs}
    done = {k: r for k, r in done.items() if k in in_space}

    successes: dict[str, Success] = {}
    failures: dict[str, Failure] = {}
    for key, rec in done.items():
        if rec.status == "ok" and rec.measurement is not None:
            successes[key] = Success(rec.config, recorded_measurement(rec.measurement),
                                     from_store=True)
        elif rec.status != "ok":
            failures[key] = Failure(rec.config, rec.stage or "launch", rec.error or "",
                                    from_store=True)

    # only the configs the strategy chooses are compiled and measured
    todo = strategy.choose([c for c in configs if config_key(c) not in done], opts)
    if todo and store is not None:
        store.check_writable()  # a compressed store is read-only: say so before measuring
    # where the wall time goes: setup, starting the compile workers, warming the measuring
    # process, waiting for compiles, measuring, shutting the workers down
    timings = {"setup": time.perf_counter() - started, "start_workers": 0.0, "warm_up": 0.0,
               "compile_wait": 0.0, "measure": 0.0, "shutdown": 0.0}
    measuring = run_measurer(measurer, opts, TuneTarget(kernel, kinds, grid_fn, args_fn, arch))
    t0 = time.perf_counter()
    if todo:
        measuring.start(todo)
    t1 = time.perf_counter()
    if todo:
        measuring.warm_up()  # overlaps the workers' first compiles
    timings["start_workers"], timings["warm_up"] = t1 - t0, time.perf_counter() - t1

    trials = _Trials(space, opts, MappingProxyType(dict(successes)), measuring, timings)
    name = kernel_display_name(kernel)
    with progress(len(todo), f"tuning {name} ({opts.regime})", enabled=opts.progress,
                  unit="config") as bar:
        failed = 0
        try:
            # each outcome is final when yielded: stored at once, so a crash loses at most
            # the config in flight (this process is the store's single writer)
            for outcome in (strategy.search(todo, trials) if todo else ()):
                key = config_key(outcome.config)
                if isinstance(outcome, Success):
                    successes[key] = outcome
                    failures.pop(key, None)
                else:
                    failures[key] = outcome
                if store is not None:
                    store.append(_to_record(context, outcome))
                failed += isinstance(outcome, Failure)
                _step(bar, failed, measuring.progress_note())
            successes = measuring.finish(successes, MeasureRequest(opts.samples))
        finally:
            t = time.perf_counter()
            compile_s = measuring.compile_seconds()
            measuring.close()
            timings["shutdown"] = time.perf_counter() - t
    return TuningResult(kernel_name=name, successes=tuple(successes.values()),
                        failures=tuple(failures.values()), rejected=tuple(rejected),
                        context=context, objective=opts.objective,
                        wall_s=time.perf_counter() - started, timings=timings,
                        compile_s=compile_s, regime=opts.regime,
                        placement=measuring.placement())


def _step(bar: ProgressBar, failed: int, note: str | None) -> None:
    bar.update(1)
    if failed:
        bar.set_postfix_str(f"{failed} failed")
    if note is not None:
        bar.set_postfix_str(note + (f", {failed} failed" if failed else ""))


class _Trials:
    """What a strategy measures with (:class:`~tile_lab.tuning.strategies.Trials`): each
    config's compile error or measurement through the run's RunMeasurer, with the time spent
    waiting for compiles and measuring added to the run's timings."""

    def __init__(self, space: Space, options: TuneOptions, known: Mapping[str, Success],
                 measuring: RunMeasurer, timings: dict[str, float]) -> None:
        self.space, self.options, self.known = space, options, known
        self._measuring, self._timings = measuring, timings

    def measure(self, config: Config, samples: int | None = None, *,
                stop_above_s: float | None = None) -> Success | Failure:
        n = self.options.samples if samples is None else samples
        t0 = time.perf_counter()
        compile_error = self._measuring.compile_error(config)
        t1 = time.perf_counter()
        if compile_error is not None:
            outcome: Success | Failure = Failure(config, "compile", compile_error)
        else:
            outcome = self._measuring.measure(config, MeasureRequest(n, stop_above_s))
        self._timings["compile_wait"] += t1 - t0
        self._timings["measure"] += time.perf_counter() - t1
        return outcome

    def as_compiled(self, configs: Sequence[Config],
                    samples: int | None = None) -> Iterator[Config]:
        n = self.options.samples if samples is None else samples
        it = self._measuring.in_compile_order(configs, MeasureRequest(n))
        while True:  # the time spent waiting for the next compile counts as compile wait
            t = time.perf_counter()
            cfg = next(it, None)
            self._timings["compile_wait"] += time.perf_counter() - t
            if cfg is None:
                return
            yield cfg


def _to_record(context: dict[str, Any], outcome: Success | Failure) -> StoredRecord:
    if isinstance(outcome, Success):
        m = outcome.measurement
        data = m.to_json_dict() if hasattr(m, "to_json_dict") else dict(m.__dict__)
        return StoredRecord(context, outcome.config, "ok", data, None, None)
    return StoredRecord(context, outcome.config, "failed", None, outcome.error, outcome.stage)


# ---- context: what the results are valid for --------------------------------------------------
def tuning_context(kernel: Any, args: Sequence[Any], arch: str | None) -> dict[str, Any]:
    from .._cutile_compat import installed_version, python_function
    from ..compile.toolchain import tool_version

    arrays = [f"{tuple(a.shape)}:{a.dtype}" for a in args if hasattr(a, "shape")]
    identity = getattr(kernel, "tuning_identity", None)
    if identity is not None:  # a kernel that is not a cuTile Python kernel names itself
        ctx = {**identity(), "arrays": arrays, "arch": arch}
        ctx.update(_gpu_identity())
        return ctx
    func = python_function(kernel)
    src = source_identity(func)
    ctx = {"kernel": kernel_display_name(kernel),
           "source_sha": hashlib.sha256(src.encode()).hexdigest()[:16],
           "arrays": arrays, "arch": arch}
    ctx["cuda_tile"] = installed_version()
    ctx["tileiras"] = tool_version("tileiras")  # one subprocess, cached: not every tool
    ctx.update(_gpu_identity())
    return ctx


def _gpu_identity() -> dict[str, Any]:
    try:
        from ..gpu.device import device_identity

        return device_identity()
    except Exception:
        return {"gpu": None, "driver": None}


def _local_arch() -> str | None:
    try:
        from ..gpu.device import local_arch

        return local_arch()
    except Exception:
        return None


def kernel_display_name(kernel: Any) -> str:
    """The kernel's Python name (a cuTile kernel's function, or the object's ``__name__``)."""
    try:
        from .._cutile_compat import python_function

        return python_function(kernel).__name__
    except Exception:
        return getattr(kernel, "__name__", type(kernel).__name__)
