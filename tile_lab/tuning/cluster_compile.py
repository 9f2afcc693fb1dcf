"""Compiling on a Ray cluster: each job in a Ray task on whichever node has a free CPU, its cuTile
cache rows sent back into this process's cache (the module docstring of ``cluster.py`` tells the
whole story); a job with no result after ``ClusterOptions.compile_timeout_s`` is cancelled."""

from __future__ import annotations

import contextlib
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from .cluster_options import ClusterOptions, connect
from .ray_start import ClusterError

Clock = Callable[[], float]  # time.monotonic, or a test's own clock
__all__ = ["CompiledOnNode", "RayCompileExecutor", "compile_in_private_cache", "node_label"]


# ---- compiling --------------------------------------------------------------------------------
@dataclass(frozen=True)
class CompiledOnNode:
    """What a compile task sends back: the job's own result, cuTile cache rows, where it ran."""

    result: Any
    cache_rows: tuple[tuple[str, bytes, dict[str, Any] | None], ...]
    node: str


def compile_in_private_cache(fn: Callable[..., Any], args: tuple[Any, ...]) -> CompiledOnNode:
    """Run ``fn(*args)`` with cuTile's disk cache pointed at a fresh directory, and return the
    cache rows it wrote (runs inside a Ray task, on any node)."""
    from .._cutile_compat import cache_rows, use_cache_dir

    with tempfile.TemporaryDirectory(prefix="tile_lab_compile_") as private, \
            use_cache_dir(private):
        result = fn(*args)
        rows = tuple(cache_rows(private))
    return CompiledOnNode(result, rows, node_label())


def node_label() -> str:
    """This process's node, as the progress bar and results name it."""
    try:
        import ray

        node_id = ray.get_runtime_context().get_node_id()
        return f"{socket.gethostname()}:{node_id[:6]}"
    except Exception:
        return socket.gethostname()


class RayCompileExecutor:
    """A ``concurrent.futures.Executor``-shaped front for compile tasks on a Ray cluster.

    ``submit(fn, *args)`` returns a Future of ``fn``'s result; the cubins the task compiled are
    already in this process's cuTile cache when the future completes. ``nodes`` counts the
    finished jobs per node (for progress and for the result's provenance). A job with no
    result after ``compile_timeout_s`` is cancelled and its Future fails (a watchdog thread),
    so no caller waits for ever on a task Ray lost or could not place. Deadlines are read from
    ``clock`` (a test's own clock passes them when the test says, not a busy machine)."""

    def __init__(self, options: ClusterOptions, clock: Clock = time.monotonic) -> None:
        self._ray = connect(options)
        self._task = self._ray.remote(num_cpus=1, max_retries=options.task_retries,
                                      retry_exceptions=False)(compile_in_private_cache)
        self._limit, self._clock = options.compile_workers, clock
        self._timeout_s = options.compile_timeout_s
        self._in_flight: dict[Any, tuple[Future[Any], float]] = {}  # ref -> (future, deadline)
        self._lock = threading.Lock()
        self.nodes: dict[str, int] = {}
        self._closed = False
        self._watchdog: threading.Thread | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        if self._closed:
            raise RuntimeError("submit after shutdown")
        if self._limit is not None:
            while len(self._pending()) >= self._limit:
                # bounded: a job past its deadline is failed by the watchdog and leaves
                self._ray.wait(self._pending(), num_returns=1, timeout=1.0)
        ref = self._task.remote(fn, args)
        out: Future[Any] = Future()
        out.set_running_or_notify_cancel()
        with self._lock:
            self._in_flight[ref] = (out, self._clock() + self._timeout_s)
        ref.future().add_done_callback(lambda done: self._finish(ref, done, out))
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, name="tile_lab-compile-watch",
                                              daemon=True)
            self._watchdog.start()
        return out

    def _pending(self) -> list[Any]:
        with self._lock:
            return [ref for ref, (out, _) in self._in_flight.items() if not out.done()]

    def _finish(self, ref: Any, done: Future[Any], out: Future[Any]) -> None:
        with self._lock:
            self._in_flight.pop(ref, None)
        if out.done():  # the watchdog failed it already
            return
        try:
            compiled: CompiledOnNode = done.result()
        except BaseException as e:  # the task failed even after its retries
            out.set_exception(e)
            return
        from .._cutile_compat import store_cache_rows

        store_cache_rows(compiled.cache_rows)
        self.nodes[compiled.node] = self.nodes.get(compiled.node, 0) + 1
        out.set_result(compiled.result)

    def _watch(self) -> None:
        while not (self._closed and not self._pending()):
            with self._lock:
                late = [(ref, out) for ref, (out, deadline) in self._in_flight.items()
                        if deadline < self._clock() and not out.done()]
            for ref, out in late:
                with contextlib.suppress(Exception):  # finished meanwhile, or its node is gone
                    self._ray.cancel(ref, force=True)
                with contextlib.suppress(Exception):  # set by _finish meanwhile
                    out.set_exception(ClusterError(
                        f"a compile job gave no result after {self._timeout_s:.0f} s "
                        "(ClusterOptions.compile_timeout_s); it was cancelled"))
            time.sleep(1.0)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        pending = self._pending()
        if cancel_futures:
            for ref in pending:
                with contextlib.suppress(Exception):  # finished already, or its node is gone
                    self._ray.cancel(ref)
        elif wait and pending:
            # every job has its deadline; none is waited for past it
            self._ray.wait(pending, num_returns=len(pending), timeout=self._timeout_s)
