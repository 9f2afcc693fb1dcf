"""Does another tileiras build move the sweep's rows? Each chosen row's winner (from
``gpu_gemm_sweep.py`` / ``gpu_attention_grid.py`` JSON) is compiled by two tileiras builds,
A and B, and both are timed side by side with the row's baselines on one GPU.

    python bench/tileiras_ab.py --a /tmp/tc134/bin --b /tmp/tc135/bin \\
        [--gemm SWEEP.json.gz ...] [--attention GRID.json.gz ...] \\
        [--rows SPEC] [--rounds 6] [--out DIR] [--name tileiras_ab.json]
    python bench/tileiras_ab.py --markdown FILE.json      # the table of a saved run

``--a`` / ``--b``: folders holding a ``tileiras`` (a CUDA 13 toolkit's ``bin``, with ptxas
beside it and libnvvm in ``../lib``; cuda-tile 1.7 declares tileiras < 13.5, so a newer build
runs outside its tested range). ``--rows``: comma-separated name fragments (default: every row
below 1.0x in either regime of its sweep). Both builds' cubins are compiled first, in parallel
worker processes, into cuTile's disk cache (keyed by the build's version line); the timing
process then selects each build in turn (``tile_lab._cutile_compat.tileiras_choice``) and
makes each row's kernel object anew, so each build's launch is its own cubin.

Timing: ``--rounds`` rounds, each launching every contender (A, B, the baselines) in one
batch of CUDA-event-timed launches, the order reversed every other round; the SM clock and
board power are read by NVML after every batch. A ratio is taken per round, from the two
contenders' batches of that round, and only from rounds whose two batches ran within 1.1% of
the same SM clock (the sweep's clock rule); the table gives the median of those and how many
rounds were dropped. Without a GPU it says what is missing and exits 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from gpu_gemm_profile_rows import pick  # noqa: E402
from sweep_common import exit_without_gpu, load_payloads, read_payload, save_payload  # noqa: E402

GEMM = ["notebooks/data/gemm_sweep_h200.json.gz", "notebooks/data/gemm_sweep_m256_h200.json.gz"]
ATTENTION = ["notebooks/data/attention_grid_h200.json.gz"]
CLOCK_BOUND = 0.011  # the sweep's rule: a comparison's two sides within 1.1% of one clock
HINTS = ("num_ctas", "num_worker_warps", "occupancy")


def chosen_rows(gemm: Sequence[str], attention: Sequence[str], spec: str | None
                ) -> list[dict[str, Any]]:
    """The rows to compare: ``{"kind": "gemm" | "attention", "name", "row", "config"}``, GEMM
    rows first. ``spec`` as ``--rows`` (name fragments over both files' rows)."""
    every = [(kind, r) for kind, paths in (("gemm", gemm), ("attention", attention)) if paths
             for r in load_payloads(paths)["rows"] if r.get("status") == "ok"]
    picked = pick([r for _, r in every], spec)
    return [dict(kind=kind, name=r["name"], row=r["row"], config=r["tuning"]["config"])
            for kind, r in every if any(r is x for x in picked)]


def clock_matched_ratios(slow: dict[str, list[float]], fast: dict[str, list[float]]
                         ) -> dict[str, Any]:
    """``slow``'s time over ``fast``'s, round by round (above 1: ``fast`` is quicker), from
    the rounds whose two batches ran within CLOCK_BOUND of one SM clock. Each argument:
    ``{"us": [...], "sm_mhz": [...]}``, one entry per round."""
    kept, dropped = [], 0
    for t_slow, t_fast, c_slow, c_fast in zip(slow["us"], fast["us"], slow["sm_mhz"],
                                              fast["sm_mhz"], strict=True):
        if c_slow is None or c_fast is None or abs(c_slow - c_fast) > CLOCK_BOUND * max(
                c_slow, c_fast):
            dropped += 1
            continue
        kept.append(t_slow / t_fast)
    if not kept:
        return dict(median=None, low=None, high=None, rounds=0, dropped=dropped)
    return dict(median=round(statistics.median(kept), 4), low=round(min(kept), 4),
                high=round(max(kept), 4), rounds=len(kept), dropped=dropped)


def fastest_baseline(contenders: dict[str, dict[str, Any]], baselines: Sequence[str]
                     ) -> dict[str, list[Any]]:
    """Per round, the quickest baseline batch (its time and clock): the strongest baseline
    a user would pick, chosen round by round."""
    rounds = len(contenders[baselines[0]]["us"])
    best: dict[str, list[Any]] = {"us": [], "sm_mhz": []}
    for i in range(rounds):
        name = min(baselines, key=lambda b: contenders[b]["us"][i])
        best["us"].append(contenders[name]["us"][i])
        best["sm_mhz"].append(contenders[name]["sm_mhz"][i])
    return best


def row_ratios(rec: dict[str, Any]) -> dict[str, Any]:
    """Each build against the per-round fastest baseline, and B against A: the other side's
    time over the build's (above 1: the build is quicker)."""
    c = rec["contenders"]
    base = fastest_baseline(c, rec["baselines"])
    return {"A vs baseline": clock_matched_ratios(base, c["A"]),
            "B vs baseline": clock_matched_ratios(base, c["B"]),
            "B vs A": clock_matched_ratios(c["A"], c["B"])}


def _cell(r: dict[str, Any]) -> str:
    if r["median"] is None:
        return f"— (no round at one clock; {r['dropped']} dropped)"
    dropped = f", {r['dropped']} dropped" if r["dropped"] else ""
    return f"**{r['median']:.3f}** ({r['low']:.3f}–{r['high']:.3f}), {r['rounds']} rounds{dropped}"


def markdown(doc: dict[str, Any]) -> str:
    """The saved run as a table: each row's speed ratios (above 1: quicker)."""
    a, b = doc["builds"]["A"], doc["builds"]["B"]
    lines = [f"A: {a}; B: {b}; {doc.get('device', '?')}, driver {doc.get('driver', '?')}, "
             f"cuda.tile {doc.get('cuda_tile', '?')}; speed ratios per round at one SM clock "
             f"(median, range), above 1: the build is quicker", "",
             "| row | A vs fastest baseline | B vs fastest baseline | B vs A | SM MHz seen |",
             "| --- | --- | --- | --- | --- |"]
    for rec in doc["rows"]:
        if "error" in rec:
            lines.append(f"| {rec['name']} | error: {rec['error'][:80]} | | | |")
            continue
        r = rec["ratios"]
        seen = sorted({m for c in rec["contenders"].values() for m in c["sm_mhz"]
                       if m is not None})
        clocks = f"{seen[0]:.0f}–{seen[-1]:.0f}" if seen else "?"
        lines.append(f"| {rec['name']} | {_cell(r['A vs baseline'])} | "
                     f"{_cell(r['B vs baseline'])} | {_cell(r['B vs A'])} | {clocks} |")
    return "\n".join(lines)


# ---- the GPU side -------------------------------------------------------------------------------
class RowOnGpu:
    """One chosen row's tensors, reference, baselines and (per build) the winner's launch."""

    def __init__(self, rec: dict[str, Any], sms: int) -> None:
        import torch

        self.rec, self.sms = rec, sms
        r = rec["row"]
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[r["dtype"]]
        g = torch.Generator(device="cuda").manual_seed(0)
        if rec["kind"] == "gemm":
            self._gemm(r, dtype, g)
        else:
            self._attention(r, dtype, g)

    def _gemm(self, r: dict[str, Any], dtype: Any, g: Any) -> None:
        import cupy
        import gemm_schedule_rows as gsr
        import torch

        m, n, k = r["m"], r["n"], r["k"]
        a = torch.randn((m, k), device="cuda", dtype=dtype, generator=g)
        b = torch.randn((k, n), device="cuda", dtype=dtype, generator=g)
        self.out = torch.empty((m, n), device="cuda", dtype=dtype)
        split = self.rec["config"]["SPLIT"] > 1 and self.rec["config"]["schedule"] == "splitk"
        w = torch.zeros((m, n) if split else (1, 1), device="cuda", dtype=torch.float32)
        self.ops = gsr.Operands(dict(a=a, b=b, c=self.out, w=w), m, n, k, self.sms)
        self.ref = torch.matmul(a, b).float()
        theirs = torch.empty_like(self.out)
        self.baselines = {"torch.matmul": lambda: torch.matmul(a, b, out=theirs)}
        if r["dtype"] == "fp16":  # CuPy has no bfloat16
            ca, cb = cupy.asarray(a), cupy.asarray(b)
            cc = cupy.empty((m, n), cupy.float16)
            self.baselines["cupy.matmul"] = lambda: cupy.matmul(ca, cb, out=cc)

    def _attention(self, r: dict[str, Any], dtype: Any, g: Any) -> None:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        shape = (r["batch"], r["heads"], r["seq"], r["d"])
        q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, generator=g) for _ in range(3))
        self.q, self.k, self.v, self.out = q, k, v, torch.empty_like(q)
        causal = r["causal"]
        sdpa = torch.nn.functional.scaled_dot_product_attention
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            self.ref = sdpa(q, k, v, is_causal=causal).float()

        def cudnn() -> None:
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                sdpa(q, k, v, is_causal=causal)

        self.baselines = {"sdpa cudnn": cudnn,
                          "sdpa default": lambda: sdpa(q, k, v, is_causal=causal)}

    def ours(self) -> Any:
        """The winner's timed launch, made now: a new kernel object, compiled (or found in
        cuTile's disk cache) by the build selected at its first launch."""
        c = self.rec["config"]
        if self.rec["kind"] == "gemm":
            import gemm_schedule_rows as gsr

            kernels = gsr.schedules().replace_hints(**{h: c[h] for h in HINTS})
            return self.ops.work(kernels.for_config(c), c, self.rec["name"])
        from attention_kernels import flash_attention_knobs, knob_args, knob_grid

        from tile_lab.examples.attention import LOG2_E
        from tile_lab.gpu import kernel_work

        r = self.rec["row"]
        bh, s, d = r["batch"] * r["heads"], r["seq"], r["d"]
        flat = [t.view(bh, s, d) for t in (self.q, self.k, self.v, self.out)]
        kernel = flash_attention_knobs.replace_hints(**{h: c[h] for h in HINTS})
        return kernel_work(kernel, knob_grid(s, bh, c),
                           knob_args(*flat, LOG2_E / math.sqrt(d), d, r["causal"], c))

    def prepare(self) -> None:
        if self.rec["kind"] == "gemm":
            self.ops.zero()

    def rel_error(self, work: Any) -> float:
        """Relative error of one launch against the reference (output poisoned first)."""
        import torch

        self.out.fill_(float("nan"))
        self.prepare()
        work.run()
        torch.cuda.synchronize()
        return float((self.out.float() - self.ref).norm() / self.ref.norm())


def compile_worker(rows: list[dict[str, Any]], folder: str, shard: int, shards: int) -> None:
    """Launch every ``shards``-th row's winner once with the build in ``folder``: its cubin
    lands in cuTile's disk cache, where the timing process finds it."""
    import torch

    from tile_lab._cutile_compat.tileiras_choice import select_tileiras
    from tile_lab.gpu.device import device_info

    select_tileiras(folder)
    sms = device_info().sm_count
    for rec in rows[shard::shards]:
        row = RowOnGpu(rec, sms)
        row.prepare()
        row.ours().run()
        torch.cuda.synchronize()
        del row
        torch.cuda.empty_cache()


def time_row(row: RowOnGpu, works: dict[str, Any], rounds: int, reader: Any
             ) -> dict[str, dict[str, list[Any]]]:
    """``rounds`` interleaved rounds (order reversed every other one) of one batch per
    contender: its mean launch time (µs) and the SM clock and power read after it."""
    import torch

    per = 20 if row.rec["kind"] == "gemm" else 10
    fns = {k: w.run for k, w in works.items()} | row.baselines
    out: dict[str, dict[str, list[Any]]] = {k: dict(us=[], sm_mhz=[], power_w=[]) for k in fns}
    order = list(fns)
    for i in range(rounds):
        for name in order if i % 2 == 0 else order[::-1]:
            row.prepare()
            fns[name]()  # untimed: the batch starts with this contender's data warm
            torch.cuda.synchronize()
            start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            start.record()
            for _ in range(per):
                fns[name]()
            end.record()
            end.synchronize()
            state = reader.read()
            out[name]["us"].append(round(start.elapsed_time(end) * 1000 / per, 2))
            out[name]["sm_mhz"].append(state.sm_mhz if state else None)
            out[name]["power_w"].append(round(state.power_w) if state and state.power_w
                                        else None)
    return out


def run(ns: argparse.Namespace, rows: list[dict[str, Any]]) -> dict[str, Any]:
    import cuda.tile
    import torch

    from tile_lab._cutile_compat.tileiras_choice import select_tileiras
    from tile_lab.gpu.device import clock_state, device_info, nvml_reader

    folders = {"A": ns.a, "B": ns.b}
    builds = {label: select_tileiras(f) for label, f in folders.items()}
    select_tileiras(None)
    shards = max(1, min(len(rows), ((os.cpu_count() or 2) - 1) // 2))
    argv = ["--a", ns.a, "--b", ns.b, "--gemm", *ns.gemm, "--attention", *ns.attention,
            *(["--rows", ns.rows] if ns.rows else [])]
    workers = [subprocess.Popen([sys.executable, __file__, *argv, "--worker",
                                 f"{folders[label]}:{i}:{shards}"])
               for label in folders for i in range(shards)]
    failed = [w.args[-1] for w in workers if w.wait() != 0]
    reader, info = nvml_reader(), device_info()
    before = reader.read()
    doc: dict[str, Any] = dict(
        tool="bench/tileiras_ab.py", device=info.name, driver=clock_state(info.index).driver,
        cuda_tile=cuda.tile.__version__, builds=builds, folders=folders,
        rounds=ns.rounds, compile_workers_failed=failed,
        state_before=before.to_json_dict() if before else None, rows=[])
    for rec in rows:
        try:
            row = RowOnGpu(rec, info.sm_count)
            works = {}
            for label, folder in folders.items():
                select_tileiras(folder)
                works[label] = row.ours()
                row.prepare()
                works[label].run()  # compiles here only if its worker failed
            select_tileiras(None)
            errors = {label: row.rel_error(w) for label, w in works.items()}
            out = dict(rec, rel_error=errors, baselines=list(row.baselines),
                       contenders=time_row(row, works, ns.rounds, reader))
            out["ratios"] = row_ratios(out)
        except Exception as e:  # a row's failure is data, not the end of the run
            out = dict(rec, error=f"{type(e).__name__}: {str(e)[:300]}")
        doc["rows"].append(out)
        print(json.dumps({k: out.get(k) for k in ("name", "rel_error", "ratios", "error")}),
              flush=True)
        row = works = None  # type: ignore[assignment]
        torch.cuda.empty_cache()
    after = reader.read()
    doc["state_after"] = after.to_json_dict() if after else None
    return doc


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--a", help="folder of build A's tileiras")
    p.add_argument("--b", help="folder of build B's tileiras")
    p.add_argument("--gemm", nargs="*", default=GEMM, help="GEMM sweep JSON (later wins)")
    p.add_argument("--attention", nargs="*", default=ATTENTION, help="attention grid JSON")
    p.add_argument("--rows", default=None, help="comma-separated row-name fragments "
                   "(default: every row below 1.0x in either regime)")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--out", default=".")
    p.add_argument("--name", default="tileiras_ab.json")
    p.add_argument("--markdown", metavar="JSON", help="print the table of a saved run")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # FOLDER:SHARD:SHARDS (compile only)
    ns = p.parse_args(argv)
    if ns.markdown:
        print(markdown(read_payload(ns.markdown)))
        return
    if not (ns.a and ns.b):
        p.error("--a and --b name the two tileiras folders to compare")
    from tile_lab._cutile_compat.tileiras_choice import tileiras_in
    from tile_lab.errors import ToolchainError

    try:
        for folder in (ns.a, ns.b):
            tileiras_in(folder)
    except ToolchainError as e:
        p.error(str(e))
    rows = chosen_rows(ns.gemm, ns.attention, ns.rows)
    if ns.worker:
        folder, shard, shards = ns.worker.rsplit(":", 2)
        compile_worker(rows, folder, int(shard), int(shards))
        return
    exit_without_gpu("bench/tileiras_ab.py")
    doc = run(ns, rows)
    path = os.path.join(ns.out, ns.name)
    save_payload(doc, path)
    print(markdown(doc))
    print(f"saved {path}")


if __name__ == "__main__":
    main()
