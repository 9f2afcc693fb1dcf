"""Every kernel we have, on the GPU and on the emulator: ``tile_lab.crosscheck`` per kernel.

Sources: every kernel of ``tile_lab.examples`` (GEMMs, attention, norms, decode attention —
with V padded by whatever memory holds, aligned and 2 bytes off alignment, and with V padded
with zeros — and the 17 puzzle solutions); every kernel the tutorials launch
(``notebooks/src/*.py``, recorded by running each notebook on the emulator in a subprocess:
``bench/tutorial_launches.py``); the test corpus (``tests/corpus``: ``correct`` and the
sample-style kernels of ``samples``).

Prints one row per kernel — source, kernel, outputs compared, tiles, agreement — and every
disagreement with its class and reason; writes the rows, the device's provenance and each full
crosscheck as JSON (``--json``). Exits 1 when any crosscheck finds a mismatch (an emulator
bug) or fails to run.

    python bench/crosscheck_all.py --json $OUT/crosscheck.json
    python bench/crosscheck_all.py --dry-run --only examples corpus   # CPU: the emulator
        # (zero padding) stands in for the GPU, to check the script, not the emulator
    python bench/crosscheck_all.py --rejudge results/crosscheck_*.json.gz --only examples corpus
        # CPU: a recorded GPU run's differences against today's budget
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import io
import json
import math
import os
import pickle
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(HERE)]

SOURCES = ("examples", "tutorials", "corpus")


@dataclass
class Item:
    source: str
    name: str
    kernel: Any
    grid: tuple[int, ...]
    args: tuple


# ---- tile_lab.examples ---------------------------------------------------------------------

def example_items() -> list[Item]:
    from tile_lab.examples import attention, decode, gemm, norms, puzzle_solutions, puzzles

    rng = np.random.default_rng(0)
    h16 = lambda *s: rng.standard_normal(s).astype(np.float16)  # noqa: E731
    items = []
    for name in ("gemm_naive", "gemm_grouped", "gemm_persistent"):
        k = getattr(gemm, name)
        # ragged M and N (stores clip); K a multiple of TK, as these kernels assume
        a, b, c = h16(200, 128), h16(128, 264), np.zeros((200, 264), np.float16)
        extra = () if name == "gemm_naive" else (4, 2)
        grid = (math.ceil(200 / 64), math.ceil(264 / 64)) if name == "gemm_naive" else \
            ((math.ceil(200 / 64) * math.ceil(264 / 64),) if name == "gemm_grouped" else (5,))
        items.append(Item("examples", f"gemm.{name}", k, grid, (a, b, c, 64, 64, 32, *extra)))
    scale = attention.LOG2_E / math.sqrt(64)
    for causal in (0, 1):
        q, kk, v = (h16(2, 256, 64) for _ in range(3))  # seq a multiple of the tiles
        items.append(Item("examples", f"attention.flash_attention causal={causal}",
                          attention.flash_attention, attention.grid(q.shape, 64),
                          (q, kk, v, np.zeros_like(q), scale, 64, 32, 64, causal)))
        items.append(Item("examples", f"attention.flash_attention_tuned causal={causal}",
                          attention.flash_attention_tuned, attention.grid(q.shape, 64),
                          (q, kk, v, np.zeros_like(q), scale, 64, 32, 64, causal, 2)))
    x, w = h16(50, 200), h16(200)
    items.append(Item("examples", "norms.rms_norm", norms.rms_norm, (13,),
                      (x, w, np.zeros_like(x), 1e-6, 4, 256)))
    cos, sin = norms.rope_angles(100, 64)
    xr = h16(3, 100, 64)
    items.append(Item("examples", "norms.rope", norms.rope, (4, 3),
                      (xr, cos, sin, np.zeros_like(xr), 32, 64)))
    for misaligned, zero in ((False, False), (True, False), (True, True)):
        q, k, v, o = decode.decode_inputs(misaligned=misaligned)
        grid, args = decode.decode_launch(q, k, v, o, zero_pad=zero)
        label = f"decode.decode_attention {'2 bytes off' if misaligned else 'aligned'}" + \
            (", V zero-padded" if zero else "")
        items.append(Item("examples", label, decode.decode_attention, grid, args))
    for p in puzzles.PUZZLES:
        items.append(_puzzle_item(p, puzzle_solutions.SOLUTIONS[p.number]))
    return items


def _puzzle_item(p: Any, kernel: Any) -> Item:
    rng = np.random.default_rng(p.number)
    dt = np.dtype(p.dtype)
    arrays = []
    for s in p.shapes[:-1]:
        if dt.kind == "f":
            arrays.append(rng.standard_normal(s).astype(dt))
        else:
            arrays.append(rng.integers(0, 100, size=s).astype(dt))
    out = np.zeros(p.shapes[-1], dt)
    return Item("examples", f"puzzle {p.number}: {p.title}", kernel, tuple(p.grid),
                (*arrays, out, *p.constants))


# ---- the test corpus -------------------------------------------------------------------------

def corpus_items() -> list[Item]:
    from corpus import correct, samples

    items = []
    for mod in (correct, samples):
        for case in mod.CASES:
            grid, args = case.build()
            items.append(Item(f"corpus.{mod.__name__.split('.')[-1]}", case.name, case.kernel,
                              grid, args))
    return items


# ---- the tutorials ---------------------------------------------------------------------------

def tutorial_items(timeout: float, workers: int, only: list[str] | None = None
                   ) -> tuple[list[Item], list[str]]:
    """Record every notebook's launches in parallel subprocesses; (items, problems)."""
    from tutorial_launches import rebuild

    notebooks = [nb for nb in sorted((ROOT / "notebooks" / "src").glob("*.py"))
                 if not only or any(nb.stem.startswith(o) for o in only)]
    tmp = Path(tempfile.mkdtemp(prefix="tile_lab_tutorials_"))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def one(nb: Path) -> tuple[Path, str | None]:
        out = tmp / f"{nb.stem}.pkl"
        try:
            subprocess.run([sys.executable, str(HERE / "tutorial_launches.py"), str(nb),
                            str(out)], env=env, timeout=timeout, cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            return out, None
        except subprocess.TimeoutExpired:
            return out, f"{nb.stem}: stopped after {timeout:.0f} s; kernels launched before " \
                        "then are included"

    items, problems, seen = [], [], set()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for out, problem in pool.map(one, notebooks):
            if problem:
                problems.append(problem)
            if not out.exists():
                problems.append(f"{out.stem}: recorded nothing")
                continue
            for launch in pickle.loads(out.read_bytes()):
                key = (launch.module, launch.kernel, launch.source)
                if launch.module is not None and launch.module.startswith("tile_lab.examples"):
                    continue  # crosschecked above, as an example
                if key in seen:
                    continue
                seen.add(key)
                try:
                    kernel = rebuild(launch)
                except Exception as exc:
                    problems.append(f"{launch.notebook}: {launch.kernel}: cannot rebuild: {exc}")
                    continue
                items.append(Item(f"tutorial {launch.notebook[:2]}", launch.kernel, kernel,
                                  launch.grid, launch.args))
    return items, problems


# ---- running and reporting -------------------------------------------------------------------

class EmulatorAsGpu:
    """``--dry-run``: the emulator with zero padding plays the GPU (checks this script only)."""

    def device(self) -> str:
        return "dry run: the emulator (zero padding) as the GPU side"

    def run(self, kernel: Any, grid: tuple[int, ...], args: tuple) -> tuple:
        import warnings

        from tile_lab import emulate

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            emulate(kernel, grid, args, padding="zero")
        return args


def crosscheck_item(item: Item, gpu: Any) -> dict[str, Any]:
    import tile_lab

    started = time.perf_counter()
    row: dict[str, Any] = {"source": item.source, "kernel": item.name, "grid": list(item.grid)}
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the ct.print demos of notebook 14
            cc = tile_lab.crosscheck(item.kernel, item.grid, item.args, gpu=gpu)
    except Exception as exc:
        row.update(agreement="failed", error=f"{type(exc).__name__}: {exc}",
                   traceback=traceback.format_exc(limit=4))
        return row
    by = cc.elements_by_class
    row.update(agreement=cc.agreement, outputs=[o.arg for o in cc.outputs],
               tiles=len(cc.tiles), differing_elements=by,
               tile_verdicts={v: sum(t.verdict == v for t in cc.tiles)
                              for v in ("agree", "undetermined", "design", "mismatch")},
               max_ulp=max((t.max_ulp or 0 for t in cc.tiles), default=0),
               nan_gpu=sum(t.nan_gpu for t in cc.tiles),
               explanations=cc.explanations(), summary=cc.summary(),
               seconds=round(time.perf_counter() - started, 2), crosscheck=cc.to_json())
    return row


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'source':14s} {'kernel':46s} {'outputs':18s} {'tiles':>5s}  agreement")
    for r in rows:
        outs = ",".join(r.get("outputs", []))[:18]
        print(f"{r['source']:14s} {r['kernel'][:46]:46s} {outs:18s} {r.get('tiles', 0):5d}  "
              f"{r['agreement']}" + (f" (max {r['max_ulp']} ULP)" if r.get("max_ulp") else ""))
        for e in r.get("explanations", []):
            print(f"{'':16s}- {e}")
        if "error" in r:
            print(f"{'':16s}- {r['error']}")


def markdown_table(paths: list[Path]) -> str:
    """The bench/README table from the JSON files of one or more runs."""
    groups: dict[str, list[dict[str, Any]]] = {}
    devices = set()
    for path in paths:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        data = json.loads(raw)  # the repository keeps the recorded runs gzipped
        devices.add(data["provenance"].get("device", "?"))
        for r in data["rows"]:
            key = ("tile_lab.examples" if r["source"] == "examples" else
                   "tutorials" if r["source"].startswith("tutorial") else "tests/corpus")
            groups.setdefault(key, []).append(r)
    out = ["| source | kernels | identical | explained | mismatch | failed | "
           "disagreements, explained |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for key, rows in groups.items():
        n = {a: sum(r["agreement"] == a for r in rows)
             for a in ("identical", "explained", "mismatch", "failed", "nothing compared")}
        why = "; ".join(f"{r['kernel']}: " + " / ".join(r.get("explanations", [])
                                                       or [r.get("error", "")])
                        for r in rows if r["agreement"] in ("explained", "mismatch", "failed"))
        compared = len(rows) - n["nothing compared"]
        out.append(f"| {key} | {compared} (+{n['nothing compared']} writing no array) | "
                   f"{n['identical']} | {n['explained']} | {n['mismatch']} | {n['failed']} | "
                   f"{why or 'none'} |")
    return "\n".join(out) + f"\n\nDevice: {'; '.join(sorted(devices))}."


def _load_runs(paths: list[Path]) -> dict[tuple[str, str], dict[str, Any]]:
    rows = {}
    for path in paths:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        for r in json.loads(raw)["rows"]:
            rows[(r["source"], r["kernel"])] = r
    return rows


def rejudge(paths: list[Path], items: list[Item]) -> int:
    """The recorded GPU differences of earlier runs against today's budget, on the CPU: each
    kernel re-emulated for the budget (its output's scale, its sites, its trace), then every
    recorded tile's largest difference compared with it. A tile only records its maxima, so
    it is *within* when its largest difference is under the budget at the smallest element
    or it is at most 1 ULP, *within at its largest element* when it is under the budget at
    the tile's largest element (the most the budget allows anywhere in the tile), else
    *OUTSIDE*. Returns 1 when any tile is outside."""
    import warnings

    import tile_lab
    from tile_lab.crosschecking.budget import Budget, error_model, ulp
    from tile_lab.crosschecking.flow import site_dtypes
    from tile_lab.crosschecking.run import _array_names, _flat_arrays, _host_clone, _map_arrays
    from tile_lab.crosschecking.sites import design_sites

    recorded = _load_runs(paths)
    outside = 0
    print(f"{'kernel':44s} {'output':8s} {'dtype':9s} {'scale':>8s} {'rho':>8s} "
          f"{'max abs':>9s} {'max ULP':>8s}  recorded differences")
    for it in items:
        row = recorded.get((it.source, it.name))
        if row is None or "crosscheck" not in row:
            continue
        args = _map_arrays(tuple(it.args), functools.partial(_host_clone, roots={}))
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            tr = tile_lab.trace(it.kernel, it.grid, args)
        emu = dict(zip(_array_names(it.kernel, args), _flat_arrays(args)))
        model = error_model(tr, design_sites(it.kernel), Budget(),
                            site_dtypes(it.kernel, {a.name: a.dtype for a in tr.arrays}))
        for out in row["crosscheck"]["outputs"]:
            e = np.asarray(emu[out["arg"]])
            tiles = [t for t in out["tiles"] if t.get("verdict") == "design"]
            if not tiles or (e.dtype.kind != "f" and e.dtype.name != "bfloat16"):
                continue
            finite = np.abs(e[np.isfinite(e)].astype(np.float64))
            scale = float(finite.max()) if finite.size else 0.0
            allowed_sum = model.rho * scale
            verdicts = []
            for t in tiles:
                box = tuple(slice(a, b) for a, b in zip(t["box_start"], t["box_stop"]))
                top = float(np.abs(e[box].astype(np.float64)).max())
                floor = float(ulp(np.array([0.0]), e.dtype.name)[0])
                if t["max_ulp"] <= 1 or t["max_abs"] <= allowed_sum + floor:
                    verdicts.append("within")
                elif t["max_abs"] <= allowed_sum + float(ulp(np.array([top]), e.dtype.name)[0]):
                    verdicts.append("within at its largest element")
                else:
                    verdicts.append("OUTSIDE")
            outside += verdicts.count("OUTSIDE")
            worst = max(verdicts, key=["within", "within at its largest element",
                                       "OUTSIDE"].index)
            print(f"{it.name[:44]:44s} {out['arg'][:8]:8s} {e.dtype.name:9s} "
                  f"{scale:8.3g} {model.rho:8.2g} "
                  f"{max(t['max_abs'] for t in tiles):9.3g} "
                  f"{max(t['max_ulp'] for t in tiles):8d}  {len(tiles)} tiles: {worst}")
    print(f"\n{outside} recorded tiles outside today's budget")
    return 1 if outside else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--json", type=Path, help="write the rows and crosschecks here")
    ap.add_argument("--only", nargs="+", choices=SOURCES, default=list(SOURCES))
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: the emulator (zero padding) plays the GPU side")
    ap.add_argument("--tutorial-timeout", type=float, default=240.0,
                    help="seconds each notebook may run while its launches are recorded")
    ap.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1))
    ap.add_argument("--notebooks", nargs="+", metavar="PREFIX",
                    help="record only these tutorials (e.g. 09 12)")
    ap.add_argument("--table", nargs="+", type=Path, metavar="JSON",
                    help="only print the bench/README table from these --json files")
    ap.add_argument("--rejudge", nargs="+", type=Path, metavar="JSON",
                    help="no GPU: the recorded GPU differences in these --json files against "
                         "today's budget")
    opts = ap.parse_args(argv)
    if opts.table:
        print(markdown_table(opts.table))
        return 0
    if opts.rejudge:
        items = (example_items() if "examples" in opts.only else []) + \
            (corpus_items() if "corpus" in opts.only else [])
        if "tutorials" in opts.only:
            items += tutorial_items(opts.tutorial_timeout, opts.workers, opts.notebooks)[0]
        return rejudge(opts.rejudge, items)

    from tile_lab.crosschecking import CupyGpu

    gpu = EmulatorAsGpu() if opts.dry_run else CupyGpu()
    device = gpu.device()  # fails here, saying what is missing, without a GPU
    provenance: dict[str, Any] = {"device": device}
    if not opts.dry_run:
        from dataclasses import asdict

        from tile_lab.gpu.device import provenance as gpu_provenance

        provenance.update(asdict(gpu_provenance()))
    items: list[Item] = []
    problems: list[str] = []
    if "examples" in opts.only:
        items += example_items()
    if "tutorials" in opts.only:
        got, problems = tutorial_items(opts.tutorial_timeout, opts.workers, opts.notebooks)
        items += got
    if "corpus" in opts.only:
        items += corpus_items()
    rows = [crosscheck_item(it, gpu) for it in items]
    print(f"crosscheck on {device}: {len(rows)} kernels\n")
    print_table([r for r in rows if r["agreement"] != "nothing compared"])
    idle = [f"{r['source']} {r['kernel']}" for r in rows if r["agreement"] == "nothing compared"]
    if idle:
        print(f"\nwrote no array (nothing to compare: puzzle stubs, printing demos): "
              f"{', '.join(idle)}")
    counts = {a: sum(r["agreement"] == a for r in rows)
              for a in ("identical", "explained", "mismatch", "failed", "nothing compared")}
    print("\n" + ", ".join(f"{n} {a}" for a, n in counts.items()))
    for p in problems:
        print(f"tutorial recording: {p}")
    if opts.json:
        text = json.dumps({"provenance": provenance, "counts": counts, "problems": problems,
                           "rows": rows}, indent=1, allow_nan=False, default=str)
        # source files named relative to the checkout: the JSON is kept in the repository
        opts.json.write_text(text.replace(f'"{ROOT}/', '"'))
    return 1 if counts["mismatch"] or counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
