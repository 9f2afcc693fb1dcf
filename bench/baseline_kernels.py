"""What the baselines run: the kernels behind ``torch.matmul`` / ``cupy.matmul`` (cuBLAS) on the
GEMM sweep's rows and behind torch's SDPA (cuDNN pinned, and as dispatched) on the attention
grid's rows, read from a CUPTI trace (``torch.profiler``): each kernel's name, grid, block,
registers per thread, shared memory and its quickest launch.

    python bench/baseline_kernels.py [--rows SPEC] [--out DIR]   # writes DIR/baseline_kernels.json
    python bench/baseline_kernels.py --markdown FILE.json         # the table of a saved run

A cuBLAS (nvjet) kernel's name says its tile, K step and stages, and cluster shape
(``nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT``: 256×128 tiles, K step 64, 4 stages,
a 1×2 cluster); set beside the winners of ``gpu_gemm_sweep.py`` and ``gpu_attention_grid.py``
it says whether the baseline's decomposition is one cuTile can express. Measures no ratio.
Without a GPU it says what is missing and exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from sweep_common import exit_without_gpu, read_payload, save_payload  # noqa: E402


def kernels_in_trace(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The GPU kernels of a Chrome trace's events (``cat == "kernel"``), one entry per kernel
    name in order of first launch: launches, quickest launch (µs), grid, block, registers,
    shared memory (what the first launch recorded)."""
    found: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.get("cat") != "kernel":
            continue
        a = e.get("args", {})
        k = found.setdefault(e["name"], dict(
            name=e["name"], launches=0, min_us=None, grid=a.get("grid"), block=a.get("block"),
            registers=a.get("registers per thread"), shared_memory=a.get("shared memory")))
        k["launches"] += 1
        dur = e.get("dur")
        if dur is not None and (k["min_us"] is None or dur < k["min_us"]):
            k["min_us"] = dur
    return list(found.values())


def traced_kernels(fn: Callable[[], Any], launches: int = 3) -> list[dict[str, Any]]:
    """Call ``fn`` once (warm-up: its algorithm choice and workspace), then ``launches`` times
    under ``torch.profiler``; the kernels it ran."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(launches):
            fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            return kernels_in_trace(json.load(f)["traceEvents"])


def gemm_baselines(dtype: str, m: int, n: int, k: int) -> dict[str, Callable[[], Any]]:
    import cupy
    import torch

    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.randn((m, k), device="cuda", dtype=tdt)
    b = torch.randn((k, n), device="cuda", dtype=tdt)
    c = torch.empty((m, n), device="cuda", dtype=tdt)
    out: dict[str, Callable[[], Any]] = {"torch.matmul": lambda: torch.matmul(a, b, out=c)}
    if dtype == "fp16":  # CuPy has no bfloat16
        ca, cb, cc = cupy.asarray(a), cupy.asarray(b), cupy.empty((m, n), cupy.float16)
        out["cupy.matmul"] = lambda: cupy.matmul(ca, cb, out=cc)
    return out


def attention_baselines(row: Any) -> dict[str, Callable[[], Any]]:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[row.dtype]
    shape = (row.batch, row.heads, row.seq, row.d)
    q, k, v = (torch.randn(shape, device="cuda", dtype=tdt) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def cudnn() -> None:
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            sdpa(q, k, v, is_causal=row.causal)

    return {"sdpa cudnn": cudnn, "sdpa default": lambda: sdpa(q, k, v, is_causal=row.causal)}


def markdown(doc: dict[str, Any]) -> str:
    lines = [f"{doc.get('device', '?')}, torch {doc.get('torch', '?')}, CuPy "
             f"{doc.get('cupy', '?')}", "",
             "| row | baseline | kernel | grid | block | registers | shared memory | quickest µs |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for rec in doc["rows"]:
        for base, kernels in rec["baselines"].items():
            for k in kernels:
                grid = "×".join(str(x) for x in k["grid"] or [])
                block = "×".join(str(x) for x in k["block"] or [])
                lines.append(f"| {rec['name']} | {base} | `{k['name'][:90]}` | {grid} | {block} | "
                             f"{k['registers']} | {k['shared_memory']} | {k['min_us']} |")
    return "\n".join(lines)


def chosen(spec: str | None) -> list[tuple[str, str, Any]]:
    """(kind, name, row) of the GEMM sweep's and the attention grid's rows; ``spec``:
    comma-separated name fragments (all rows when None). An unknown fragment is named."""
    from attention_space import ROWS as ATTENTION_ROWS
    from gpu_gemm_sweep import ROWS as GEMM_ROWS

    every = ([("gemm", r.name, r) for r in GEMM_ROWS]
             + [("attention", r.name, r) for r in ATTENTION_ROWS])
    if not spec:
        return every
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    for part in parts:
        if not any(part in name for _, name, _ in every):
            raise SystemExit(f"--rows: no row name contains {part!r}")
    return [x for x in every if any(part in x[1] for part in parts)]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--rows", default=None, help="comma-separated row-name fragments")
    p.add_argument("--out", default=".")
    p.add_argument("--markdown", metavar="JSON", help="print the table of a saved run")
    ns = p.parse_args(argv)
    if ns.markdown:
        print(markdown(read_payload(ns.markdown)))
        return
    rows = chosen(ns.rows)
    exit_without_gpu("bench/baseline_kernels.py")
    import cupy
    import torch

    doc: dict[str, Any] = dict(tool="bench/baseline_kernels.py",
                               device=torch.cuda.get_device_name(), torch=torch.__version__,
                               cupy=cupy.__version__, rows=[])
    for kind, name, row in rows:
        fns = (gemm_baselines(row.dtype, row.m, row.n, row.k) if kind == "gemm"
               else attention_baselines(row))
        rec = dict(kind=kind, name=name, baselines={b: traced_kernels(f) for b, f in fns.items()})
        doc["rows"].append(rec)
        print(json.dumps(rec), flush=True)
        del fns
        torch.cuda.empty_cache()
    path = os.path.join(ns.out, "baseline_kernels.json")
    save_payload(doc, path)
    print(markdown(doc))
    print(f"saved {path}")


if __name__ == "__main__":
    main()
