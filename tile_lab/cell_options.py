"""The ``%%tile`` options: the flags and panes it knows, what a C++ cell refuses, the
notebook's defaults, and the checks that turn an impossible combination into a clear
``UsageError`` before anything compiles or runs (:mod:`tile_lab.cell` places it at the
``%%tile`` line).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from .request import PANES, parse_show

__all__ = ["CPP_EMULATOR_FLAGS", "CPP_LANGS", "CPP_REFUSED", "EXECUTION_FLAGS", "PANES",
           "TRITON_LANGS", "TRITON_PANES", "TRITON_REFUSED", "Defaults", "check_options",
           "resolve_options"]

EXECUTION_FLAGS = ("emulate", "trace", "sanitize", "launch", "profile", "crosscheck")
CPP_LANGS = ("c++", "cpp", "cuda")
TRITON_LANGS = ("triton",)
# A Triton cell's inspect panes (its compile stages), "partition" kept so the Triton cell
# itself can say why it has no partition diagram.
TRITON_PANES = ("source", "ttir", "ttgir", "ptx", "sass", "partition")
# Options a C++ cell refuses, each with why (checked before anything compiles). The CPU
# emulator's flags are refused apart, as EmulatorUnsupported; the rest work in both languages.
CPP_REFUSED = (
    ("hints", "--hints does not apply to C++ cells (set hints in the source with cutile::hint)"),
    ("sig", "--sig is for Python kernels; a C++ kernel's signature is in its source"),
    ("reproducer", "--reproducer writes cuTile Python kernels"),
    ("profile", "--profile runs Nsight Compute on cuTile Python kernels only (profile a C++ "
                "kernel with ncu on a program that launches it)"),
)
CPP_EMULATOR_FLAGS = ("emulate", "trace", "sanitize", "crosscheck")
# Options a Triton cell refuses, each with why (checked before anything compiles).
TRITON_REFUSED = (
    ("hints", "--hints is for cuTile kernels (pass num_warps to tile_lab.triton."
              "inspect_triton)"),
    ("reproducer", "--reproducer writes cuTile Python kernels"),
    ("profile", "--profile runs Nsight Compute on cuTile Python kernels only"),
    ("explore", "--explore is for cuTile Python kernels"),
    ("trace", "--trace records the cuTile emulator's accesses; Triton kernels run in Triton's "
              "interpreter (--emulate)"),
    ("sanitize", "--sanitize checks cuTile kernels on the emulator; Triton kernels run in "
                 "Triton's interpreter (--emulate)"),
    ("crosscheck", "--crosscheck compares a cuTile kernel on a GPU with the emulator; compare "
                   "a Triton kernel with its port with tile_lab.compare"),
    ("launch", "--launch runs cuTile kernels; on a GPU, launch a Triton kernel as "
               "kernel[grid](*args), or race it with its port with tile_lab.triton.time_pair"),
)


@dataclass(frozen=True)
class Defaults:
    """What a notebook sets once (``%config TileMagics``): the target and panes a cell that
    gives none takes, and the emulator's and ``--launch``'s limits."""

    arch: str = ""
    show: str = ""
    max_blocks: int = 1 << 20
    max_steps: int = 0
    launch_fallback: str = "emulate"


def resolve_options(opts: Any, defaults: Defaults) -> None:
    """Make the parsed line what the cell runs with: the quotes IPython keeps stripped (it
    splits the magic line shell-style, non-POSIX), the notebook's defaults for what the cell
    leaves out, then :func:`check_options`."""
    for key, value in vars(opts).items():
        if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] in "'\"":
            setattr(opts, key, value[1:-1])
    if opts.arch is None and defaults.arch:
        opts.arch = defaults.arch
    if opts.show is None and defaults.show:
        opts.show = defaults.show
    check_options(opts)


def check_options(opts: Any) -> None:
    """Refuse option combinations that cannot work, before anything compiles or runs; parse
    ``--show`` (once) into ``opts.panes`` and ``opts.partition``."""
    panes = TRITON_PANES if opts.lang.lower() in TRITON_LANGS else PANES
    opts.panes, opts.partition, bad = parse_show(opts.show, panes)
    if opts.lang.lower() not in ("python", "py", *CPP_LANGS, *TRITON_LANGS):
        raise UsageError(f"%%tile: --lang must be python, c++ or triton, not {opts.lang!r}")
    flags = [f for f in EXECUTION_FLAGS if getattr(opts, f)]
    if opts.explore is not None:
        if flags:
            raise UsageError(f"%%tile: --explore runs the kernel itself; drop --{flags[0]}")
        if opts.lang.lower() in CPP_LANGS:
            raise UsageError("%%tile --lang c++: --explore is for Python kernels (tune C++ "
                             "kernels with tile_lab.tune_cpp)")
        if opts.grid is None or opts.args is None:
            raise UsageError("%%tile: --explore needs --grid and --args, written with the "
                             "slider config cfg, e.g. --grid \"(N // cfg['TILE'],)\"")
        return
    if len(flags) > 1:
        got = ", ".join("--" + f for f in flags)
        raise UsageError("%%tile: use one of "
                         + ", ".join(f"--{f}" for f in EXECUTION_FLAGS)
                         + f" at a time (got {got})")
    if opts.grid is not None and not flags and not opts.partition and opts.reproducer is None:
        raise UsageError("%%tile: --grid is for running a kernel: add "
                         + ", ".join(f"--{f}" for f in EXECUTION_FLAGS[:-1])
                         + f" or --{EXECUTION_FLAGS[-1]}")
    if opts.show is not None and (bad or not (opts.panes or opts.partition)):
        raise UsageError(f"%%tile: unknown pane {bad!r} in --show; panes: {', '.join(panes)}"
                         if bad else "%%tile: --show is empty")
