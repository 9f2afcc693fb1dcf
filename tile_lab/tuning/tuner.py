"""``tile_lab.tune``: search a Space for the best config; compile in parallel, measure serially.

The pipeline, one call per stage:
  1. ``space.split(arch)``        — valid configs, and the rejected ones with the reason;
  2. ``store.done(context)``      — skip configs already measured in this exact context;
  3. ``precompile(...)``          — compile the configs the strategy will measure in worker
                                    processes (compilation dominates tuning time), largest tiles
                                    first; this fills cuTile's on-disk cubin cache, so the
                                    launches in step 4 do not run tileiras again;
  4. the strategy proposes configs, in the order their compiles finish; each is measured through
     the :class:`~tile_lab.tuning.measurer.Measurer` (on a GPU: ``tile_lab.bench`` with the
     ``cold`` protocol in one regime, ``TuneOptions.timing.regime``, "burst" by default; optionally
     in an isolated worker, and checked against a reference before its time is accepted) and
     appended to the store the moment it is done.

While the first compiles run, the measuring process warms what its first measurement would
otherwise pay for (CuPy's own kernels, cuTile's compiler queries). In a race, a config whose
first timed sample is ``race_prune``× slower than the best so far is not timed further.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import ArgumentTypeError
from ..progress import ProgressBar, progress
from .measurer import (
    GpuMeasurer,
    Measurer,
    MeasureRequest,
    as_measurer,
    compile_seconds,
    failure_stage,
    in_completion_order,
)
from .options import STRATEGIES, RaceOptions, TuneError, TuneOptions
from .result import Failure, Success, TuningResult
from .space import Config, Space
from .store import StoredRecord, TuningStore, config_key, recorded_measurement

__all__ = ["STRATEGIES", "RaceOptions", "TuneError", "TuneOptions", "kernel_display_name",
           "measure_config", "tune", "tuning_context"]

Outcome = Success | Failure
Outcomes = Iterator[tuple[Config, Outcome]]
Run = Callable[..., Outcome]
Ordered = Callable[[Sequence[Config]], Iterator[Config]]


def tune(kernel: Any, space: Space, grid_fn: Callable[[Config], Sequence[int]],
         args_fn: Callable[[Config], Sequence[Any]], *, check: Callable[..., Any] | None = None,
         store: TuningStore | str | None = None, options: TuneOptions | None = None,
         measure: Measurer | Callable[..., Any] | None = None) -> TuningResult:
    """Tune ``kernel`` over ``space``; returns a TuningResult (best, successes, failures).

    ``args_fn(config)`` returns the full argument tuple (Constant values included, as for
    ``ct.launch``); ``grid_fn(config)`` the grid. ``check(*args)`` (optional) verifies a config's
    output before its time is accepted (see ``tile_lab.bench``). ``store``: a resumable
    TuningStore (or its path). ``options``: a :class:`TuneOptions` (strategy, objective, budget,
    race, timing and regime, flops/bytes, arch, workers, isolation, progress).
    ``measure``: a :class:`~tile_lab.tuning.measurer.Measurer`, or a plain function
    ``(kernel, grid, args, samples) -> measurement`` (tests, recorded-result replays); default:
    the GPU.

    ``kernel`` is a ``@ct.kernel``, or any object that describes itself to the tuner with
    ``knob_kinds(space) -> {knob: kind}`` and ``tuning_identity() -> dict`` (what the results
    are valid for) -- e.g. ``tile_lab.cpp.tune_cpp``'s C++ kernel, whose knobs are ``-D``
    defines; such a kernel comes with its own measurer.
    """
    opts = options or TuneOptions()
    if not isinstance(opts, TuneOptions):
        raise TuneError(f"options= must be a TuneOptions, not {type(opts).__name__}")
    if not isinstance(space, Space):
        raise ArgumentTypeError(f"tile_lab.tune: argument 2 (space) must be a tile_lab.Space, "
                                f"got {type(space).__name__}",
                                hint="e.g. tile_lab.Space(TILE=[256, 512, 1024])")
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

    todo = [c for c in configs if config_key(c) not in done]
    if opts.strategy == "random":  # only the drawn configs are compiled and measured
        picks = list(todo)
        random.Random(opts.seed).shuffle(picks)
        todo = picks[:opts.budget]
    # where the wall time goes: setup, starting the compile workers, warming the measuring
    # process, waiting for compiles, measuring, shutting the workers down
    timings = {"setup": time.perf_counter() - started, "start_workers": 0.0, "warm_up": 0.0,
               "compile_wait": 0.0, "measure": 0.0, "shutdown": 0.0}
    t0 = time.perf_counter()
    cluster = _start_cluster(opts, measurer, kernel, kinds, grid_fn, args_fn) if todo else None
    precompiler = None
    if opts.precompile and todo:
        with _compiles_on(cluster):
            precompiler = measurer.precompile(kernel, todo, args_fn, kinds, arch, opts.workers)
    t1 = time.perf_counter()
    if todo and (cluster is None or cluster.pool is None):
        measurer.warm_up()  # overlaps the workers' first compiles (actors warm themselves)
    timings["start_workers"], timings["warm_up"] = t1 - t0, time.perf_counter() - t1

    def ordered(cfgs: Sequence[Config]) -> Iterator[Config]:
        """Configs in the order their compiles finish; the time spent waiting for the next
        one counts as compile wait. With several GPUs on a cluster, each config goes to a
        measuring actor the moment its compile finishes."""
        it = in_completion_order(precompiler, cfgs)
        if cluster is not None and cluster.gpu_count >= 2 and opts.strategy != "coordinate":
            first = opts.race.samples if opts.strategy == "race" else opts.samples
            it = cluster.prefetching(it, MeasureRequest(first))
        while True:
            t = time.perf_counter()
            cfg = next(it, None)
            timings["compile_wait"] += time.perf_counter() - t
            if cfg is None:
                return
            yield cfg

    name = kernel_display_name(kernel)
    with progress(len(todo), f"tuning {name} ({opts.regime})", enabled=opts.progress,
                  unit="config") as bar:
        counts = {"failed": 0}

        def record(outcome: Success | Failure) -> None:
            if store is not None:  # the single writer: results stream back to this process
                store.append(_to_record(context, outcome))
            _step(bar, outcome, counts)
            if cluster is not None:
                failed = f", {counts['failed']} failed" if counts["failed"] else ""
                bar.set_postfix_str(cluster.progress_note() + failed)

        def run(cfg: Config, n: int, final: bool = True,
                stop_above_s: float | None = None) -> Success | Failure:
            t0 = time.perf_counter()
            compile_error = precompiler.error(cfg) if precompiler is not None else None
            t1 = time.perf_counter()
            if compile_error is not None:
                outcome: Success | Failure = Failure(cfg, "compile", compile_error)
            elif cluster is not None and cluster.pool is not None:
                outcome = cluster.measure(cfg, MeasureRequest(n, stop_above_s))
            else:
                outcome = measure_config(measurer, kernel, cfg, kinds, grid_fn, args_fn,
                                         MeasureRequest(n, stop_above_s))
            timings["compile_wait"] += t1 - t0
            timings["measure"] += time.perf_counter() - t1
            if final or isinstance(outcome, Failure):
                record(outcome)
            return outcome

        propose = _STRATEGY_FNS[opts.strategy]
        try:
            outcomes = list(propose(todo, run, record=record, space=space,
                                    samples=opts.samples, race=opts.race, budget=opts.budget,
                                    objective=opts.objective, known=successes,
                                    ordered=ordered))
            for cfg, outcome in outcomes:
                key = config_key(cfg)
                if isinstance(outcome, Success):
                    successes[key] = outcome
                    failures.pop(key, None)
                else:
                    failures[key] = outcome
            if cluster is not None and cluster.pool is not None:
                successes = cluster.cross_check(successes, MeasureRequest(opts.samples))
        finally:
            t = time.perf_counter()
            compile_s = compile_seconds(precompiler)
            if precompiler is not None:
                precompiler.close()
            placement = cluster.placement() if cluster is not None else {}
            if cluster is not None:
                cluster.close()
            timings["shutdown"] = time.perf_counter() - t
    return TuningResult(kernel_name=name, successes=tuple(successes.values()),
                        failures=tuple(failures.values()), rejected=tuple(rejected),
                        context=context, objective=opts.objective,
                        wall_s=time.perf_counter() - started, timings=timings,
                        compile_s=compile_s, regime=opts.regime, placement=placement)


def _step(bar: ProgressBar, outcome: Success | Failure, counts: dict[str, int]) -> None:
    counts["failed"] += isinstance(outcome, Failure)
    bar.update(1)
    if counts["failed"]:
        bar.set_postfix_str(f"{counts['failed']} failed")


# ---- strategies: generators of (config, final outcome) -----------------------------------------
def _exhaustive(todo: list[Config], run: Run, *, samples: int, ordered: Ordered,
                **_: Any) -> Outcomes:
    for cfg in ordered(todo):
        yield cfg, run(cfg, samples)


def _race(todo: list[Config], run: Run, *, record: Callable[[Outcome], None], samples: int,
          race: RaceOptions, known: dict[str, Success], ordered: Ordered,
          **_: Any) -> Outcomes:
    # Round 1: a few samples each (a clear loser stops after one); round 2: a full measurement
    # for the contenders only.
    quick: list[tuple[Config, Success]] = []
    best = min((s.time_s for s in known.values()), default=None)
    for cfg in ordered(todo):
        out = run(cfg, race.samples, final=False,
                  stop_above_s=None if best is None else best * race.prune)
        if isinstance(out, Failure):
            yield cfg, out
        else:
            quick.append((cfg, out))
            best = out.time_s if best is None else min(best, out.time_s)
    if not quick or best is None:
        return
    cutoff = best * race.keep
    for cfg, out in quick:
        if out.time_s <= cutoff:
            yield cfg, run(cfg, samples)
        else:
            record(out)  # clearly slower: its short measurement is final
            yield cfg, out


def _random(todo: list[Config], run: Run, *, samples: int, ordered: Ordered,
            **_: Any) -> Outcomes:
    # tune() already drew the configs (so only they were compiled)
    for cfg in ordered(todo):
        yield cfg, run(cfg, samples)


def _coordinate(todo: list[Config], run: Run, *, space: Space, samples: int, budget: int | None,
                known: dict[str, Success], objective: str, **_: Any) -> Outcomes:
    allowed = {config_key(c) for c in todo}
    results: dict[str, Success | Failure] = {}
    spent = 0

    def measured(cfg: Config) -> Outcome:
        nonlocal spent
        key = config_key(cfg)
        if key in known:
            return known[key]
        if key not in results:
            spent += 1
            results[key] = run(cfg, samples)
        return results[key]

    def score(o: Outcome) -> float:
        if isinstance(o, Failure):
            return float("inf")
        if objective == "time":
            return o.time_s
        return -((o.gbps if objective == "gbps" else o.tflops) or 0.0)

    current = todo[0]
    best = measured(current)
    improved = True
    while improved and (budget is None or spent < budget):
        improved = False
        for knob in space.knobs:
            for cand in space.neighbours(current, knob):
                if config_key(cand) not in allowed or (budget is not None and spent >= budget):
                    continue
                out = measured(cand)
                if score(out) < score(best):
                    current, best, improved = cand, out, True
    for out in results.values():
        yield out.config, out


_STRATEGY_FNS: dict[str, Callable[..., Outcomes]] = {
    "exhaustive": _exhaustive, "race": _race, "random": _random, "coordinate": _coordinate}


# ---- one measurement --------------------------------------------------------------------------
def _start_cluster(opts: TuneOptions, measurer: Measurer, kernel: Any, kinds: dict[str, str],
                   grid_fn: Callable[[Config], Sequence[int]],
                   args_fn: Callable[[Config], Sequence[Any]]) -> Any:
    """The run's :class:`~tile_lab.tuning.cluster.ClusterRun` when ``opts.cluster`` is set:
    compiles go to the cluster; configs are measured by one actor per GPU, each building
    ``measurer``, the kernel and its arguments in its own process (nothing on a GPU travels)."""
    if opts.cluster is None:
        return None
    if getattr(kernel, "knob_kinds", None) is not None:
        raise TuneError("cluster tuning takes cuTile Python kernels; a kernel with its own "
                        "knobs (e.g. tune_cpp's) tunes on this machine")
    from .cluster import ClusterRun
    from .parallel_compile import compile_recipe

    recipe = compile_recipe(kernel)  # the kernel job's recipe: rebuilt in each actor

    def factory() -> Callable[[Config, MeasureRequest], Success | Failure]:
        own_kernel = recipe.build().kernel
        measurer.warm_up()

        def measure(cfg: Config, request: MeasureRequest) -> Success | Failure:
            return measure_config(measurer, own_kernel, cfg, kinds, grid_fn, args_fn, request)
        return measure

    return ClusterRun(opts.cluster, factory)


@contextmanager
def _compiles_on(cluster: Any) -> Iterator[None]:
    if cluster is None:
        yield
        return
    from .parallel_compile import compiles_on

    with compiles_on(cluster.executor):
        yield


def measure_config(measurer: Measurer, kernel: Any, cfg: Config, kinds: dict[str, str],
                   grid_fn: Callable[[Config], Sequence[int]],
                   args_fn: Callable[[Config], Sequence[Any]],
                   request: MeasureRequest) -> Success | Failure:
    """Measure one config through ``measurer``: a Success, or a Failure naming its stage
    ("setup" when grid_fn/args_fn/hints fail for this config)."""
    hints = {k: v for k, v in cfg.items if kinds.get(k) == "hint"}
    try:
        k = kernel.replace_hints(**hints) if hints else kernel
        grid = tuple(int(g) for g in grid_fn(cfg))
        args = tuple(args_fn(cfg))
    except Exception as e:  # a bad grid_fn/args_fn for this config is this config's failure
        return Failure(cfg, "setup", f"{type(e).__name__}: {e}")
    try:
        m = measurer.measure(k, cfg, grid, args, request)
    except Exception as e:
        return Failure(cfg, failure_stage(e), f"{type(e).__name__}: {e}")
    return Success(cfg, m)


def _to_record(context: dict[str, Any], outcome: Success | Failure) -> StoredRecord:
    if isinstance(outcome, Success):
        m = outcome.measurement
        data = m.to_json_dict() if hasattr(m, "to_json_dict") else dict(m.__dict__)
        return StoredRecord(context, outcome.config, "ok", data, None, None)
    return StoredRecord(context, outcome.config, "failed", None, outcome.error, outcome.stage)


# ---- context: what the results are valid for --------------------------------------------------
def tuning_context(kernel: Any, args: Sequence[Any], arch: str | None) -> dict[str, Any]:
    from .._cutile_compat import installed_version, python_function
    from ..toolchain import tool_version

    arrays = [f"{tuple(a.shape)}:{a.dtype}" for a in args if hasattr(a, "shape")]
    identity = getattr(kernel, "tuning_identity", None)
    if identity is not None:  # a kernel that is not a cuTile Python kernel names itself
        ctx = {**identity(), "arrays": arrays, "arch": arch}
        ctx.update(_gpu_identity())
        return ctx
    func = python_function(kernel)
    import inspect as _inspect

    try:
        src = _inspect.getsource(func)
    except (OSError, TypeError):
        src = func.__code__.co_code.hex()
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
