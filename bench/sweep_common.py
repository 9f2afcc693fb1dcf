"""The driver the GPU sweeps share (``gpu_gemm_sweep.py``, ``gpu_attention_grid.py``): every row
tuned by ``tile_lab.tune`` and compared with its baseline by ``compare_timed`` inside one time
budget, the comparisons repeated for floors, the JSON written after every row, and the tables
(plain text and markdown) rendered from that JSON.

The driver knows no GPU: a sweep hands it a :class:`Backend` (tune one row, compare one row), so
the CPU tests run it with a simulated GPU and a scripted clock.

* **Budget.** Pass 1 tunes and compares the rows in order; a row starts only when the time it is
  expected to take (the mean of the rows done so far, ``first_row_s`` before any) still fits in
  ``budget_s - reserve_s``; a row that does not fit is recorded as skipped, with the reason.
  Passes 2..``reruns`` compare each tuned row again (its config is kept; no tuning), while the
  mean comparison time fits.
* **Floors.** A row's reported ratio per regime is the *lowest* over its comparisons (the floor),
  with that comparison's CI and clocks, the number of comparisons and all their ratios.
* **Clocks.** Every comparison holds each round's two sides to ``clock_bound`` in SM clock
  (``CompareOptions.clock_tolerance``), re-running a round up to ``clock_retries`` times; the
  table shows the largest gap left in a row and flags a row whose sides still differ.
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

REGIME_NAMES = ("burst", "sustained")


@dataclass(frozen=True)
class SweepOptions:
    """How a sweep spends its time. ``budget_s``: wall seconds for the whole sweep (tuning,
    comparisons, reruns); ``reserve_s`` of it is kept for writing the results. ``reruns``:
    comparisons per row (the floor is the lowest); ``max_configs``: configs tuned per row;
    ``rounds``/``samples_per_round``/``sustain_s``: each comparison's ABBA rounds;
    ``clock_bound``/``clock_retries``: the SM-clock agreement each round is held to."""

    budget_s: float = 540.0
    reserve_s: float = 10.0
    reruns: int = 2
    max_configs: int = 8
    rounds: int = 6
    samples_per_round: int = 5
    sustain_s: float = 1.0
    clock_bound: float = 0.011
    clock_retries: int = 3
    first_row_s: float = 30.0

    def __post_init__(self) -> None:
        if self.budget_s <= self.reserve_s:
            raise ValueError(f"budget_s={self.budget_s} must exceed reserve_s={self.reserve_s}")
        if self.reruns < 1 or self.max_configs < 1:
            raise ValueError("need reruns >= 1 and max_configs >= 1")

    def compare_options(self) -> Any:
        from tile_lab.gpu import CompareOptions

        return CompareOptions(rounds=self.rounds, samples_per_round=self.samples_per_round,
                              sustain_s=self.sustain_s, clock_tolerance=self.clock_bound,
                              clock_retries=self.clock_retries)


class SweepRow(Protocol):
    @property
    def name(self) -> str: ...

    def as_json(self) -> dict[str, Any]: ...


class Backend(Protocol):
    """What a sweep does on the GPU, one row at a time."""

    def start(self, rows: Sequence[Any], options: SweepOptions) -> None:
        """Before the first row (e.g. start every row's compiles in worker processes)."""

    def tune(self, row: Any, options: SweepOptions) -> dict[str, Any]:
        """Tune the row's kernel; returns at least ``{"config": {...}}`` (the winner, checked
        against the baseline's output) plus whatever the record should keep."""

    def compare(self, row: Any, tuned: dict[str, Any], options: SweepOptions) -> Any:
        """``compare_timed(winner, fastest baseline)``: a Comparison."""

    def amount(self, row: Any) -> dict[str, int]:
        """``{"ours_flops": n}`` or ``{"ours_bytes": n}`` per launch, for the rates."""


class Budget:
    """Wall time left to a sweep, on ``clock`` (seconds)."""

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.seconds, self.clock = seconds, clock
        self.start = clock()

    def elapsed(self) -> float:
        return self.clock() - self.start

    def left(self) -> float:
        return self.seconds - self.elapsed()

    def fits(self, need_s: float) -> bool:
        return need_s <= self.left()


def run_sweep(rows: Sequence[Any], backend: Backend, options: SweepOptions, *,
              clock: Callable[[], float] = time.monotonic,
              save: Callable[[dict[str, Any]], None] | None = None,
              log: Callable[[str], None] = print) -> dict[str, Any]:
    """Tune and compare ``rows`` within ``options.budget_s`` (see the module docstring);
    returns ``{"options": ..., "rows": [record, ...], "elapsed_s": ...}``, calling ``save``
    with it after every row."""
    from gpu_common import comparison_rows

    budget = Budget(options.budget_s - options.reserve_s, clock)
    records = [dict(row=r.as_json(), name=r.name, status="pending", runs=[]) for r in rows]
    payload: dict[str, Any] = dict(options=asdict(options), rows=records, elapsed_s=0.0)
    row_costs: list[float] = []
    compare_costs: list[float] = []
    backend.start(list(rows), options)

    def checkpoint() -> None:
        payload["elapsed_s"] = budget.elapsed()
        for rec in records:
            rec["floor"] = floors(rec["runs"])
        if save is not None:
            save(payload)

    def compare(row: Any, rec: dict[str, Any]) -> None:
        t0 = clock()
        cmp = backend.compare(row, rec["tuning"], options)
        compare_costs.append(clock() - t0)
        rows_ = comparison_rows(row.name, cmp, **backend.amount(row))
        rec["runs"].append(dict(rows=rows_, comparison=cmp.to_json_dict()))
        log(f"{row.name}: comparison {len(rec['runs'])} in {compare_costs[-1]:.0f} s: "
            + "; ".join(f"{r['regime']} {r['ratio']:.3f} ({r['ci_low']:.3f}-{r['ci_high']:.3f})"
                        for r in rows_) + f"; {budget.left():.0f} s left")

    for row, rec in zip(rows, records):
        need = statistics.fmean(row_costs) if row_costs else options.first_row_s
        if not budget.fits(need):
            rec.update(status="skipped", reason=f"budget: {budget.left():.0f} s left, a row "
                                                f"needs about {need:.0f} s")
            log(f"{row.name}: skipped ({rec['reason']})")
            continue
        t0 = clock()
        try:
            rec["tuning"] = backend.tune(row, options)
            compare(row, rec)
            rec["status"] = "ok"
        except Exception as e:  # keep the other rows; the failure is recorded, not hidden
            rec.update(status="failed", error=f"{type(e).__name__}: {str(e)[:400]}")
            log(f"{row.name}: FAILED {rec['error']}")
        row_costs.append(clock() - t0)
        checkpoint()
    for attempt in range(2, options.reruns + 1):
        for row, rec in zip(rows, records):
            if rec["status"] != "ok":
                continue
            need = statistics.fmean(compare_costs) if compare_costs else options.first_row_s
            if not budget.fits(need):
                rec.setdefault("reruns_skipped", f"budget: comparison {attempt} did not fit")
                continue
            try:
                compare(row, rec)
            except Exception as e:
                rec.setdefault("rerun_errors", []).append(f"{type(e).__name__}: {str(e)[:200]}")
            checkpoint()
    checkpoint()
    return payload


def floors(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per regime, the comparison with the lowest ratio over ``runs`` (each run: ``{"rows":
    [one dict per regime, as gpu_common.comparison_rows makes them]}``), with every run's
    ratio and the largest clock gap seen."""
    out: dict[str, dict[str, Any]] = {}
    for regime in REGIME_NAMES:
        mine = [r for run in runs for r in run["rows"] if r["regime"] == regime]
        if not mine:
            continue
        low = min(mine, key=lambda r: r["ratio"])
        gaps = [r["clock_gap"] for r in mine if r.get("clock_gap") is not None]
        out[regime] = dict(low, runs=len(mine), ratios=[r["ratio"] for r in mine],
                           max_clock_gap=max(gaps) if gaps else None,
                           clocks_differ=any(r.get("clock_mismatch") for r in mine))
    return out


# ---- files ------------------------------------------------------------------------------------
def save_payload(payload: dict[str, Any], path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    text = json.dumps(payload, indent=1, sort_keys=True, default=str) + "\n"
    if path.endswith(".gz"):  # mtime 0: the same content gives the same bytes (no git diff)
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(text.encode("utf-8"))
    else:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    os.replace(tmp, path)  # a run killed mid-write keeps the previous row's file


def exit_without_gpu(script: str) -> None:
    """A GPU bench's first step: without a GPU (or CuPy), say what is missing and exit 2."""
    try:
        from tile_lab.gpu.device import require_gpu

        require_gpu(script)
    except Exception as e:  # NoGPUError / missing CuPy: say what is missing
        print(f"{os.path.basename(script)}: {e}", file=sys.stderr)
        sys.exit(2)


def read_payload(path: str) -> dict[str, Any]:
    """One sweep file, plain or gzipped (``.json.gz``: the repository keeps the per-sample GPU
    states of a sweep compressed, about 15x smaller, so it still travels to the GPU machine)."""
    opener: Any = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def load_payloads(paths: Iterable[str]) -> dict[str, Any]:
    """Several runs' JSON as one: rows by name, later files first for the tuning; the runs of a
    row tuned to the same config in several files all count toward its floor."""
    merged: dict[str, dict[str, Any]] = {}
    env = None
    for path in paths:
        doc = read_payload(path)
        env = doc.get("env", env)
        for rec in doc["rows"]:
            old = merged.get(rec["name"])
            if (old is not None and old.get("status") == "ok" and rec.get("status") == "ok"
                    and old["tuning"]["config"] == rec["tuning"]["config"]):
                rec = dict(rec, runs=old["runs"] + rec["runs"])
            elif old is not None and rec.get("status") != "ok":
                continue  # a skipped or failed row does not hide a measured one
            merged[rec["name"]] = rec
    rows = list(merged.values())
    for rec in rows:
        rec["floor"] = floors(rec["runs"])
    return dict(env=env, rows=rows)


# ---- tables -----------------------------------------------------------------------------------
def _mhz(v: float | None) -> str:
    return "?" if v is None else f"{v:.0f}"


def _rate(f: dict[str, Any]) -> str:
    if "ours_tflops" in f:
        return f"{f['ours_tflops']:.0f} vs {f['baseline_tflops']:.0f} TFLOPS"
    if "ours_gbps" in f:
        return f"{f['ours_gbps']:.0f} GB/s"
    return ""


def _cell(f: dict[str, Any] | None, with_clock: bool) -> str:
    if f is None:
        return "-"
    text = f"**{f['ratio']:.3f}** ({f['ci_low']:.3f}–{f['ci_high']:.3f})"
    if with_clock:
        text += f" at {_mhz(f['ours_sm_mhz'])}/{_mhz(f['baseline_sm_mhz'])} MHz"
    if f.get("clocks_differ"):
        text += " CLOCKS DIFFER"
    return text


def markdown_table(payload: dict[str, Any], describe: Callable[[dict[str, Any]], str]) -> str:
    """One markdown row per sweep row: config (``describe(tuning)``), baseline, burst and
    sustained floors over the row's comparisons with the CI of the comparison that gave each,
    the SM clocks (ours/baseline), the rates, comparisons per row and the largest clock gap.
    Skipped and failed rows stay in the table with their reason."""
    lines = ["| row | ours (tuned config) | baseline | burst floor (95% CI) | sustained floor "
             "(95% CI) at SM MHz ours/base | rate, burst floor | comparisons | max clock gap |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for rec in payload["rows"]:
        fl = rec.get("floor") or {}
        if rec.get("status") != "ok" or not fl:
            why = rec.get("reason") or rec.get("error") or rec.get("status")
            lines.append(f"| {rec['name']} | {rec.get('status')}: {why} | | | | | | |")
            continue
        burst, sus = fl.get("burst"), fl.get("sustained")
        any_f = burst or sus or {}
        base = str(any_f.get("baseline", "?"))
        gaps = [f["max_clock_gap"] for f in (burst, sus)
                if f and f.get("max_clock_gap") is not None]
        gap = f"{100 * max(gaps):.1f}%" if gaps else "?"
        lines.append(f"| {rec['name']} | {describe(rec['tuning'])} | {base} | "
                     f"{_cell(burst, False)} | {_cell(sus, True)} | "
                     f"{_rate(burst) if burst else ''} | {len(rec['runs'])} | {gap} |")
    return "\n".join(lines)


def text_table(payload: dict[str, Any], describe: Callable[[dict[str, Any]], str]) -> str:
    """The same as :func:`markdown_table`, as fixed-width text for a terminal."""
    out = [f"{'row':34} {'regime':9} {'floor':>6} {'95% CI':>13} {'SM MHz':>11} {'runs':>4} "
           f"{'gap':>5}  config / rate"]
    for rec in payload["rows"]:
        fl = rec.get("floor") or {}
        if rec.get("status") != "ok" or not fl:
            why = rec.get("reason") or rec.get("error") or ""
            out.append(f"{rec['name'][:34]:34} {rec.get('status')}: {why}")
            continue
        for regime in REGIME_NAMES:
            f = fl.get(regime)
            if f is None:
                continue
            gap = "?" if f["max_clock_gap"] is None else f"{100 * f['max_clock_gap']:.1f}%"
            flag = " CLOCKS DIFFER" if f.get("clocks_differ") else ""
            out.append(f"{rec['name'][:34]:34} {regime:9} {f['ratio']:6.3f} "
                       f"{f['ci_low']:6.3f}-{f['ci_high']:6.3f} "
                       f"{_mhz(f['ours_sm_mhz']) + '/' + _mhz(f['baseline_sm_mhz']):>11} "
                       f"{f['runs']:4d} {gap:>5}  {describe(rec['tuning'])}; {_rate(f)}{flag}")
    return "\n".join(out)


def summary_counts(payload: dict[str, Any]) -> str:
    """How many rows are at or above 1.0 in both regimes' floors, of those measured."""
    measured = [r for r in payload["rows"] if r.get("status") == "ok" and r.get("floor")]
    both = [r for r in measured
            if all(f["ratio"] >= 1.0 for f in r["floor"].values()) and len(r["floor"]) == 2]
    return (f"{len(both)} of {len(measured)} measured rows at >= 1.0x in both regimes' floors "
            f"({len(payload['rows']) - len(measured)} not measured)")


def byte_compile() -> None:
    """Byte-compile cuda.tile and tile_lab as pip leaves an installed package: the lent GPU's
    bundle installs with --no-compile, and every compile worker would otherwise compile
    cuda.tile's modules for itself (tune_gemm.py does the same)."""
    import compileall

    import cuda.tile

    import tile_lab

    for pkg in (cuda.tile, tile_lab):
        compileall.compile_dir(os.path.dirname(pkg.__file__), quiet=1, workers=0)


def add_sweep_arguments(p: Any, *, budget_s: float, max_configs: int, name: str) -> None:
    """The options every sweep takes (``options_of`` turns them into SweepOptions)."""
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--rows", default="all",
                   help='"all", indices/ranges ("0-5,9") or name fragments ("bf16")')
    p.add_argument("--budget-s", type=float, default=budget_s,
                   help="wall seconds for tuning, comparisons and reruns (imports not counted)")
    p.add_argument("--reruns", type=int, default=2, help="comparisons per row (floor = lowest)")
    p.add_argument("--max-configs", type=int, default=max_configs, help="configs tuned per row")
    p.add_argument("--rounds", type=int, default=6, help="ABBA rounds per regime")
    p.add_argument("--samples-per-round", type=int, default=5)
    p.add_argument("--sustain-s", type=float, default=1.0)
    p.add_argument("--clock-bound", type=float, default=0.011,
                   help="a round whose sides' SM clocks differ more is re-run")
    p.add_argument("--clock-retries", type=int, default=3)
    p.add_argument("--out", default=os.path.join(os.path.dirname(here), "notebooks", "data"))
    p.add_argument("--name", default=name, help="JSON file name in --out")
    p.add_argument("--list", action="store_true", help="print the rows and their spaces")
    p.add_argument("--markdown", nargs="+", metavar="JSON",
                   help="print the tables of these JSON files (no GPU)")


def options_of(ns: Any) -> SweepOptions:
    return SweepOptions(budget_s=ns.budget_s, reruns=ns.reruns, max_configs=ns.max_configs,
                        rounds=ns.rounds, samples_per_round=ns.samples_per_round,
                        sustain_s=ns.sustain_s, clock_bound=ns.clock_bound,
                        clock_retries=ns.clock_retries)


def select(items: Sequence[Any], spec: str | None) -> list[Any]:
    """Rows picked by ``spec``: None or "all" (every row), or comma-separated indices, ranges
    ("0-3") and name fragments ("bf16", "4096x4096"; a fragment picks every row whose name
    contains it). Unknown fragments are an error naming them."""
    if spec is None or spec.strip() in ("", "all"):
        return list(items)
    picked: list[int] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        if part.replace("-", "").isdigit() and not part.startswith("-"):
            lo, _, hi = part.partition("-")
            idx = range(int(lo), int(hi or lo) + 1)
            bad = [i for i in idx if i >= len(items)]
            if bad:
                raise ValueError(f"--rows {part!r}: there are only {len(items)} rows (0-"
                                 f"{len(items) - 1})")
        else:
            idx = [i for i, it in enumerate(items) if part in it.name]
            if not idx:
                raise ValueError(f"--rows: no row name contains {part!r}; rows: "
                                 + "; ".join(it.name for it in items))
        picked += [i for i in idx if i not in picked]
    return [items[i] for i in sorted(picked)]


# ---- tile_lab.tune pieces --------------------------------------------------------------------
class SweepMeasurer:
    """tile_lab.tune's Measurer for the sweeps: compiles in worker processes (the tuner's own
    Precompiler; ``ahead``: a row's compiles started with the sweep; ``pool``: a worker pool
    shared by every row), times a config with ``bench_work`` over ``kernel_work`` (cold L2,
    stream hold, the burst regime), without ``tile_lab.bench``'s write detection: the sweeps'
    kernels write only their output, and CuPy cannot view the bf16 tensors that detection
    copies."""

    def __init__(self, flops: int, ahead: Any = None, pool: Any = None,
                 prepare: Any = None, work: Any = None) -> None:
        # prepare: run before every sample, outside the timed span and before the L2 flush,
        # on CuPy's current stream (e.g. zero a workspace a broken config may have left dirty);
        # work: (kernel, config, grid, args) -> the timed callable, when a config's time must
        # include more than its launch (e.g. copies into aligned buffers)
        self.flops, self.ahead, self.pool, self.prepare = flops, ahead, pool, prepare
        self.work = work

    def precompile(self, kernel: Any, configs: Any, args_fn: Any, kinds: Any, arch: Any,
                   workers: Any) -> Any:
        if self.ahead is not None:
            return CompilesAhead(self.ahead)
        from tile_lab.tuning.parallel_compile import Precompiler

        return Precompiler(kernel, configs, args_fn, kinds, arch, workers,
                           executor=None if self.pool is None else KeepOpen(self.pool))

    def warm_up(self) -> None:
        pass

    def measure(self, kernel: Any, config: Any, grid: tuple[int, ...], args: tuple[Any, ...],
                request: Any) -> Any:
        from tile_lab.gpu import bench_work, kernel_work
        from tile_lab.gpu.options import TimingOptions

        timing = TimingOptions(samples=request.samples, warmup=1, regime="burst",
                               stop_above_s=request.stop_above_s)
        work = (kernel_work(kernel, grid, args) if self.work is None
                else self.work(kernel, config, grid, args))
        if self.prepare is not None:
            from tile_lab.gpu import TimedWork

            work = TimedWork(getattr(work, "name", "kernel"), work.run, self.prepare)
        return bench_work(work, flops=self.flops, timing=timing, params=config.as_dict())


class KeepOpen:
    """A compile executor (the tuner's CompileExecutor protocol) over a pool shared by every
    row: a row's Precompiler closing does not shut the pool down."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def submit(self, fn: Any, /, *args: Any) -> Any:
        return self.pool.submit(fn, *args)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


class CompilesAhead:
    """A row's compiles, started with the sweep, handed to tile_lab.tune (its Precompiles
    protocol); closing it leaves them to the sweep."""

    def __init__(self, pre: Any) -> None:
        self.pre = pre

    @property
    def futures(self) -> Any:
        return self.pre.futures

    def error(self, cfg: Any) -> str | None:
        return self.pre.error(cfg)

    def compile_seconds(self) -> dict[str, float]:
        return self.pre.compile_seconds()

    def close(self) -> None:
        pass
