"""``tile_lab.tune``: search a Space for the best config; compile in parallel, measure serially.

The pipeline, one call per stage:
  1. ``space.split(arch)``        — valid configs, and the rejected ones with the reason;
  2. ``store.done(context)``      — skip configs already measured in this exact context;
  3. ``precompile(...)``          — compile the remaining configs in worker processes (compilation
                                    dominates tuning time); this fills cuTile's on-disk cubin cache,
                                    so the launches in step 4 do not run tileiras again;
  4. the strategy proposes configs; each is measured with the ``cold`` protocol (optionally in an
     isolated worker, and checked against a reference before its time is accepted) and appended to
     the store the moment it is done.
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
         progress: bool = True, seed: int = 0, measure: Measure | None = None,
         precompile_configs: bool = True, flops: int | Callable[[Config], int] | None = None,
         bytes: int | Callable[[Config], int] | None = None) -> TuningResult:
    """Tune ``kernel`` over ``space``; returns a TuningResult (best, successes, failures).

    ``args_fn(config)`` returns the full argument tuple (Constant values included, as for
    ``ct.launch``); ``grid_fn(config)`` the grid. ``check(*args)`` (optional) verifies a config's
    output before its time is accepted (see ``tile_lab.bench``). ``strategy``: "race" (every config
    measured briefly, only those within ``race_keep``× of the best measured fully), "exhaustive"
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
    timings = {"setup": time.perf_counter() - started, "compile_wait": 0.0, "measure": 0.0}
    precompiler = None
    if precompile_configs and todo and hasattr(measure, "start_precompile"):
        precompiler = measure.start_precompile(kernel, todo, args_fn, kinds, arch, workers)

    bar = _Progress(len(todo), enabled=progress, label=f"tuning {_name(kernel)}")

    def record(outcome: Success | Failure) -> None:
        if store is not None:
            store.append(_to_record(context, outcome))
        bar.step(outcome)

    def run(cfg: Config, n: int, final: bool = True) -> Success | Failure:
        t0 = time.perf_counter()
        compile_error = precompiler.error(cfg) if precompiler is not None else None
        t1 = time.perf_counter()
        if compile_error is not None:
            outcome: Success | Failure = Failure(cfg, "compile", compile_error)
        else:
            outcome = _measure_one(measure, kernel, cfg, kinds, grid_fn, args_fn, n)
        timings["compile_wait"] += t1 - t0
        timings["measure"] += time.perf_counter() - t1
        if final or isinstance(outcome, Failure):
            record(outcome)
        return outcome

    propose = _STRATEGY_FNS[strategy]
    try:
        outcomes = list(propose(todo, run, record=record, space=space, samples=samples,
                                race_samples=race_samples, race_keep=race_keep,
                                budget=budget, seed=seed, objective=objective,
                                known=successes))
    finally:
        if precompiler is not None:
            precompiler.close()
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
                        wall_s=time.perf_counter() - started, timings=timings)


# ---- strategies: generators of (config, final outcome) -----------------------------------------
def _exhaustive(todo, run, *, samples, **_):
    for cfg in todo:
        yield cfg, run(cfg, samples)


def _race(todo, run, *, record, samples, race_samples, race_keep, known, **_):
    # Round 1: a few samples each; round 2: a full measurement for the contenders only.
    quick = []
    for cfg in todo:
        out = run(cfg, race_samples, final=False)
        if isinstance(out, Failure):
            yield cfg, out
        else:
            quick.append((cfg, out))
    if not quick:
        return
    times = [o.time_s for _, o in quick] + [s.time_s for s in known.values()]
    cutoff = min(times) * race_keep
    for cfg, out in quick:
        if out.time_s <= cutoff:
            yield cfg, run(cfg, samples)
        else:
            record(out)  # clearly slower: its short measurement is final
            yield cfg, out


def _random(todo, run, *, samples, budget, seed, **_):
    rng = random.Random(seed)
    picks = list(todo)
    rng.shuffle(picks)
    for cfg in picks[:budget]:
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
def _measure_one(measure, kernel, cfg, kinds, grid_fn, args_fn, n) -> Success | Failure:
    hints = {k: v for k, v in cfg.items if kinds.get(k) == "hint"}
    try:
        k = kernel.replace_hints(**hints) if hints else kernel
        grid = tuple(int(g) for g in grid_fn(cfg))
        args = tuple(args_fn(cfg))
    except Exception as e:  # a bad grid_fn/args_fn for this config is this config's failure
        return Failure(cfg, "setup", f"{type(e).__name__}: {e}")
    try:
        if getattr(measure, "wants_config", False):
            m = measure(k, grid, args, n, config=cfg)
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
    """A stored measurement when the full Measurement class cannot rebuild it."""

    def __init__(self, data: dict) -> None:
        self.__dict__.update(data)

    def to_json_dict(self) -> dict:
        return dict(self.__dict__)


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

    def measure(kernel, grid, args, n, config=None):
        f = flops(config) if callable(flops) else flops
        b = nbytes(config) if callable(nbytes) else nbytes
        # A short (race) measurement needs only one warm-up launch: the compile happened in
        # the first launch, and a clearly slow config should cost as few launches as possible.
        # FLOPs are not derived per config (that emulates blocks each time): pass flops= to
        # tune() for TFLOPS.
        return gpu.bench(kernel, grid, args, mode=mode, samples=n, isolate=isolate, check=check,
                         flops=f, bytes=b, warmup=1 if n < 10 else 3, derive_flops=False)

    def start_precompile(kernel, configs, args_fn, kinds, arch, workers):
        from .parallel_compile import Precompiler

        return Precompiler(kernel, configs, args_fn, kinds, arch, workers)

    measure.start_precompile = start_precompile  # type: ignore[attr-defined]
    measure.wants_config = True  # type: ignore[attr-defined]
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
