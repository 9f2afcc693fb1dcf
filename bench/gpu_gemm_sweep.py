"""GEMM shape sweep: for every row, ``tile_lab.tune`` picks the persistent kernel's config and
``compare_timed`` sets the winner against the faster of ``torch.matmul`` / ``cupy.matmul``.

Rows: fp16 and bf16 (fp32 accumulate, output in the input type) × 4096³, 8192³,
16384×16384×4096, 8192×8192×2048, 8192×2048×8192, the tall-skinny 128×8192×8192 and
256×16384×4096, and the ragged 4000³ and 8191×8191×1000 (M×N×K) = 18 rows.

Kernel: ``gemm_kernels.gemm_splitk``, the persistent grouped GEMM (fp32 accumulator, zero
padding for a ragged K) whose K loop can be cut into SPLIT slices that meet in an fp32 workspace
(the last slice of a tile writes it out): SPLIT=1 is ``gemm_persistent_acc``. Each row's space is
a short list of configs (tiles, cluster size ``num_ctas``, ``num_worker_warps``, latency hint,
occupancy, GROUP, SPLIT) chosen from what is known (``bench/KERNELS.md``,
``notebooks/data/tuning_gemm_8192*.json``): 256×256 tiles on a 2-CTA cluster with 8 worker warps
lead for large squares; split-K variants are added where the output tiles fill less than 80% of
the last wave (tall-skinny M, few tiles); data-parallel + stream-K (``dp_streamk``) last
where 256x256 tiles end in a partial wave within 4 waves (4096³, 8192x2048x8192, 4000³: 256
tiles on 66 2-CTA slots, 3.88 waves; it lost to gemm_splitk by 12% on the H200); configs
whose sm_90 SASS spills (the screen below) are left out before any launch; at most
``--max-configs`` per row.

Protocol: ``tile_lab.tune`` races the configs in the burst regime (3 samples each, the
contenders 10 more; compiles in worker processes); the fastest config whose output matches
``torch.matmul``'s (relative Frobenius error < 1e-2, checked on two consecutive launches, so a
split-K workspace left dirty fails) is the winner. ``compare_timed(winner, fastest baseline)``
then runs ABBA rounds in the burst and sustained regimes, each round's two sides held to
``--clock-bound`` in SM clock (re-run otherwise). ``--reruns N``: every tuned row is compared N
times (passes over all rows, so the reruns see other thermal histories); the table reports the
floor (lowest ratio) per regime. Rows that do not fit ``--budget-s`` are recorded as skipped.

    python bench/gpu_gemm_sweep.py [--rows SPEC] [--budget-s 540] [--reruns 2]
                                   [--max-configs 6] [--out DIR] [--name FILE.json]
    python bench/gpu_gemm_sweep.py --list                 # rows and their spaces (no GPU)
    python bench/gpu_gemm_sweep.py --screen               # spill screen on the CPU (tileiras)
    python bench/gpu_gemm_sweep.py --markdown A.json [B.json ...]   # tables from JSON (no GPU)

``--rows``: "all", indices/ranges ("0-5,9") or name fragments ("bf16", "128x8192x8192").
Writes DIR/FILE.json (default notebooks/data/gemm_sweep.json) after every row.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import gemm_schedule_rows as gsr  # noqa: E402
from sweep_common import (  # noqa: E402
    KeepOpen,
    SweepMeasurer,
    SweepOptions,
    add_sweep_arguments,
    byte_compile,
    load_payloads,
    markdown_table,
    options_of,
    read_payload,
    run_sweep,
    save_payload,
    select,
    summary_counts,
    text_table,
)

H100_SMS = 132
SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 4096), (8192, 8192, 2048),
          (8192, 2048, 8192), (128, 8192, 8192), (256, 16384, 4096), (4000, 4000, 4000),
          (8191, 8191, 1000))
SCREEN = os.path.join(HERE, "results", "gemm_sweep_spill_screen.json.gz")
KNOBS = ("TM", "TN", "TK", "GROUP", "LAT", "SPLIT", "num_ctas", "num_worker_warps", "occupancy")
SPACE_KNOBS = (*KNOBS, "schedule", "TMA")  # schedule: which kernel (gemm_schedule_rows)


@dataclass(frozen=True)
class GemmRow:
    dtype: str  # "fp16" | "bf16"
    m: int
    n: int
    k: int

    @property
    def name(self) -> str:
        return f"{self.dtype} {self.m}x{self.n}x{self.k}"

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def as_json(self) -> dict[str, Any]:
        return dict(dtype=self.dtype, m=self.m, n=self.n, k=self.k)


ROWS = tuple(GemmRow(dt, *s) for s in SHAPES for dt in ("fp16", "bf16"))


def cfg(tm: int, tn: int, *, tk: int = 64, group: int = 8, lat: int = 4, split: int = 1,
        ctas: int = 1, warps: int = 4, occ: int = 1) -> dict[str, int]:
    return dict(TM=tm, TN=tn, TK=tk, GROUP=group, LAT=lat, SPLIT=split, num_ctas=ctas,
                num_worker_warps=warps, occupancy=occ, schedule="splitk", TMA=1)


# Large outputs: the H100 winner at 8192³ (256×256 over a 2-CTA cluster, 8 worker warps, latency
# 4 or 6; KERNELS.md) first, its latency neighbours, then the smaller tiles that came next.
# (GROUP 4 and 16 measured the same as 8 there: 16 comes last.)
LARGE = (cfg(256, 256, lat=4, ctas=2, warps=8), cfg(256, 256, lat=6, ctas=2, warps=8),
         cfg(128, 256, lat=4, ctas=2, warps=8), cfg(128, 256, lat=4, warps=8),
         cfg(256, 128, lat=4, ctas=2, warps=8), cfg(256, 256, lat=0, ctas=2, warps=8),
         cfg(128, 128, lat=4), cfg(256, 256, lat=4, ctas=2, warps=8, group=16))
# Split-K tiles: their fp32 partial goes out through atomics, which needs registers; 128×256 with
# 8 warps spills there (the screen), 128×128 on a 2-CTA cluster and 64×128 / 128×64 do not.
SPLIT_TILES = (dict(tm=128, tn=128, ctas=2, warps=8), dict(tm=64, tn=128, warps=8),
               dict(tm=128, tn=64), dict(tm=64, tn=256, ctas=2, warps=8))


def tiles(m: int, n: int, c: dict[str, int]) -> int:
    return math.ceil(m / c["TM"]) * math.ceil(n / c["TN"])


def slots(c: dict[str, int], sms: int = H100_SMS) -> int:
    """Blocks that run at once: a block of num_ctas CTAs takes num_ctas SMs."""
    return max(1, sms * c["occupancy"] // c["num_ctas"])


def wave_fill(units: int, slots_: int) -> float:
    """Work units / (waves × slots): 1.0 when the last wave is full."""
    return units / (math.ceil(units / slots_) * slots_)


def waves(m: int, n: int, c: dict[str, Any], sms: int = H100_SMS) -> int:
    return math.ceil(tiles(m, n, c) / slots(c, sms))


# Data-parallel + stream-K (gemm_schedule_rows: dp_streamk) for aligned rows whose tiles end
# in a partial wave, within 4 waves of the 256x256 2-CTA tile: 4096³, 8192x2048x8192 and
# 4000³ (256 tiles, 66 slots: 3.88 waves, ~3% of the time idle at the end; cuBLAS wins them
# by 1-1.5%). Measured on the H200 (bench/results/gemm_hybrid_trial_h200.json.gz, kept at
# commit 02d0a46) it lost on all six rows: 204-209 us against gemm_splitk's 181-185 at
# 4096³, 393-401 against 345-356 at 8192x2048x8192 (its three launches, the fp32 partials
# and the fix-up cost more than the ~3% of idle they recover), so it comes after the 8
# other configs (the sweep's --max-configs 9 tunes its first, 11 all three). 8192³ and
# 8192x8192x2048 (1024 tiles, 15.5 waves) and 16384² x 4096 (4096 tiles) already beat
# cuBLAS (1.008-1.013x): their lists stay as they were.
HYBRID_MAX_WAVES = 4


def hybrid_configs() -> list[dict[str, Any]]:
    """The 8192³ winner's tile (256x256x64, 2-CTA, 8 warps, GROUP 8) as dp_streamk: LAT 4 and
    6 with only the partial wave stream-K (SPLIT = SK_WAVES 1), LAT 4 with one wave more."""
    return [dict(LARGE[0], schedule="dp_streamk", LAT=lat, SPLIT=sk)
            for lat, sk in ((4, 1), (6, 1), (4, 2))]


def grid_for(m: int, n: int, c: dict[str, int], sms: int = H100_SMS) -> tuple[int]:
    """The persistent grid: one block per slot, never more blocks than work units."""
    return (min(tiles(m, n, c) * c["SPLIT"], slots(c, sms)),)


def key(c: dict[str, Any]) -> str:
    # gemm_splitk's configs keep the keys they had before there were schedules
    extra = ("" if c.get("schedule", "splitk") == "splitk" and c.get("TMA", 1) == 1
             else f",schedule={c['schedule']},TMA={c['TMA']}")
    return ",".join(f"{k}={c[k]}" for k in KNOBS) + extra


def screen_key(row: GemmRow, c: dict[str, Any]) -> str:
    """The spill screen's key: a row with unaligned B/C rows compiles to other code."""
    return key(c) + ("" if gsr.aligned(row.n, row.k) else "|unaligned")


def candidates(row: GemmRow, *, sms: int = H100_SMS, max_configs: int = 8,
               spills: dict[str, int] | None = None) -> tuple[list[dict[str, int]], list[dict]]:
    """The configs tuned for ``row``, best guesses first, at most ``max_configs``; and the ones
    left out with the reason (tile larger than the matrix, spills in the screen)."""
    m, n, k = row.m, row.n, row.k
    k_tiles = math.ceil(k / 64)
    out: list[dict[str, int]] = []
    dropped: list[dict] = []
    pool = list(LARGE)
    # under 80% of the last wave filled with whole tiles: cut K into slices as well
    best_fill = max(wave_fill(tiles(m, n, c), slots(c, sms)) for c in LARGE
                    if c["TM"] <= max(64, m) and c["TN"] <= max(64, n))
    if best_fill < 0.8:
        split_pool = []
        for t in SPLIT_TILES:
            base = cfg(**t)
            for s in (2, 4, 8):
                units = tiles(m, n, base) * s
                if k_tiles // s >= 4 and units <= 4 * slots(base, sms):
                    split_pool.append((wave_fill(units, slots(base, sms)), cfg(**t, split=s)))
        # the best-filled splits first
        split_pool.sort(key=lambda fc: -fc[0])
        pool = [c for _, c in split_pool] + pool
    fits = [c for c in pool if c["TM"] <= max(64, 2 ** math.ceil(math.log2(m)))]
    if m <= 256 and fits:  # a skinny product streams B: try a deeper prefetch second
        pool.insert(pool.index(fits[0]) + 1, dict(fits[0], LAT=8))
    # schedules other than the 2-D tile grid first where the grid fails (issue 34): skinny M
    # (too few tiles, too few bytes of B in flight), rows that are not 16-byte aligned (no TMA)
    if not gsr.aligned(n, k):
        pool = gsr.unaligned_configs() + pool
    elif m <= 128:
        pool = gsr.skinny_configs(m) + pool
    elif m <= 256:  # 256x256 on a 2-CTA cluster still fills the GPU at N >= 16384: it first
        pool = pool[:3] + gsr.skinny_configs(m) + pool[3:]
    elif best_fill < 1.0 and waves(m, n, LARGE[0], sms) <= HYBRID_MAX_WAVES:
        pool = pool + hybrid_configs()
    for c in pool:
        if c["TM"] > max(64, 2 ** math.ceil(math.log2(m))) or c["TN"] > max(64, n):
            dropped.append(dict(config=c, reason=f"tile {c['TM']}x{c['TN']} larger than the "
                                                 f"{m}x{n} output"))
            continue
        spilled = (spills or {}).get(screen_key(row, c))
        if spilled:
            dropped.append(dict(config=c, reason=f"{spilled} LDL/STL in its sm_90 SASS"))
            continue
        if c not in out:
            out.append(c)
    for c in out[max_configs:]:
        dropped.append(dict(config=c, reason=f"beyond --max-configs {max_configs}"))
    return out[:max_configs], dropped


def space_for(configs: list[dict[str, int]]) -> Any:
    """A tile_lab.Space holding exactly ``configs`` (their knobs' values crossed, the other
    points rejected by a constraint that names the pruning)."""
    import tile_lab

    allowed = {key(c) for c in configs}

    def pruned_for_this_shape(c: Any) -> bool | str:
        return key(c.as_dict()) in allowed or "not in this shape's pruned list"

    return tile_lab.Space(constraints=[pruned_for_this_shape],
                          **{k: sorted({c[k] for c in configs}) for k in SPACE_KNOBS})


def describe(tuning: dict[str, Any]) -> str:
    c = tuning["config"]
    text = (f"{c['TM']}×{c['TN']}×{c['TK']}, {c['num_ctas']}-CTA, {c['num_worker_warps']} "
            f"warps, LAT {c['LAT']}, occ {c['occupancy']}, GROUP {c['GROUP']}")
    schedule = c.get("schedule", "splitk")
    if schedule == "dp_streamk":
        text += f", SK_WAVES {c['SPLIT']}"
    elif c["SPLIT"] > 1:
        text += f", split-K {c['SPLIT']}"
    why = gsr.WHY[schedule]
    if schedule == "splitk_wide" and c["SPLIT"] == 1:
        # SPLIT 1 takes the kernel's no-workspace branch: naming the workspace would mislead
        why = "not split: each tile's whole K loop, C stored directly"
    if schedule != "splitk" or c.get("TMA", 1) != 1:
        text = f"{schedule} ({why}), {text}" + (", no TMA" if not c["TMA"] else "")
    return text


def load_screen(path: str = SCREEN) -> dict[str, int]:
    if not os.path.exists(path):
        return {}
    doc = read_payload(path)
    return {r["key"]: r["spills"] for r in doc["configs"] if isinstance(r["spills"], int)}


def screen(path: str = SCREEN, rows: list[GemmRow] | None = None) -> None:
    """Compile every candidate config of ``rows`` (all by default) for sm_90 on this CPU and
    count LDL/STL in its SASS (no GPU): the sweep leaves spilling configs out. A row whose B
    and C rows are not 16-byte aligned is compiled on arrays that are not either (511 columns),
    as the sweep launches it. Configs already in ``path`` are kept, not compiled again."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    import tile_lab
    from tile_lab.compile.toolchain import tool_version

    old = []
    if os.path.exists(path):
        old = [r for r in read_payload(path)["configs"] if isinstance(r["spills"], int)]
    known = {r["key"] for r in old}
    every: dict[str, tuple[bool, dict[str, Any]]] = {}
    for row in rows or ROWS:
        for c in candidates(row, max_configs=64)[0]:
            if screen_key(row, c) not in known:
                every.setdefault(screen_key(row, c), (gsr.aligned(row.n, row.k), c))
    kernels = gsr.schedules()

    def one(item: tuple[str, tuple[bool, dict[str, Any]]]) -> dict[str, Any]:
        skey, (is_aligned, c) = item
        n = 512 if is_aligned else 511  # 511 halfs: rows that are not 16-byte aligned
        t = dict(a=np.zeros((512, 512), np.float16), b=np.zeros((512, n), np.float16),
                 c=np.zeros((512, n), np.float16), w=np.zeros((512, n), np.float32))
        hints = {h: c[h] for h in ("num_ctas", "num_worker_warps", "occupancy")}
        try:
            args = NumpyOperands(t, 512, n, 512, H100_SMS).args(c)
            insp = tile_lab.inspect(kernels.for_config(c), args, arch="sm_90", hints=hints)
            return dict(key=skey, config=c, spills=sum(insp.spill_instructions().values()))
        except Exception as e:
            return dict(key=skey, config=c, spills=f"{type(e).__name__}: {str(e)[:200]}")

    with ThreadPoolExecutor(max(1, (os.cpu_count() or 2))) as pool:
        results = list(pool.map(one, every.items()))
    doc = dict(arch="sm_90", kernel="gemm_schedule_rows.schedules()", dtype="float16 (bf16 "
               "compiles to the same register use)", tileiras=tool_version("tileiras"),
               configs=old + results)
    save_payload(doc, path)
    bad = [r for r in results if r["spills"] != 0]
    print(f"screened {len(results)} new configs ({len(old)} known): {len(bad)} spill or fail; "
          f"wrote {path}")
    for r in bad:
        print(f"  {r['key']}: {r['spills']}")


class NumpyOperands(gsr.Operands):
    """The screen's operands: NumPy arrays shaped (and strided) as the sweep's tensors."""

    def _buf(self, name: Any, shape: tuple[int, ...], dtype: Any, zero: bool = True) -> Any:
        import numpy as np

        if name not in self.extra:
            self.extra[name] = np.zeros(shape, {"int32": np.int32, "float32": np.float32}.get(
                str(dtype).replace("torch.", ""), dtype))
        return self.extra[name]


class GemmBackend:
    """The sweep's GPU side: torch tensors (bf16 included), cuBLAS through torch and CuPy."""

    def __init__(self) -> None:
        import cupy
        import torch

        from tile_lab.gpu.device import device_info
        from tile_lab.gpu.sampling import CudaEventTimer

        self.cupy, self.torch = cupy, torch
        info = device_info()
        self.sms = info.sm_count
        self.timer = CudaEventTimer(cupy, cupy.cuda.Stream(non_blocking=True),
                                    l2_bytes=info.l2_bytes)
        self.spills = load_screen()
        self.ahead: dict[str, Any] = {}  # row name -> its Precompiler, started in start()
        self.pool: Any = None

    def start(self, rows: list[GemmRow], options: SweepOptions) -> None:
        """Send every row's compiles to one pool of worker processes now, in row order, so
        they run while the first rows are measured (each row's tune then finds its cubins in
        cuTile's cache, and no row pays for starting workers)."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from tile_lab.gpu.device import local_arch
        from tile_lab.tuning.parallel_compile import Precompiler

        workers = max(1, (os.cpu_count() or 2) - 1)
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        arch = local_arch()
        kernels = gsr.schedules()
        for row in rows:
            configs, _ = candidates(row, sms=self.sms, max_configs=options.max_configs,
                                    spills=self.spills)
            space = space_for(configs)
            ops = self._operands(row, configs, empty=True)  # shapes, strides, dtypes count
            self.ahead[row.name] = Precompiler(
                kernels, space.configs(arch), lambda c, ops=ops: ops.args(c),
                kernels.knob_kinds(space), arch, workers, executor=KeepOpen(self.pool))
            ops.t.clear()
            ops.extra.clear()

    def amount(self, row: GemmRow) -> dict[str, int]:
        return {"ours_flops": row.flops}

    def _arrays(self, row: GemmRow, configs: list[dict[str, int]], *,
                empty: bool = False) -> dict[str, Any]:
        torch = self.torch
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[row.dtype]
        split = any(c["SPLIT"] > 1 and c["schedule"] == "splitk" for c in configs)
        t = dict(c=torch.empty((row.m, row.n), device="cuda", dtype=dtype),
                 w=torch.zeros((row.m, row.n) if split else (1, 1), device="cuda",
                               dtype=torch.float32))
        if empty:
            return dict(t, a=torch.empty((row.m, row.k), device="cuda", dtype=dtype),
                        b=torch.empty((row.k, row.n), device="cuda", dtype=dtype))
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn((row.m, row.k), device="cuda", dtype=dtype, generator=g)
        b = torch.randn((row.k, row.n), device="cuda", dtype=dtype, generator=g)
        return dict(t, a=a, b=b, ref=torch.matmul(a, b).float())

    def _operands(self, row: GemmRow, configs: list[dict[str, Any]], *,
                  empty: bool = False) -> gsr.Operands:
        return gsr.Operands(self._arrays(row, configs, empty=empty), row.m, row.n, row.k,
                            self.sms)

    def _work(self, ops: gsr.Operands, c: Any, kernels: Any) -> Any:
        """The timed callable of config ``c``: its schedule's kernel with its hints, and the
        copies a padded schedule needs (tile_lab.tune's measurer, the check, the comparison)."""
        c = dict(c)
        hints = {h: c[h] for h in ("num_ctas", "num_worker_warps", "occupancy")}
        return ops.work(kernels.replace_hints(**hints).for_config(c), c,
                        f"{c['schedule']} {key(c)}")

    def _error(self, t: dict[str, Any]) -> float:
        ref = t["ref"]
        return float((t["c"].float() - ref).norm() / ref.norm())

    def _verified(self, ops: gsr.Operands, c: dict[str, Any]) -> float:
        """The larger relative error of two consecutive launches (output poisoned first)."""
        t = ops.t
        work = self._work(ops, c, gsr.schedules())
        ops.zero()  # from a clean state, whatever the configs timed before left behind
        self.cupy.cuda.Device().synchronize()
        worst = 0.0
        for _ in range(2):
            t["c"].fill_(float("nan"))
            self.torch.cuda.synchronize()
            work.run()
            self.cupy.cuda.Device().synchronize()
            err = self._error(t)
            worst = err if err != err else max(worst, err)  # NaN stays NaN
        return worst

    def tune(self, row: GemmRow, options: SweepOptions) -> dict[str, Any]:
        import tile_lab
        from tile_lab.gpu.options import TimingOptions
        from tile_lab.tuning import RaceOptions, TuneOptions

        configs, dropped = candidates(row, sms=self.sms, max_configs=options.max_configs,
                                      spills=self.spills)
        ops = self._operands(row, configs)
        t = ops.t
        kernels = gsr.schedules()
        from tile_lab.gpu.device import local_arch

        opts = TuneOptions(progress=False, flops=row.flops, race=RaceOptions(samples=3),
                           timing=TimingOptions(samples=10, regime="burst"), arch=local_arch())
        result = tile_lab.tune(kernels, space_for(configs),
                               lambda c: gsr.grid(row.m, row.n, row.k, c, self.sms),
                               ops.args, options=opts,
                               measure=SweepMeasurer(row.flops, self.ahead.get(row.name),
                                                     prepare=ops.zero,
                                                     work=lambda k, c, g, a: ops.work(
                                                         k, c, key(c.as_dict()))))
        trials = [dict(config=s.config.as_dict(), median_us=s.measurement.median_s * 1e6,
                       samples=s.measurement.n) for s in result.successes]
        trials += [dict(config=f.config.as_dict(), failed=f.stage, error=f.error[:300])
                   for f in result.failures]
        winner, checks = None, []
        for s in sorted(result.successes, key=lambda s: s.measurement.median_s):
            c = s.config.as_dict()
            err = self._verified(ops, c)
            checks.append(dict(config=c, rel_err=err))
            if err < 1e-2:
                winner = dict(c, median_us=s.measurement.median_s * 1e6)
                break
        t.clear()  # free the row's tensors before the next row allocates its own
        ops.extra.clear()
        self.torch.cuda.empty_cache()
        if winner is None:
            raise RuntimeError(f"no config verified: {checks[:3]}; {result.summary()[:400]}")
        config = {k: winner[k] for k in SPACE_KNOBS}
        print(f"{row.name}: tuned {len(configs)} configs in {result.wall_s:.1f} s; "
              f"{describe(dict(config=config))} at {winner['median_us']:.1f} us", flush=True)
        schedule = config["schedule"]
        return dict(config=config, kernel=f"{schedule}: {gsr.WHY[schedule]}",
                    why=_why(row, result), wall_s=result.wall_s,
                    timings=result.timings, trials=trials, checks=checks, dropped=dropped,
                    space=[key(c) for c in configs])

    def compare(self, row: GemmRow, tuned: dict[str, Any], options: SweepOptions) -> Any:
        from tile_lab.gpu import baselines, compare_timed

        c = tuned["config"]
        # the workspace and counters shaped as in the tuning (the same compiled signature)
        configs, _ = candidates(row, sms=self.sms, max_configs=options.max_configs,
                                spills=self.spills)
        ops = self._operands(row, configs if c in configs else [c])
        t = ops.t
        base = baselines.best_of(baselines.rank(self._baselines(t, row), self.timer,
                                                rounds=3, samples=5))
        ours = self._work(ops, c, gsr.schedules())
        ops.zero()
        ours.run()
        self.cupy.cuda.Device().synchronize()
        err = self._error(t)
        if not err < 1e-2:
            raise AssertionError(f"{ours.name}: relative error {err:.3g} vs torch.matmul")
        cmp = compare_timed(ours, base, options.compare_options())
        t.clear()
        ops.extra.clear()
        self.torch.cuda.empty_cache()
        return cmp

    def _baselines(self, t: dict[str, Any], row: GemmRow) -> list[Any]:
        """torch.matmul, and cupy.matmul where CuPy takes the dtype (it has no bfloat16)."""
        from tile_lab.gpu import baselines

        if row.dtype == "fp16":
            return baselines.gemm_candidates(t["a"], t["b"], t["c"])
        torch = self.torch
        a, b, out = t["a"], t["b"], t["c"]
        return [baselines.TimedWork("torch.matmul", lambda: torch.matmul(a, b, out=out),
                                    flops=row.flops,
                                    baseline=f"torch.matmul (cuBLAS), "
                                             f"{baselines.torch_version()}; CuPy has no "
                                             f"bfloat16")]


def _why(row: GemmRow, result: Any) -> dict[str, Any]:
    """Which schedule won and why: each schedule's fastest measured median (the padded ones
    with their copies in the time), and for an unaligned row the best of (a) the kernels
    without TMA against (b) the padded copies."""
    best: dict[str, float] = {}
    for s in result.successes:
        c = s.config.as_dict()
        us = s.measurement.median_s * 1e6
        best[c["schedule"]] = min(best.get(c["schedule"], us), us)
    if not best:
        return dict(per_schedule_us={}, note="nothing measured")
    ranked = sorted(best, key=best.get)
    note = (f"{ranked[0]} ({gsr.WHY[ranked[0]]}) {best[ranked[0]]:.1f} us"
            + "".join(f"; {r} {best[r]:.1f} us" for r in ranked[1:]))
    if not gsr.aligned(row.n, row.k):
        direct = [best[r] for r in best if not r.startswith("pad")]
        pad = [best[r] for r in best if r.startswith("pad")]
        if direct and pad:
            won = "(b) padded copies" if min(pad) < min(direct) else "(a) no TMA"
            note += (f"; unaligned rows: {won} won, {min(pad):.1f} us padded (copies timed) "
                     f"vs {min(direct):.1f} us without TMA")
    return dict(per_schedule_us=best, note=note)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    add_sweep_arguments(p, budget_s=540.0, max_configs=6, name="gemm_sweep.json")
    p.add_argument("--screen", action="store_true", help="spill screen on the CPU")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    ns = parse(argv)
    if ns.markdown:
        payload = load_payloads(ns.markdown)
        print(markdown_table(payload, describe))
        print(f"\n{summary_counts(payload)}")
        return
    rows = select(ROWS, ns.rows)
    if ns.screen:
        screen(rows=rows)
        return
    opts = options_of(ns)
    if ns.list:
        spills = load_screen()
        for row in rows:
            configs, dropped = candidates(row, max_configs=opts.max_configs, spills=spills)
            print(f"{ROWS.index(row):2d} {row.name}: {len(configs)} configs")
            for c in configs:
                print(f"     {key(c)}  grid {gsr.grid(row.m, row.n, row.k, c, H100_SMS)}")
            for d in dropped:
                print(f"     left out {key(d['config'])}: {d['reason']}")
        return
    from gpu_common import environment

    env = environment()
    path = os.path.join(ns.out, ns.name)

    def save(payload: dict[str, Any]) -> None:
        save_payload(dict(payload, env=env, protocol=__doc__.strip()), path)

    byte_compile()
    backend = GemmBackend()
    payload = run_sweep(rows, backend, opts, save=save)
    if backend.pool is not None:  # compiles of rows the budget skipped are not waited for
        backend.pool.shutdown(wait=False, cancel_futures=True)
    print(f"\n== GEMM sweep on {env['provenance']['gpu']}: floor over each row's comparisons "
          f"(baseline time / ours) ==")
    print(text_table(payload, describe))
    print(summary_counts(payload))
    print(f"saved {path} ({payload['elapsed_s']:.0f} s)")


if __name__ == "__main__":
    main()
