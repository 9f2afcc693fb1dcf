"""Build ``notebooks/*.ipynb`` from their readable sources in ``notebooks/src/*.py``.

Sources use jupytext's "percent" format: ``# %%`` starts a code cell, ``# %% [markdown]`` a
markdown cell (its lines written as ``# text``). jupytext reads and writes that format; this
tool only adds what the tutorials need on top: stable cell ids (``NN-cc``) so rebuilds and nbval
stay quiet, a Python 3 kernelspec, no jupytext bookkeeping in the notebooks, and execution.
Outputs are produced by executing the built notebook (``--execute``), which is what nbval later
compares against; only the outputs of cells marked ``# NBVAL_CHECK_OUTPUT`` are stored.

    python tools/build_notebooks.py              # rebuild every notebook (no outputs)
    python tools/build_notebooks.py --execute 11 # rebuild notebook 11 and execute it in place
    python tools/build_notebooks.py --check      # fail if a notebook's cells differ from its source
    python tools/build_notebooks.py --to-source 11  # write notebooks/src/11_*.py from the .ipynb
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "notebooks" / "src"
OUT = ROOT / "notebooks"
FORMAT = "py:percent"
# the notebook metadata a committed notebook keeps (from_source writes exactly these)
KEPT_METADATA = ("kernelspec", "language_info")


def from_source(src: Path) -> nbformat.NotebookNode:
    """The notebook a source describes: its cells, stable ids, no outputs."""
    nb = jupytext.read(src, fmt=FORMAT)
    nb.metadata = nbformat.NotebookNode(
        kernelspec={"name": "python3", "display_name": "Python 3", "language": "python"},
        language_info={"name": "python"})
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("lines_to_next_cell", None)  # jupytext's layout hint for writing .py
        cell["id"] = f"{src.stem[:2]}-{i:02d}"  # stable ids keep diffs and nbval quiet
    nbformat.validate(nb)
    return nb


def build(src: Path) -> Path:
    out = OUT / f"{src.stem}.ipynb"
    nbformat.write(from_source(src), out)
    return out


def differences(src: Path) -> list[str]:
    """How the committed notebook's cells differ from its source (empty when in sync)."""
    out = OUT / f"{src.stem}.ipynb"
    if not out.exists():
        return [f"{out.name} is missing"]
    want = from_source(src).cells
    notebook = nbformat.read(out, as_version=4)
    extra = sorted(set(notebook.metadata) - set(KEPT_METADATA))
    if extra:
        return [f"{out.name} carries notebook metadata {', '.join(extra)} (rebuild it)"]
    have = notebook.cells
    if len(want) != len(have):
        return [f"{out.name}: {len(have)} cells, the source has {len(want)}"]
    return [f"{out.name} cell {i} ({w.cell_type}) differs from the source"
            for i, (w, h) in enumerate(zip(want, have))
            if (w.cell_type, w.source) != (h.cell_type, h.source)]


def to_source(notebook: Path, src: Path) -> None:
    """Write a notebook edited in Jupyter back to its percent-format source (outputs dropped)."""
    nb = nbformat.read(notebook, as_version=4)
    # Magics stay plain (``%%tile``, as the sources write them); no jupytext header.
    nb.metadata = nbformat.NotebookNode(jupytext={
        "comment_magics": False, "notebook_metadata_filter": "-all",
        "cell_metadata_filter": "-all"})
    jupytext.write(nb, src, fmt=FORMAT)


CHECKED = "NBVAL_CHECK_OUTPUT"


def execute(out: Path, *, keep_all_outputs: bool = False) -> None:
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook",
                    "--execute", "--inplace", "--ExecutePreprocessor.timeout=600", str(out)],
                   check=True, cwd=OUT)
    nb = nbformat.read(out, as_version=4)
    # The widgets' saved state (tens of kB for a notebook with sliders) belongs to outputs
    # that are not stored (below); a run re-creates it.
    nb.metadata = nbformat.NotebookNode(
        {k: v for k, v in nb.metadata.items() if k in KEPT_METADATA})
    for cell in nb.cells:
        # Execution metadata (timestamps) would make every rebuild a diff.
        cell.get("metadata", {}).pop("execution", None)
        # Only the outputs nbval compares are stored: the pictures and inspect views are
        # re-made when the notebook runs, and stored they would make the repository too large
        # to travel to the GPU machine beside its toolchain (and every rebuild a big diff).
        if cell.cell_type == "code" and CHECKED not in cell.source and not keep_all_outputs:
            cell.outputs = []
            cell.execution_count = None
    nbformat.write(nb, out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="execute after building")
    mode.add_argument("--check", action="store_true", help="only compare notebooks with sources")
    mode.add_argument("--to-source", action="store_true",
                      help="write the sources from the notebooks (after editing in Jupyter)")
    ap.add_argument("--keep-all-outputs", action="store_true",
                    help="with --execute: store every cell's output, not only the checked ones")
    ap.add_argument("names", nargs="*", help="source stems or number prefixes (default: all)")
    ns = ap.parse_args()
    sources = sorted(SRC.glob("*.py"))
    if ns.names:
        sources = [s for s in sources if any(s.stem.startswith(n) for n in ns.names)]
    if ns.check:
        problems = [p for src in sources for p in differences(src)]
        print("\n".join(problems) or f"{len(sources)} notebooks match their sources")
        return 1 if problems else 0
    for src in sources:
        if ns.to_source:
            to_source(OUT / f"{src.stem}.ipynb", src)
            print("wrote", src.relative_to(ROOT))
            continue
        out = build(src)
        print("built", out.relative_to(ROOT))
        if ns.execute:
            execute(out, keep_all_outputs=ns.keep_all_outputs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
