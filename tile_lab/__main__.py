"""Command line: ``python -m tile_lab doctor`` (also installed as ``tile-lab``);
``tile-lab export notebook.ipynb [-o out.html]`` writes a notebook's tile_lab views to one
self-contained HTML file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


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
    args = parser.parse_args(argv)

    if args.command == "doctor":
        from ._doctor import doctor

        report = doctor()
        print(report)
        return 0 if report.ok else 1
    if args.command == "version":
        from . import __version__
        from .toolchain import tool_versions

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
    return 2  # unreachable: argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
