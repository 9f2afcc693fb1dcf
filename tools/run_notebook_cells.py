"""Run notebooks top to bottom in one IPython shell each, without a Jupyter server.

For machines that have IPython but not nbconvert/ipykernel (the lent GPU image): every code cell
is run with ``InteractiveShell.run_cell`` (magics included); a cell that raises fails the
notebook. Prints one line per notebook and exits non-zero if any failed.

    cd notebooks && python ../tools/run_notebook_cells.py *.ipynb
"""

from __future__ import annotations

import json
import os
import sys
import time


def run_notebook(path: str) -> tuple[bool, str]:
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    os.environ.setdefault("MPLBACKEND", "Agg")
    with open(path, encoding="utf-8") as f:
        cells = [c for c in json.load(f)["cells"] if c["cell_type"] == "code"]
    for i, cell in enumerate(cells):
        src = "".join(cell["source"])
        result = shell.run_cell(src, store_history=True)
        if not result.success:
            err = result.error_in_exec or result.error_before_exec
            return False, f"cell {i + 1}: {type(err).__name__}: {err}"
    return True, f"{len(cells)} cells"


def main(paths: list[str]) -> int:
    failed = 0
    for p in paths:
        t0 = time.perf_counter()
        ok, msg = run_notebook(p)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {p} ({msg}, {time.perf_counter() - t0:.1f} s)",
              flush=True)
    print(f"{len(paths) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
