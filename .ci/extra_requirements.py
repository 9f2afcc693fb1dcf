"""Print one optional-dependency group of pyproject.toml, one requirement a line, leaving
out the packages named after ``--without``: ``python .ci/extra_requirements.py test
--without torch``. .ci/run installs the test extra this way after torch's CPU build, whose
version the extra's CUDA-only bound would otherwise replace (.ci/torch-cpu.txt says why)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (tile_lab's oldest): the TOML reader pip carries
    from pip._vendor import tomli as tomllib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("extra", help="the optional-dependency group, e.g. test")
    parser.add_argument("--without", nargs="*", default=[], metavar="PACKAGE",
                        help="packages to leave out")
    opts = parser.parse_args()
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    if opts.extra not in extras:
        parser.error(f"pyproject.toml has no extra {opts.extra!r} (it has "
                     f"{', '.join(sorted(extras))})")
    left_out = {_normalized(name) for name in opts.without}
    for requirement in extras[opts.extra]:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        if name is None or _normalized(name.group(0)) not in left_out:
            print(requirement)


def _normalized(name: str) -> str:
    """A project name as package indexes compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


if __name__ == "__main__":
    main()
