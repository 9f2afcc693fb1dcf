"""Peak resident memory of each tutorial notebook's kernel (mybinder.org gives 2 GB).

Each notebook runs top to bottom in a fresh Python kernel (nbclient, as nbval and nbconvert
run it); a cell appended to it reads, from inside the kernel:

* ``kernel``: the kernel process's own peak resident set (``VmHWM`` in ``/proc/self/status``);
* ``children``: the largest peak of any child process it waited for (tileiras, ptxas, nvcc,
  nbconvert helpers...; ``getrusage(RUSAGE_CHILDREN).ru_maxrss``). A child runs beside the
  kernel, so ``kernel + children`` bounds what the container held at once from above.

    python bench/notebook_memory.py                  # every notebook, a markdown table
    python bench/notebook_memory.py 02 11 --json out.json

Each kernel starts with an empty cache of cuTile's verdicts (``TILE_LAB_FRONTEND_CACHE`` set
to a fresh folder), as a first visit to Binder does: with the cache warm, cuTile's compiler
is skipped and the kernel stays far smaller. ``--no-torch`` hides torch from the kernel
(``sys.modules['torch'] = None``), as in an environment with tile_lab alone: cuTile's
compiler imports torch, when installed, to recognise torch dtypes (about 480 MB). Binder's
environment (``binder/postBuild``) installs CPU torch and Triton for notebook 19, so the
default measures what Binder runs.

Linux only (``/proc``). The notebooks run on the CPU (the emulator) where there is no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
BINDER_BYTES = 2 * 1000**3  # mybinder.org's limit (2 GB)
TARGET_BYTES = 1.5 * 1000**3

PROBE = """\
import json as _json, resource as _resource
_hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]
print('TILE_LAB_MEMORY', _json.dumps({
    'kernel': int(_hwm) * 1024,
    'children': _resource.getrusage(_resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""


NO_TORCH = "import sys as _sys\n_sys.modules['torch'] = None  # as if torch were not installed\n"


def measure(path: Path, *, no_torch: bool = False, timeout: int = 900) -> dict:
    """Run ``path`` in a fresh kernel; its peak memory and how long it ran."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    if no_torch:
        nb.cells.insert(0, nbformat.v4.new_code_cell(NO_TORCH))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tile_lab_frontend_") as cache:
        os.environ["TILE_LAB_FRONTEND_CACHE"] = cache  # the kernel inherits it
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    seconds = time.perf_counter() - started
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    line = next(ln for ln in text.splitlines() if ln.startswith("TILE_LAB_MEMORY "))
    return {"notebook": path.name, "seconds": round(seconds, 1),
            **json.loads(line.split(" ", 1)[1])}


def table(rows: list[dict]) -> str:
    out = ["| notebook | kernel peak RSS | largest child peak | sum | run time |",
           "| --- | --- | --- | --- | --- |"]
    for r in rows:
        total = r["kernel"] + r["children"]
        out.append(f"| {r['notebook']} | {r['kernel'] / 1e6:,.0f} MB | "
                   f"{r['children'] / 1e6:,.0f} MB | {total / 1e6:,.0f} MB | "
                   f"{r['seconds']:.0f} s |")
    worst = max(rows, key=lambda r: r["kernel"])
    out.append(f"\nlargest kernel: {worst['notebook']} at {worst['kernel'] / 1e6:,.0f} MB "
               f"(target <= {TARGET_BYTES / 1e6:,.0f} MB; Binder gives "
               f"{BINDER_BYTES / 1e6:,.0f} MB)")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("names", nargs="*", help="notebook number prefixes (default: all)")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--no-torch", action="store_true",
                    help="hide torch from the kernel, as where only tile_lab is installed")
    ns = ap.parse_args()
    paths = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if ns.names:
        paths = [p for p in paths if any(p.name.startswith(n) for n in ns.names)]
    rows = []
    for p in paths:
        row = measure(p, no_torch=ns.no_torch)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print(table(rows))
    if ns.json:
        from tile_lab.record_files import write_record

        write_record(ns.json, json.dumps(rows, indent=1) + "\n")  # .gz: gzipped
    worst = max(r["kernel"] for r in rows)
    return 0 if worst <= TARGET_BYTES else 1


if __name__ == "__main__":
    raise SystemExit(main())
