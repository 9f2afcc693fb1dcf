"""The ``%%tile`` cell magic: a thin shell over tile_lab's public API.

``%load_ext tile_lab`` calls :func:`register`. A ``%%tile`` cell body is ordinary Python
defining one or more ``@ct.kernel`` functions (or CUDA Tile C++ with ``--lang c++``).
The magic

1. registers the body with ``linecache`` under IPython's cell filename, with ONE blank
   line first, so line N of that file is line N of the cell as the user sees it (the
   ``%%tile`` line is line 1) — cuTile reads kernel source with ``inspect.findsource``
   and reports errors in those numbers;
2. compiles and runs the body in the user namespace and finds the kernels it bound;
3. inspects them (``tile_lab.inspect``) and/or runs one (``emulate``, ``trace``,
   ``sanitize``, ``launch``), displaying what comes back; or, with ``--explore SPACE``,
   shows ``tile_lab.explore``'s sliders (``--grid``/``--args`` are then expressions of the
   slider config ``cfg``).

Every failure raises: option errors are ``OptionError`` (an IPython ``UsageError``) at the
``%%tile`` line, caret under the option; errors in the cell (syntax,
cuTile typing, tileiras, bad ``--args``) are TileLabErrors located at the cell line, which
IPython renders through ``_render_traceback_``. The shell keeps working afterwards.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from traitlets import Int, TraitError, Unicode, validate

from .._run import arch_problem, explore, run, switch_emulation, write_reproducer
from ..errors import (
    CompileError,
    EmulatorUnsupported,
    SignatureError,
    SourceLocation,
    TileLabError,
)
from ..request import Request
from .cells import (
    Cell,
    eval_grid,
    eval_option,
    item_location,
    line_of,
    option_error,
    option_location,
    relabel,
    running_cell_number,
)
from .options import (
    CPP_EMULATOR_FLAGS,
    CPP_LANGS,
    CPP_REFUSED,
    EXECUTION_FLAGS,
    PANES,
    TRITON_LANGS,
    check_options,
    choose,
    unquote_options,
)

__all__ = ["TileMagics", "register"]


def register(ipython: Any) -> None:
    """Register the ``%%tile`` cell magic on ``ipython`` (prints nothing)."""
    ipython.register_magics(TileMagics)
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
                            "(empty: the local GPU's, else sm_100)").tag(config=True)
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
    @argument("--arch", help="target GPU, e.g. sm_90 (default: the local GPU's, else sm_100)")
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
            unquote_options(opts)
            self._apply_defaults(opts)
            check_options(opts)
            self._shown: list[Any] | None = [] if opts.export else None
            if opts.lang.lower() in CPP_LANGS:
                self._run_cpp(opts, body)
            elif opts.lang.lower() in TRITON_LANGS:
                from ..triton.cell import run_triton_cell

                run_triton_cell(self, opts, body)
            else:
                self._run_python(opts, body)
            if opts.export:
                from ..share import export

                print(f"exported to {export(self._shown, opts.export)}")
        except TileLabError as err:  # any tile_lab error, whatever its class
            raise relabel(err, body) from None
        except UsageError as err:  # an option mistake: at the %%tile line, like the rest
            if type(err) is not UsageError:
                raise
            raise option_error(str(err), body) from None

    def _apply_defaults(self, opts: Any) -> None:
        """Options the cell leaves out take the ``%config TileMagics`` defaults."""
        if opts.arch is None and self.arch:
            opts.arch = self.arch
        if opts.show is None and self.show:
            opts.show = self.show

    # -- the two languages ---------------------------------------------------------------

    def _run_python(self, opts: Any, body: Cell) -> None:
        kernels = self._exec_body(body)
        chosen = choose(kernels, opts.kernel, "@ct.kernel function")
        if opts.explore is not None:
            self._explore(opts, body, kernels, chosen)
            return
        flags = [f for f in EXECUTION_FLAGS if getattr(opts, f)]
        ns = self.shell.user_ns
        args = eval_option(opts.args, "--args", body, ns) if opts.args is not None else None
        if opts.reproducer is not None:
            self._reproducer(opts, body, kernels, chosen, args)
        want_inspect = (opts.sig is not None or opts.show is not None
                        or (opts.args is not None and not flags))
        if (want_inspect or flags or opts.partition) and not chosen:
            raise CompileError("the cell defines no @ct.kernel function to inspect or run",
                               SourceLocation(body.label, 1, None, body.magic_line))
        if want_inspect and opts.panes != ():
            if opts.sig is None and args is None:
                raise UsageError("%%tile: inspecting needs --args or --sig")
            option = opts.sig if opts.sig is not None else opts.args
            for name in chosen:
                req = Request(kernels[name], args, opts.sig, arch=opts.arch, hints=opts.hints,
                              panes=opts.panes)
                try:
                    run(req, self._show)
                except SignatureError as err:
                    if err.location is None:  # caret under the item the message names
                        err.location = item_location(body, option, err.message)
                    raise
        if flags or opts.partition:
            if len(chosen) != 1:
                raise UsageError(f"%%tile: the cell defines kernels {', '.join(chosen)}: "
                                 f"pick the one to run with --kernel NAME")
            if (args is None or opts.grid is None) and not flags:
                # only --show ...,partition: nothing was asked to run, so say what the
                # diagram needs instead of failing the cell after the inspect view
                print("partition: add --grid and --args to draw which block touches which "
                      "tile (the diagram runs the kernel on the CPU emulator)")
                return
            if args is None or opts.grid is None:
                raise UsageError("%%tile: running a kernel needs --grid and --args")
            grid = eval_grid(opts.grid, body, ns)
            if set(flags) & {"emulate", "trace", "sanitize", "crosscheck"} or opts.partition:
                self._check_emulator_grid(grid, opts.grid, body)
            req = Request(kernels[chosen[0]], args, grid=grid, hints=opts.hints,
                          mode=flags[0] if flags else None, partition=opts.partition)
            try:
                run(req, self._show, max_steps=self.emulator_max_steps,
                    launch_fallback=self.launch_fallback)
            except TileLabError as err:  # a bad argument: point at what the user typed
                if re.match(r"argument \d+ \(", err.message):
                    err.location = item_location(body, opts.args, err.message) or err.location
                raise

    def _show(self, obj: Any) -> None:
        """Display ``obj``, and keep it for ``--export``."""
        display(obj)
        if getattr(self, "_shown", None) is not None:
            self._shown.append(obj)  # type: ignore[union-attr]

    def _reproducer(self, opts: Any, body: Cell, kernels: dict[str, Any], chosen: list[str],
                    args: tuple[Any, ...] | None) -> None:
        """``--reproducer DIR``: written before anything compiles, so a compile that fails
        (the main case) is in it."""
        if len(chosen) != 1:
            raise UsageError(f"%%tile: the cell defines kernels {', '.join(chosen)}: pick the "
                             "one to write a reproducer of with --kernel NAME")
        if args is None and opts.sig is None:
            raise UsageError("%%tile: --reproducer needs --args (example arrays) or --sig")
        grid = eval_grid(opts.grid, body, self.shell.user_ns) if opts.grid else None
        req = Request(kernels[chosen[0]], args, opts.sig, grid, opts.arch, opts.hints)
        print(write_reproducer(req, opts.reproducer).summary())

    def _check_emulator_grid(self, grid: tuple[int, ...], text: str, body: Cell) -> None:
        blocks = math.prod(grid)
        if blocks > self.emulator_max_blocks:
            raise SignatureError(
                f"--grid {grid} is {blocks:,} blocks: too many for the CPU emulator, which "
                f"runs blocks one after another (this notebook's limit: "
                f"{self.emulator_max_blocks:,})", option_location(body, text.strip()),
                hint="emulate a smaller problem (fewer, larger tiles), or raise the limit "
                     "with %config TileMagics.emulator_max_blocks = N")

    def _explore(self, opts: Any, body: Cell, kernels: dict[str, Any],
                 chosen: list[str]) -> None:
        """``--explore SPACE``: ``tile_lab.explore`` with --grid/--args as functions of cfg."""
        if len(chosen) != 1:
            raise UsageError(f"%%tile: the cell defines kernels {', '.join(chosen)}: "
                             f"pick the one to explore with --kernel NAME")
        ns = self.shell.user_ns
        items = eval_option(opts.explore, "--explore", body, ns)

        def grid_fn(cfg: Any) -> tuple[int, ...]:
            return eval_grid(opts.grid, body, ns, {"cfg": cfg})

        def args_fn(cfg: Any) -> tuple[Any, ...]:
            return eval_option(opts.args, "--args", body, ns, {"cfg": cfg})

        try:  # a mistake in --grid/--args fails the cell here, at its option
            display(explore(kernels[chosen[0]], items, grid_fn, args_fn))
        except SignatureError as err:
            if err.location is None:
                err.location = option_location(body, opts.explore.strip())
            raise

    def _run_cpp(self, opts: Any, body: Cell) -> None:
        from ..cpp import find_kernel_names, inspect_cpp, launch_cpp

        for option, why in CPP_REFUSED:
            if getattr(opts, option) not in (None, False):
                raise UsageError(f"%%tile --lang c++: {why}")
        cpu_only = [f for f in CPP_EMULATOR_FLAGS if getattr(opts, f)]
        if cpu_only:
            raise EmulatorUnsupported(
                f"--{cpu_only[0]}: the CPU emulator runs cuTile Python kernels only, "
                f"not CUDA Tile C++", SourceLocation(body.label, 1, None, body.magic_line),
                hint="write the kernel in Python to emulate it, or use --launch on a GPU")
        names = find_kernel_names(body.text)
        if not names:
            raise CompileError("the cell defines no __tile_global__ kernel",
                               SourceLocation(body.label, 1, None, body.magic_line))
        chosen = choose(dict.fromkeys(names), opts.kernel, "__tile_global__ kernel")
        if opts.partition:
            raise UsageError("%%tile --lang c++: the partition diagram needs the CPU "
                             "emulator, which runs Python kernels only")
        results = {}
        for name in chosen:
            insp = inspect_cpp(body.text, name, arch=opts.arch, filename=body.filename)
            results[name] = insp = insp.with_show(opts.panes) if opts.show is not None else insp
            self._show(insp)
        if opts.launch:
            if len(chosen) != 1:
                raise UsageError(f"%%tile: the cell defines kernels {', '.join(chosen)}: "
                                 f"pick the one to launch with --kernel NAME")
            if opts.args is None or opts.grid is None:
                raise UsageError("%%tile: launching needs --grid and --args")
            ns = self.shell.user_ns
            args = eval_option(opts.args, "--args", body, ns)
            grid = eval_grid(opts.grid, body, ns)
            launch_cpp(results[chosen[0]], chosen[0], grid, args)

    # -- cell registration and execution -------------------------------------------------

    def _register_cell(self, line: str, cell: str) -> Cell:
        shell = self.shell
        text = "\n" + cell  # the %%tile line is line 1, so body line k is cell line k+1
        number = running_cell_number(shell)
        filename = shell.compile.cache(text, number, raw_code=text)
        named = shell.compile.format_code_name(filename)
        label = " ".join(named) if named else filename
        return Cell(text=text, filename=filename, label=label,
                     magic_line=f"%%tile {line}".rstrip())

    def _exec_body(self, body: Cell) -> dict[str, Any]:
        """Run the body in the user namespace; return the kernels it (re)bound, in order."""
        from .._cutile_compat import is_kernel

        try:
            tree = ast.parse(body.text, body.filename)
            code = self.shell.compile(tree, body.filename, "exec")
        except SyntaxError as e:
            lineno = e.lineno or 1
            col = max(e.offset - 1, 0) if e.offset else None
            text = e.text.rstrip("\n") if e.text else line_of(body.text, lineno)
            raise CompileError(f"{type(e).__name__}: {e.msg}",
                               SourceLocation(body.label, lineno, col, text)) from None
        ns = self.shell.user_ns
        before = dict(ns)
        exec(code, ns)
        order = {name: i for i, name in enumerate(_bound_names(tree))}
        changed = [k for k, v in ns.items()
                   if (k not in before or before[k] is not v) and is_kernel(v)]
        changed.sort(key=lambda k: order.get(k, len(order)))
        return {k: ns[k] for k in changed}


# -- helpers ---------------------------------------------------------------------------

def _bound_names(tree: ast.Module) -> list[str]:
    """Names the cell binds at top level, in source order (function bodies excluded)."""
    names: list[str] = []

    class Visitor(ast.NodeVisitor):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
            names.append(node.name)  # its body binds nothing at top level

        visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

        def visit_ClassDef(self, node: ast.ClassDef) -> None:
            names.append(node.name)

        def visit_Lambda(self, node: ast.Lambda) -> None:
            pass

        def visit_Name(self, node: ast.Name) -> None:
            if isinstance(node.ctx, ast.Store):
                names.append(node.id)

        def visit_alias(self, node: ast.alias) -> None:
            names.append((node.asname or node.name).split(".")[0])

    Visitor().visit(tree)
    return list(dict.fromkeys(names))
