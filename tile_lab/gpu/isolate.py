"""Run launch/bench in a worker process, so a faulting or hanging kernel cannot take the
caller's CUDA context (or the Jupyter kernel) down with it.

The kernel travels as *source*, not by reference, because kernels defined in notebook cells
live only in the notebook's ``linecache``: the worker re-registers the kernel's file text
under the same filename (so cuTile's line numbers and error locations are the user's),
recreates the globals the kernel uses (modules by name, importable objects by module and
qualified name, helper functions from their source, other values by pickle), executes the
undecorated ``def`` and wraps it with ``ct.kernel`` and the original hints. Arguments travel
as NumPy host copies and come back the same way into the caller's arrays.

A worker that raised, crashed or timed out is discarded (its context may be corrupt); the
next call starts a fresh one. A healthy worker is reused and keeps its compiled kernels.
"""

from __future__ import annotations

import ast
import atexit
import builtins
import contextlib
import hashlib
import importlib
import linecache
import os
import pickle
import secrets
import subprocess
import sys
import textwrap
import traceback
import types
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

import numpy as np

from ..errors import CompileError, LaunchError, TileLabError
from . import metrics
from .arrays import host_copy
from .inprocess import bench_in_process, launch_in_process

START_TIMEOUT_S = 60.0  # importing CuPy + cuda.tile and creating a context


# ---- the kernel as data ------------------------------------------------------------------------
@dataclass(frozen=True)
class FunctionSpec:
    """A Python function as source text plus what its globals need to be rebuilt."""

    name: str
    filename: str
    file_lines: tuple[str, ...]  # the whole file (or cell) so line numbers stay the user's
    first_line: int  # 1-based line of the ``def`` (or its first decorator)
    source: str  # the decorated def, as written
    globals: tuple[tuple[str, str, Any], ...] = ()  # (name, kind, payload)
    is_kernel: bool = False
    hints: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        h = hashlib.sha256()
        h.update(pickle.dumps((self.name, self.filename, self.source, self.first_line,
                               sorted(self.hints.items(), key=repr), self.globals)))
        return h.hexdigest()


def kernel_spec(kernel: Any) -> FunctionSpec:
    """Describe a ``@ct.kernel`` so a fresh process can rebuild it (see module docstring)."""
    from .._cutile_compat import compiler_options, options_as_dict, python_function

    spec = function_spec(python_function(kernel), set())
    return replace(spec, is_kernel=True, hints=options_as_dict(compiler_options(kernel)))


def function_spec(func: types.FunctionType, seen: set[int]) -> FunctionSpec:
    import inspect

    seen.add(id(func))
    code = func.__code__
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError) as exc:
        raise LaunchError(f"isolate=True needs the source of {func.__qualname__}, but Python "
                          f"cannot find it ({exc})",
                          hint="define the kernel in a file or a %%tile cell") from None
    source = "".join(lines)
    file_lines = tuple(linecache.getlines(code.co_filename))
    names = _global_names(code) | _decorator_names(source)
    entries = []
    for name in sorted(names):
        if name not in func.__globals__:
            continue  # a builtin, or undefined (the kernel will say so)
        entry = _global_entry(name, func.__globals__[name], func, seen)
        if entry is not None:
            entries.append(entry)
    return FunctionSpec(name=func.__name__, filename=code.co_filename, file_lines=file_lines,
                        first_line=first, source=source, globals=tuple(entries))


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _decorator_names(source: str) -> set[str]:
    tree = ast.parse(textwrap.dedent(source))
    fn = tree.body[0]
    out: set[str] = set()
    for dec in getattr(fn, "decorator_list", []):
        out |= {n.id for n in ast.walk(dec) if isinstance(n, ast.Name)}
    return out


def _global_entry(name: str, value: Any, owner: types.FunctionType,
                  seen: set[int]) -> tuple[str, str, Any] | None:
    if isinstance(value, types.ModuleType):
        return (name, "module", value.__name__)
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if (module and qualname and module != owner.__module__ and module != "__main__"
            and _resolves(module, qualname, value)):
        return (name, "import", (module, qualname))
    func = getattr(value, "__wrapped__", value)  # @ct.function wrappers
    if isinstance(func, types.FunctionType) and id(func) not in seen:
        return (name, "function", function_spec(func, seen))
    try:
        return (name, "value", pickle.dumps(value))
    except Exception:
        return None  # rebuilt kernel raises NameError naming it, in the worker


def _resolves(module: str, qualname: str, value: Any) -> bool:
    try:
        obj: Any = sys.modules.get(module) or importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj is value
    except Exception:
        return False


def rebuild(spec: FunctionSpec, namespace: dict[str, Any] | None = None) -> Any:
    """Recreate the function (or kernel) ``spec`` describes, in this process."""
    ns = namespace if namespace is not None else {"__builtins__": builtins,
                                                  "__name__": "tile_lab_isolated"}
    for name, kind, payload in spec.globals:
        if name in ns:
            continue
        if kind == "module":
            ns[name] = importlib.import_module(payload)
        elif kind == "import":
            obj: Any = importlib.import_module(payload[0])
            for part in payload[1].split("."):
                obj = getattr(obj, part)
            ns[name] = obj
        elif kind == "function":
            ns[name] = rebuild(payload, ns)
        else:
            ns[name] = pickle.loads(payload)
    if spec.file_lines and not os.path.exists(spec.filename):
        # what the %%tile magic does: the cell text under its pseudo filename
        linecache.cache[spec.filename] = (sum(map(len, spec.file_lines)), None,
                                          list(spec.file_lines), spec.filename)
    tree = ast.parse(textwrap.dedent(spec.source))
    fn = tree.body[0]
    if spec.is_kernel and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        fn.decorator_list = []  # re-wrapped below with the original hints
    ast.increment_lineno(tree, spec.first_line - 1)
    exec(compile(tree, spec.filename, "exec"), ns)
    obj = ns[spec.name]
    if spec.is_kernel:
        import cuda.tile as ct

        obj = ct.kernel(obj, **spec.hints)
        ns[spec.name] = obj
    return obj


# ---- arguments ---------------------------------------------------------------------------
def host_args(args: Any) -> list[Any]:
    return [host_copy(a) for a in args]


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


def run_isolated(op: str, kernel: Any, grid: tuple[int, ...], args: Any,
                 kwargs: dict[str, Any], *, timeout: float | None) -> Any:
    """Run ``op`` ("launch" or "bench") in the worker; copy results back into ``args``."""
    spec = kernel_spec(kernel)
    payload = host_args(args)
    worker = _get_worker()
    try:
        worker.conn.send(("run", op, spec, grid, payload, kwargs))
        ready = worker.conn.poll(timeout)
    except (OSError, EOFError) as exc:
        _discard_worker()
        raise LaunchError(f"the isolation worker died before running {spec.name}: {exc}") \
            from None
    if not ready:
        _discard_worker()
        raise LaunchError(
            f"{spec.name} did not finish within {timeout:g} s in the isolation worker; the "
            "worker was killed (this process's CUDA context is untouched)",
            hint="a kernel that loops forever, or a very slow one: raise timeout= if it is "
                 "only slow")
    try:
        reply = worker.conn.recv()
    except (OSError, EOFError):
        code = worker.process.poll()
        _discard_worker()
        raise LaunchError(f"the isolation worker running {spec.name} died (exit code {code}); "
                          "this process's CUDA context is untouched") from None
    if reply[0] == "error":
        _discard_worker()
        raise _rebuild_error(spec.name, reply[1])
    _, result, arrays = reply
    write_back(args, arrays)
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

    kernels: dict[str, Any] = {}
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg[0] == "stop":
            return
        _, op, spec, grid, args, kwargs = msg
        try:
            kernel = kernels.get(spec.key)
            if kernel is None:
                kernel = kernels[spec.key] = rebuild(spec)
            dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
            result = _run_op(cupy, op, kernel, grid, dev, kwargs)
            out = [cupy.asnumpy(d) if isinstance(d, cupy.ndarray) else None for d in dev]
            conn.send(("ok", result, out))
        except BaseException as exc:
            conn.send(("error", _describe(exc)))
            return  # the CUDA context may be corrupt: never reuse it


def _run_op(cupy: Any, op: str, kernel: Any, grid: tuple[int, ...], dev: list[Any],
            kwargs: dict[str, Any]) -> Any:
    if op == "launch":
        launch_in_process(cupy, kernel, grid, dev, hints=kwargs.get("hints"), sync=True)
        return None
    return bench_in_process(cupy, kernel, grid, dev, kwargs["timing"], kwargs["options"],
                            flops=kwargs["flops"], flops_source=kwargs["flops_source"],
                            bytes_=kwargs["bytes"], isolated=True)


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
