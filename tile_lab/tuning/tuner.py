"""``tile_lab.tune``: search a Space for the best config; compile in parallel, measure serially.

The pipeline, one call per stage:
  1. ``space.split(arch)``        — valid configs, and the rejected ones with the reason;
  2. ``store.done(context)``      — skip configs already measured in this exact context;
  3. ``precompile(...)``          — compile the configs the strategy will measure in worker
                                    processes (compilation dominates tuning time), largest tiles
                                    first; this fills cuTile's on-disk cubin cache, so the
                                    launches in step 4 do not run tileiras again;
  4. the strategy proposes configs, in the order their compiles finish; each is measured with
     the ``cold`` protocol (optionally in an isolated worker, and checked against a reference
     before its time is accepted) and appended to the store the moment it is done.

While the first compiles run, the measuring process warms what its first measurement would
otherwise pay for (CuPy's own kernels, cuTile's compiler queries). In a race, a config whose
first timed sample is ``race_prune``× slower than the best so far is not timed further.
"""

from __future__ import annotations

import hashlib
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import TileLabError
from .result import Failure, Success, TuningResult
from .space import Config, Space
from .store import StoredRecord, TuningStore, config_key

STRATEGIES = ("race", "exhaustive", "random", "coordinate")

Measure = Callable[[Any, tuple[int, ...], tuple[Any, ...], int], Any]


class TuneError(TileLabError):
    """A tuning run that cannot start (bad strategy, empty space, bad budget)."""


def tune(kernel: Any, space: Space, grid_fn: Callable[[Config], Sequence[int]],
         args_fn: Callable[[Config], Sequence[Any]], *, objective: str = "time",
         budget: int | None = None, strategy: str = "race", check: Callable[..., Any] | None = None,
         store: TuningStore | str | None = None, arch: str | None = None,
         workers: int | None = None, mode: str = "cold", isolate: bool = False,
         samples: int = 20, race_samples: int = 5, race_keep: float = 1.5,
         race_prune: float = 3.0, progress: bool = True, seed: int = 0,
         measure: Measure | None = None,
         precompile_configs: bool = True, flops: int | Callable[[Config], int] | None = None,
         bytes: int | Callable[[Config], int] | None = None) -> TuningResult:
    """Tune ``kernel`` over ``space``; returns a TuningResult (best, successes, failures).

    ``args_fn(config)`` returns the full argument tuple (Constant values included, as for
    ``ct.launch``); ``grid_fn(config)`` the grid. ``check(*args)`` (optional) verifies a config's
    output before its time is accepted (see ``tile_lab.bench``). ``strategy``: "race" (every config
    measured briefly, only those within ``race_keep``× of the best measured fully; a config
    whose first sample is ``race_prune``× slower than the best so far stops at that sample),
    "exhaustive"
    (every config measured fully), "random" (``budget`` configs drawn with ``seed``), "coordinate"
    (greedy: improve one knob at a time from the first config until no knob helps, at most
    ``budget`` measurements). ``flops``/``bytes``: per launch (a number, or a function of the
    config) so every measurement reports TFLOPS / GB/s. ``measure(kernel, grid, args, samples)``
    replaces the GPU measurement (used by tests and by recorded-result replays).

    ``kernel`` is a ``@ct.kernel``, or any object that describes itself to the tuner with
    ``knob_kinds(space) -> {knob: kind}`` and ``tuning_identity() -> dict`` (what the results
    are valid for) -- e.g. ``tile_lab.cpp.tune_cpp``'s C++ kernel, whose knobs are ``-D``
    defines; such a kernel comes with its own ``measure``.
    """
    if strategy not in STRATEGIES:
        raise TuneError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if objective not in ("time", "gbps", "tflops"):
        raise TuneError(f"unknown objective {objective!r}; choose time, gbps or tflops")
    if strategy == "random" and not budget:
        raise TuneError("strategy='random' needs a budget (number of configs to try)")
    if not race_keep >= 1.0 or not race_prune >= race_keep:
        raise TuneError(f"need 1 <= race_keep <= race_prune, got race_keep={race_keep}, "
                        f"race_prune={race_prune}")
    own_kinds = getattr(kernel, "knob_kinds", None)
    kinds = own_kinds(space) if own_kinds is not None else space.classify(kernel)
    if measure is None:
        measure = _gpu_measure(mode=mode, isolate=isolate, check=check, flops=flops,
                               nbytes=bytes)
        if arch is None:
            arch = _local_arch()
    started = time.perf_counter()
    configs, rejected = space.split(arch)
    if not configs:
        raise TuneError(f"no valid config in {space!r} for {arch}: "
                        + "; ".join(r.reason for r in rejected[:3]))

    first_args = tuple(args_fn(configs[0]))
    context = tuning_context(kernel, first_args, arch)
    store = TuningStore(store) if isinstance(store, str) else store
    done = store.done(context) if store is not None else {}
    # The store may hold other spaces' configs for the same kernel and shapes: keep this space's.
    in_space = {config_key(c) for c in configs}
    done = {k: r for k, r in done.items() if k in in_space}

    successes: dict[str, Success] = {}
    failures: dict[str, Failure] = {}
    for key, rec in done.items():
        if rec.status == "ok" and rec.measurement is not None:
            successes[key] = Success(rec.config, _recorded(rec.measurement), from_store=True)
        elif rec.status != "ok":
            failures[key] = Failure(rec.config, rec.stage or "launch", rec.error or "",
                                    from_store=True)

    todo = [c for c in configs if config_key(c) not in done]
    if strategy == "random":  # only the drawn configs are compiled and measured
        picks = list(todo)
        random.Random(seed).shuffle(picks)
        todo = picks[:budget]
    # where the wall time goes: setup, starting the compile workers, warming the measuring
    # process, waiting for compiles, measuring, shutting the workers down
    timings = {"setup": time.perf_counter() - started, "start_workers": 0.0, "warm_up": 0.0,
               "compile_wait": 0.0, "measure": 0.0, "shutdown": 0.0}
    precompiler = None
    t0 = time.perf_counter()
    if precompile_configs and todo and hasattr(measure, "start_precompile"):
        precompiler = measure.start_precompile(kernel, todo, args_fn, kinds, arch, workers)
    t1 = time.perf_counter()
    if todo and hasattr(measure, "prepare"):
        measure.prepare()  # overlaps the workers' first compiles
    timings["start_workers"], timings["warm_up"] = t1 - t0, time.perf_counter() - t1

    def ordered(cfgs: Sequence[Config]):
        """Configs in the order their compiles finish (as given without a precompiler); the
        time spent waiting for the next one counts as compile wait."""
        futures = getattr(precompiler, "futures", None)
        if not futures:
            yield from cfgs
            return
        from .parallel_compile import in_completion_order

        it = in_completion_order(futures, cfgs)
        while True:
            t = time.perf_counter()
            cfg = next(it, None)
            timings["compile_wait"] += time.perf_counter() - t
            if cfg is None:
                return
            yield cfg

    bar = _Progress(len(todo), enabled=progress, label=f"tuning {_name(kernel)}")

    def record(outcome: Success | Failure) -> None:
        if store is not None:
            store.append(_to_record(context, outcome))
        bar.step(outcome)

    def run(cfg: Config, n: int, final: bool = True,
            stop_above_s: float | None = None) -> Success | Failure:
        t0 = time.perf_counter()
        compile_error = precompiler.error(cfg) if precompiler is not None else None
        t1 = time.perf_counter()
        if compile_error is not None:
            outcome: Success | Failure = Failure(cfg, "compile", compile_error)
        else:
            outcome = _measure_one(measure, kernel, cfg, kinds, grid_fn, args_fn, n,
                                   stop_above_s)
        timings["compile_wait"] += t1 - t0
        timings["measure"] += time.perf_counter() - t1
        if final or isinstance(outcome, Failure):
            record(outcome)
        return outcome

    propose = _STRATEGY_FNS[strategy]
    try:
        outcomes = list(propose(todo, run, record=record, space=space, samples=samples,
                                race_samples=race_samples, race_keep=race_keep,
                                race_prune=race_prune, budget=budget, objective=objective,
                                known=successes, ordered=ordered))
    finally:
        t = time.perf_counter()
        compile_s = {}
        if precompiler is not None:
            seconds = getattr(precompiler, "compile_seconds", None)
            compile_s = seconds() if seconds is not None else {}
            precompiler.close()
        timings["shutdown"] = time.perf_counter() - t
    for cfg, outcome in outcomes:
        key = config_key(cfg)
        if isinstance(outcome, Success):
            successes[key] = outcome
            failures.pop(key, None)
        else:
            failures[key] = outcome
    bar.close()
    return TuningResult(kernel_name=_name(kernel), successes=tuple(successes.values()),
                        failures=tuple(failures.values()), rejected=tuple(rejected),
                        context=context, objective=objective,
                        wall_s=time.perf_counter() - started, timings=timings,
                        compile_s=compile_s)


# ---- strategies: generators of (config, final outcome) -----------------------------------------
def _exhaustive(todo, run, *, samples, ordered, **_):
    for cfg in ordered(todo):
        yield cfg, run(cfg, samples)


def _race(todo, run, *, record, samples, race_samples, race_keep, race_prune, known, ordered,
          **_):
    # Round 1: a few samples each (a clear loser stops after one); round 2: a full measurement
    # for the contenders only.
    quick = []
    best = min((s.time_s for s in known.values()), default=None)
    for cfg in ordered(todo):
        out = run(cfg, race_samples, final=False,
                  stop_above_s=None if best is None else best * race_prune)
        if isinstance(out, Failure):
            yield cfg, out
        else:
            quick.append((cfg, out))
            best = out.time_s if best is None else min(best, out.time_s)
    if not quick:
        return
    cutoff = best * race_keep
    for cfg, out in quick:
        if out.time_s <= cutoff:
            yield cfg, run(cfg, samples)
        else:
            record(out)  # clearly slower: its short measurement is final
            yield cfg, out


def _random(todo, run, *, samples, ordered, **_):
    # tune() already drew the configs (so only they were compiled)
    for cfg in ordered(todo):
        yield cfg, run(cfg, samples)


def _coordinate(todo, run, *, space, samples, budget, known, objective, **_):
    allowed = {config_key(c) for c in todo}
    results: dict[str, Success | Failure] = {}
    spent = 0

    def measured(cfg):
        nonlocal spent
        key = config_key(cfg)
        if key in known:
            return known[key]
        if key not in results:
            spent += 1
            results[key] = run(cfg, samples)
        return results[key]

    def score(o):
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


_STRATEGY_FNS = {"exhaustive": _exhaustive, "race": _race, "random": _random,
                 "coordinate": _coordinate}


# ---- one measurement --------------------------------------------------------------------------
def _measure_one(measure, kernel, cfg, kinds, grid_fn, args_fn, n,
                 stop_above_s=None) -> Success | Failure:
    hints = {k: v for k, v in cfg.items if kinds.get(k) == "hint"}
    try:
        k = kernel.replace_hints(**hints) if hints else kernel
        grid = tuple(int(g) for g in grid_fn(cfg))
        args = tuple(args_fn(cfg))
    except Exception as e:  # a bad grid_fn/args_fn for this config is this config's failure
        return Failure(cfg, "setup", f"{type(e).__name__}: {e}")
    try:
        if getattr(measure, "wants_config", False):
            extra = {}
            if stop_above_s is not None and getattr(measure, "can_stop_early", False):
                extra["stop_above_s"] = stop_above_s
            m = measure(k, grid, args, n, config=cfg, **extra)
        else:
            m = measure(k, grid, args, n)
    except Exception as e:
        stage = getattr(e, "stage", None) or _stage_of(e)
        return Failure(cfg, stage, f"{type(e).__name__}: {e}")
    return Success(cfg, m)


def _stage_of(e: Exception) -> str:
    name = type(e).__name__
    if "Compil" in name or "Tile" in name:
        return "compile"
    if "Check" in name or "Mismatch" in name:
        return "check"
    if "Timeout" in name:
        return "timeout"
    return "launch"


def _to_record(context, outcome: Success | Failure) -> StoredRecord:
    if isinstance(outcome, Success):
        m = outcome.measurement
        data = m.to_json_dict() if hasattr(m, "to_json_dict") else dict(m.__dict__)
        return StoredRecord(context, outcome.config, "ok", data, None, None)
    return StoredRecord(context, outcome.config, "failed", None, outcome.error, outcome.stage)


def _recorded(data: dict) -> Any:
    try:
        from ..gpu.measurement import Measurement

        return Measurement.from_json_dict(data)
    except Exception:
        return _RecordedMeasurement(data)


class _RecordedMeasurement:
    """A stored measurement when the full Measurement class cannot rebuild it (e.g. one
    written by a custom ``measure``). Only Measurement's own field names become attributes,
    read through ``__getattr__`` (which Python consults after the class), so a crafted store
    line can neither replace a method nor set a dunder; every key is kept for to_json_dict."""

    __slots__ = ("_data",)

    def __init__(self, data: dict) -> None:
        if not isinstance(data, dict):
            raise TypeError("a stored measurement must be a JSON object, got "
                            f"{type(data).__name__}")
        object.__setattr__(self, "_data", {str(k): v for k, v in data.items()})

    def __getattr__(self, name: str) -> Any:
        if name in _MEASUREMENT_FIELDS and name in self._data:
            return self._data[name]
        raise AttributeError(f"recorded measurement has no field {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a recorded measurement is read-only")

    def __reduce__(self) -> tuple[Any, ...]:  # pickle / deepcopy rebuild through __init__
        return (type(self), (dict(self._data),))

    def to_json_dict(self) -> dict:
        return dict(self._data)


def _measurement_fields() -> frozenset[str]:
    from dataclasses import fields

    from ..gpu.measurement import Measurement

    return frozenset(f.name for f in fields(Measurement))


_MEASUREMENT_FIELDS = _measurement_fields()


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
    ctx = {"kernel": _name(kernel), "source_sha": hashlib.sha256(src.encode()).hexdigest()[:16],
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


def _name(kernel: Any) -> str:
    try:
        from .._cutile_compat import python_function

        return python_function(kernel).__name__
    except Exception:
        return getattr(kernel, "__name__", type(kernel).__name__)


# ---- the GPU measurement (cold protocol) with parallel precompilation -------------------------
def _gpu_measure(*, mode: str, isolate: bool, check: Any, flops: Any, nbytes: Any) -> Measure:
    from .. import gpu

    gpu.require_gpu("tile_lab.tune")

    writes = None  # what the kernel writes: the same for every config, so learned once
    warm_up = None  # the thread paying first-use costs while the workers compile

    def measure(kernel, grid, args, n, config=None, stop_above_s=None):
        nonlocal writes, warm_up
        if warm_up is not None:  # nothing of the warm-up may overlap a timed sample
            warm_up.join()
            warm_up = None
        f = flops(config) if callable(flops) else flops
        b = nbytes(config) if callable(nbytes) else nbytes
        if writes is None and not isolate:
            writes = gpu.detect_writes(kernel, grid, args)
        # FLOPs are not derived per config (that emulates blocks each time): pass flops= to
        # tune() for TFLOPS. One warm-up launch: the compile happened in a worker, and the
        # timing protocol discards its own first sample.
        return gpu.bench(kernel, grid, args, mode=mode, samples=n, isolate=isolate, check=check,
                         flops=f, bytes=b, warmup=1, derive_flops=False, writes=writes,
                         stop_above_s=stop_above_s)

    def prepare():
        nonlocal warm_up
        from ..gpu.warmup import start_warm_up

        warm_up = start_warm_up()

    def start_precompile(kernel, configs, args_fn, kinds, arch, workers):
        from .parallel_compile import Precompiler

        return Precompiler(kernel, configs, args_fn, kinds, arch, workers)

    measure.start_precompile = start_precompile  # type: ignore[attr-defined]
    measure.prepare = prepare  # type: ignore[attr-defined]
    measure.wants_config = True  # type: ignore[attr-defined]
    measure.can_stop_early = True  # type: ignore[attr-defined]
    return measure


# ---- progress that shows in Jupyter and in a terminal ------------------------------------------
class _Progress:
    def __init__(self, total: int, *, enabled: bool, label: str) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.enabled = enabled and total > 0
        self.widget = None
        if self.enabled and _in_notebook():
            import ipywidgets as w
            from IPython.display import display

            self.widget = w.IntProgress(min=0, max=total, description=label[:20])
            self.text = w.Label()
            display(w.HBox([self.widget, self.text]))

    def step(self, outcome: Any) -> None:
        if not self.enabled:
            return
        self.done += 1
        self.failed += isinstance(outcome, Failure)
        msg = f"{self.done}/{self.total} configs, {self.failed} failed"
        if self.widget is not None:
            self.widget.value = self.done
            self.text.value = msg
        else:
            print(f"\r{msg}", end="" if self.done < self.total else "\n", file=sys.stderr)

    def close(self) -> None:
        if self.widget is not None:
            self.widget.bar_style = "success" if not self.failed else "warning"


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython

        ip = get_ipython()
        return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"
    except Exception:
        return False
