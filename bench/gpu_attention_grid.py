"""Attention grid: flash attention forward, tuned by ``tile_lab.tune``, vs the fastest torch SDPA.

Rows (FlashAttention-3's benchmark shape: 16k tokens per batch, hidden size 2048, so batch =
16384 / seq and heads = 2048 / head_dim): fp16 and bf16 × causal and not × head_dim 64 and 128 ×
seq 16384, 2048, 8192, 4096 (in that order: when the budget runs out, the extremes are in).

Kernel: ``attention_kernels.flash_attention_knobs`` (notebook 15's ``flash_attention_tuned`` with
one constant per FlashAttention-3 idea cuTile can express; the module docstring lists them).

Tuning, once per (head_dim, causal, seq ≤ 4096 or longer) on that class's first row, both with
``tile_lab.tune`` in the burst regime:

1. **tiles** (race): the tile shapes that did not spill in notebook 15's screen (BM×BN with
   the worker warps that keep the accumulator in registers) × occupancy 1/2 × PIPE 0/1
   (FA3's softmax/next-GEMM overlap), latency 2/4, TMA on, bounds checks off where the shape
   allows (EVEN); configs whose sm_90 SASS spills (``--screen``, run on a CPU:
   ``results/attention_grid_spill_screen.json.gz``) left out;
2. **one knob at a time** (race): stage 1's best beside its variants with one knob changed — a
   2-CTA cluster (``num_ctas``), TMA off, bounds checks back on, LAT_V, LAT_K (0 = the
   compiler's) — at most ``--max-configs``;
3. **combined**: every knob at the value that beat stage 1's best in its own experiment, when
   that is a config not measured yet;
4. **new knobs** (issue 34, for head size 128): the fastest config so far and stage 1's
   fastest of another tile shape, each measured again beside its variants with ``FOLD=1``
   (scale folded into Q), ``RESCALE=8`` (FA4's lazy rescale), ``SPLIT=1`` (causal, PIPE 0:
   the key loop split at the diagonal) and all of them at once; variants whose register shape
   spilled in the screen left out. A stage that cannot run, or a config whose check launch
   fails, is recorded in the log and passed over.

Every tuning measurement is kept in the JSON (the experiment log: each knob kept or dropped,
with its time). The winner is checked against SDPA's output (max |difference| < 2e-2), then
``compare_timed(winner, fastest SDPA)`` (cuDNN / flash / efficient / as dispatched, ranked per
comparison) in the burst and sustained regimes, rounds held to ``--clock-bound`` in SM clock;
``--reruns``: comparisons per row, the table reports the floor.

    python bench/gpu_attention_grid.py [--rows SPEC] [--budget-s 330] [--reruns 2]
                                       [--max-configs 10] [--out DIR] [--name FILE.json]
    python bench/gpu_attention_grid.py --screen [--screen-heads 128]
                        # spill screen of stage 1 and its new-knob variants on the CPU
    python bench/gpu_attention_grid.py --list | --markdown A.json [B.json ...] [--experiments]
                                                                    # no GPU

Writes DIR/FILE.json (default notebooks/data/attention_grid.json) after every row.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from attention_kernels import NEW_KNOB_DEFAULTS  # noqa: E402
from attention_space import (  # noqa: E402  (re-exported: the tests read them from here)
    CONSTANTS,
    HINTS,
    ROWS,
    AttnRow,
    load_screen,
    new_knob_variants,
    screen,
    spill_count,
    stage1,
)
from sweep_common import (  # noqa: E402
    KeepOpen,
    SweepMeasurer,
    SweepOptions,
    add_sweep_arguments,
    byte_compile,
    load_payloads,
    markdown_table,
    options_of,
    run_sweep,
    save_payload,
    select,
    summary_counts,
    text_table,
)

# Stage 2's one-knob experiments, in the order they are tried (the cheap yes/no ones first):
# a 2-CTA cluster, plain loads instead of TMA, bounds checks back on, then the latency hints
# (0: the compiler's choice).
STAGE2 = (("num_ctas", (2,)), ("TMA", (0,)), ("EVEN", (0,)), ("LAT_V", (2, 4, 8, 0)),
          ("LAT_K", (1, 2, 4, 0)))


def stage2(best: dict[str, int], max_configs: int) -> list[dict[str, int]]:
    """Stage 1's best with one knob changed at a time (at most ``max_configs``)."""
    out = []
    for knob, values in STAGE2:
        for v in values:
            if v != best[knob] and not (knob == "EVEN" and not best["EVEN"]):
                out.append(dict(best, **{knob: v}))
    return out[:max_configs]


def combined(best: dict[str, int], ranked: list[tuple[float, dict[str, int]]]
             ) -> dict[str, int] | None:
    """Each knob at the value that won its one-knob experiment against stage 1's best (the
    experiments assumed independent); None when that is a config already measured."""
    base_t = next(t for t, c in ranked if c == best)
    pick = dict(best)
    for knob, _ in STAGE2:
        trials = [(t, c[knob]) for t, c in ranked
                  if all(c[k] == best[k] for k in best if k != knob) and c[knob] != best[knob]]
        if trials and min(trials)[0] < base_t:
            pick[knob] = min(trials)[1]
    return None if any(pick == c for _, c in ranked) else pick


def stage4(row: AttnRow, ranked: list[tuple[float, dict[str, int]]],
           first: list[tuple[float, dict[str, int]]],
           spills: dict[str, int] | None = None) -> list[dict[str, int]]:
    """The bases (the fastest config so far; the fastest stage-1 config of another
    BM×BN×warps), each measured again beside its new-knob variants; variants that spill in
    the screen left out."""
    def tile(c: dict[str, int]) -> tuple[int, int, int]:
        return c["BM"], c["BN"], c["num_worker_warps"]

    best = min(ranked + first, key=lambda tc: tc[0])[1]
    other = [c for _, c in sorted(first, key=lambda tc: tc[0]) if tile(c) != tile(best)]
    out: list[dict[str, int]] = []
    for base in [best, *other[:1]]:
        base = dict(NEW_KNOB_DEFAULTS, **base)
        for c in [base, *new_knob_variants(row, base)]:
            if c not in out and not spill_count(spills, row, c):
                out.append(c)
    return out


def space_of(configs: list[dict[str, int]]) -> Any:
    """A tile_lab.Space holding exactly ``configs`` (the rest of the cross product rejected)."""
    import tile_lab

    keys = {tuple(sorted(c.items())) for c in configs}

    def in_this_stage(c: Any) -> bool | str:
        return tuple(sorted(c.as_dict().items())) in keys or "not in this stage's list"

    return tile_lab.Space(constraints=[in_this_stage],
                          **{k: sorted({c[k] for c in configs}) for k in (*CONSTANTS, *HINTS)})


def describe(tuning: dict[str, Any]) -> str:
    c = tuning["config"]
    return (f"{c['BM']}×{c['BN']}, {c['num_worker_warps']} warps, occ {c['occupancy']}, "
            f"{c['num_ctas']}-CTA, LAT {c['LAT_K']}/{c['LAT_V']}, TMA {c['TMA']}, "
            f"PIPE {c['PIPE']}, EVEN {c['EVEN']}"
            + "".join(f", {k} {c[k]}" for k in NEW_KNOB_DEFAULTS if c.get(k, 0)))


def staged_tuning(row: AttnRow, run_stage: Callable[[list[dict[str, int]]], Any],
                  error: Callable[[dict[str, int]], float], max_configs: int,
                  spills: dict[str, int] | None = None) -> dict[str, Any]:
    """Stages 1-3 of the module docstring. ``run_stage(configs)``: tile_lab.tune over exactly
    those configs (a TuningResult); ``error(config)``: max |ours - SDPA| of one launch. Returns
    the fastest config that matches SDPA, its time, every measurement (the experiment log) and
    the checks."""
    log: list[dict[str, Any]] = []

    def record(stage: str, result: Any) -> list[tuple[float, dict[str, int]]]:
        ranked = []
        for s in result.successes:
            log.append(dict(stage=stage, config=s.config.as_dict(),
                            median_us=s.measurement.median_s * 1e6, samples=s.measurement.n))
            ranked.append((s.measurement.median_s, s.config.as_dict()))
        for f in result.failures:
            log.append(dict(stage=stage, config=f.config.as_dict(), failed=f.stage,
                            error=f.error[:300]))
        return sorted(ranked, key=lambda tc: tc[0])

    first = record("tiles", run_stage(stage1(row, spills)))
    if not first:
        raise RuntimeError(f"no stage-1 config ran: {log[:3]}")
    best = first[0][1]
    # stage 2 measures stage 1's best again beside its one-knob variants (same conditions)
    ranked = record("one knob", run_stage([best, *stage2(best, max_configs)]))
    both = combined(best, ranked) if any(c == best for _, c in ranked) else None
    if both is not None:
        ranked += record("combined", run_stage([both]))
    try:  # a stage that cannot run is recorded; the row goes on with what was measured
        ranked += record("new knobs", run_stage(stage4(row, ranked, first, spills)))
    except Exception as e:
        log.append(dict(stage="new knobs", failed="stage", error=f"{type(e).__name__}: "
                                                               f"{str(e)[:300]}"))
    checks = []
    for time_s, c in sorted(first + ranked, key=lambda tc: tc[0]):
        try:
            err = error(c)
        except Exception as e:  # a config that fails its check launch is passed over
            checks.append(dict(config=c, error=f"{type(e).__name__}: {str(e)[:200]}"))
            continue
        checks.append(dict(config=c, max_abs_err=err))
        if err < 2e-2:
            return dict(config=c, median_us=time_s * 1e6, experiments=log, checks=checks)
    raise RuntimeError(f"no config matched SDPA: {checks[:3]}")


def experiments_table(payload: dict[str, Any]) -> str:
    """Markdown: each tuned class's one-knob experiments (and their combination) as the time of
    stage 1's best, measured beside it, over the variant's (above 1: the change helped), with
    kept / dropped; the winner as checked against SDPA."""
    lines = ["| tuned on (class) | experiment | time (µs) | best's time / this | verdict |",
             "| --- | --- | --- | --- | --- |"]
    for rec in payload["rows"]:
        tuning = rec.get("tuning") or {}
        log = tuning.get("experiments")
        if not log:
            continue
        tiles = [e for e in log if e["stage"] == "tiles" and "median_us" in e]
        knob = [e for e in log if e["stage"] != "tiles" and "median_us" in e]
        if not tiles or not knob:
            continue
        best = min(tiles, key=lambda e: e["median_us"])["config"]
        base = next((e["median_us"] for e in knob if e["config"] == best), None)
        if base is None:
            continue
        where = f"{rec['name']} ({tuning.get('tuning_class')})"
        lines.append(f"| {where} | stage 1's best: {describe(dict(config=best))} | {base:.1f} "
                     f"| 1.000 | baseline of the experiments |")
        for e in knob:
            if e["config"] == best:
                continue
            changed = ", ".join(f"{k}={v}" for k, v in e["config"].items() if best.get(k) != v)
            gain = base / e["median_us"]
            kept = e["config"] == tuning["config"]
            verdict = "kept (the winner)" if kept else ("helped alone" if gain > 1 else "dropped")
            lines.append(f"| | {e['stage']}: {changed} | {e['median_us']:.1f} | {gain:.3f} | "
                         f"{verdict} |")
        for e in log:
            if "failed" in e:
                lines.append(f"| | {e['stage']}: {e['config']} | | | failed ({e['failed']}) |")
    return "\n".join(lines)


class AttentionBackend:
    def __init__(self) -> None:
        import cupy
        import torch

        from tile_lab.gpu.device import device_info
        from tile_lab.gpu.sampling import CudaEventTimer

        self.cupy, self.torch = cupy, torch
        info = device_info()
        self.timer = CudaEventTimer(cupy, cupy.cuda.Stream(non_blocking=True),
                                    l2_bytes=info.l2_bytes)
        self.tuned: dict[str, dict[str, Any]] = {}
        self.ahead: dict[str, Any] = {}  # tuning class -> its stage-1 compiles
        self.spills = load_screen()
        self.pool: Any = None

    def start(self, rows: list[AttnRow], options: SweepOptions) -> None:
        """One pool of compile workers for the whole grid; every tuning class's stage-1
        compiles are sent to it now, in row order (later stages compile there on demand)."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from attention_kernels import flash_attention_knobs

        from tile_lab.gpu.device import local_arch
        from tile_lab.tuning.parallel_compile import Precompiler

        workers = max(1, (os.cpu_count() or 2) - 1)
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        arch = local_arch()
        for row in rows:
            if row.tuning_class in self.ahead:
                continue
            space = space_of(stage1(row, self.spills))
            t = self._tensors(row, empty=True)  # shapes and dtypes are what count
            self.ahead[row.tuning_class] = Precompiler(
                flash_attention_knobs, space.configs(arch),
                lambda c, t=t, row=row: self._args(t, row, c),
                space.classify(flash_attention_knobs), arch, workers,
                executor=KeepOpen(self.pool))
            t.clear()

    def amount(self, row: AttnRow) -> dict[str, int]:
        return {"ours_flops": row.flops}

    def _tensors(self, row: AttnRow, *, empty: bool = False) -> dict[str, Any]:
        torch = self.torch
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[row.dtype]
        shape = (row.batch, row.heads, row.seq, row.d)
        if empty:
            flat = (row.batch * row.heads, row.seq, row.d)
            q3, k3, v3, out = (torch.empty(flat, device="cuda", dtype=dtype) for _ in range(4))
            return dict(q3=q3, k3=k3, v3=v3, out=out)
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, generator=g) for _ in range(3))
        flat = [x.reshape(row.batch * row.heads, row.seq, row.d) for x in (q, k, v)]
        return dict(q=q, k=k, v=v, q3=flat[0], k3=flat[1], v3=flat[2],
                    out=torch.empty_like(flat[0]),
                    want=torch.nn.functional.scaled_dot_product_attention(
                        q, k, v, is_causal=row.causal))

    @staticmethod
    def _args(t: dict[str, Any], row: AttnRow, c: Any) -> tuple[Any, ...]:
        from attention_kernels import knob_args

        from tile_lab.examples.attention import LOG2_E

        return knob_args(t["q3"], t["k3"], t["v3"], t["out"], LOG2_E / math.sqrt(row.d), row.d,
                         row.causal, dict(c if isinstance(c, dict) else c.as_dict()))

    @staticmethod
    def _grid(row: AttnRow, c: Any) -> tuple[int, int]:
        from attention_kernels import knob_grid

        return knob_grid(row.seq, row.batch * row.heads,
                         dict(c if isinstance(c, dict) else c.as_dict()))

    def _err(self, row: AttnRow, t: dict[str, Any], c: dict[str, int]) -> float:
        from attention_kernels import flash_attention_knobs

        import tile_lab

        t["out"].fill_(float("nan"))
        kernel = flash_attention_knobs.replace_hints(**{h: c[h] for h in HINTS})
        tile_lab.launch(kernel, self._grid(row, c), self._args(t, row, c))
        self.torch.cuda.synchronize()
        got = t["out"].reshape(t["want"].shape).float()
        return float((got - t["want"].float()).abs().max())

    def _stage(self, row: AttnRow, t: dict[str, Any], space: Any, ahead: Any = None) -> Any:
        from attention_kernels import flash_attention_knobs

        import tile_lab
        from tile_lab.gpu.device import local_arch
        from tile_lab.gpu.options import TimingOptions
        from tile_lab.tuning import RaceOptions, TuneOptions

        opts = TuneOptions(strategy="race", progress=False, flops=row.flops,
                           race=RaceOptions(samples=3),
                           timing=TimingOptions(samples=10, regime="burst"), arch=local_arch())
        return tile_lab.tune(flash_attention_knobs, space, lambda c: self._grid(row, c),
                             lambda c: self._args(t, row, c), options=opts,
                             measure=SweepMeasurer(row.flops, ahead=ahead, pool=self.pool))

    def tune(self, row: AttnRow, options: SweepOptions) -> dict[str, Any]:
        cls = row.tuning_class
        if cls in self.tuned:  # one tuning per class: this row reuses its winner
            done = self.tuned[cls]
            return dict(config=done["config"], median_us_there=done["median_us"],
                        tuned_on=done["tuned_on"], reused=True)
        t = self._tensors(row)
        try:
            ahead = self.ahead.get(cls)

            def run_stage(cfgs: list[dict[str, int]]) -> Any:
                # stage 1 is the list start() compiled ahead; the later ones compile now
                first = ahead is not None and cfgs == stage1(row, self.spills)
                return self._stage(row, t, space_of(cfgs), ahead if first else None)

            winner = staged_tuning(row, run_stage, lambda c: self._err(row, t, c),
                                   options.max_configs, self.spills)
        finally:
            t.clear()
            self.torch.cuda.empty_cache()
        print(f"{row.name}: tuned {len(winner['experiments'])} configs ({cls}); "
              f"{describe(winner)} at {winner['median_us']:.1f} us", flush=True)
        self.tuned[cls] = dict(winner, tuned_on=row.name, tuning_class=cls)
        return dict(self.tuned[cls], reused=False)

    def compare(self, row: AttnRow, tuned: dict[str, Any], options: SweepOptions) -> Any:
        from attention_kernels import flash_attention_knobs

        from tile_lab.gpu import baselines, compare_timed, kernel_work

        c = tuned["config"]
        t = self._tensors(row)
        cands, _ = baselines.attention_candidates(t["q"], t["k"], t["v"], causal=row.causal)
        base = baselines.best_of(baselines.rank(cands, self.timer, rounds=3, samples=5))
        err = self._err(row, t, c)  # the winner of another row of its class: check it here
        if not err < 2e-2:
            raise AssertionError(f"{describe(tuned)}: max |diff| {err:.3g} vs SDPA")
        ours = kernel_work(flash_attention_knobs, self._grid(row, c), self._args(t, row, c),
                           hints={h: c[h] for h in HINTS},
                           name=f"flash_attention_knobs {describe(tuned)}")
        cmp = compare_timed(ours, base, options.compare_options())
        t.clear()
        self.torch.cuda.empty_cache()
        return cmp


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    add_sweep_arguments(p, budget_s=330.0, max_configs=10, name="attention_grid.json")
    p.add_argument("--screen", action="store_true", help="spill screen on the CPU")
    p.add_argument("--screen-heads", default="128,64",
                   help="with --screen: the head sizes to screen (comma-separated)")
    p.add_argument("--experiments", action="store_true",
                   help="with --markdown: also the table of the tuning experiments")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    ns = parse(argv)
    if ns.markdown:
        payload = load_payloads(ns.markdown)
        print(markdown_table(payload, describe))
        print(f"\n{summary_counts(payload)}")
        if ns.experiments:
            print("\n" + experiments_table(payload))
        return
    if ns.screen:
        screen(heads=tuple(int(h) for h in ns.screen_heads.split(",")))
        return
    rows = select(ROWS, ns.rows)
    opts = options_of(ns)
    if ns.list:
        spills = load_screen()
        for row in rows:
            print(f"{ROWS.index(row):2d} {row.name}: class {row.tuning_class}, "
                  f"{row.flops / 1e12:.2f} TFLOP; stage 1: {len(stage1(row, spills))} configs")
        return
    from gpu_common import environment

    env = environment()
    path = os.path.join(ns.out, ns.name)

    def save(payload: dict[str, Any]) -> None:
        save_payload(dict(payload, env=env, protocol=__doc__.strip()), path)

    byte_compile()
    backend = AttentionBackend()
    payload = run_sweep(rows, backend, opts, save=save)
    if backend.pool is not None:
        backend.pool.shutdown(wait=False, cancel_futures=True)
    print(f"\n== attention grid on {env['provenance']['gpu']}: floor over each row's "
          f"comparisons (fastest SDPA time / ours) ==")
    print(text_table(payload, describe))
    print(summary_counts(payload))
    print(f"saved {path} ({payload['elapsed_s']:.0f} s)")


if __name__ == "__main__":
    main()
