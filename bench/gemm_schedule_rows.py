"""The GEMM sweep's schedules: which kernel a config launches, with which arguments, grid and
timed work (``gpu_gemm_sweep.py`` tunes over them with ``tile_lab.Schedules``).

* ``splitk``: ``gemm_kernels.gemm_splitk`` (persistent grouped GEMM; split-K through fp32
  element-wise atomics) — every row's configs before issue 34;
* ``splitk_ws`` / ``streamk``: ``tile_lab.examples.gemm_schedules`` — split-K through a per-slice
  workspace, and stream-K; offered to skinny rows (M <= 256), where the 2-D tile grid leaves
  SMs idle and too few bytes of B in flight, and (with TMA = 0) to unaligned rows;
* ``pad_b`` / ``pad_bc``: for a row whose B and C rows are not 16-byte aligned (N * 2 bytes not
  a multiple of 16), ``gemm_splitk`` on aligned copies: B copied into a buffer whose rows are
  padded to 16 bytes (and read through a view of its first N columns, which TMA can take), C
  written directly without TMA (``pad_b``) or into a padded buffer copied back (``pad_bc``).
  The copies are inside the timed callable, so the tuner weighs them against the no-TMA kernels.
* ``dp_streamk``: ``gemm_schedules.gemm_dp_streamk`` (PHASE 0, then 1) + ``streamk_fixup``
  (data-parallel + stream-K, three launches, all timed) for aligned rows whose tiles end in a
  partial wave: 4096³, 8192×2048×8192 and 4000³ have 256 tiles of 256×256 for 66 2-CTA slots,
  3.88 waves, so the last wave is 88% full and ~3% of the time idles (the rows cuBLAS won by
  1-1.5%). The first 198 tiles (3 full waves) run whole, grouped, as ``splitk`` SPLIT 1 does;
  the last 58 tiles' (tile, K step) iterations are divided evenly over all 66 blocks (second
  launch), whose partials a third launch sums into C. Its ``SPLIT`` value is the kernel's
  SK_WAVES (1: only the partial wave is stream-K; 2: one full wave more, so each block's
  share is >= 1 tile).
"""

from __future__ import annotations

import math
from typing import Any

SCHEDULES = ("splitk", "splitk_ws", "streamk", "splitk_wide", "streamk_wide", "dp_streamk",
             "pad_b", "pad_bc")
WHY = {"splitk": "persistent split-K (atomics)",
       "splitk_ws": "split-K through a per-slice workspace",
       "streamk": "stream-K",
       "splitk_wide": "split-K through a workspace, reduced in row pieces",
       "streamk_wide": "stream-K, fix-up reduced in row pieces",
       "dp_streamk": "whole tiles for the full waves, stream-K for the partial last wave",
       "pad_b": "B copied to 16-byte rows (copy timed), C stored without TMA",
       "pad_bc": "B and C through 16-byte-row copies (copies timed)"}


def schedules() -> Any:
    """The sweep's tunable: a ``tile_lab.Schedules`` over the kernels above."""
    from gemm_kernels import (
        gemm_dp_streamk,
        gemm_splitk,
        gemm_splitk_wide,
        gemm_splitk_ws,
        gemm_streamk,
        gemm_streamk_wide,
    )

    from tile_lab import Schedules

    return Schedules(splitk=gemm_splitk, splitk_ws=gemm_splitk_ws, streamk=gemm_streamk,
                     splitk_wide=gemm_splitk_wide, streamk_wide=gemm_streamk_wide,
                     dp_streamk=gemm_dp_streamk,
                     pad_b=gemm_splitk, pad_bc=gemm_splitk)


def aligned(n: int, k: int, itemsize: int = 2) -> bool:
    """Whether A (rows of K) and B and C (rows of N) have 16-byte rows: what TMA needs."""
    return (n * itemsize) % 16 == 0 and (k * itemsize) % 16 == 0


def padded(n: int, itemsize: int = 2) -> int:
    """N rounded up so that a row is a multiple of 16 bytes."""
    per = 16 // itemsize
    return -(-n // per) * per


def sched(tm: int, tn: int, schedule: str, *, tk: int = 64, lat: int = 6, split: int = 1,
          tma: int = 1, ctas: int = 1, warps: int = 4, occ: int = 1,
          group: int = 8) -> dict[str, Any]:
    return dict(TM=tm, TN=tn, TK=tk, GROUP=group, LAT=lat, SPLIT=split, num_ctas=ctas,
                num_worker_warps=warps, occupancy=occ, schedule=schedule, TMA=tma)


def skinny_configs(m: int) -> list[dict[str, Any]]:
    """M <= 256: TM covers the whole of M (B streamed once), many units, bytes in flight.

    64-wide tiles read all of A (2 MB at K 8192) once per column of tiles: L2->SM bytes are
    A * N/TN + B * M/TM = 256 + 134 MB at TN 64, 128 + 134 MB at TN 128. Measured on the H200
    (2026-11-28, notebooks/data/gemm_sweep_skinny*_h200.json.gz, fp16 128x8192x8192, cuBLAS
    44 us): stream-K 128x64 at TK 256 78-81 us (TK 128 107-109, TK 64 176); 128x128 tiles on a
    2-CTA cluster (each CTA 128x64, A multicast to both: UTMALDG.MULTICAST) with no split,
    ``splitk_wide`` SPLIT 1 = 64 tiles for 66 clusters, 51.5 us; every split of a wide tile
    through the workspace 101-275 us (the last arriver's reduction is a serial tail), 2-CTA
    stream-K 160 us. So the unsplit 2-CTA 128x128 tile comes first with its neighbours in K
    step and latency, then the 78 us stream-K as the control. 128x256 on one CTA and 1-CTA
    128x128 stream-K spill on sm_90 (the accumulator against the 168-register cap)."""
    tm = max(64, 2 ** math.ceil(math.log2(m)))
    w = 8 if tm > 128 else 4

    def wide(tk: int, lat: int, warps: int = 8) -> dict[str, Any]:
        return sched(tm, 128, "splitk_wide", tk=tk, lat=lat, split=1, ctas=2, warps=warps)

    # M = 256: two of them after the 256x256 2-CTA tiles (gpu_gemm_sweep.candidates), ahead
    # of the earlier list; in the H200 sweep the 256x256 tile won (0.987-0.992x)
    first = ([wide(128, 4), wide(64, 4), wide(64, 6), wide(128, 2), wide(128, 6),
              wide(256, 2), wide(64, 8), wide(128, 3)] if tm == 128
             else [wide(128, 4), wide(64, 4)])
    return [
        *first,
        sched(tm, 64, "streamk", tk=256, lat=4, warps=8),
        sched(tm, 64, "streamk", tk=256, lat=4, warps=w),
        sched(tm, 64, "streamk", tk=256, lat=8, warps=8),
        sched(tm, 64, "streamk", tk=256, lat=2, warps=8),
        sched(tm, 64, "splitk_ws", tk=256, split=2, lat=4, warps=w),
        sched(tm, 64, "streamk", tk=128, warps=8),
        sched(tm, 128, "streamk", tk=256, lat=4, ctas=2, warps=8),
        sched(tm, 64, "splitk_ws", tk=128, split=2, warps=w)]


def unaligned_configs() -> list[dict[str, Any]]:
    """B and C rows not 16-byte aligned: (a) kernels whose B loads / C stores do not use TMA,
    (b) the large-square winners on padded copies."""
    return [sched(256, 256, "pad_b", lat=4, ctas=2, warps=8),
            sched(256, 256, "pad_bc", lat=4, ctas=2, warps=8),
            sched(128, 256, "pad_b", lat=4, ctas=2, warps=8),
            sched(128, 256, "pad_bc", lat=4, ctas=2, warps=8),
            sched(128, 128, "streamk", tma=0, lat=4, warps=8),
            sched(128, 64, "streamk", tma=0, lat=4),
            sched(128, 128, "splitk", lat=4, ctas=2, warps=8),  # TMA left to the compiler
            sched(128, 128, "pad_b", lat=4)]


def slots(c: dict[str, Any], sms: int) -> int:
    return max(1, sms * c["occupancy"] // c["num_ctas"])


def grid(m: int, n: int, k: int, c: dict[str, Any], sms: int) -> tuple[int]:
    from tile_lab.examples.gemm_schedules import splitk_grid, streamk_grid

    if c["schedule"] in ("streamk", "streamk_wide"):
        return streamk_grid(m, n, k, c["TM"], c["TN"], c["TK"], slots(c, sms))
    if c["schedule"] == "dp_streamk":  # one block per slot or tile (SPLIT is its SK_WAVES)
        return splitk_grid(m, n, c["TM"], c["TN"], 1, slots(c, sms))
    return splitk_grid(m, n, c["TM"], c["TN"], c["SPLIT"], slots(c, sms))


class Operands:
    """A row's device arrays and the per-schedule extras (workspaces, padded copies), made on
    first use: ``args(c)``, ``work(c)`` (the timed callable, copies included) and ``zero()``."""

    def __init__(self, t: dict[str, Any], m: int, n: int, k: int, sms: int) -> None:
        self.t, self.m, self.n, self.k, self.sms = t, m, n, k, sms
        self.extra: dict[Any, Any] = {}

    def _buf(self, name: Any, shape: tuple[int, ...], dtype: Any, zero: bool = True) -> Any:
        torch = __import__("torch")
        if name not in self.extra:
            make = torch.zeros if zero else torch.empty
            self.extra[name] = make(shape, device=self.t["a"].device, dtype=dtype)
        return self.extra[name]

    def padded_b(self) -> Any:
        b = self.t["b"]
        return self._buf("bp", (self.k, padded(self.n)), b.dtype, zero=False)

    def padded_c(self) -> Any:
        c = self.t["c"]
        return self._buf("cp", (self.m, padded(self.n)), c.dtype, zero=False)

    def streamk_slots(self, c: Any) -> Any:
        """dp_streamk's workspace: SK_WAVES + 1 partial tiles per block of launch 1."""
        g = grid(self.m, self.n, self.k, c, self.sms)[0]
        shape = ((c["SPLIT"] + 1) * g, c["TM"], c["TN"])
        return self._buf(("dpsk", *shape), shape, __import__("torch").float32, zero=False)

    def fixup(self, c: Any) -> tuple[tuple[int], tuple[Any, ...]]:
        """dp_streamk's last launch: its grid ((0,) when the waves are whole) and args."""
        from tile_lab.examples.gemm_schedules import dp_streamk_grids

        first, second = dp_streamk_grids(self.m, self.n, c["TM"], c["TN"], c["SPLIT"],
                                         slots(c, self.sms))
        return second, (self.t["a"], self.t["c"], self.streamk_slots(c), first[0], c["TM"],
                        c["TN"], c["TK"], c["GROUP"], c["SPLIT"])

    def args(self, c: Any) -> tuple[Any, ...]:
        import torch

        t, s = self.t, c["schedule"]
        tiles = (c["TM"], c["TN"], c["TK"])
        arrived = self._buf(("arrived", c["TM"], c["TN"]),
                            (math.ceil(self.m / c["TM"]) * math.ceil(self.n / c["TN"]),),
                            torch.int32)
        if s in ("splitk_ws", "splitk_wide"):
            w = self._buf(("ws", c["SPLIT"]), (c["SPLIT"], self.m, self.n), torch.float32)
            if s == "splitk_wide":  # TMA always on (aligned skinny rows)
                return (t["a"], t["b"], t["c"], w, arrived, *tiles, c["LAT"], c["SPLIT"])
            return (t["a"], t["b"], t["c"], w, arrived, *tiles, c["LAT"], c["TMA"])
        if s in ("streamk", "streamk_wide"):
            g = grid(self.m, self.n, self.k, c, self.sms)[0]
            w = self._buf(("sk", g, c["TM"], c["TN"]), (2 * g, c["TM"], c["TN"]),
                          torch.float32)
            return (t["a"], t["b"], t["c"], w, arrived, *tiles, c["LAT"], c["TMA"])
        if s == "dp_streamk":  # TMA always on (aligned rows); SPLIT is its SK_WAVES
            return (t["a"], t["b"], t["c"], *tiles, c["GROUP"], c["LAT"], c["SPLIT"],
                    0)  # PHASE 0 into C; work() adds PHASE 1 into the workspace
        b = self.padded_b()[:, :self.n] if s in ("pad_b", "pad_bc") else t["b"]
        out = self.padded_c()[:, :self.n] if s == "pad_bc" else t["c"]
        return (t["a"], b, out, t["w"], arrived, *tiles, c["GROUP"], c["LAT"], c["SPLIT"])

    def work(self, kernel: Any, c: Any, name: str) -> Any:
        """The timed callable: the launch, with the copies its schedule needs around it (on
        CuPy's current stream, the launch's stream; bf16 copied as int16 bits, CuPy has no
        bfloat16)."""
        import cupy
        import torch

        from tile_lab.gpu import TimedWork, kernel_work

        launch = kernel_work(kernel, grid(self.m, self.n, self.k, c, self.sms), self.args(c),
                             name=name)
        s = c["schedule"]
        if s == "dp_streamk":
            from gemm_kernels import streamk_fixup

            fix_grid, fix_args = self.fixup(c)
            if not fix_grid[0]:  # whole waves: PHASE 0 is all there is
                return launch
            g = grid(self.m, self.n, self.k, c, self.sms)
            first = self.args(c)
            partials = kernel_work(kernel, g, (*first[:2], self.streamk_slots(c), *first[3:-1],
                                               1), name=f"{name} sk")
            fix = kernel_work(streamk_fixup, fix_grid, fix_args, name=f"{name} fix-up")

            def three() -> None:
                launch.run()
                partials.run()
                fix.run()
            return TimedWork(name, three)
        if s not in ("pad_b", "pad_bc"):
            return launch

        def bits(x: Any) -> Any:
            return cupy.asarray(x.view(torch.int16))

        b_src, b_dst = bits(self.t["b"]), bits(self.padded_b())[:, :self.n]
        c_src, c_dst = bits(self.padded_c())[:, :self.n], bits(self.t["c"])

        def run() -> None:
            cupy.copyto(b_dst, b_src)
            launch.run()
            if s == "pad_bc":
                cupy.copyto(c_dst, c_src)
        return TimedWork(name, run)

    def zero(self) -> None:
        """Workspaces and counters back to zero (before a sample, outside the timed span)."""
        import cupy

        for key, buf in self.extra.items():
            if isinstance(key, tuple):
                cupy.asarray(buf).fill(0)
        cupy.asarray(self.t["w"]).fill(0)
