"""Run launch/bench in a worker process, so a faulting or hanging kernel cannot take the
caller's CUDA context (or the Jupyter kernel) down with it.

The kernel travels as a shipped :class:`~tile_lab.gpu.job.KernelJob` (by module, or as the
source of its ``def`` for kernels defined in notebook cells: :mod:`tile_lab.kernel_source`),
rebuilt in the worker with the original hints. Arguments travel as NumPy host copies and come
back the same way into the caller's arrays.

A worker that raised, crashed or timed out is discarded (its context may be corrupt); the
next call starts a fresh one. A healthy worker is reused and keeps its compiled kernels.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import secrets
import subprocess
import sys
import traceback
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

import numpy as np

from ..errors import CompileError, LaunchError, TileLabError
from . import metrics
from .job import JobKernel, KernelJob, measure_job

START_TIMEOUT_S = 60.0  # importing CuPy + cuda.tile and creating a context


# ---- arguments ---------------------------------------------------------------------------
def write_back(args: Any, results: list[Any]) -> None:
    """Copy the worker's arrays into the caller's arrays (NumPy, CuPy, torch, DLPack)."""
    for orig, new in zip(args, results):
        if new is None or not metrics.is_array(orig):
            continue
        if isinstance(orig, np.ndarray):
            np.copyto(orig, new)
        else:
            import cupy

            cupy.asarray(orig)[...] = cupy.asarray(new)


# ---- the worker process ---------------------------------------------------------------------
class _Worker:
    def __init__(self) -> None:
        authkey = secrets.token_bytes(32)
        listener = Listener(family="AF_UNIX", authkey=authkey)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tile_lab.gpu.isolate", listener.address],
            stdin=subprocess.PIPE, env=env)
        assert self.process.stdin is not None
        self.process.stdin.write(authkey.hex().encode() + b"\n")
        self.process.stdin.close()
        try:
            self.conn = _accept(listener, self.process)
        finally:
            listener.close()
        self.kernels: set[str] = set()

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def _accept(listener: Listener, process: subprocess.Popen) -> Connection:
    import threading

    box: list[Connection] = []
    thread = threading.Thread(target=lambda: box.append(listener.accept()), daemon=True)
    thread.start()
    thread.join(START_TIMEOUT_S)
    if not box:
        process.kill()
        process.wait()
        raise LaunchError(f"the isolation worker did not start within {START_TIMEOUT_S:.0f} s")
    return box[0]


_worker: _Worker | None = None


def _get_worker() -> _Worker:
    global _worker
    if _worker is None or not _worker.alive():
        _worker = _Worker()
    return _worker


def _discard_worker() -> None:
    global _worker
    if _worker is not None:
        _worker.kill()
        _worker = None


def shutdown() -> None:
    """Stop the worker, if any (also done at interpreter exit)."""
    global _worker
    if _worker is not None and _worker.alive():
        with contextlib.suppress(Exception):
            _worker.conn.send(("stop",))
            _worker.process.wait(timeout=5)
    _discard_worker()


atexit.register(shutdown)


def run_isolated(op: str, job: KernelJob, kwargs: dict[str, Any], *,
                 timeout: float | None) -> Any:
    """Run ``op`` ("launch" or "bench") of ``job`` in the worker; copy the results back into
    ``job.args``. ``kwargs`` of "bench": ``timing``, ``options``, ``amounts``."""
    shipped = job.shipped()
    name = job.name
    worker = _get_worker()
    try:
        worker.conn.send(("run", op, shipped, kwargs))
        ready = worker.conn.poll(timeout)
    except (OSError, EOFError) as exc:
        _discard_worker()
        raise LaunchError(f"the isolation worker died before running {name}: {exc}") \
            from None
    if not ready:
        _discard_worker()
        raise LaunchError(
            f"{name} did not finish within {timeout:g} s in the isolation worker; the "
            "worker was killed (this process's CUDA context is untouched)",
            hint="a kernel that loops forever, or a very slow one: raise timeout= if it is "
                 "only slow")
    try:
        reply = worker.conn.recv()
    except (OSError, EOFError):
        code = worker.process.poll()
        _discard_worker()
        raise LaunchError(f"the isolation worker running {name} died (exit code {code}); "
                          "this process's CUDA context is untouched") from None
    if reply[0] == "error":
        _discard_worker()
        raise _rebuild_error(name, reply[1])
    _, result, arrays = reply
    write_back(job.args, arrays)
    return result


def _rebuild_error(kernel: str, info: dict[str, Any]) -> Exception:
    exc = info.get("exception")
    if isinstance(exc, TileLabError):
        return exc
    text = f"{info['type']}: {info['message']}"
    if info.get("tile_error"):
        return CompileError(f"{kernel} failed to compile in the isolation worker: {text}")
    return LaunchError(f"{kernel} failed in the isolation worker: {text}",
                       hint="the worker was discarded; this process's CUDA context is healthy. "
                            "tile_lab.sanitize(...) finds out-of-bounds accesses on the CPU")


def _worker_main(address: str) -> None:
    authkey = bytes.fromhex(sys.stdin.readline().strip())
    conn = Client(address, family="AF_UNIX", authkey=authkey)
    import cupy

    kernels: dict[str, JobKernel] = {}
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg[0] == "stop":
            return
        _, op, shipped, kwargs = msg
        try:
            dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in shipped.args]
            job = shipped.rebuild(kernels, dev)
            result = _run_op(cupy, op, job, kwargs)
            out = [cupy.asnumpy(d) if isinstance(d, cupy.ndarray) else None for d in dev]
            conn.send(("ok", result, out))
        except BaseException as exc:
            conn.send(("error", _describe(exc)))
            return  # the CUDA context may be corrupt: never reuse it


def _run_op(cupy: Any, op: str, job: KernelJob, kwargs: dict[str, Any]) -> Any:
    if op == "launch":
        s = cupy.cuda.get_current_stream()
        job.on_device(cupy).launch_and_wait(s)
        return None
    return measure_job(cupy, job, kwargs["timing"], kwargs["options"], kwargs["amounts"],
                       isolated=True)


def _describe(exc: BaseException) -> dict[str, Any]:
    from .._cutile_compat import is_tile_error

    info: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc),
                            "traceback": traceback.format_exc(),
                            "tile_error": is_tile_error(exc)}
    if isinstance(exc, TileLabError):
        try:
            pickle.dumps(exc)
            info["exception"] = exc
        except Exception:
            pass
    return info


if __name__ == "__main__":
    # run the package's copy of the module, so specs unpickle to the same classes
    from tile_lab.gpu.isolate import _worker_main as _main

    _main(sys.argv[1])
