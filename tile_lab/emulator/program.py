"""Whole cuTile programs on the CPU: ``ct.launch`` runs on the emulator.

Three switches, all scoped (cuda.tile is never patched just because tile_lab is imported):

* ``with tile_lab.emulation():`` (or ``emulation(sanitize=True)``) for a block of code;
* ``%tile_emulate on|sanitize|off`` in a notebook (after ``%load_ext tile_lab``);
* ``TILE_LAB_EMULATE=1`` (or ``=sanitize``) in the environment of any program, also one that
  imports only ``cuda.tile`` like NVIDIA's samples (the start-up hook ``tile_lab_emulate.pth``
  switches cuda.tile when it is first imported: ``tile_lab/_startup.py``), or ``python -m
  tile_lab.emulator [--sanitize] script.py [args]``.

In both program modes a tile_lab error prints like in a notebook (message, ``file:line``, the
kernel line, a caret, the hint) plus the program line that launched the kernel; the exit
status is 3 under ``--sanitize`` (or ``=sanitize``) when a launch had findings, 2 for a usage
mistake (a missing script: one line), and an unknown ``TILE_LAB_EMULATE`` value is a one-line
error.

While on, ``cuda.tile.launch(stream, grid, kernel, args)`` runs ``kernel`` on the emulator, and
so do the launches ``ct.tune.exhaustive_search`` makes (untimed: ``tuning.py``):
any ``stream`` is accepted (``None`` included), NumPy arrays and torch CPU tensors are
updated in place, CuPy/DLPack arrays are copied to the host and back. In sanitize mode every
launch is sanitized and its report printed with the kernel and the launching line. A name
bound before the switch (``from cuda.tile import launch``) still refers to cuTile's own
launch: programs written as ``ct.launch(...)`` are the ones that switch.

A program that calls a GPU-only API (``torch.cuda.current_stream()`` on a CPU-only torch,
``device="cuda"``, CuPy) ends, in program mode, with a short message instead of the library's
traceback: the user's call, the error's first line, and, for torch, the command that runs the
program as it is with torch's CUDA device played by the CPU (``TILE_LAB_DEVICE=cpu``, which
``python -m tile_lab.emulator`` honours too). Inside ``emulation()`` the error keeps its
traceback, with a note naming the call and the CPU-mode alternative.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

import cuda.tile as ct

ENV_VAR = "TILE_LAB_EMULATE"
_LOCK = threading.Lock()
# per switch: (the launch that was in place, sanitize, the undo of the tuning switch)
_STACK: list[tuple[Any, bool, Any]] = []
_FOUND = [0]  # sanitized launches with findings, this process (sets the runner's exit status)


PADDING_VAR = "TILE_LAB_PADDING"
# Program mode runs whole programs (and test suites) that were checked against a GPU, so its
# undetermined lanes hold what the compiled kernel's do ("hardware"); notebooks, emulate() and
# the sanitizer keep "poison", which makes a use of such lanes visible (README says why).
PROGRAM_PADDING = "hardware"


def padding_from_env() -> str:
    """The padding policy for program mode: ``TILE_LAB_PADDING`` or ``"hardware"``."""
    from ..request import PADDINGS

    value = os.environ.get(PADDING_VAR, "").strip().lower() or PROGRAM_PADDING
    if value not in PADDINGS:
        raise SystemExit(f"{PADDING_VAR}={value!r}: expected one of "
                         f"{', '.join(PADDINGS)}")
    return value


class _EmulatedLaunch:
    """Stands in for ``cuda.tile.launch`` while emulation is on."""

    def __init__(self, sanitize: bool, padding: str = PROGRAM_PADDING) -> None:
        self.sanitize = sanitize
        self.padding = padding
        self.__name__ = self.__qualname__ = "launch"
        self.__doc__ = "cuda.tile.launch, running kernels on tile_lab's CPU emulator"

    def __call__(self, stream: Any, grid: Any, kernel: Any, kernel_args: Sequence[Any], /,
                 **options: Any) -> None:
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        args = tuple(kernel_args)
        if not self.sanitize:
            from .runtime import emulate_kernel
            emulate_kernel(kernel, grid, args, padding=self.padding)
            return
        from ..sanitizer.checks import sanitize_kernel
        report = sanitize_kernel(kernel, grid, args)
        if report.findings:
            _FOUND[0] += 1
        print(f"[tile_lab] {launch_site(sys._getframe(1))}: ct.launch of {_name(kernel)} "
              f"grid={grid}\n{report}", flush=True)

    def __repr__(self) -> str:
        mode = "sanitize" if self.sanitize else "emulate"
        return f"<cuda.tile.launch on tile_lab's CPU emulator ({mode})>"


def _name(kernel: Any) -> str:
    from ._kernel_access import kernel_function
    try:
        return kernel_function(kernel).__name__
    except Exception:
        return repr(kernel)


def launch_site(frame: Any) -> str:
    """``Cell In[3], line 7`` / ``script.py:12``: where the user's code called launch."""
    from ..errors import location_label  # one notion of "which cell" for every message
    filename, line = frame.f_code.co_filename, frame.f_lineno
    where = location_label(filename)
    if where.startswith("Cell In["):
        return f"{where}, line {line}"
    return f"{os.path.basename(filename)}:{line}"


# ---- switching ---------------------------------------------------------------------------------

def enable(*, sanitize: bool = False, padding: str | None = None) -> None:
    """Turn emulation on until :func:`disable` (nested: each enable needs its disable).
    ``padding``: the policy for undetermined lanes (default: ``TILE_LAB_PADDING``, else
    ``"hardware"``; the sanitize mode always poisons)."""
    from .tuning import switch_on

    policy = padding_from_env() if padding is None else padding
    from ..request import PADDINGS

    if policy not in PADDINGS:
        raise ValueError(f"padding must be one of {PADDINGS}, got {policy!r}")
    with _LOCK:
        _STACK.append((ct.launch, sanitize, switch_on()))  # ct.tune runs on the emulator too
        ct.launch = _EmulatedLaunch(sanitize, policy)


def disable() -> None:
    """Undo the last :func:`enable` (no-op when emulation is off)."""
    with _LOCK:
        if _STACK:
            launch, _, undo_tuning = _STACK.pop()
            undo_tuning()
            ct.launch = launch


def is_enabled() -> bool:
    return isinstance(ct.launch, _EmulatedLaunch)


def mode() -> str | None:
    """``"emulate"``, ``"sanitize"``, or None when ``ct.launch`` is cuTile's own."""
    launch = ct.launch
    if not isinstance(launch, _EmulatedLaunch):
        return None
    return "sanitize" if launch.sanitize else "emulate"


@contextlib.contextmanager
def emulation(*, sanitize: bool = False, padding: str | None = None) -> Iterator[None]:
    """Run ``ct.launch`` calls inside this block on the CPU emulator (sanitizing each launch
    when ``sanitize``). ``padding``: what undetermined lanes hold (``"hardware"`` unless
    ``TILE_LAB_PADDING`` says otherwise; ``"poison"``, ``"zero"``). A GPU-only call inside
    fails with a note saying what to use instead."""
    enable(sanitize=sanitize, padding=padding)
    try:
        yield
    except BaseException as exc:
        add_gpu_note(exc)
        raise
    finally:
        disable()


def mode_from_env(value: str | None = None) -> str | None:
    """``"emulate"``, ``"sanitize"`` or None for the value of ``TILE_LAB_EMULATE`` (ValueError,
    a one-line message, for anything else)."""
    from .._env_mode import mode_from_env as parse

    return parse(value)


def install_from_env() -> bool:
    """Switch emulation on for the whole process if ``TILE_LAB_EMULATE`` asks for it (called
    through ``tile_lab._startup`` once cuda.tile is loaded), and report tile_lab's errors and
    GPU-only calls in uncaught errors the way ``python -m tile_lab.emulator`` does. A value
    that is not a mode is a one-line error (SystemExit)."""
    try:
        mode = mode_from_env()
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    if mode is None or is_enabled():
        return False
    enable(sanitize=mode == "sanitize")
    _chain_excepthook()
    if mode == "sanitize":
        _exit_3_on_findings()
    return True


_FAILED = [False]  # an uncaught error ended the program (its exit status 1 is kept)


def _exit_3_on_findings() -> None:
    """``TILE_LAB_EMULATE=sanitize``: end with status 3, like ``python -m tile_lab.emulator
    --sanitize``, when a launch had findings and the program itself ended well (status 0).

    Python offers no hook that changes the exit status of a program it did not start, and an
    atexit function cannot see it: so ``sys.exit`` records a non-zero status, the excepthook
    an uncaught error, and at exit, when neither happened and a launch had findings, the
    remaining exit functions run, every open file is flushed, and the process ends with 3."""
    import atexit

    real_exit = sys.exit

    def exit(status: object = None) -> None:
        _EXIT_STATUS[0] = status
        real_exit(status)

    exit.__doc__ = real_exit.__doc__
    sys.exit = exit
    atexit.register(_at_exit)


_EXIT_STATUS: list[object] = [None]


def _at_exit() -> None:
    import atexit
    import gc
    import io

    found, status = _FOUND[0], _EXIT_STATUS[0]
    if not found or _FAILED[0] or status not in (None, 0):
        return
    print(f"TILE_LAB_EMULATE=sanitize: {found} launch{'es' if found > 1 else ''} with "
          "findings (exit status 3)", file=sys.stderr)
    atexit.unregister(_at_exit)
    atexit._run_exitfuncs()  # the program's own exit functions (registered before us) still run
    for obj in gc.get_objects():  # what interpreter shutdown would flush, os._exit does not
        # the object's real type, never isinstance: that reads obj.__class__, which some
        # objects compute and warn on (torch.distributed.reduce_op: a FutureWarning at exit)
        if issubclass(type(obj), io.IOBase):
            with contextlib.suppress(Exception):
                if not obj.closed:
                    obj.flush()
    os._exit(3)


# ---- GPU-only calls ----------------------------------------------------------------------------

_GPU_MODULES = ("torch/cuda", "cupy", "cuda/bindings", "cuda/core", "numba/cuda")
_GPU_WORDS = ("not compiled with CUDA", "no CUDA GPUs", "CUDA driver", "cudaErrorNoDevice",
              "CUDA_ERROR_NO_DEVICE", "libcuda", "Found no NVIDIA driver", "cuInit")


def _gpu_call(exc: BaseException) -> tuple[str, bool] | None:
    """``(the user's call, whether torch raised)`` when ``exc`` comes from a GPU-only API;
    None when it does not."""
    frames = traceback.extract_tb(exc.__traceback__)
    message = str(exc)
    paths = [f.filename.replace("\\", "/") for f in frames]
    in_gpu = any(any(m in p for m in _GPU_MODULES) for p in paths)
    if not in_gpu and not any(w in message for w in _GPU_WORDS):
        return None
    user = [f for f in frames if "site-packages" not in f.filename
            and "/tile_lab/" not in f.filename.replace("\\", "/")]
    where = user[-1] if user else (frames[-1] if frames else None)
    call = f"`{where.line.strip()}` ({os.path.basename(where.filename)}:{where.lineno})" \
        if where is not None and where.line else "a GPU-only call"
    from_torch = any("/torch/" in p for p in paths) or "Torch not compiled" in message \
        or "Found no NVIDIA driver" in message or type(exc).__module__.startswith("torch")
    return call, from_torch


def add_gpu_note(exc: BaseException) -> bool:
    """Add a note naming the user's call when ``exc`` comes from a GPU-only API."""
    if getattr(exc, "_tile_lab_gpu_note", False):
        return True
    found = _gpu_call(exc)
    if found is None:
        return False
    exc.add_note(
        f"tile_lab emulation: {found[0]} needs a GPU, but kernels run on the CPU emulator here. "
        "In CPU mode pass stream=None (or 0) to ct.launch instead of a CUDA stream "
        "(e.g. torch.cuda.current_stream()), and make arrays on the host: NumPy arrays or "
        "torch tensors with device='cpu'.")
    exc._tile_lab_gpu_note = True  # type: ignore[attr-defined]
    return True


def gpu_only_message(exc: BaseException, command: str) -> str | None:
    """What a program run on the emulator ends with, instead of the traceback, when ``exc``
    comes from a GPU-only API (None when it does not): the user's call, the error's first
    line, and ``command`` (how to run the program with torch's CUDA device played by the
    CPU) unless it already is."""
    found = _gpu_call(exc)
    if found is None:
        return None
    call, from_torch = found
    first = (str(exc).strip().splitlines() or [""])[0]
    if len(first) > 100:  # torch's driver message goes on about where to download one
        first = first[:first.find(". ") + 1] if 0 < first.find(". ") < 100 else first[:97] + "..."
    said = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    head = f"tile_lab: {call} needs a GPU ({said})"
    if not from_torch:
        return (f"{head}\nct.launch runs on the CPU emulator, and TILE_LAB_DEVICE=cpu plays "
                "torch's CUDA device on the CPU, but not this library: make the arrays with "
                "NumPy or torch.")
    if _torch_played():
        return (f"{head}\nTILE_LAB_DEVICE=cpu plays torch's CUDA tensors, streams, events and "
                "device queries on the CPU, but not this call (README: what it cannot do).")
    return (f"{head}\nct.launch runs on the CPU emulator; to have torch's CUDA tensors, "
            f"streams and events on the CPU too, add TILE_LAB_DEVICE=cpu:\n  {command}")


def _torch_played() -> bool:
    played = sys.modules.get("tile_lab.testing.torch_cpu")
    return played is not None and played.active()


def _command_line(variables: str, runner: Sequence[str] = ()) -> str:
    """The program's command line (``sys.argv``) with ``variables`` in front and ``runner``
    (``-m tile_lab.emulator``) between ``python`` and the script."""
    import shlex

    return " ".join([variables, "python", *runner, *map(shlex.quote, sys.argv)])


def _chain_excepthook() -> None:
    previous = sys.excepthook

    def hook(kind, value, tb):
        from ..errors import TileLabError
        from .blocks import EmulationInterrupted

        _FAILED[0] = True
        if isinstance(value, (TileLabError, EmulationInterrupted)):  # the kernel line with a
            # caret, not our stack (Python still ends a Ctrl-C'd program by SIGINT)
            print(format_program_error(value), file=sys.stderr)
            return
        message = gpu_only_message(value, _command_line(
            f"{ENV_VAR}={os.environ.get(ENV_VAR, '1')} TILE_LAB_DEVICE=cpu"))
        if message is not None:  # torch's stack says nothing the user can act on
            print(message, file=sys.stderr)
            return
        previous(kind, value, tb)

    sys.excepthook = hook


def format_program_error(exc: BaseException) -> str:
    """A tile_lab error in a program as in a notebook: message, ``file:line``, the line, a
    caret, the hint, and the program line that launched the kernel. Other errors: Python's
    traceback (with a note for GPU-only calls)."""
    from ..errors import TileLabError
    from .blocks import EmulationInterrupted

    if not isinstance(exc, (TileLabError, EmulationInterrupted)):
        add_gpu_note(exc)
        return "".join(traceback.format_exception(exc)).rstrip()
    text = exc.render(file_line=True)
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not _library_file(f.filename)]
    if frames and frames[-1].line:
        f = frames[-1]
        text += f"\n  launched at {os.path.basename(f.filename)}:{f.lineno}: {f.line.strip()}"
    return text


def _library_file(filename: str) -> bool:
    name = filename.replace("\\", "/")
    return ("/tile_lab/" in name or "site-packages" in name or name.startswith("<frozen")
            or "/lib/python" in name)


# ---- python -m tile_lab.emulator script.py ----------------------------------------------------

USAGE = ("usage: python -m tile_lab.emulator [--sanitize] script.py [args...]\n"
         "Runs script.py with every cuda.tile.launch on tile_lab's CPU emulator; with "
         "--sanitize every launch is sanitized and the exit status is 3 when any finding was "
         "reported.")


def run_script(argv: Sequence[str]) -> int:
    """``python -m tile_lab.emulator [--sanitize] script.py [args...]``. Exit status: the
    script's; 1 when it raised (tile_lab errors print the kernel line with a caret); 2 for a
    usage mistake (one line); 3 with ``--sanitize`` when a launch had findings; 130 after Ctrl-C."""
    import runpy

    args = list(argv)
    sanitize = False
    if args and args[0] in ("--sanitize", "-s"):
        sanitize, args = True, args[1:]
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return 2
    if args[0].startswith("-"):
        print(f"python -m tile_lab.emulator: unknown option {args[0]!r} (options: --sanitize)",
              file=sys.stderr)
        return 2
    if not os.path.isfile(args[0]):
        what = "is a directory" if os.path.isdir(args[0]) else "no such file"
        print(f"python -m tile_lab.emulator: {args[0]}: {what}", file=sys.stderr)
        return 2
    sys.argv = args
    sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
    enable(sanitize=sanitize)
    found_before = _FOUND[0]
    try:
        runpy.run_path(args[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or _sanitize_status(sanitize, found_before)
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException as exc:
        tb = exc.__traceback__  # start the traceback at the script (not runpy, not us)
        script = os.path.abspath(args[0])
        while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
            tb = tb.tb_next
        runner = ("-m", "tile_lab.emulator", *(["--sanitize"] if sanitize else []))
        message = gpu_only_message(exc, _command_line("TILE_LAB_DEVICE=cpu", runner))
        print(message or format_program_error(exc.with_traceback(tb or exc.__traceback__)),
              file=sys.stderr)
        return 130 if isinstance(exc, KeyboardInterrupt) else 1  # the shell's Ctrl-C status
    finally:
        disable()
    return _sanitize_status(sanitize, found_before)


def _sanitize_status(sanitize: bool, found_before: int) -> int:
    found = _FOUND[0] - found_before
    if not sanitize or not found:
        return 0
    print(f"python -m tile_lab.emulator --sanitize: {found} launch{'es' if found > 1 else ''} "
          "with findings (exit status 3)", file=sys.stderr)
    return 3
