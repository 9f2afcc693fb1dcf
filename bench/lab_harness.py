"""The timing harness of ``kernel_lab.py``: time tuned cuTile kernels against the strongest
baselines on the GPU.

A stop-gap until the measurement core's regimes land in ``tile_lab.gpu``; self-contained on
purpose (torch + cuTile + NVML only). Protocol, the same for our kernel and its baseline:

* every sample is one launch between two CUDA events, after a 256 MiB write that evicts L2
  (cold caches); samples of a group are queued back to back and read after one sync;
* a comparison runs rounds of groups in rotated, mirrored order (A B C C B A, B C A A C B,
  ...), so drift and position in a burst hit every side alike; ratios are medians over all
  samples of each side, with the spread of the per-round ratios;
* NVML (SM/memory clock, instantaneous power, temperature, clocks-event reasons) is read
  before and after every group;
* regimes: ``burst`` rests before every group (at least 0.5 s, then until the SM clock is at
  boost, the averaged power near idle and no power-cap/thermal reason is set; capped at 2 s);
  ``sustained`` first keeps the GPU busy with all sides alternating for 3 s, then runs the
  rounds without waits.

The phases are in ``lab_phases.py``; ``kernel_lab.py`` runs them.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

FLUSH_BYTES = 256 << 20
BURST_WAIT_CAP_S = 2.0
MIN_REST_S = 0.5
# NVML clocks-event reasons that mean "held back": SW power cap, HW slowdown, SW/HW thermal,
# power brake (0x4, 0x8, 0x20, 0x40, 0x80)
THROTTLE_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
SUSTAIN_S = 3.0


@dataclass
class Side:
    """One thing being timed: a name and a zero-argument launcher."""

    name: str
    run: Callable[[], Any]
    samples_ms: list[float] = field(default_factory=list)
    states: list[dict[str, Any]] = field(default_factory=list)


class Gpu:
    """Events, the L2 flush and NVML readings around groups of samples."""

    def __init__(self) -> None:
        import pynvml
        import torch

        self.torch, self.nvml = torch, pynvml
        pynvml.nvmlInit()
        self.h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        self.boost_mhz = pynvml.nvmlDeviceGetMaxClockInfo(self.h, pynvml.NVML_CLOCK_SM)
        self.scratch = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
        self.name = torch.cuda.get_device_name()
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count
        torch.cuda.synchronize()
        time.sleep(1.0)
        rested = self.state()
        self.idle_w = rested["power_avg_w"] or rested["power_w"]

    def state(self) -> dict[str, Any]:
        n = self.nvml
        instant = average = None
        try:
            fields = n.nvmlDeviceGetFieldValues(
                self.h, [n.NVML_FI_DEV_POWER_INSTANT, n.NVML_FI_DEV_POWER_AVERAGE])
            instant, average = (f.value.uiVal / 1000 if f.nvmlReturn == 0 else None
                                for f in fields)
        except Exception:
            pass
        if instant is None:
            instant = n.nvmlDeviceGetPowerUsage(self.h) / 1000
        return dict(sm_mhz=n.nvmlDeviceGetClockInfo(self.h, n.NVML_CLOCK_SM),
                    mem_mhz=n.nvmlDeviceGetClockInfo(self.h, n.NVML_CLOCK_MEM),
                    power_w=instant, power_avg_w=average,
                    temp_c=n.nvmlDeviceGetTemperature(self.h, n.NVML_TEMPERATURE_GPU),
                    reasons=int(n.nvmlDeviceGetCurrentClocksEventReasons(self.h)), t=time.time())

    def wait_rested(self) -> float:
        """Rest at least MIN_REST_S (the power controller's state is not visible the moment the
        work stops: instantaneous power and the SM clock read as rested at once), then until
        the SM clock is at boost, the averaged power near idle and no power-cap or thermal
        clocks-event reason is set; capped at BURST_WAIT_CAP_S. Seconds waited."""
        t0 = time.perf_counter()
        time.sleep(MIN_REST_S)
        while time.perf_counter() - t0 < BURST_WAIT_CAP_S:
            s = self.state()
            avg = s["power_avg_w"] if s["power_avg_w"] is not None else s["power_w"]
            if (s["sm_mhz"] >= 0.97 * self.boost_mhz and avg < self.idle_w + 40
                    and not s["reasons"] & THROTTLE_BITS):
                break
            time.sleep(0.02)
        return time.perf_counter() - t0

    def group(self, side: Side, n: int, cold: bool = True) -> None:
        torch = self.torch
        before = self.state()
        evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
               for _ in range(n)]
        for start, end in evs:
            if cold:
                self.scratch.zero_()
            start.record()
            side.run()
            end.record()
        torch.cuda.synchronize()
        after = self.state()
        side.samples_ms += [s.elapsed_time(e) for s, e in evs]
        side.states += [before, after]


def compare(gpu: Gpu, sides: Sequence[Side], regime: str, rounds: int = 6,
            per_group: int = 6) -> dict[str, Any]:
    """Rounds over ``sides`` (sides[0] is ours) in one regime; summary dict.

    Round r runs the sides rotated by r, then in the reverse of that order, so with ``rounds``
    a multiple of len(sides) every side sits in every position equally often (under a power
    cap the clock falls within a burst, so position matters). Burst: the GPU rests (capped
    wait) before every group, so each group starts from boost clock and idle power."""
    for s in sides:
        s.samples_ms, s.states = [], []
    waited = []
    if regime == "sustained":
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < SUSTAIN_S:
            for s in sides:
                s.run()
            gpu.torch.cuda.synchronize()
    per_round: list[list[float]] = []
    k = len(sides)
    for r in range(rounds):
        marks = [len(s.samples_ms) for s in sides]
        turn = [sides[(r + j) % k] for j in range(k)]
        for s in turn + turn[::-1]:
            if regime == "burst":
                waited.append(gpu.wait_rested())
            gpu.group(s, per_group)
        per_round.append([statistics.median(s.samples_ms[m:]) for s, m in zip(sides, marks)])
    out: dict[str, Any] = dict(regime=regime, rounds=rounds, per_group=per_group,
                               burst_wait_s=waited, sides={})
    ours = statistics.median(sides[0].samples_ms)
    for i, s in enumerate(sides):
        clocks = [st["sm_mhz"] for st in s.states]
        ratios = [rr[i] / rr[0] for rr in per_round]  # their time / our time: >1 = we win
        out["sides"][s.name] = dict(
            median_ms=statistics.median(s.samples_ms), n=len(s.samples_ms),
            ratio_vs_ours=statistics.median(s.samples_ms) / ours,
            round_ratio_min=min(ratios), round_ratio_max=max(ratios),
            sm_mhz_median=statistics.median(clocks), sm_mhz_min=min(clocks),
            power_w_max=max(st["power_w"] for st in s.states),
            reasons=sorted({st["reasons"] for st in s.states}),
            samples_ms=s.samples_ms, states=s.states)
    mhz = [v["sm_mhz_median"] for v in out["sides"].values()]
    out["clock_mismatch"] = (max(mhz) - min(mhz)) / max(mhz) > 0.03
    return out


def screen(gpu: Gpu, sides: Sequence[Side]) -> dict[str, float]:
    """One quick mirrored round (4 samples per group) over many sides: name -> median ms."""
    for s in sides:
        s.samples_ms, s.states = [], []
    for order in (sides, list(reversed(sides))):
        for s in order:
            gpu.group(s, 4)
    return {s.name: statistics.median(s.samples_ms) for s in sides}


# -- compile in parallel (the lent GPU has 16 cores; ct.launch compiles serially) ------------

def precompile(jobs: Sequence[tuple[Any, dict[str, Any], tuple[Any, ...]]], arch: str) -> dict:
    """(kernel, hints, args) triples compiled in worker processes into cuTile's disk cache."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from tile_lab.gpu.job import TileKernel
    from tile_lab.tuning.parallel_compile import launch_signature, portable_signature

    work = []
    for kernel, hints, args in jobs:
        k = kernel.replace_hints(**hints) if hints else kernel
        work.append((TileKernel(kernel, hints or None).recipe(),
                     portable_signature(launch_signature(k, args)), arch))
    errors = {}
    with ProcessPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) - 1),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        for i, err in enumerate(pool.map(_compile_one, work)):
            if err:
                errors[i] = err
    return errors


def _compile_one(job: tuple[Any, ...]) -> str | None:
    from tile_lab._cutile_compat import compile_cubin_like_cutile, compiler_options
    from tile_lab.tuning.parallel_compile import signature_from_portable

    recipe, sig, arch = job
    try:
        kernel = recipe.build().hinted()
        compile_cubin_like_cutile(kernel, signature_from_portable(sig), arch,
                                  compiler_options(kernel))
        return None
    except Exception as e:  # a failed variant is data, not the end of the sweep
        return f"{type(e).__name__}: {str(e)[:300]}"


def launcher(kernel: Any, hints: dict[str, Any], grid: tuple[int, ...],
             args: tuple[Any, ...]) -> Callable[[], None]:
    import cuda.tile as ct
    import torch

    k = kernel.replace_hints(**hints) if hints else kernel
    stream = torch.cuda.current_stream()
    return lambda: ct.launch(stream, grid, k, args)
