"""A tuning run's measuring side: where its configs compile and where they are measured.

``tile_lab.tune`` runs a strategy against a :class:`RunMeasurer` made by :func:`run_measurer`
from the run's :class:`~tile_lab.tuning.measurer.Measurer` and options; the tuner itself never
asks where it runs:

* :class:`LocalMeasuring`: the Measurer's ``precompile`` compiles ahead in local worker
  processes, and each config is measured in this process with
  :func:`~tile_lab.tuning.measurer.measure_config`;
* :class:`ClusterMeasuring` (``TuneOptions(cluster=ClusterOptions(...))``): the same compiles
  go to a Ray cluster's CPUs, and each config is measured by one of its GPU actors (each builds
  the Measurer's kernel and arguments in its own process); with several GPUs, every config is
  handed to an actor the moment its compile finishes, and the top configs are re-timed on one
  GPU at the end (:mod:`tile_lab.tuning.cluster`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .measurer import (
    Measurer,
    MeasureRequest,
    Precompiles,
    compile_seconds,
    in_completion_order,
    measure_config,
)
from .result import Failure, Success
from .space import Config

if TYPE_CHECKING:
    from .cluster import ClusterRun
    from .options import TuneOptions


@dataclass(frozen=True)
class TuneTarget:
    """What a run tunes: the kernel, how each knob reaches it (knob -> "hint" | "constant" |
    a kernel's own kind), each config's grid and arguments, the target architecture."""

    kernel: Any
    kinds: dict[str, str]
    grid_fn: Callable[[Config], Sequence[int]]
    args_fn: Callable[[Config], Sequence[Any]]
    arch: str | None


class RunMeasurer(Protocol):
    """One tuning run's compiles and measurements, wherever they happen."""

    def start(self, configs: Sequence[Config]) -> None:
        """Start compiling ``configs`` ahead (when the options say so) and any workers."""

    def warm_up(self) -> None:
        """Pay the measuring process's first-use costs while the first compiles run."""

    def compile_error(self, config: Config) -> str | None:
        """Wait for ``config``'s compile; its error text, or None."""

    def in_compile_order(self, configs: Sequence[Config],
                         first: MeasureRequest) -> Iterator[Config]:
        """``configs`` as their compiles finish; ``first``: what each will be asked first."""

    def measure(self, config: Config, request: MeasureRequest) -> Success | Failure: ...

    def finish(self, successes: dict[str, Success],
               request: MeasureRequest) -> dict[str, Success]:
        """The successes as the run reports them (e.g. the top ones re-timed on one GPU)."""

    def progress_note(self) -> str | None:
        """Where the work went so far, for the progress bar (None: nothing to say)."""

    def compile_seconds(self) -> dict[str, float]: ...

    def close(self) -> None: ...

    def placement(self) -> dict[str, Any]:
        """Which node compiled and which GPU measured what (complete after ``close``)."""


def run_measurer(measurer: Measurer, options: TuneOptions, target: TuneTarget) -> RunMeasurer:
    """The measuring side ``options`` asks for: on its cluster, or on this machine."""
    if options.cluster is not None:
        return ClusterMeasuring(measurer, options, target)
    return LocalMeasuring(measurer, options, target)


class LocalMeasuring:
    """Compiles ahead with the Measurer's ``precompile`` (local worker processes); measures
    each config in this process."""

    def __init__(self, measurer: Measurer, options: TuneOptions, target: TuneTarget) -> None:
        self.measurer, self.options, self.target = measurer, options, target
        self.precompiles: Precompiles | None = None

    def start(self, configs: Sequence[Config]) -> None:
        if self.options.precompile:
            t = self.target
            self.precompiles = self.measurer.precompile(t.kernel, configs, t.args_fn, t.kinds,
                                                        t.arch, self.options.workers)

    def warm_up(self) -> None:
        self.measurer.warm_up()

    def compile_error(self, config: Config) -> str | None:
        return self.precompiles.error(config) if self.precompiles is not None else None

    def in_compile_order(self, configs: Sequence[Config],
                         first: MeasureRequest) -> Iterator[Config]:
        return in_completion_order(self.precompiles, configs)

    def measure(self, config: Config, request: MeasureRequest) -> Success | Failure:
        t = self.target
        return measure_config(self.measurer, t.kernel, config, t.kinds, t.grid_fn, t.args_fn,
                              request)

    def finish(self, successes: dict[str, Success],
               request: MeasureRequest) -> dict[str, Success]:
        return successes

    def progress_note(self) -> str | None:
        return None

    def compile_seconds(self) -> dict[str, float]:
        return compile_seconds(self.precompiles)

    def close(self) -> None:
        if self.precompiles is not None:
            self.precompiles.close()

    def placement(self) -> dict[str, Any]:
        return {}


class ClusterMeasuring(LocalMeasuring):
    """Compiles on a Ray cluster's CPUs; measures on its GPUs, one actor each (on this machine
    when the cluster has none); see :mod:`tile_lab.tuning.cluster`."""

    def __init__(self, measurer: Measurer, options: TuneOptions, target: TuneTarget) -> None:
        super().__init__(measurer, options, target)
        self._run: ClusterRun | None = None  # started with the run's first configs
        self._placement: dict[str, Any] = {}

    @property
    def run(self) -> ClusterRun:
        assert self._run is not None, "start() first"
        return self._run

    def start(self, configs: Sequence[Config]) -> None:
        from .cluster import ClusterRun
        from .parallel_compile import compiles_on

        self._run = ClusterRun(self.options.cluster, self._actor_factory())
        with compiles_on(self._run.executor):
            super().start(configs)

    def _actor_factory(self) -> Callable[[], Callable[[Config, MeasureRequest],
                                                     Success | Failure]]:
        """What each measuring actor runs: it builds the Measurer's kernel and arguments in
        its own process (nothing on a GPU travels)."""
        from .options import TuneError
        from .parallel_compile import compile_recipe

        if getattr(self.target.kernel, "knob_kinds", None) is not None:
            raise TuneError("cluster tuning takes cuTile Python kernels; a kernel with its own "
                            "knobs (e.g. tune_cpp's) tunes on this machine")
        # the factory travels to the actors: it holds what pickles (the kernel job's recipe,
        # rebuilt in each actor, never the kernel object itself)
        recipe = compile_recipe(self.target.kernel)
        measurer, kinds = self.measurer, self.target.kinds
        grid_fn, args_fn = self.target.grid_fn, self.target.args_fn

        def factory() -> Callable[[Config, MeasureRequest], Success | Failure]:
            own_kernel = recipe.build().kernel
            measurer.warm_up()

            def measure(cfg: Config, request: MeasureRequest) -> Success | Failure:
                return measure_config(measurer, own_kernel, cfg, kinds, grid_fn, args_fn,
                                      request)
            return measure

        return factory

    def warm_up(self) -> None:
        if self.run.pool is None:  # measuring actors warm themselves
            super().warm_up()

    def in_compile_order(self, configs: Sequence[Config],
                         first: MeasureRequest) -> Iterator[Config]:
        ordered = super().in_compile_order(configs, first)
        if self.run.gpu_count >= 2:  # every GPU busy while the strategy waits for one result
            return self.run.prefetching(ordered, first)
        return ordered

    def measure(self, config: Config, request: MeasureRequest) -> Success | Failure:
        if self.run.pool is None:
            return super().measure(config, request)
        return self.run.measure(config, request)

    def finish(self, successes: dict[str, Success],
               request: MeasureRequest) -> dict[str, Success]:
        if self._run is None or self._run.pool is None:  # nothing measured on the cluster
            return successes
        return self._run.cross_check(successes, request)

    def progress_note(self) -> str | None:
        return self.run.progress_note()

    def close(self) -> None:
        super().close()
        if self._run is not None:
            self._placement = self._run.placement()
            self._run.close()

    def placement(self) -> dict[str, Any]:
        return self._placement
