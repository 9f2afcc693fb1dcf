"""The ``%%tile`` options: the flags and panes it knows, what a C++ cell refuses, the
notebook's defaults, and the checks that turn an impossible combination into a clear
``UsageError`` before anything compiles or runs (:mod:`tile_lab.cell` places it at the
``%%tile`` line). The parsed line becomes one frozen :class:`CellOptions` here, once; what
is derived from it (the notebook's defaults, ``--show`` parsed) is a new one
(``dataclasses.replace``), never a changed one.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from IPython.core.error import UsageError

from .request import PANES, RunSettings, parse_show

__all__ = ["CPP_EMULATOR_FLAGS", "CPP_LANGS", "CPP_REFUSED", "EXECUTION_FLAGS", "PANES",
           "TRITON_LANGS", "TRITON_PANES", "TRITON_REFUSED", "CellOptions", "Defaults",
           "check_options", "resolve_options"]

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

    @property
    def settings(self) -> RunSettings:
        """What every run request of the notebook carries."""
        return RunSettings(self.max_steps, self.launch_fallback)


@dataclass(frozen=True)
class CellOptions:
    """The ``%%tile`` line as the cell runs with it: each option as typed (None or False
    where the line leaves it out), and ``--show`` parsed into ``panes`` (None: the default
    panes) and ``partition`` (the access-trace diagram asked for)."""

    args: str | None = None
    sig: str | None = None
    arch: str | None = None
    hints: str | None = None
    show: str | None = None
    kernel: str | None = None
    grid: str | None = None
    emulate: bool = False
    trace: bool = False
    sanitize: bool = False
    launch: bool = False
    profile: bool = False
    crosscheck: bool = False
    explore: str | None = None
    lang: str = "python"
    export: str | None = None
    reproducer: str | None = None
    panes: tuple[str, ...] | None = None
    partition: bool = False

    @property
    def flags(self) -> list[str]:
        """The execution flags given, in EXECUTION_FLAGS' order."""
        return [f for f in EXECUTION_FLAGS if getattr(self, f)]


_OPTION_NAMES = frozenset(f.name for f in fields(CellOptions)) - {"panes", "partition"}


def resolve_options(parsed: Any, defaults: Defaults) -> CellOptions:
    """The parsed line (``parse_argstring``'s namespace) as the cell runs with it: the
    quotes IPython keeps stripped (it splits the magic line shell-style, non-POSIX), the
    notebook's defaults for what the cell leaves out, then :func:`check_options`."""
    given = {key: _unquoted(value) for key, value in vars(parsed).items()
             if key in _OPTION_NAMES}
    opts = CellOptions(**given)
    opts = replace(opts, arch=opts.arch if opts.arch is not None else defaults.arch or None,
                   show=opts.show if opts.show is not None else defaults.show or None)
    return check_options(opts)


def _unquoted(value: Any) -> Any:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] in "'\"":
        return value[1:-1]
    return value


def check_options(opts: CellOptions) -> CellOptions:
    """Refuse option combinations that cannot work, before anything compiles or runs; return
    ``opts`` with ``--show`` parsed (once) into ``panes`` and ``partition``."""
    allowed = TRITON_PANES if opts.lang.lower() in TRITON_LANGS else PANES
    panes, partition, bad = parse_show(opts.show, allowed)
    opts = replace(opts, panes=panes, partition=partition)
    _refuse_impossible(opts, allowed, bad)
    return opts


def _refuse_impossible(opts: CellOptions, panes: tuple[str, ...], bad: str | None) -> None:
    if opts.lang.lower() not in ("python", "py", *CPP_LANGS, *TRITON_LANGS):
        raise UsageError(f"%%tile: --lang must be python, c++ or triton, not {opts.lang!r}")
    flags = opts.flags
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
