"""Command line: ``python -m tile_lab doctor`` (also installed as ``tile-lab``);
``tile-lab export notebook.ipynb [-o out.html]`` writes a notebook's tile_lab views to one
self-contained HTML file; ``tile-lab inspect kernels.py KERNEL --sig SPEC`` prints what the
compiler made of a kernel, pane by pane (a :class:`~tile_lab.request.Request` handed to the
core, as a ``%%tile`` cell's is)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status (1 when the doctor finds an error)."""
    # allow_abbrev=False everywhere: "--out" is refused rather than taken as --output
    parser = argparse.ArgumentParser(prog="tile-lab", description="tile_lab command line",
                                     allow_abbrev=False)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="check the toolchain, the GPU and known environment traps",
                   allow_abbrev=False)
    sub.add_parser("version", help="print the versions of tile_lab, cuda.tile and the tools",
                   allow_abbrev=False)
    exp = sub.add_parser("export", help="write every tile_lab view of a notebook to one "
                                        "self-contained HTML file (opens offline)",
                         allow_abbrev=False)
    exp.add_argument("notebook", help="a .ipynb file")
    exp.add_argument("-o", "--output", help="the HTML file (default: NOTEBOOK with .html)")
    ins = sub.add_parser("inspect", help="compile a @ct.kernel of a Python file for a signature "
                                         "and print its panes (no GPU needed)",
                         allow_abbrev=False)
    ins.add_argument("file", help="a .py file defining the kernel (it is run, as a script)")
    ins.add_argument("kernel", help="the @ct.kernel function's name in that file")
    ins.add_argument("--sig", required=True, metavar="SPEC",
                     help='signature without arrays: "f32[4096], f32[4096], f32[4096], 128"')
    ins.add_argument("--arch", help="target GPU, e.g. sm_90 (default: the local GPU's, "
                                    "else sm_100)")
    ins.add_argument("--hints", help="kernel hints, e.g. num_ctas=2,occupancy=4")
    ins.add_argument("--show", help="panes, e.g. source,tileir,sass (default: the "
                                    "inspect view's)")
    args = parser.parse_args(argv)

    if args.command == "doctor":
        from ._doctor import doctor

        report = doctor()
        print(report)
        return 0 if report.ok else 1
    if args.command == "version":
        from . import __version__
        from .compile.toolchain import tool_versions

        print(f"tile_lab {__version__}")
        for name, version in tool_versions().items():
            print(f"{name} {version}")
        return 0
    if args.command == "export":
        from .errors import FileFormatError
        from .share.notebook import export_notebook

        try:
            print(export_notebook(args.notebook, args.output).summary())
        except FileFormatError as e:
            print(f"tile-lab export: {e.render()}", file=sys.stderr)
            return 1
        return 0
    if args.command == "inspect":
        return _inspect(args)
    return 2  # unreachable: argparse rejects unknown commands


def _inspect(args: argparse.Namespace) -> int:
    import runpy

    from ._run import run
    from .compile.inspect import parse_show
    from .errors import TileLabError
    from .request import Request

    try:
        defined = runpy.run_path(args.file, run_name="__tile_lab_inspect__")
    except OSError as e:
        print(f"tile-lab inspect: cannot read {args.file}: {e}", file=sys.stderr)
        return 1
    if args.kernel not in defined:
        print(f"tile-lab inspect: {args.file} defines no {args.kernel!r}", file=sys.stderr)
        return 1
    try:
        req = Request(defined[args.kernel], sig=args.sig, arch=args.arch, hints=args.hints,
                      panes=parse_show(args.show))
        run(req, _print_panes)
    except TileLabError as e:
        print(f"tile-lab inspect: {e.render()}", file=sys.stderr)
        return 1
    return 0


def _print_panes(insp: Any) -> None:
    """An Inspection as plain text: each shown pane under its name."""
    for pane in insp.show:
        if pane == "source":
            text = insp.source
        elif pane == "remarks":
            text = "\n".join(f"line {r.line}: {r.kind} {r.category}: {r.message}"
                             for r in insp.remarks)
        elif pane in insp.stages:
            text = insp.stages[pane].text
        else:
            continue  # a stage this kernel has none of (Triton's, for a cuTile kernel)
        print(f"== {pane} ==")
        print(text.rstrip("\n"))


if __name__ == "__main__":
    sys.exit(main())
