"""Carry out a :class:`~tile_lab.request.Request`: the one core under the front ends.

The ``%%tile`` magic (cuTile, Triton and C++ cells) and the command line build requests and
call :func:`run`; the request is all it reads. The Python API's ``tile_lab.emulate``,
``trace``, ``sanitize``, ``launch``, ``crosscheck`` and ``profile`` (``api.py``) build one
each and call the function of their mode (:func:`emulate_request` ... :func:`profile_request`),
the one :func:`run` calls for ``--emulate`` and the rest. What a
request makes (an Inspection, a sanitizer report, a diagram, a crosscheck, a profile view) is
handed to ``show`` in the order it is made. Each mode calls its engine through the module that
owns it (imported when the mode is used: a cell that only inspects never imports the GPU
code).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .compile.inspect import inspect_request, parse_hints, resolve_arch
from .errors import CompileError, SignatureError
from .request import MODES, CppSource, Request

__all__ = ["emulate_request", "explore", "language_of", "launch_request", "run",
           "sanitize_request", "switch_emulation", "trace_request", "write_reproducer"]

Show = Callable[[Any], None]


def run(req: Request, show: Show) -> None:
    """Inspect ``req.kernel`` (a request without a mode), or run it in ``req.mode`` (and trace
    it for the partition diagram), under ``req.settings`` (the emulator's line budget,
    ``launch``'s fallback without a GPU). A ``@triton.jit`` kernel is inspected by Triton's
    compiler or, in mode "emulate", run in Triton's interpreter on the CPU; a C++ kernel
    (:class:`~tile_lab.request.CppSource`) is compiled and shown, and in mode "launch" then
    launched."""
    _LANGUAGES[language_of(req.kernel)](req, show)


def language_of(kernel: Any) -> str:
    """The language a request's kernel is written in: "c++", "triton" or "cutile"."""
    from .triton.kernel import is_triton_kernel  # checks the type: imports no Triton

    if isinstance(kernel, CppSource):
        return "c++"
    return "triton" if is_triton_kernel(kernel) else "cutile"


def _cutile(req: Request, show: Show) -> None:
    if req.inspects:
        show(inspect_request(req))
        return
    wanted = {req.mode, "trace"} if req.partition else {req.mode}
    budget: Any = contextlib.nullcontext()
    if req.settings.max_steps:
        from .emulator import limits

        budget = limits(max_steps=req.settings.max_steps)
    with budget:
        for mode in MODES:
            if mode in wanted:
                _MODES[mode](req, show)


def write_reproducer(req: Request, path: str) -> Any:
    """``tile_lab.reproducer`` of ``req``'s kernel, for its args (else its sig) and grid."""
    from .share import reproducer

    spec = req.args if req.args is not None else req.sig
    return reproducer(req.kernel, req.grid, spec, path, arch=req.arch, hints=req.hints)


def explore(kernel: Any, items: tuple[Any, ...], grid_fn: Callable[[Any], tuple[int, ...]],
            args_fn: Callable[[Any], tuple[Any, ...]]) -> Any:
    """``tile_lab.explore``'s sliders over ``items`` (which must be one tile_lab.Space), after
    one call of ``grid_fn`` and ``args_fn`` on the first config (so their mistakes fail here,
    not in a slider callback)."""
    from .tuning import Space
    from .widgets.explore import explore as sliders

    space = items[0] if len(items) == 1 else None
    if not isinstance(space, Space):
        got = type(space).__name__ if len(items) == 1 else f"{len(items)} values"
        raise SignatureError(f"--explore needs one tile_lab.Space, got {got}",
                             hint="e.g. space = tile_lab.Space(TILE=[256, 512, 1024])")
    configs = space.configs(None)
    if configs:
        grid_fn(configs[0])
        args_fn(configs[0])
    return sliders(kernel, space, grid_fn, args_fn)


def arch_problem(arch: str) -> str | None:
    """What is wrong with ``arch`` as a default target (``%config TileMagics.arch``), in
    words; None when it is empty (the local GPU's) or an architecture tileiras knows."""
    if not arch.strip():
        return None
    try:
        resolve_arch(arch)
    except CompileError as exc:
        return f"{exc.message}; {exc.hint}"
    return None


def switch_emulation(mode: str) -> str:
    """Send every later ``ct.launch`` to the CPU emulator (``mode`` "on"; "sanitize": and
    sanitize each launch) or back to the GPU ("off"); "" changes nothing. Returns where
    launches go now, in words."""
    from .emulator import program

    if mode:
        while program.is_enabled():  # one switch at a time: 'sanitize' replaces 'on'
            program.disable()
        if mode in ("on", "sanitize"):
            program.enable(sanitize=mode == "sanitize")
    if program.is_enabled():
        sanitizing = program.mode() == "sanitize"
        return ("ct.launch runs on the CPU emulator"
                f"{' (sanitizing every launch)' if sanitizing else ''}")
    from .gpu.device import gpu_available

    return ("ct.launch runs on the GPU" if gpu_available() else
            "ct.launch goes to the GPU, and this machine has none: launches will fail "
            "(%tile_emulate on runs them on the CPU emulator)")


# -- one function per mode: the Python API (api.py) calls these, and so does run() ---------

def emulate_request(req: Request) -> None:
    """Run ``req.kernel`` on ``req.grid`` with ``req.args`` on the CPU emulator
    (``req.emulate``'s padding): ``tile_lab.emulate``, and ``--emulate``."""
    from . import emulator

    emulator.emulate_kernel(req.kernel, req.grid, req.args, padding=req.emulate.padding)


def trace_request(req: Request) -> Any:
    """The emulator's access trace of ``req`` (``req.emulate``'s padding and blocks):
    ``tile_lab.trace``, and ``--trace`` / the partition diagram."""
    from . import emulator

    opts = req.emulate
    return emulator.trace_kernel(req.kernel, req.grid, req.args, blocks=opts.blocks,
                                 padding=opts.padding)


def sanitize_request(req: Request) -> Any:
    """The sanitizer's report of ``req`` (``req.sanitize``'s outputs and partial):
    ``tile_lab.sanitize``, and ``--sanitize``."""
    from .sanitizer import checks

    opts = req.sanitize
    return checks.sanitize_kernel(req.kernel, req.grid, req.args, outputs=opts.outputs,
                                  partial=opts.partial)


def launch_request(req: Request) -> None:
    """Launch ``req`` on the GPU (``req.hints``, ``req.launch``'s isolation, stream, fallback
    and timeout): ``tile_lab.launch``, and ``--launch``."""
    from . import gpu

    opts = req.launch
    gpu.launch_kernel(req.kernel, req.grid, req.args, hints=_hints(req), isolate=opts.isolate,
                      stream=opts.stream, fallback=opts.fallback, timeout=opts.timeout)


def crosscheck_request(req: Request) -> Any:
    """The GPU-vs-emulator comparison of ``req`` (``req.crosscheck``'s options and GPU side;
    by default CuPy's, with ``req.hints``): ``tile_lab.crosscheck``, and ``--crosscheck``."""
    from . import crosschecking

    run = req.crosscheck
    gpu = run.gpu if run.gpu is not None else crosschecking.CupyGpu(hints=_hints(req))
    return crosschecking.crosscheck_kernel(req.kernel, req.grid, req.args, options=run.options,
                                           gpu=gpu)


def profile_request(req: Request) -> Any:
    """One launch of ``req`` profiled under Nsight Compute (``req.hints``, ``req.profile``'s
    time limit, plans and report folder): ``tile_lab.profile``, and ``--profile``."""
    from . import profiling

    opts = req.profile
    plans = {} if opts.plans is None else {"plans": opts.plans}
    return profiling.profile_kernel(req.kernel, req.grid, req.args, hints=_hints(req),
                                    timeout_s=opts.timeout_s, keep_report=opts.keep_report,
                                    **plans)


# -- what run() shows of each mode (the order of output is MODES') --------------------------

def _sanitize(req: Request, show: Show) -> None:
    show(sanitize_request(req))


def _trace(req: Request, show: Show) -> None:
    from .render import diagram as diagrams

    show(diagrams.diagram(trace_request(req)))


def _emulate(req: Request, show: Show) -> None:
    emulate_request(req)
    blocks = math.prod(req.grid or ())
    # as launch's fallback says where it ran, so does emulate
    print(f"ran on the tile_lab CPU emulator: grid {req.grid}, "
          f"{blocks:,} block{'s' if blocks != 1 else ''}")


def _launch(req: Request, show: Show) -> None:
    # in a notebook, what a launch without a GPU does is its setting (%config TileMagics)
    fallback = "emulate" if req.settings.launch_fallback == "emulate" else None
    launch_request(replace(req, launch=replace(req.launch, fallback=fallback)))


def _crosscheck(req: Request, show: Show) -> None:
    from IPython.display import display

    # displayed, not handed to show: --export has never written a crosscheck's verdict
    display(crosscheck_request(req))


def _profile(req: Request, show: Show) -> None:
    prof = profile_request(req)
    show(prof.view(inspect_request(replace(req, arch=prof.arch, mode=None, partition=False,
                                           panes=("source", "tileir", "sass")))))


def _hints(req: Request) -> dict[str, Any] | None:
    """The request's hints as a dict: a string (the magic's ``--hints``) parsed and checked,
    a mapping (the Python API's ``hints=``) as given; None without."""
    if isinstance(req.hints, str):
        return parse_hints(req.hints) if req.hints else None
    return None if req.hints is None else dict(req.hints)


def _cpp(req: Request, show: Show) -> None:
    from . import cpp

    if req.mode not in (None, "launch") or req.partition:
        raise ValueError(f"mode={req.mode!r}: a C++ kernel is inspected or launched")
    source = req.kernel
    insp = cpp.inspect_cpp(source.text, source.name, arch=req.arch, filename=source.filename)
    show(insp.with_show(req.panes) if req.panes is not None else insp)
    if req.mode == "launch":
        cpp.launch_cpp(insp, source.name, req.grid, req.args or ())


def _triton(req: Request, show: Show) -> None:
    if req.inspects:
        from .triton.build import inspect_triton

        show(inspect_triton(req.kernel, req.spec, arch=req.arch, show=req.panes))
    elif req.mode == "emulate":
        from .triton.interpret import run_triton_cpu

        run_triton_cpu(req.kernel, req.grid or (), req.args or ())
    else:
        raise ValueError(f"mode={req.mode!r}: a Triton kernel is inspected or emulated")


# mode -> its handler (the order of output is MODES')
_MODES: dict[str, Callable[[Request, Show], None]] = {
    "sanitize": _sanitize,
    "trace": _trace,
    "emulate": _emulate,
    "launch": _launch,
    "crosscheck": _crosscheck,
    "profile": _profile,
}

# the kernel's language -> its handler
_LANGUAGES: dict[str, Callable[[Request, Show], None]] = {
    "cutile": _cutile,
    "triton": _triton,
    "c++": _cpp,
}
