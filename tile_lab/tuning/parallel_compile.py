"""Compile a tuning sweep's configs in worker processes before measuring them.

Compilation (tileiras) dominates tuning time, and cuTile compiles serially inside ``ct.launch``.
Workers compile each config for exactly the signature ``ct.launch`` will use (computed here, in the
parent, from the real arguments) into cuTile's on-disk cubin cache; the measuring launches then
find their cubins there. Compile failures come back as data (config key -> message).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, Protocol

from ..gpu.job import TileKernel, TileRecipe
from ..kernel_source import KernelNotShippable
from .space import Config
from .store import config_key


class CompileExecutor(Protocol):
    """Where compile jobs run: a local process pool (``ProcessPoolExecutor``) or a cluster
    (``tile_lab.tuning.cluster.RayCompileExecutor``). A job's cubins must be in this process's
    cuTile cache when its future completes."""

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]: ...

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None: ...


_CURRENT_EXECUTOR: ContextVar[CompileExecutor | None] = ContextVar("compile_executor",
                                                                 default=None)


@contextmanager
def compiles_on(executor: CompileExecutor) -> Iterator[None]:
    """Within the block, a :class:`Precompiler` made without an executor sends its jobs to
    ``executor`` (``tune(..., options=TuneOptions(cluster=...))`` uses it for a Ray cluster, so
    every measurer's own ``precompile`` compiles there unchanged)."""
    token = _CURRENT_EXECUTOR.set(executor)
    try:
        yield
    finally:
        _CURRENT_EXECUTOR.reset(token)


class Precompiler:
    """Compiles configs in worker processes while the caller measures: ``error(cfg)`` waits for
    that config's compile only (so measuring config 1 overlaps compiling configs 2..n) and returns
    its error message, or None when it compiled (or was never sent to a worker);
    :func:`in_completion_order` over ``futures`` yields configs as their compiles finish.

    Jobs are submitted largest tiles first: tileiras' time grows with the tile footprint, and
    the sweep ends no earlier than its slowest compile, so that one should start first."""

    def __init__(self, kernel: Any, configs: Sequence[Config],
                 args_fn: Callable[[Config], Sequence[Any]], kinds: dict[str, str],
                 arch: str | None, workers: int | None,
                 executor: CompileExecutor | None = None,
                 signature_fn: Callable[[Any, tuple[Any, ...]], Any] | None = None) -> None:
        self.futures: dict[str, Future[tuple[str, str | None, float]]] = {}
        self._pool: CompileExecutor | None = None
        pick = getattr(kernel, "for_config", None)  # a Schedules: each config's own kernel
        recipes: dict[int, TileRecipe] = {}
        try:
            for k in (getattr(kernel, "kernels", {}).values() if pick else (kernel,)):
                recipes[id(k)] = compile_recipe(k)
        except KernelNotShippable:
            # Precompiling is an optimisation: each launch compiles its own config instead.
            if executor is not None:
                executor.shutdown(wait=False)
            return
        if not configs:
            return
        # Leave one core to the measuring process; never fork a process with a CUDA context.
        n = workers or max(1, min(len(configs), (os.cpu_count() or 2) - 1))
        self._pool = executor or _CURRENT_EXECUTOR.get() or ProcessPoolExecutor(
            max_workers=n, mp_context=multiprocessing.get_context("spawn"))
        # Start the workers now (one warm-up job each spawns all n): they import cuTile's
        # compiler and run its tileiras queries while this process computes the signatures,
        # the first of which can take seconds (cuTile inspects the array arguments and, when
        # torch is installed, imports it).
        for _ in range(n):
            self._pool.submit(_warm_worker)
        jobs = []
        for cfg in configs:
            hints = {k: v for k, v in cfg.items if kinds.get(k) == "hint"}
            try:
                base = pick(cfg) if pick else kernel
                recipe = recipes[id(base)]
                k = base.replace_hints(**hints) if hints else base
                sig = portable_signature((signature_fn or launch_signature)(
                    k, tuple(args_fn(cfg))))
            except Exception:
                # Precompiling is an optimisation: a config whose signature cannot be prepared
                # here is compiled by its own launch (and fails there, as data, if broken).
                continue
            jobs.append((config_key(cfg), replace(recipe, hints=tuple(sorted(hints.items()))),
                         sig, arch))
        size = {config_key(c): compile_size(c, kinds) for c in configs}
        jobs.sort(key=lambda job: -size[job[0]])  # stable: equal sizes keep the space's order
        self.futures = {job[0]: self._pool.submit(_compile_job, job) for job in jobs}

    def error(self, cfg: Config) -> str | None:
        fut = self.futures.get(config_key(cfg))
        return None if fut is None else fut.result()[1]

    def compile_seconds(self) -> dict[str, float]:
        """Config key -> seconds its compile took in a worker, for the compiles finished."""
        return {key: fut.result()[2] for key, fut in self.futures.items()
                if fut.done() and not fut.cancelled() and fut.exception() is None}

    def close(self) -> None:
        if self._pool is not None:
            # Every job the caller waited for is done; letting a dozen interpreters exit in
            # the background (rather than joining them) returns the tuning result sooner.
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def in_completion_order(futures: dict[str, Future[Any]],
                        configs: Sequence[Config]) -> Iterator[Config]:
    """``configs`` in the order their compile futures (config key -> Future) finish; configs
    without a future first. Configs that finish together keep the caller's order."""
    pending: set[Future[Any]] = set()
    for cfg in configs:
        fut = futures.get(config_key(cfg))
        if fut is None:
            yield cfg
        else:
            pending.add(fut)
    while pending:
        finished, pending = wait(pending, return_when=FIRST_COMPLETED)
        for cfg in configs:
            if futures.get(config_key(cfg)) in finished:
                yield cfg


def compile_size(cfg: Config, kinds: dict[str, str]) -> float:
    """A proxy for a config's compile time: the product of its integer constants (tile
    extents), divided by its CTA count (``num_ctas`` splits a tile across CTAs)."""
    size = math.prod(v for k, v in cfg.items
                     if kinds.get(k) == "constant" and isinstance(v, int)
                     and not isinstance(v, bool) and v > 0)
    ctas = dict(cfg.items).get("num_ctas", 1)
    return size / ctas if isinstance(ctas, int) and ctas > 0 else size


def precompile_configs(kernel: Any, configs: Sequence[Config],
                       args_fn: Callable[[Config], Sequence[Any]], kinds: dict[str, str],
                       arch: str | None, workers: int | None) -> dict[str, str]:
    """Compile every config in parallel and wait; returns {config key: error} for failures."""
    pre = Precompiler(kernel, configs, args_fn, kinds, arch, workers)
    try:
        return {key: err for key, err, _ in (f.result() for f in pre.futures.values())
                if err is not None}
    finally:
        pre.close()


def launch_signature(kernel: Any, args: tuple[Any, ...]) -> Any:
    """The signature ``ct.launch`` derives from these arguments (public cuTile API)."""
    from cuda.tile.compilation import CallingConvention, KernelSignature

    return KernelSignature.from_kernel_args(kernel, args, CallingConvention.cutile_python_v1())


def portable_signature(sig: Any) -> tuple[Any, ...]:
    """A picklable form of a KernelSignature (its CallingConvention object does not pickle)."""
    from cuda.tile.compilation import CallingConvention

    for name in ("cutile_python_v1", "cutile_python_v2"):
        if sig.calling_convention == getattr(CallingConvention, name)():
            portable = (tuple(sig.parameters), name, sig.symbol)
            pickle.dumps(portable)
            return portable
    raise ValueError(f"unknown calling convention {sig.calling_convention!r}")


def signature_from_portable(portable: tuple[Any, ...]) -> Any:
    from cuda.tile.compilation import CallingConvention, KernelSignature

    params, convention, symbol = portable
    return KernelSignature(params, getattr(CallingConvention, convention)(), symbol)


def compile_recipe(kernel: Any) -> TileRecipe:
    """How a compile worker rebuilds ``kernel``: its module and name when its module can be
    imported there, else the source of its ``def`` (a kernel defined in a notebook cell or a
    string: only the kernel's ``def`` runs in the worker, never the rest of its cell). Raises
    KernelNotShippable when a global it names cannot travel."""
    recipe = TileKernel(kernel).recipe()
    recipe.check_shippable()
    return recipe


def _warm_worker() -> None:
    from .._cutile_compat import warm_compiler_queries

    warm_compiler_queries()


CompileJob = tuple[str, TileRecipe, tuple[Any, ...], "str | None"]  # key, recipe, sig, arch


def _compile_job(job: CompileJob) -> tuple[str, str | None, float]:
    key, recipe, sig, arch = job
    started = time.perf_counter()
    try:
        from .._cutile_compat import compile_cubin_like_cutile, compiler_options

        if arch is None:
            raise ValueError("no target architecture to compile for (pass arch=)")
        kernel = recipe.build().hinted()
        # cuTile's own compile path, so the cubin lands in its disk cache under the same key
        # that ct.launch will look up.
        compile_cubin_like_cutile(kernel, signature_from_portable(sig), arch,
                                  compiler_options(kernel))
        return key, None, time.perf_counter() - started
    except Exception as e:
        return key, f"{type(e).__name__}: {e}", time.perf_counter() - started
