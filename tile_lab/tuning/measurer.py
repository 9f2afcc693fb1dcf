"""The seam between the tuner and whatever measures a config: the :class:`Measurer` protocol.

``tile_lab.tune``, the explorer (``tile_lab.explore``) and the C++ tuner (``tile_lab.tune_cpp``)
all measure through this one typed interface:

* ``precompile(...)`` starts compiling configs ahead (returns :class:`Precompiles`, or None);
* ``warm_up()`` pays the measuring process's first-use costs while those compiles run;
* ``measure(kernel, config, grid, args, request)`` measures one config and returns its
  measurement (a :class:`~tile_lab.gpu.measurement.Measurement` on a GPU, or any object with
  ``mean_s``, ``ci95_s``, ``gbps``, ``tflops``), or raises; :func:`failure_stage` says which
  stage failed ("setup", "compile", "launch", "verify", "measure") from the error's own data.

:func:`measure_config` turns one config into a Success or a Failure through a Measurer (hints
applied, grid and arguments built, errors kept as data). A tuning run's whole measuring side
(compiles ahead, here or on a Ray cluster) is :mod:`tile_lab.tuning.run_measurer`.

:class:`GpuMeasurer` is the cuTile Python implementation (cold protocol, one regime, what the
kernel writes learned once); :class:`FunctionMeasurer` adapts a plain
``measure(kernel, grid, args, samples)`` function (tests, recorded-result replays).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .result import Failure, Success
from .space import Config

STAGES = ("setup", "compile", "launch", "verify", "measure")


@dataclass(frozen=True)
class MeasureRequest:
    """What the tuner asks of one measurement: ``samples`` samples; stop after the first when
    it is slower than ``stop_above_s`` (a race's clear loser)."""

    samples: int
    stop_above_s: float | None = None


class Precompiles(Protocol):
    """Compiles running ahead of the measurements."""

    @property
    def futures(self) -> Mapping[str, Future[Any]]:
        """config key -> its compile"""

    def error(self, cfg: Config) -> str | None:
        """Wait for ``cfg``'s compile; its error text, or None when it compiled."""

    def close(self) -> None: ...


@runtime_checkable
class Measurer(Protocol):
    def precompile(self, kernel: Any, configs: Sequence[Config],
                   args_fn: Callable[[Config], Sequence[Any]], kinds: dict[str, str],
                   arch: str | None, workers: int | None) -> Precompiles | None: ...

    def warm_up(self) -> None: ...

    def measure(self, kernel: Any, config: Config, grid: tuple[int, ...],
                args: tuple[Any, ...], request: MeasureRequest) -> Any: ...


def measure_config(measurer: Measurer, kernel: Any, cfg: Config, kinds: dict[str, str],
                   grid_fn: Callable[[Config], Sequence[int]],
                   args_fn: Callable[[Config], Sequence[Any]],
                   request: MeasureRequest) -> Success | Failure:
    """Measure one config through ``measurer``: a Success, or a Failure naming its stage
    ("setup" when grid_fn/args_fn/hints fail for this config)."""
    from .schedules import resolve

    hints = {k: v for k, v in cfg.items if kinds.get(k) == "hint"}
    try:
        # a Schedules picks the config's kernel (tuning over schedules, not only tiles)
        k = resolve(kernel.replace_hints(**hints) if hints else kernel, cfg)
        grid = tuple(int(g) for g in grid_fn(cfg))
        args = tuple(args_fn(cfg))
    except Exception as e:  # a bad grid_fn/args_fn for this config is this config's failure
        return Failure(cfg, "setup", f"{type(e).__name__}: {e}")
    try:
        m = measurer.measure(k, cfg, grid, args, request)
    except Exception as e:
        return Failure(cfg, failure_stage(e), f"{type(e).__name__}: {e}")
    return Success(cfg, m)


def failure_stage(exc: BaseException, default: str = "measure") -> str:
    """The stage an error belongs to: its ``stage`` (tile_lab errors carry one), "compile" for
    cuTile's own compiler errors, else ``default`` (the step that was running)."""
    stage = getattr(type(exc), "stage", None)
    if isinstance(stage, str) and stage in STAGES:
        return stage
    from .._cutile_compat import is_tile_error

    if is_tile_error(exc):
        return "compile"
    return default


def compile_seconds(pre: Precompiles | None) -> dict[str, float]:
    """Seconds each config's compile took, when the precompiler records it."""
    seconds = getattr(pre, "compile_seconds", None)
    return seconds() if callable(seconds) else {}


def in_completion_order(pre: Precompiles | None, configs: Sequence[Config]) -> Iterator[Config]:
    """``configs`` in the order their compiles finish (as given without compiles ahead)."""
    if pre is None or not pre.futures:
        yield from configs
        return
    from .parallel_compile import in_completion_order as by_futures

    yield from by_futures(dict(pre.futures), configs)


class FunctionMeasurer:
    """A plain ``measure(kernel, grid, args, samples)`` function as a :class:`Measurer`
    (no compiles ahead, no warm-up, no early stop)."""

    def __init__(self, fn: Callable[[Any, tuple[int, ...], tuple[Any, ...], int], Any]) -> None:
        self.fn = fn

    def precompile(self, kernel: Any, configs: Sequence[Config],
                   args_fn: Callable[[Config], Sequence[Any]], kinds: dict[str, str],
                   arch: str | None, workers: int | None) -> Precompiles | None:
        return None

    def warm_up(self) -> None:
        pass

    def measure(self, kernel: Any, config: Config, grid: tuple[int, ...],
                args: tuple[Any, ...], request: MeasureRequest) -> Any:
        return self.fn(kernel, grid, args, request.samples)


def as_measurer(measure: Measurer | Callable[..., Any] | None) -> Measurer | None:
    """``measure`` as a Measurer (a plain function is wrapped; None stays None)."""
    if measure is None or isinstance(measure, Measurer):
        return measure
    if callable(measure):
        return FunctionMeasurer(measure)
    raise TypeError(f"measure= must be a tile_lab.tuning.Measurer or a function "
                    f"(kernel, grid, args, samples), not {type(measure).__name__}")


class GpuMeasurer:
    """Measures cuTile Python configs on this GPU with ``tile_lab.bench`` in one regime.

    What the kernel writes is the same for every config, so it is learned once; the compiles
    run in worker processes (:class:`~tile_lab.tuning.parallel_compile.Precompiler`) while a
    thread warms this process's first-use costs."""

    def __init__(self, *, timing: Any = None, isolate: bool = False,
                 check: Callable[..., Any] | None = None,
                 flops: int | Callable[[Config], int] | None = None,
                 nbytes: int | Callable[[Config], int] | None = None) -> None:
        from ..gpu import require_gpu
        from ..gpu.options import TimingOptions

        require_gpu("tile_lab.tune")
        self.timing = timing if timing is not None else TimingOptions()
        self.isolate, self.check = isolate, check
        self.flops, self.nbytes = flops, nbytes
        self._writes: dict[Any, Any] = {}  # per schedule: each kernel writes its own arrays
        self._warm: Any = None

    def precompile(self, kernel: Any, configs: Sequence[Config],
                   args_fn: Callable[[Config], Sequence[Any]], kinds: dict[str, str],
                   arch: str | None, workers: int | None) -> Precompiles | None:
        from .parallel_compile import Precompiler

        return Precompiler(kernel, configs, args_fn, kinds, arch, workers)

    def warm_up(self) -> None:
        from ..gpu.warmup import start_warm_up

        self._warm = start_warm_up()

    def measure(self, kernel: Any, config: Config, grid: tuple[int, ...],
                args: tuple[Any, ...], request: MeasureRequest) -> Any:
        from ..gpu import bench, detect_writes
        from ..gpu.options import BenchOptions

        if self._warm is not None:  # nothing of the warm-up may overlap a timed sample
            self._warm.join()
            self._warm = None
        f = self.flops(config) if callable(self.flops) else self.flops
        b = self.nbytes(config) if callable(self.nbytes) else self.nbytes
        schedule = config.get("schedule")
        if schedule not in self._writes and not self.isolate:
            self._writes[schedule] = detect_writes(kernel, grid, args)
        # FLOPs are not derived per config (that emulates blocks each time): pass flops= for
        # TFLOPS. One warm-up launch: the compile happened in a worker, and the timing protocol
        # discards its own first sample.
        timing = self.timing.but(samples=request.samples, warmup=1,
                                 stop_above_s=request.stop_above_s)
        options = BenchOptions(isolate=self.isolate, derive_flops=False,
                               writes=self._writes.get(schedule), params=config.as_dict())
        return bench(kernel, grid, args, flops=f, bytes=b, check=self.check, timing=timing,
                     options=options)
