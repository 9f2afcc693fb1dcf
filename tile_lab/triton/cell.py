"""``%%tile --lang triton``: a cell of ``@triton.jit`` kernels, inspected (and run on the CPU).

The magic hands the parsed options and the registered cell here. The cell runs in the
notebook namespace; each ``@triton.jit`` kernel it (re)binds is compiled with ``--sig`` (a spec
in Triton's notation, ``"*fp32, *fp32, *fp32, i32, 1024"``) or ``--args`` (example arrays and
scalars) for ``--arch`` (default sm_90) and shown in the inspect view (panes ``source``,
``ttir``, ``ttgir``, ``ptx``, ``sass``). ``--emulate --grid G --args ...`` then runs it through
Triton's interpreter on the CPU. Errors point at the cell line, as for cuTile cells.
"""

from __future__ import annotations

import ast
from typing import Any

from IPython.core.error import UsageError

from ..errors import CompileError, SignatureError, SourceLocation
from ..magic.cells import Cell, eval_grid, eval_option, item_location, line_of
from ..magic.options import choose
from .kernel import is_triton_kernel

__all__ = ["TRITON_REFUSED", "run_triton_cell"]

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


def _exec_cell(shell: Any, body: Cell) -> dict[str, Any]:
    """Run the cell in the notebook namespace; the Triton kernels it (re)bound, in order."""
    try:
        tree = ast.parse(body.text, body.filename)
        code = shell.compile(tree, body.filename, "exec")
    except SyntaxError as e:
        lineno = e.lineno or 1
        col = max(e.offset - 1, 0) if e.offset else None
        text = e.text.rstrip("\n") if e.text else line_of(body.text, lineno)
        raise CompileError(f"{type(e).__name__}: {e.msg}",
                           SourceLocation(body.label, lineno, col, text)) from None
    ns = shell.user_ns
    before = dict(ns)
    exec(code, ns)
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    return {k: ns[k] for k in defined
            if is_triton_kernel(ns.get(k)) and before.get(k) is not ns.get(k)}


def _no_kernel(shell: Any, body: Cell) -> CompileError:
    from .._cutile_compat import is_kernel

    ns = shell.user_ns
    tree = ast.parse(body.text)
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    cutile = [n for n in names if is_kernel(ns.get(n))]
    hint = (f"{cutile[0]} is a cuTile kernel (@ct.kernel): drop --lang triton" if cutile else
            "decorate the kernel with @triton.jit (import triton, triton.language as tl)")
    return CompileError("the cell defines no @triton.jit kernel",
                        SourceLocation(body.label, 1, None, body.magic_line), hint=hint)


def run_triton_cell(magics: Any, opts: Any, body: Cell) -> None:
    """The ``--lang triton`` cell: ``magics`` is the TileMagics instance (its shell, its
    ``_show`` for display and ``--export``)."""
    from ._require import require_triton
    from .build import inspect_triton
    from .interpret import run_triton_cpu

    for option, why in TRITON_REFUSED:
        if getattr(opts, option, None) not in (None, False):
            raise UsageError(f"%%tile --lang triton: {why}")
    show = opts.panes  # check_options parsed --show against the Triton panes
    if opts.partition:
        raise UsageError("%%tile --lang triton: the partition diagram needs the cuTile "
                         "emulator's trace")
    require_triton("%%tile --lang triton")
    kernels = _exec_cell(magics.shell, body)
    if not kernels:
        raise _no_kernel(magics.shell, body)
    chosen = choose(kernels, opts.kernel, "@triton.jit kernel")
    ns = magics.shell.user_ns
    args = eval_option(opts.args, "--args", body, ns) if opts.args is not None else None
    spec = opts.sig if opts.sig is not None else args
    if spec is None and not opts.emulate:
        raise UsageError("%%tile --lang triton: inspecting needs --sig (e.g. \"*fp32, *fp32, "
                         "*fp32, i32, 1024\") or --args")
    if spec is not None and show != ():
        option = opts.sig if opts.sig is not None else opts.args
        for name in chosen:
            try:
                insp = inspect_triton(kernels[name], spec, arch=opts.arch, show=show)
            except SignatureError as err:
                if err.location is None:  # caret under the item the message names
                    err.location = item_location(body, option, err.message)
                raise
            magics._show(insp)
    if opts.emulate:
        if len(chosen) != 1:
            raise UsageError(f"%%tile: the cell defines kernels {', '.join(chosen)}: pick the "
                             "one to run with --kernel NAME")
        if args is None or opts.grid is None:
            raise UsageError("%%tile --lang triton: --emulate needs --grid and --args")
        grid = eval_grid(opts.grid, body, ns)
        run_triton_cpu(kernels[chosen[0]], grid, args)
        print(f"ran {chosen[0]} over grid {grid} in Triton's interpreter (CPU)")
