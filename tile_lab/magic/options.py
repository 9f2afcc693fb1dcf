"""The ``%%tile`` options: the flags and panes it knows, what a C++ cell refuses, and the
checks that turn an impossible combination into a clear ``UsageError`` before anything
compiles or runs (the magic places it at the ``%%tile`` line).
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ..request import PANES, parse_show

__all__ = ["CPP_EMULATOR_FLAGS", "CPP_LANGS", "CPP_REFUSED", "EXECUTION_FLAGS", "PANES",
           "TRITON_LANGS", "TRITON_PANES", "check_options", "choose", "unquote_options"]

EXECUTION_FLAGS = ("emulate", "trace", "sanitize", "launch", "profile", "crosscheck")
CPP_LANGS = ("c++", "cpp", "cuda")
TRITON_LANGS = ("triton",)  # handled by tile_lab.triton.cell
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


def unquote_options(opts: Any) -> None:
    """Strip the quotes IPython keeps: it splits the magic line shell-style, non-POSIX."""
    for key, value in vars(opts).items():
        if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] in "'\"":
            setattr(opts, key, value[1:-1])


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


def choose(found: dict[str, Any], wanted: str | None, what: str) -> list[str]:
    """The kernels to use: all the cell defines, or the one ``--kernel`` names."""
    if wanted is None:
        return list(found)
    if wanted not in found:
        have = ", ".join(found) or "none"
        raise UsageError(f"%%tile: --kernel {wanted}: the cell defines no {what} of that "
                         f"name (it defines: {have})")
    return [wanted]
