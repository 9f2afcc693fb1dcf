"""Build ``notebooks/*.ipynb`` from their readable sources in ``notebooks/src/*.py``.

Sources use the "percent" cell format: ``# %%`` starts a code cell, ``# %% [markdown]`` a markdown
cell (its lines written as ``# text``). Outputs are produced by executing the built notebook
(``--execute``), which is what nbval later compares against.

    python tools/build_notebooks.py            # rebuild every notebook (no outputs)
    python tools/build_notebooks.py --execute  # rebuild and execute in place (stores outputs)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "notebooks" / "src"
OUT = ROOT / "notebooks"


def parse_percent(text: str) -> list[nbformat.NotebookNode]:
    cells: list[nbformat.NotebookNode] = []
    kind, lines = None, []

    def flush() -> None:
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(ln[2:] if ln.startswith("# ") else ln.lstrip("#")
                             for ln in body.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(body))
        else:
            cells.append(nbformat.v4.new_code_cell(body))

    for line in text.splitlines():
        if line.startswith("# %%"):
            flush()
            kind = "markdown" if "[markdown]" in line else "code"
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    return cells


def build(src: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = parse_percent(src.read_text())
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{src.stem[:2]}-{i:02d}"  # stable ids keep diffs and nbval quiet
    out = OUT / f"{src.stem}.ipynb"
    nbformat.write(nb, out)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--execute", action="store_true")
    ap.add_argument("names", nargs="*", help="source stems to build (default: all)")
    ns = ap.parse_args()
    sources = sorted(SRC.glob("*.py"))
    if ns.names:
        sources = [s for s in sources if any(s.stem.startswith(n) for n in ns.names)]
    for src in sources:
        out = build(src)
        print("built", out.relative_to(ROOT))
        if ns.execute:
            subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook",
                            "--execute", "--inplace", "--ExecutePreprocessor.timeout=600",
                            str(out)], check=True, cwd=OUT)
            _strip_volatile(out)
    return 0


def _strip_volatile(path: Path) -> None:
    # Execution metadata (timestamps) would make every rebuild a diff.
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        cell.get("metadata", {}).pop("execution", None)
    nbformat.write(nb, path)


if __name__ == "__main__":
    raise SystemExit(main())
