"""Tuning past one machine: compile on a Ray cluster's CPUs, measure on its GPUs.

Ray is optional (``pip install "tile_lab[cluster]"``); without it nothing here is imported and
tuning compiles in a local process pool, as before.

Compiling: each job runs in a Ray task on whichever node has a free CPU. The task points
cuTile's disk cache at a private directory, compiles with cuTile's own path (so cache keys are
cuTile's), and sends the new cache rows (key, cubin, metadata) back through Ray's object store;
the tuning process writes them into *its* cuTile cache, where ``ct.launch`` finds them. A task
whose worker process or node dies is retried by Ray (``ClusterOptions.task_retries``): only the
configs in flight on it are compiled again. Compile errors are results, not task failures.

Measuring: one actor per GPU (:class:`GpuMeasurer`); each pulls the next config when it is done,
so the GPUs measure disjoint shares. A config that kills its actor (a fault, a hang) becomes a
failure of that config; Ray restarts the actor for the next one. Because GPUs of one model
differ by a few percent, :func:`cross_check` re-times the top configs on one GPU.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

from .cluster_compile import Clock, RayCompileExecutor, node_label
from .cluster_options import ClusterOptions, connect
from .ray_start import ClusterError, ray_module
from .space import Config

__all__ = ["ClusterError", "ClusterOptions", "ClusterRun", "RayCompileExecutor",
           "RayMeasurePool", "connect", "cross_check", "ray_module"]


# ---- measuring ---------------------------------------------------------------------------------
MeasureFactory = Callable[[], Callable[..., Any]]


class ConfigMeasurer:
    """A measuring process holding one GPU (Ray sets CUDA_VISIBLE_DEVICES for it).

    ``factory()`` runs once in the actor and returns ``measure(config, *extra) -> outcome``; the
    factory is shipped with cloudpickle, so it may close over the kernel, grid and argument
    functions (the arguments are made in the actor, on its GPU, never shipped)."""

    def __init__(self, factory: MeasureFactory, index: int) -> None:
        self._measure = factory()
        gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        self._label = f"{node_label()}/" + (f"gpu{gpu}" if gpu else f"actor{index}")

    def label(self) -> str:
        return self._label

    def measure(self, config: Config, *extra: Any) -> tuple[Any, str]:
        return self._measure(config, *extra), self._label

    def where(self) -> str:
        """Every thread's stack in this process (what a hung measurement was doing)."""
        import sys
        import traceback

        names = {t.ident: t.name for t in threading.enumerate()}
        parts = []
        for ident, frame in sys._current_frames().items():
            if names.get(ident) == threading.current_thread().name:
                continue
            stack = "".join(traceback.format_stack(frame)[-6:])
            parts.append(f"thread {names.get(ident, ident)}:\n{stack}")
        return "\n".join(parts)


@dataclass(frozen=True)
class Measured:
    """One config's outcome from the pool, and which GPU (node/gpu index) measured it."""

    config: Config
    outcome: Any
    gpu: str
    error: str | None = None  # set when the config killed its measuring process (twice)


@dataclass
class _Job:
    config: Config
    extra: tuple[Any, ...]
    actor: int | None  # None: any free actor
    future: Future[Measured]
    attempts: int = 0
    started: float = 0.0


class RayMeasurePool:
    """One :class:`ConfigMeasurer` actor per GPU, each given one config at a time: whichever
    actor is free takes the next config, so the GPUs measure disjoint shares and a fault can
    only touch the config in flight.

    A measuring process that dies (a config that faults the GPU, a lost node) is restarted by
    Ray (``actor_restarts``) and the config it was measuring is tried once more: one that
    kills its process twice is that config's failure, and no other config is lost. A config
    with no result after ``measure_timeout_s`` (a hang) fails with the stack its process was
    in, and that process is killed and restarted. Both timeouts are read from ``clock``."""

    def __init__(self, factory: MeasureFactory, options: ClusterOptions,
                 clock: Clock = time.monotonic) -> None:
        ray, self._clock, count = connect(options), clock, options.gpus
        if count is None:
            count = int(ray.cluster_resources().get("GPU", 0))
        if count < 1:
            raise ClusterError("the Ray cluster has no GPU to measure on (set ClusterOptions("
                               "gpus=0) to measure in this process)")
        # max_concurrency=2: while a config runs, ``where`` can still answer (for a hang);
        # the dispatcher never gives an actor a second config before the first is done
        actor = ray.remote(num_gpus=options.gpus_per_actor, max_restarts=options.actor_restarts,
                           max_task_retries=0, max_concurrency=2)(ConfigMeasurer)
        self._ray = ray
        self._timeout_s = options.measure_timeout_s
        self._start_timeout_s = options.start_timeout_s
        self.actors = [actor.remote(factory, i) for i in range(count)]
        # an actor takes configs once it answers: its start-up (imports, arrays, warm-up) and
        # any restart never count against a config's measure_timeout_s, but against
        # start_timeout_s (an actor Ray cannot place or start must not be waited for ever)
        now = self._clock()
        self._starting: dict[Any, tuple[int, float]] = {
            a.label.remote(): (i, now) for i, a in enumerate(self.actors)}
        self._lost: set[int] = set()  # actors that never (re)started: their configs fail
        # wait for all of them at first, so every GPU starts on its share together
        ready, _ = ray.wait(list(self._starting), num_returns=len(self._starting),
                            timeout=options.start_timeout_s)
        self._free_at_start = {self._starting.pop(ref)[0] for ref in ready}
        self._waiting: list[_Job] = []
        self._running: dict[Any, tuple[int, _Job]] = {}
        self._lock = threading.Condition()
        self._closed = False
        self._dispatcher = threading.Thread(target=self._dispatch, name="tile_lab-measure",
                                            daemon=True)
        self._dispatcher.start()

    def submit(self, config: Config, *extra: Any, actor: int | None = None) -> Future[Measured]:
        """Queue ``config`` for the next free actor (or for actor number ``actor``)."""
        fut: Future[Measured] = Future()
        with self._lock:
            self._waiting.append(_Job(config, extra, actor, fut))
            self._lock.notify()
        return fut

    def result(self, config: Config, fut: Future[Measured]) -> Measured:
        return fut.result()

    def map(self, configs: Sequence[Config], *extra: Any) -> Iterator[Measured]:
        """Measure ``configs`` over all actors; outcomes in ``configs`` order."""
        futures = [self.submit(cfg, *extra) for cfg in configs]
        for fut in futures:
            yield fut.result()

    def _dispatch(self) -> None:
        try:
            self._dispatch_until_closed()
        except BaseException as e:  # never leave a caller waiting on a future nobody will set
            with self._lock:
                self._closed = True
                jobs = self._waiting + [job for _, job in self._running.values()]
                self._waiting = []
            for job in jobs:
                if not job.future.done():
                    job.future.set_exception(
                        ClusterError(f"the measuring dispatcher stopped: {e!r}"))
            raise

    def _dispatch_until_closed(self) -> None:
        free = set(self._free_at_start)
        while True:
            with self._lock:
                self._fail_unplaceable()
                for job in list(self._waiting):
                    slot = job.actor if job.actor is not None else min(free, default=None)
                    if slot is None or slot not in free:
                        continue
                    self._waiting.remove(job)
                    free.discard(slot)
                    job.attempts += 1
                    job.started = self._clock()
                    ref = self.actors[slot].measure.remote(job.config, *job.extra)
                    self._running[ref] = (slot, job)
                if not self._running and not self._starting:
                    if self._closed:
                        return
                    self._lock.wait(timeout=0.5)
                    continue
            done, _ = self._ray.wait([*self._running, *self._starting], num_returns=1,
                                     timeout=0.2)
            for ref in done:
                if ref in self._starting:  # answered (or gone for good: its configs fail)
                    free.add(self._starting.pop(ref)[0])
                    continue
                slot, job = self._running.pop(ref)
                if self._finish(ref, job):
                    free.add(slot)
                else:
                    self._restarting(slot)
            now = self._clock()
            for ref, (slot, job) in list(self._running.items()):
                if now - job.started > self._timeout_s:
                    self._running.pop(ref)
                    self._hung(slot, job)
                    self._restarting(slot)
            for ref, (slot, since) in list(self._starting.items()):
                if now - since > self._start_timeout_s:
                    self._starting.pop(ref)
                    self._lost.add(slot)

    def _restarting(self, slot: int) -> None:
        self._starting[self.actors[slot].label.remote()] = (slot, self._clock())

    def _fail_unplaceable(self) -> None:
        """Fail the waiting jobs no actor can take: pinned to a lost actor, or any job once
        every actor is lost (called with the lock held)."""
        if not self._lost:
            return
        all_lost = len(self._lost) == len(self.actors)
        for job in list(self._waiting):
            if all_lost or job.actor in self._lost:
                self._waiting.remove(job)
                job.future.set_result(Measured(
                    job.config, None, "lost", "its measuring process did not start within "
                    f"{self._start_timeout_s:.0f} s (ClusterOptions.start_timeout_s): Ray "
                    "could not place or start it"))

    def _finish(self, ref: Any, job: _Job) -> bool:
        """Settle ``job`` from its result; False when its measuring process died."""
        from ray.exceptions import RayActorError

        try:
            # ready (ray.wait said so): the bound is for fetching it, never for a config
            outcome, gpu = self._ray.get(ref, timeout=120)
            job.future.set_result(Measured(job.config, outcome, gpu))
        except RayActorError as e:
            if job.attempts < 2:  # the process died under it: once more, on its restart
                with self._lock:
                    self._waiting.insert(0, job)
            else:
                job.future.set_result(Measured(
                    job.config, None, "lost", "its measuring process died twice (a GPU fault, "
                    f"or a lost node): {str(e).splitlines()[0]}"))
            return False
        except Exception as e:  # the measure function itself raised
            job.future.set_exception(e)
        return True

    def _hung(self, slot: int, job: _Job) -> None:
        actor = self.actors[slot]
        try:
            where = self._ray.get(actor.where.remote(), timeout=15)
        except Exception as e:  # a process too stuck to answer
            where = f"(its stack could not be read: {type(e).__name__})"
        self._ray.kill(actor, no_restart=False)  # Ray restarts it for the next config
        job.future.set_result(Measured(
            job.config, None, "hung", f"no result after {self._timeout_s:.0f} s, so its "
            f"measuring process was restarted; it was at:\n{where}"))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify()
        self._dispatcher.join(timeout=10)
        for a in self.actors:
            self._ray.kill(a)
        self.actors = []


def cross_check(measure: Callable[[Config], float], ranked: Sequence[Config],
                top: int, rounds: int = 3) -> list[tuple[Config, float]]:
    """Re-time the ``top`` best configs on one GPU, in ``rounds`` alternating passes (ABBA-style,
    so drift in the GPU's clocks falls on all configs alike); returns (config, median seconds),
    fastest first. GPUs of one model differ by a few percent, so the winner is decided here."""
    picks = list(ranked[:top])
    times: dict[int, list[float]] = {i: [] for i in range(len(picks))}
    for r in range(rounds):
        order = range(len(picks)) if r % 2 == 0 else reversed(range(len(picks)))
        for i in order:
            times[i].append(measure(picks[i]))
    medians = [(picks[i], sorted(t)[len(t) // 2]) for i, t in times.items()]
    return sorted(medians, key=lambda pair: pair[1])


class ClusterRun:
    """One tuning run's use of a cluster: its compile executor, its measuring actors (when the
    cluster has GPUs to measure on), and where each config was compiled and measured."""

    def __init__(self, options: ClusterOptions, factory: MeasureFactory | None) -> None:
        self.options = options
        self.executor = RayCompileExecutor(options)
        self.pool: RayMeasurePool | None = None
        gpus = options.gpus
        if gpus is None:
            gpus = int(connect(options).cluster_resources().get("GPU", 0))
        if factory is not None and gpus >= 1:
            self.pool = RayMeasurePool(factory, replace(options, gpus=gpus))
        self.measured_on: dict[str, str] = {}
        self.cross_checked: list[dict[str, Any]] = []
        self._prefetched: dict[str, tuple[int, Any]] = {}

    @property
    def gpu_count(self) -> int:
        return len(self.pool.actors) if self.pool is not None else 0

    def progress_note(self) -> str:
        """Per-node counts for the progress bar: compiles finished, configs measured."""
        parts = [f"{node.split(':')[0]} ran {n} compile jobs" for node, n in
                 sorted(self.executor.nodes.items())]
        per_gpu: dict[str, int] = {}
        for gpu in self.measured_on.values():
            per_gpu[gpu] = per_gpu.get(gpu, 0) + 1
        parts += [f"{gpu} measured {n}" for gpu, n in sorted(per_gpu.items())]
        return ", ".join(parts)

    def placement(self) -> dict[str, Any]:
        """What the tuning result records: how many jobs each node ran (the compiles, and each
        compile worker's one warm-up job), which GPU measured each config (by config key), and
        the cross-check's re-timings."""
        return {"jobs_on": dict(sorted(self.executor.nodes.items())),
                "measured_on": dict(self.measured_on),
                "gpus": self.gpu_count,
                "cross_check": list(self.cross_checked)}

    def measure(self, cfg: Config, request: Any) -> Any:
        """One config's Success or Failure, measured by an actor (a prefetched measurement of
        the same sample count is used when there is one)."""
        from .result import Failure
        from .store import config_key

        assert self.pool is not None
        key = config_key(cfg)
        pre = self._prefetched.pop(key, None)
        ref = pre[1] if pre is not None and pre[0] == request.samples else \
            self.pool.submit(cfg, request)
        measured = self.pool.result(cfg, ref)
        self.measured_on[key] = measured.gpu
        if measured.error is not None:
            return Failure(cfg, "launch", measured.error)
        return measured.outcome

    def prefetching(self, configs: Iterator[Config], request: Any) -> Iterator[Config]:
        """Yield ``configs`` as they come (in compile-completion order) while a thread hands
        each to the measuring actors the moment it arrives, so every GPU is busy while the
        strategy waits for one result."""
        from .store import config_key

        pool = self.pool
        assert pool is not None
        arrived: queue.Queue[Config | None] = queue.Queue()

        def feed() -> None:
            try:
                for cfg in configs:
                    self._prefetched[config_key(cfg)] = (request.samples,
                                                         pool.submit(cfg, request))
                    arrived.put(cfg)
            finally:
                arrived.put(None)

        threading.Thread(target=feed, name="tile_lab-prefetch", daemon=True).start()
        while (cfg := arrived.get()) is not None:
            yield cfg

    def cross_check(self, successes: dict[str, Any], request: Any) -> dict[str, Any]:
        """Re-time the ``cross_check_top`` fastest configs on the first GPU, in alternating
        order over three rounds; each keeps its median-time measurement from that GPU. Only
        when more than one GPU measured: GPUs of one model differ by a few percent."""
        from .store import config_key

        pool = self.pool
        assert pool is not None
        ranked = sorted(successes.values(), key=lambda s: s.time_s)
        top = [s.config for s in ranked[:self.options.cross_check_top]]
        if self.gpu_count < 2 or len(top) < 2:
            return successes
        runs: dict[str, list[Any]] = {config_key(c): [] for c in top}

        def time_on_first_gpu(cfg: Config) -> float:
            measured = pool.result(cfg, pool.submit(cfg, request, actor=0))
            outcome = measured.outcome
            if measured.error is not None or not hasattr(outcome, "time_s"):
                return float("nan")
            runs[config_key(cfg)].append((outcome, measured.gpu))
            return float(outcome.time_s)

        cross_check(time_on_first_gpu, top, top=len(top))
        updated = dict(successes)
        for cfg in top:
            key = config_key(cfg)
            done = sorted(runs[key], key=lambda pair: pair[0].time_s)
            if not done:
                continue
            outcome, gpu = done[len(done) // 2]
            updated[key] = outcome
            self.cross_checked.append({"config": cfg.label(), "gpu": gpu,
                                       "times_s": [o.time_s for o, _ in runs[key]],
                                       "first_gpu": self.measured_on.get(key)})
            self.measured_on[key] = gpu
        return updated

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self.pool is not None:
            self.pool.close()
