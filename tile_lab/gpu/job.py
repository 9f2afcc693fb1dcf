"""One kernel job: a launch that can run here or be shipped to another process.

A :class:`KernelJob` is a kernel (a cuTile kernel, :class:`TileKernel`, or a CUDA Tile C++
kernel, ``tile_lab.cpp.bench.CppJobKernel``: any :class:`JobKernel`), its grid, its arguments
and, when known, which arguments it writes. Every consumer takes one:

* ``launch`` and ``bench`` run it in this process (:meth:`KernelJob.on_device`, then
  :func:`measure_job`), ``bench_cpp`` the same with a C++ kernel;
* the isolation worker, the Nsight Compute child (``tile_lab.profile``), the compile workers
  (``precompile``) and the Ray actors get :meth:`KernelJob.shipped` / :meth:`JobKernel.recipe`:
  a picklable :class:`KernelRecipe` (a cuTile kernel by module or by the source of its ``def``,
  :mod:`tile_lab.kernel_source`; a C++ kernel by its compiled Inspection) plus host copies of
  the arguments, rebuilt there with :meth:`ShippedJob.rebuild`.

The steps around the timed samples are here once, for both kinds of kernel: launch once from
the original arguments (compiles, surfaces faults), note which arrays the launch wrote and
whether it is in place (a second launch changes them again), restore the written arrays
before each sample when the kind asks for fresh outputs, and leave the arguments holding one
launch's result from their original values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..kernel_source import KernelSpec, kernel_spec
from . import metrics
from .arrays import copy_back, copy_into, device_args, device_copy, host_copy, same_bytes
from .inprocess import (
    Amounts,
    Sampled,
    as_stream,
    build_measurement,
    kernel_name,
    launch_error,
    time_work,
    with_hints,
)
from .measurement import Measurement
from .sampling import TimedWork

__all__ = ["DeviceJob", "JobKernel", "KernelJob", "KernelRecipe", "ShippedJob", "TileKernel",
           "TileRecipe", "Writes", "measure_job"]

Launch = Callable[[Any], None]  # one launch on the given stream


@dataclass(frozen=True)
class Writes:
    """Which array arguments (by position) a launch writes, and whether it is in place (its
    result depends on what those arrays held: every sample must start from fresh copies)."""

    indices: tuple[int, ...]
    in_place: bool


@runtime_checkable
class KernelRecipe(Protocol):
    """How another process rebuilds a :class:`JobKernel` (picklable)."""

    @property
    def key(self) -> str:
        """Equal for recipes of the same kernel (a worker keeps built kernels by it)."""

    def build(self) -> JobKernel: ...


@runtime_checkable
class JobKernel(Protocol):
    """One kind of kernel, as a job launches it."""

    @property
    def name(self) -> str: ...

    @property
    def fresh_outputs(self) -> bool:
        """Whether the written arrays of an in-place kernel are restored before each sample."""

    def bind(self, cupy: Any, grid: tuple[int, ...], dev_args: Sequence[Any]) -> Launch:
        """Resolve everything a launch needs once (device arguments only)."""

    def recipe(self) -> KernelRecipe: ...

    def notes(self, writes: Writes) -> tuple[str, ...]:
        """What a measurement of this kernel says first."""


# ---- a cuTile kernel ----------------------------------------------------------------------------
@dataclass(frozen=True)
class TileKernel:
    """A ``@ct.kernel`` with the hints it is launched with (``replace_hints``)."""

    kernel: Any
    hints: dict[str, Any] | None = None
    fresh_outputs: bool = True

    @property
    def name(self) -> str:
        return kernel_name(self.kernel)

    def hinted(self) -> Any:
        return with_hints(self.kernel, self.hints)

    def bind(self, cupy: Any, grid: tuple[int, ...], dev_args: Sequence[Any]) -> Launch:
        import cuda.tile as ct

        k, launch, args = self.hinted(), ct.launch, tuple(dev_args)
        return lambda stream: launch(stream, grid, k, args)

    def recipe(self) -> TileRecipe:
        return TileRecipe(kernel_spec(self.kernel), tuple(sorted((self.hints or {}).items())))

    def notes(self, writes: Writes) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class TileRecipe:
    """A cuTile kernel's :class:`~tile_lab.kernel_source.KernelSpec` and launch hints."""

    spec: KernelSpec
    hints: tuple[tuple[str, Any], ...] = ()

    @property
    def key(self) -> str:
        return self.spec.key + repr(self.hints)

    def check_shippable(self) -> None:
        """Raise KernelNotShippable when a global the kernel names stays behind (a compile
        worker must see the whole kernel; the isolation worker reports the missing name)."""
        self.spec.check_shippable()

    def build(self) -> TileKernel:
        return TileKernel(self.spec.build(), dict(self.hints) or None)


# ---- the job ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelJob:
    """A kernel, its grid, its arguments (as the caller gave them) and, when known, what it
    writes."""

    kernel: JobKernel
    grid: tuple[int, ...]
    args: tuple[Any, ...]
    writes: Writes | None = None

    @property
    def name(self) -> str:
        return self.kernel.name

    def arrays(self) -> dict[int, Any]:
        """The array arguments by position."""
        return {i: a for i, a in enumerate(self.args) if metrics.is_array(a)}

    def shipped(self) -> ShippedJob:
        """The job as another process needs it: the kernel's recipe, host copies of the
        arguments."""
        return ShippedJob(self.kernel.recipe(), self.grid,
                          tuple(host_copy(a) for a in self.args), self.writes)

    def on_device(self, cupy: Any) -> DeviceJob:
        """The job with NumPy arguments copied to the device (see :meth:`DeviceJob.finish`)."""
        dev, back = device_args(cupy, self.args)
        return DeviceJob(cupy, self, tuple(dev), back)


@dataclass(frozen=True)
class ShippedJob:
    """A :class:`KernelJob` in picklable form."""

    recipe: KernelRecipe
    grid: tuple[int, ...]
    args: tuple[Any, ...]  # host copies (NumPy) and scalars
    writes: Writes | None = None

    def rebuild(self, kernels: dict[str, JobKernel] | None = None,
                args: Sequence[Any] | None = None) -> KernelJob:
        """The job in this process; ``kernels`` keeps built kernels by recipe key (a worker
        that runs many jobs compiles each kernel once); ``args`` replaces the host copies
        (e.g. by device copies made here)."""
        cache = {} if kernels is None else kernels
        kernel = cache.get(self.recipe.key)
        if kernel is None:
            kernel = cache[self.recipe.key] = self.recipe.build()
        return KernelJob(kernel, self.grid, tuple(self.args if args is None else args),
                         self.writes)


@dataclass(frozen=True)
class DeviceJob:
    """A job whose arguments are on the device: launch it, learn and restore what it writes,
    copy results back into the caller's NumPy arrays."""

    cupy: Any
    job: KernelJob
    args: tuple[Any, ...]
    back: list[tuple[int, Any]]
    _bound: list[Launch] = field(default_factory=list, compare=False, repr=False)

    def launch(self, stream: Any) -> None:
        """One launch on ``stream`` (asynchronous)."""
        if not self._bound:
            self._bound.append(self.job.kernel.bind(self.cupy, self.job.grid, self.args))
        self._bound[0](stream)

    def launch_and_wait(self, stream: Any, sync: Any = None) -> None:
        """One launch, synchronized (on ``sync``, default ``stream``); a CUDA error becomes a
        LaunchError naming the kernel, a compile error passes through."""
        try:
            self.launch(stream)
            (stream if sync is None else sync).synchronize()
        except Exception as exc:
            err = launch_error(exc, self.job.name)
            if err is exc:
                raise
            raise err from exc

    def views(self, indices: Sequence[int] | None = None) -> dict[int, Any]:
        """Device views of the array arguments (of ``indices``, by default all)."""
        picked = (i for i, a in enumerate(self.args) if metrics.is_array(a)) \
            if indices is None else indices
        return {i: self.cupy.asarray(self.args[i]) for i in picked}

    def snapshot(self, indices: Sequence[int] | None = None) -> dict[int, Any]:
        """Device copies of the array arguments (of ``indices``) as they are now."""
        return {i: device_copy(self.cupy, v) for i, v in self.views(indices).items()}

    def restore(self, copies: dict[int, Any]) -> None:
        """Copy ``copies`` back into their arguments (on the current stream)."""
        views = self.views(list(copies))
        for i, c in copies.items():
            copy_into(self.cupy, views[i], c)

    def detect_writes(self, run_once: Callable[[], None]) -> tuple[Writes, dict[int, Any]]:
        """Run ``run_once`` (one launch, synchronized) twice: what it writes, and copies of
        every array from before the first launch."""
        views = self.views()
        before = {i: device_copy(self.cupy, v) for i, v in views.items()}
        run_once()
        written = [i for i, v in views.items() if not same_bytes(self.cupy, v, before[i])]
        first = {i: device_copy(self.cupy, views[i]) for i in written}
        run_once()
        in_place = any(not same_bytes(self.cupy, views[i], first[i]) for i in written)
        return Writes(tuple(written), in_place), before

    def finish(self) -> None:
        """Copy device results into the caller's NumPy arguments."""
        copy_back(self.cupy, self.job.args, self.back)


def measure_job(cupy: Any, job: KernelJob, timing: Any, options: Any, amounts: Amounts, *,
                isolated: bool = False) -> Measurement:
    """Time ``job`` in this process (or in the isolation worker): launch, learn what it
    writes (unless ``job.writes`` says), time with GPU state, leave one launch's result, build
    the Measurement. ``timing`` is a :class:`~tile_lab.gpu.options.TimingOptions`,
    ``options`` a :class:`~tile_lab.gpu.options.BenchOptions` (stream, label, params)."""
    from .device import provenance
    from .peaks import device_peaks

    launch_stream, s = as_stream(cupy, options.stream)
    if s.ptr == 0:  # the legacy default stream cannot be captured, nor torch-wrapped cheaply
        cupy.cuda.Device().synchronize()  # work queued there (the inputs) is done first
        launch_stream = s = cupy.cuda.Stream(non_blocking=True)
    dev = job.on_device(cupy)

    def run_once() -> None:
        dev.launch_and_wait(launch_stream, s)

    pristine: dict[int, Any] = {}
    writes = job.writes
    if writes is None:  # two launches: compile, surface faults, learn what the kernel writes
        writes, before = dev.detect_writes(run_once)
        launched = 2
        if writes.in_place:
            pristine = {i: before[i] for i in writes.indices}
        del before
    else:
        if writes.in_place:  # the samples restart from what the arguments hold now
            pristine = dev.snapshot(writes.indices)
        run_once()  # compile (or load the cubin) and surface faults before timing
        launched = 1
    fresh = writes.in_place and job.kernel.fresh_outputs

    def restore() -> None:
        dev.restore(pristine)

    work = TimedWork(job.name, lambda: dev.launch(cupy.cuda.get_current_stream()),
                     restore if fresh else None)
    sampled = time_work(cupy, s, work, timing, warmup_done=launched)
    notes = list(job.kernel.notes(writes)) + list(sampled.notes)
    if fresh and timing.mode == "graph":
        notes.append("in-place kernel: graph replays apply it repeatedly (outputs restored "
                     "only before each replay)")
    prov = provenance(isolated=isolated)  # clocks right after the timed work

    # leave the arguments holding one launch's result from their original values
    if writes.in_place:
        with s:
            restore()
            dev.launch(s)
    s.synchronize()
    dev.finish()
    return build_measurement(
        job.name, timing, job.grid, Sampled(sampled.times, sampled.per_sample, fresh,
                                            tuple(notes), sampled.samples),
        job.args, amounts=amounts, options=options, peaks=device_peaks(), provenance=prov)
