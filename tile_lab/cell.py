"""One ``%%tile`` cell, carried out: the core under the magic.

The magic registers the cell (:class:`Cell`: its body, ``Cell In[N]`` label and ``%%tile``
line as typed), parses its line and calls :func:`run_cell` with the notebook's namespace.
Here the options are resolved into a frozen :class:`~tile_lab.cell_options.CellOptions`,
the body runs in that namespace, the kernel is picked, ``--args``/``--grid`` are evaluated
there, and each kernel goes to :func:`tile_lab._run.run` as a frozen
:class:`~tile_lab.request.Request`: cuTile, ``@triton.jit`` and C++ kernels alike. Every
mistake becomes a :class:`~tile_lab.errors.TileLabError` at ``Cell In[N], line L`` with a
caret under what the user typed (the option, the argument item, the body line), never
IPython's cache filename.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from IPython.core.error import UsageError

from ._run import explore, run, write_reproducer
from .cell_options import (
    CPP_EMULATOR_FLAGS,
    CPP_LANGS,
    CPP_REFUSED,
    TRITON_LANGS,
    TRITON_REFUSED,
    CellOptions,
    Defaults,
    resolve_options,
)
from .errors import (
    CompileError,
    EmulatorUnsupported,
    OptionError,
    SignatureError,
    SourceLocation,
    TileLabError,
)
from .request import CppSource, Request

__all__ = ["Cell", "choose", "eval_grid", "eval_option", "item_location", "line_of",
           "option_error", "option_location", "relabel", "run_cell"]

Show = Callable[[Any], None]


@dataclass(frozen=True)
class Cell:
    """The cell body as registered: ``filename`` in linecache, ``label`` for messages."""

    text: str  # the body with one blank line first: line N here is cell line N
    filename: str
    label: str
    magic_line: str  # "%%tile --args ..." as the user typed it (line 1)
    # the shell's compiler (IPython's keeps the notebook's __future__ flags); a plain
    # compile where there is no shell
    compile: Callable[..., Any] = compile


def run_cell(body: Cell, parsed: Any, ns: dict[str, Any], display: Show,
             defaults: Defaults | None = None) -> None:
    """Carry out ``body`` with the parsed ``%%tile`` line ``parsed``, in the notebook
    namespace ``ns`` (a dict: the body is executed there). What the cell makes is handed to
    ``display``, and written to ``--export``'s file after the cell's last display."""
    defaults = defaults or Defaults()
    shown: list[Any] = []

    def show(obj: Any) -> None:
        display(obj)
        shown.append(obj)

    try:
        opts = resolve_options(parsed, defaults)
        if opts.lang.lower() in CPP_LANGS:
            _run_cpp(opts, body, ns, show)
        elif opts.lang.lower() in TRITON_LANGS:
            _run_triton(opts, body, ns, show)
        else:
            _run_python(opts, body, ns, show, display, defaults)
        if opts.export:
            from .share import export

            print(f"exported to {export(shown, opts.export)}")
    except TileLabError as err:  # any tile_lab error, whatever its class
        raise relabel(err, body) from None
    except UsageError as err:  # an option mistake: at the %%tile line, like the rest
        if type(err) is not UsageError:
            raise
        raise option_error(str(err), body) from None


# -- the three languages -------------------------------------------------------------------

def _run_python(opts: CellOptions, body: Cell, ns: dict[str, Any], show: Show, display: Show,
                defaults: Defaults) -> None:
    kernels = exec_body(body, ns)
    chosen = choose(kernels, opts.kernel, "@ct.kernel function")
    if opts.explore is not None:
        _explore(opts, body, ns, kernels, chosen, display)
        return
    flags = opts.flags
    args = eval_option(opts.args, "--args", body, ns) if opts.args is not None else None
    if opts.reproducer is not None:
        _reproducer(opts, body, ns, kernels, chosen, args)
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
                run(req, show)
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
            _check_emulator_grid(grid, opts.grid, body, defaults.max_blocks)
        req = Request(kernels[chosen[0]], args, grid=grid, hints=opts.hints,
                      mode=flags[0] if flags else None, partition=opts.partition,
                      settings=defaults.settings)
        try:
            run(req, show)
        except TileLabError as err:  # a bad argument: point at what the user typed
            if re.match(r"argument \d+ \(", err.message):
                err.location = item_location(body, opts.args, err.message) or err.location
            raise


def _reproducer(opts: CellOptions, body: Cell, ns: dict[str, Any], kernels: dict[str, Any],
                chosen: list[str], args: tuple[Any, ...] | None) -> None:
    """``--reproducer DIR``: written before anything compiles, so a compile that fails
    (the main case) is in it."""
    if len(chosen) != 1:
        raise UsageError(f"%%tile: the cell defines kernels {', '.join(chosen)}: pick the "
                         "one to write a reproducer of with --kernel NAME")
    if args is None and opts.sig is None:
        raise UsageError("%%tile: --reproducer needs --args (example arrays) or --sig")
    grid = eval_grid(opts.grid, body, ns) if opts.grid else None
    req = Request(kernels[chosen[0]], args, opts.sig, grid, opts.arch, opts.hints)
    print(write_reproducer(req, opts.reproducer).summary())


def _check_emulator_grid(grid: tuple[int, ...], text: str, body: Cell, limit: int) -> None:
    blocks = math.prod(grid)
    if blocks > limit:
        raise SignatureError(
            f"--grid {grid} is {blocks:,} blocks: too many for the CPU emulator, which "
            f"runs blocks one after another (this notebook's limit: {limit:,})",
            option_location(body, text.strip()),
            hint="emulate a smaller problem (fewer, larger tiles), or raise the limit "
                 "with %config TileMagics.emulator_max_blocks = N")


def _explore(opts: CellOptions, body: Cell, ns: dict[str, Any], kernels: dict[str, Any],
             chosen: list[str], display: Show) -> None:
    """``--explore SPACE``: ``tile_lab.explore`` with --grid/--args as functions of cfg."""
    if len(chosen) != 1:
        raise UsageError(f"%%tile: the cell defines kernels {', '.join(chosen)}: "
                         f"pick the one to explore with --kernel NAME")
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


def _run_cpp(opts: CellOptions, body: Cell, ns: dict[str, Any], show: Show) -> None:
    from .cpp import find_kernel_names

    for option, why in CPP_REFUSED:
        if getattr(opts, option) not in (None, False):
            raise UsageError(f"%%tile --lang c++: {why}")
    cpu_only = [f for f in opts.flags if f in CPP_EMULATOR_FLAGS]
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
    if not opts.launch:
        for name in chosen:
            run(Request(CppSource(body.text, name, body.filename), arch=opts.arch,
                        panes=opts.panes), show)
        return
    if len(chosen) != 1:  # checked before anything compiles
        raise UsageError(f"%%tile: the cell defines kernels {', '.join(chosen)}: "
                         f"pick the one to launch with --kernel NAME")
    if opts.args is None or opts.grid is None:
        raise UsageError("%%tile: launching needs --grid and --args")
    args = eval_option(opts.args, "--args", body, ns)
    grid = eval_grid(opts.grid, body, ns)
    # one request: the launch compiles the kernel and shows its Inspection first
    run(Request(CppSource(body.text, chosen[0], body.filename), args, grid=grid,
                arch=opts.arch, panes=opts.panes, mode="launch"), show)


def _run_triton(opts: CellOptions, body: Cell, ns: dict[str, Any], show: Show) -> None:
    """``--lang triton``: each ``@triton.jit`` kernel the cell (re)binds, compiled for
    ``--sig``/``--args`` and shown; ``--emulate`` runs one in Triton's interpreter."""
    from .triton import is_triton_kernel
    from .triton._require import require_triton

    for option, why in TRITON_REFUSED:
        if getattr(opts, option, None) not in (None, False):
            raise UsageError(f"%%tile --lang triton: {why}")
    if opts.partition:
        raise UsageError("%%tile --lang triton: the partition diagram needs the cuTile "
                         "emulator's trace")
    require_triton("%%tile --lang triton")
    kernels = exec_body(body, ns, is_triton_kernel)
    if not kernels:
        raise _no_triton_kernel(body, ns)
    chosen = choose(kernels, opts.kernel, "@triton.jit kernel")
    args = eval_option(opts.args, "--args", body, ns) if opts.args is not None else None
    if opts.sig is None and args is None and not opts.emulate:
        raise UsageError("%%tile --lang triton: inspecting needs --sig (e.g. \"*fp32, *fp32, "
                         "*fp32, i32, 1024\") or --args")
    if (opts.sig is not None or args is not None) and opts.panes != ():
        option = opts.sig if opts.sig is not None else opts.args
        for name in chosen:
            req = Request(kernels[name], args, opts.sig, arch=opts.arch, panes=opts.panes)
            try:
                run(req, show)
            except SignatureError as err:
                if err.location is None:  # caret under the item the message names
                    err.location = item_location(body, option, err.message)
                raise
    if opts.emulate:
        if len(chosen) != 1:
            raise UsageError(f"%%tile: the cell defines kernels {', '.join(chosen)}: pick the "
                             "one to run with --kernel NAME")
        if args is None or opts.grid is None:
            raise UsageError("%%tile --lang triton: --emulate needs --grid and --args")
        grid = eval_grid(opts.grid, body, ns)
        req = Request(kernels[chosen[0]], args, grid=grid, mode="emulate")
        run(req, show)
        print(f"ran {chosen[0]} over grid {grid} in Triton's interpreter (CPU)")


def _no_triton_kernel(body: Cell, ns: dict[str, Any]) -> CompileError:
    from ._cutile_compat import is_kernel

    tree = ast.parse(body.text)
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    cutile = [n for n in names if is_kernel(ns.get(n))]
    hint = (f"{cutile[0]} is a cuTile kernel (@ct.kernel): drop --lang triton" if cutile else
            "decorate the kernel with @triton.jit (import triton, triton.language as tl)")
    return CompileError("the cell defines no @triton.jit kernel",
                        SourceLocation(body.label, 1, None, body.magic_line), hint=hint)


# -- the body, run in the notebook; the kernel picked ----------------------------------------

def exec_body(body: Cell, ns: dict[str, Any],
              triton_kernel: Callable[[Any], bool] | None = None) -> dict[str, Any]:
    """Run the body in the namespace ``ns``; return the cuTile kernels it (re)bound, in order
    (with ``triton_kernel``: the Triton kernels its top-level ``def``s (re)bound)."""
    from ._cutile_compat import is_kernel

    try:
        tree = ast.parse(body.text, body.filename)
        code = body.compile(tree, body.filename, "exec")
    except SyntaxError as e:
        lineno = e.lineno or 1
        col = max(e.offset - 1, 0) if e.offset else None
        text = e.text.rstrip("\n") if e.text else line_of(body.text, lineno)
        raise CompileError(f"{type(e).__name__}: {e.msg}",
                           SourceLocation(body.label, lineno, col, text)) from None
    before = dict(ns)
    exec(code, ns)
    if triton_kernel is not None:
        defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        return {k: ns[k] for k in defined
                if triton_kernel(ns.get(k)) and before.get(k) is not ns.get(k)}
    order = {name: i for i, name in enumerate(_bound_names(tree))}
    changed = [k for k, v in ns.items()
               if (k not in before or before[k] is not v) and is_kernel(v)]
    changed.sort(key=lambda k: order.get(k, len(order)))
    return {k: ns[k] for k in changed}


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


def choose(found: dict[str, Any], wanted: str | None, what: str) -> list[str]:
    """The kernels to use: all the cell defines, or the one ``--kernel`` names."""
    if wanted is None:
        return list(found)
    if wanted not in found:
        have = ", ".join(found) or "none"
        raise UsageError(f"%%tile: --kernel {wanted}: the cell defines no {what} of that "
                         f"name (it defines: {have})")
    return [wanted]


# -- the options evaluated in the notebook; errors placed at the user's line -----------------

def line_of(text: str, lineno: int) -> str:
    lines = text.splitlines()
    return lines[lineno - 1] if 0 < lineno <= len(lines) else ""


def option_location(body: Cell, value: str, offset: int = 0) -> SourceLocation:
    """Line 1 (the ``%%tile`` line), caret under ``value`` (+offset) where it is found."""
    idx = body.magic_line.find(value)
    col = idx + offset if idx >= 0 else None
    return SourceLocation(body.label, 1, col, body.magic_line)


def item_location(body: Cell, option_text: str, message: str) -> SourceLocation | None:
    """The ``%%tile`` line with the caret under the comma-separated item of ``option_text``
    that ``message`` names ("argument 2 (...)", "spec item 2"); None when it names none."""
    m = re.search(r"\b(?:argument|item) (\d+)\b", message)
    if m is None:
        return None
    wanted, depth, start, items = int(m.group(1)), 0, 0, []
    for i, ch in enumerate(option_text + ","):
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            items.append(start + len(option_text[start:i]) - len(option_text[start:i].lstrip()))
            start = i + 1
    if not 1 <= wanted <= len(items):
        return None
    return option_location(body, option_text.strip(), items[wanted - 1]
                            - (len(option_text) - len(option_text.lstrip())))


def eval_option(value: str, option: str, body: Cell, ns: dict[str, Any],
                 local: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """Evaluate a comma-separated list of expressions in the user namespace (and ``local``
    names, e.g. ``cfg`` for --explore, which shadow nothing in the notebook)."""
    text = value.strip().rstrip(",")
    if not text:
        return ()
    try:
        tree = ast.parse(f"({text},)", mode="eval")
    except SyntaxError as e:
        off = max((e.offset or 1) - 2, 0)  # -1 for 1-based, -1 for the "(" we added
        raise SignatureError(f"{option} is not a list of Python expressions: {e.msg}",
                             option_location(body, text, off)) from None
    try:
        return tuple(eval(compile(tree, f"<{option}>", "eval"), ns, local))
    except NameError as e:
        name = getattr(e, "name", None) or ""
        m = re.search(rf"\b{re.escape(name)}\b", text) if name else None
        raise SignatureError(f"{option}: name {name!r} is not defined in the notebook",
                             option_location(body, text, m.start() if m else 0),
                             hint="define it in a cell above, then run this cell again"
                             ) from None
    except Exception as e:
        raise SignatureError(f"{option}: evaluating {text!r} raised "
                             f"{type(e).__name__}: {e}", option_location(body, text)
                             ) from None


def eval_grid(value: str, body: Cell, ns: dict[str, Any],
               local: dict[str, Any] | None = None) -> tuple[int, ...]:
    """``--grid``: an int or a tuple of 1-3 positive ints, evaluated in the namespace."""
    items = eval_option(value, "--grid", body, ns, local)
    if len(items) == 1 and isinstance(items[0], (tuple, list)):
        items = tuple(items[0])  # "(8, 4)" is one tuple-valued expression
    ok = 1 <= len(items) <= 3 and all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in items)
    if not ok:
        raise SignatureError(f"--grid must be 1 to 3 positive ints, e.g. \"(8,)\", "
                             f"got {items!r}", option_location(body, value.strip()))
    return tuple(int(v) for v in items)


def option_error(message: str, body: Cell) -> OptionError:
    """An OptionError at the ``%%tile`` line, the caret under the first option the message
    names, or just after the line when the option is missing from it."""
    text = message.removeprefix("%%tile: ")
    col = None
    said = text.split(": ", 1)[1] if text.startswith("%%tile --") else text  # skip "--lang c++:"
    named = re.search(r"--[a-z+]+", said)
    if named is not None:  # under that option, or after the line when it is missing there
        idx = body.magic_line.find(named.group(0))
        col = idx if idx >= 0 else len(body.magic_line) + 1
    hint = ("%%tile? lists the options" if "unrecognized arguments" in text
            or "expected one argument" in text else None)
    text = text if text.startswith("%%tile") else f"%%tile: {text}"
    return OptionError(text, SourceLocation(body.label, 1, col, body.magic_line), hint=hint)


def relabel(err: TileLabError, body: Cell) -> TileLabError:
    """Show the cell's label instead of IPython's cache filename, and the line text; an
    error that names no place (a refusal, a missing GPU) points at the ``%%tile`` line."""
    if err.hint and body.filename in err.hint:  # e.g. nvcc's full diagnostics
        err.hint = err.hint.replace(body.filename, body.label)
    loc = err.location
    if loc is None:  # e.g. a refusal: under the option the message is about, if it says
        words = re.findall(r"\b(grid|hint|arch|args|sig|kernel)s?\b", err.message)
        col = next((i for i in (body.magic_line.find(f"--{w}{'s' * (w == 'hint')}")
                                for w in words) if i >= 0), None)
        err.location = SourceLocation(body.label, 1, col, body.magic_line)
    elif loc.filename == body.filename:
        text = loc.text if loc.text is not None else line_of(body.text, loc.line)
        err.location = replace(loc, filename=body.label, text=text)
    return err
