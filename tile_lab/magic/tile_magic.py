"""The ``%%tile`` cell magic: a thin shell over tile_lab's core (:mod:`tile_lab.cell`).

``%load_ext tile_lab`` calls :func:`register`. A ``%%tile`` cell body is ordinary Python
defining one or more ``@ct.kernel`` functions (or CUDA Tile C++ with ``--lang c++``, Triton
with ``--lang triton``). The magic registers the body with ``linecache`` under IPython's cell
filename, with ONE blank line first, so line N of that file is line N of the cell as the
user sees it (the ``%%tile`` line is line 1: cuTile reads kernel source with
``inspect.findsource`` and reports errors in those numbers); parses the line; and hands both,
with the notebook's namespace and ``display``, to :func:`tile_lab.cell.run_cell`, which
resolves the options, runs the body, picks the kernel, evaluates ``--args``/``--grid`` and
inspects or runs it. Every failure raises at the cell's line (``Cell In[N], line L``), an
option error as ``OptionError`` (an IPython ``UsageError``); the shell keeps working.
"""

from __future__ import annotations

import difflib
import re
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from traitlets import Int, TraitError, Unicode, validate

from .._run import arch_problem, switch_emulation
from ..cell import Cell, option_error, run_cell
from ..cell_options import PANES, Defaults
from ..errors import show_warnings_at_cells

__all__ = ["TileMagics", "register"]


def register(ipython: Any) -> None:
    """Register the ``%%tile`` cell magic on ``ipython`` (prints nothing); tile_lab's
    warnings at a cell's line then name it ``Cell In[N], line L``."""
    ipython.register_magics(TileMagics)
    show_warnings_at_cells()
    ipython.register_magic_function(tile_emulate, "line", "tile_emulate")


def tile_emulate(line: str) -> None:
    """``%tile_emulate on|sanitize|off``: every ``ct.launch`` in later cells runs on the CPU
    emulator (``sanitize``: and is sanitized, with a report per launch) until ``off``."""
    mode = line.strip().lower()
    if mode not in ("on", "sanitize", "off", ""):
        raise UsageError(f"%tile_emulate {line.strip()}: use on, sanitize or off")
    print(switch_emulation(mode))


@magics_class
class TileMagics(Magics):
    """Holds the ``%%tile`` magic. Its defaults are traitlets, set once per notebook with
    ``%config TileMagics.arch = "sm_90"`` (or in ``ipython_config.py``)."""

    arch = Unicode("", help="target GPU when a cell gives no --arch, e.g. sm_90 "
                            "(empty: the local GPU's, else sm_90)").tag(config=True)
    show = Unicode("", help="panes shown when a cell gives no --show, e.g. "
                            "'source,tileir,sass' (empty: every pane)").tag(config=True)
    emulator_max_blocks = Int(
        1 << 20, help="--emulate/--trace/--sanitize refuse grids of more blocks than this "
                      "(the CPU emulator runs blocks one after another)").tag(config=True)
    emulator_max_steps = Int(
        0, help="kernel lines one block may execute under --emulate/--trace/--sanitize before "
                "it is stopped at the line it is on (0: no budget; a budget slows the "
                "emulator down)").tag(config=True)
    launch_fallback = Unicode(
        "emulate", help="what --launch does without a GPU: 'emulate' (run on the CPU "
                        "emulator, with a notice) or 'error'").tag(config=True)

    @validate("arch")
    def _valid_arch(self, proposal: Any) -> str:
        # checked when %config sets it: a bad value fails there, saying where it came from
        if problem := arch_problem(proposal["value"]):
            raise TraitError(f"TileMagics.arch: {problem}")
        return proposal["value"]

    @validate("show")
    def _valid_show(self, proposal: Any) -> str:
        value = proposal["value"]
        bad = [n for n in (s.strip() for s in value.split(",")) if n and n not in PANES]
        if bad:
            raise TraitError(f"unknown pane {bad[0]!r}; panes: {', '.join(PANES)}")
        return value

    @validate("launch_fallback")
    def _valid_fallback(self, proposal: Any) -> str:
        if proposal["value"] not in ("emulate", "error"):
            raise TraitError("launch_fallback is 'emulate' or 'error', not "
                             f"{proposal['value']!r}")
        return proposal["value"]

    @validate("emulator_max_blocks")
    def _valid_max_blocks(self, proposal: Any) -> int:
        if proposal["value"] < 1:
            raise TraitError("emulator_max_blocks must be at least 1")
        return proposal["value"]

    @validate("emulator_max_steps")
    def _valid_max_steps(self, proposal: Any) -> int:
        if proposal["value"] < 0:
            raise TraitError("emulator_max_steps must be 0 (no budget) or a positive number "
                             "of kernel lines per block")
        return proposal["value"]

    @magic_arguments()
    @argument("--args", metavar="EXPRS",
              help='example arguments, Python expressions in the notebook namespace: '
                   '"a, b, c, 128" (NumPy/CuPy arrays, scalars, constants)')
    @argument("--sig", metavar="SPEC",
              help='signature without arrays: "f32[4096], f32[4096], f32[4096], 128"')
    @argument("--arch", help="target GPU, e.g. sm_90 (default: the local GPU's, else sm_90)")
    @argument("--hints", help="kernel hints, e.g. num_ctas=2,occupancy=4")
    @argument("--show", help="panes: " + ",".join(PANES))
    @argument("--kernel", metavar="NAME",
              help="the kernel to use when the cell defines several (default: all; "
                   "execution needs exactly one)")
    @argument("--grid", help='launch grid for execution flags, e.g. "(8,)"')
    @argument("--emulate", action="store_true", help="run on the CPU emulator")
    @argument("--trace", action="store_true",
              help="run on the CPU emulator recording memory accesses; show the diagram")
    @argument("--sanitize", action="store_true",
              help="run on the CPU emulator and report races / out-of-bounds tiles")
    @argument("--launch", action="store_true",
              help="run on the GPU (falls back to the emulator, with a notice, without one)")
    @argument("--profile", action="store_true",
              help="launch once under Nsight Compute (ncu) and show where the time goes, per "
                   "line, in the inspect view (needs a GPU, ncu, --grid and --args)")
    @argument("--crosscheck", action="store_true",
              help="run on the GPU and on the CPU emulator from identical inputs and compare "
                   "every output tile by tile (needs a GPU, --grid and --args)")
    @argument("--explore", metavar="SPACE",
              help="sliders over a tile_lab.Space (an expression in the notebook); --grid and "
                   "--args are then expressions of the slider config, named cfg: "
                   "--grid \"(N // cfg['TILE'],)\" --args \"x, y, cfg['TILE']\"")
    @argument("--lang", default="python", help="python (default), c++ or triton")
    @argument("--export", metavar="FILE.html",
              help="also write what the cell shows to one self-contained HTML file that "
                   "opens offline (tile_lab.export)")
    @argument("--reproducer", metavar="DIR",
              help="first write a reproducer of the kernel's compile (and --grid launch) to "
                   "DIR and DIR.zip: kernel.py, args, Tile IR, the tileiras command line, "
                   "run.py (tile_lab.reproducer); a failing compile is captured too")
    @cell_magic
    def tile(self, line: str, cell: str) -> None:
        """Define tile kernels in this cell, then inspect and/or run them."""
        body = self._register_cell(line, cell)
        try:
            opts = parse_argstring(self.tile, line)
        except UsageError as err:  # an option mistake: at the %%tile line, like the rest
            raise option_error(with_suggestion(str(err), self.tile.parser), body) from None
        defaults = Defaults(self.arch, self.show, self.emulator_max_blocks,
                            self.emulator_max_steps, self.launch_fallback)
        run_cell(body, opts, self.shell.user_ns, display, defaults)

    # argparse takes any unique prefix of an option: a typo such as "--emulat" ran as
    # --emulate, and a prefix unique today would change meaning once an option is added.
    # IPython's magic_arguments cannot pass allow_abbrev to its parser: set here, once.
    tile.parser.allow_abbrev = False

    def _register_cell(self, line: str, cell: str) -> Cell:
        shell = self.shell
        text = "\n" + cell  # the %%tile line is line 1, so body line k is cell line k+1
        number = running_cell_number(shell)
        filename = shell.compile.cache(text, number, raw_code=text)
        named = shell.compile.format_code_name(filename)
        label = " ".join(named) if named else filename
        return Cell(text=text, filename=filename, label=label,
                    magic_line=f"%%tile {line}".rstrip(), compile=shell.compile)


def with_suggestion(message: str, parser: Any) -> str:
    """argparse's "unrecognized arguments: --emulat" with the option meant, where one is
    close: "...; did you mean --emulate?" (options are never abbreviated)."""
    unknown = re.fullmatch(r"unrecognized arguments: (.*)", message)
    if unknown is None:
        return message
    known = sorted(set(re.findall(r"--[a-z][\w+-]*", parser.format_usage())))
    for word in unknown.group(1).split():
        flag = word.split("=", 1)[0]
        if not flag.startswith("--"):
            continue
        meant = [o for o in known if o.startswith(flag)] or \
            difflib.get_close_matches(flag, known, n=1, cutoff=0.7)
        if meant:
            return f"{message}; did you mean {' or '.join(meant)}?"
    return message


def running_cell_number(shell: Any) -> int:
    """The N of the cell now running, as IPython labels it ("Cell In[N]").

    Not ``shell.execution_count``: IPython >= 9 has already incremented it when the cell
    runs (and does not when history is off). The running cell's code is on the call stack,
    compiled under a filename IPython registered with the cell's number, so that frame
    says which cell this is, in a terminal IPython and in a Jupyter kernel alike.
    """
    format_code_name = getattr(shell.compile, "format_code_name", None)
    frame = sys._getframe(1) if format_code_name is not None else None
    while frame is not None:
        named = format_code_name(frame.f_code.co_filename)
        if named and (m := re.fullmatch(r"In\[(\d+)\]", named[1])):
            return int(m.group(1))
        frame = frame.f_back
    return shell.execution_count  # called outside any cell (run_cell_magic from code)
