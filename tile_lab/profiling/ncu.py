"""Running Nsight Compute (``ncu``): finding it, one profiled run, its CSV exports, and the
errors a user can act on. Knows nothing about kernels; ``api.py`` says what to launch.

Collection is tuned for tile kernels (see ``CollectionPlan``): the sections that give the
source page (``SourceCounters``: per-instruction stall samples and executed counts) and the
launch numbers, GPU clocks left as they are (``--clock-control none``), one launch (``-c 1``).
A launch can fail under the profiler where it runs fine without it: the tutorial GEMM with
256×256×32 tiles (255 registers, 2,089 LDL/STL spill instructions, a 3.7 KB stack frame per
thread) faults when ``SourceCounters`` patches its SASS to count executed instructions (kernel
replay: ``==ERROR== LaunchFailed``, exit 9; application replay: ``cudaErrorIllegalAddress``;
measured on an H100 with ncu 2025.3.1, also with ``--cache-control none`` and an 8 KB stack
limit), while PC sampling and hardware counters work. The next plan keeps PC sampling per
instruction and reason and drops the executed counts.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProfilerError, ProfilerUnavailable

NCU_ENV = "TILE_LAB_NCU"  # path of the ncu executable, when it is not on PATH
_NCU_PLACES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu",
               "/usr/local/NVIDIA-Nsight-Compute*/ncu", "/usr/local/cuda-*/bin/ncu")

INSTALL_HINT = ("install Nsight Compute (it ships with the CUDA toolkit, or from "
                "https://developer.nvidia.com/nsight-compute) and put `ncu` on PATH, or set "
                f"{NCU_ENV}=/path/to/ncu; without a GPU, load recorded profiles with "
                "tile_lab.load_profile")
PERMISSION_HINT = ("GPU performance counters are restricted to administrators on this machine: "
                   "run as root, or have an admin set `options nvidia "
                   "NVreg_RestrictProfilingToAdminUsers=0` (see "
                   "https://developer.nvidia.com/ERR_NVGPUCTRPERM); in a container, start it "
                   "with --cap-add=SYS_ADMIN")

_LAUNCH_METRICS = ("gpu__time_duration.sum", "launch__registers_per_thread",
                   "launch__block_size", "launch__grid_size", "launch__shared_mem_per_block",
                   "sm__warps_active.avg.pct_of_peak_sustained_active",
                   "sm__maximum_warps_per_active_cycle_pct",
                   "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
                   "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum")


@dataclass(frozen=True)
class CollectionPlan:
    """What ncu collects: sections, extra metrics, replay mode. ``name`` goes into
    ``Profile.collection`` so a reader knows what a profile holds."""

    name: str
    sections: tuple[str, ...]
    metrics: tuple[str, ...] = _LAUNCH_METRICS
    replay_mode: str = "kernel"

    def args(self) -> list[str]:
        out = []
        for s in self.sections:
            out += ["--section", s]
        if self.metrics:
            out += ["--metrics", ",".join(self.metrics)]
        return [*out, "--replay-mode", self.replay_mode]


SOURCE_COUNTERS = CollectionPlan(
    "source counters", ("SourceCounters", "WarpStateStats", "LaunchStats", "Occupancy",
                        "SpeedOfLight"))
# PC sampling per reason (the source page shows each requested metric as a column) and the
# launch numbers; no SASS patching, so no executed counts.
PC_SAMPLING_METRICS = ("smsp__pcsamp_sample_count", *(
    f"smsp__pcsamp_warps_issue_stalled_{reason}" for reason in (
        "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
        "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc",
        "no_instructions", "not_selected", "selected", "short_scoreboard", "sleeping",
        "tex_throttle", "wait", "warpgroup_arrive")))
SAMPLING_ONLY = CollectionPlan(
    "stall sampling only", ("LaunchStats", "Occupancy"),
    metrics=(*_LAUNCH_METRICS, *PC_SAMPLING_METRICS))
LAUNCH_ONLY = CollectionPlan("launch statistics only", ("LaunchStats", "Occupancy"))
PLANS = (SOURCE_COUNTERS, SAMPLING_ONLY, LAUNCH_ONLY)


@dataclass(frozen=True)
class NcuRun:
    """One profiled run: the report's CSV exports and what ncu said."""

    plan: CollectionPlan
    returncode: int
    log: str  # ncu's own ==PROF==/==ERROR== lines and the target's output
    source_csv: str
    raw_csv: str
    wall_s: float

    @property
    def launch_failed(self) -> bool:
        return "LaunchFailed" in self.log or "==ERROR== Failed to profile" in self.log


def find_ncu() -> str:
    """The ``ncu`` executable, or :class:`ProfilerUnavailable` saying how to get one."""
    explicit = os.environ.get(NCU_ENV)
    if explicit:
        if os.access(explicit, os.X_OK):
            return explicit
        raise ProfilerUnavailable(f"{NCU_ENV}={explicit} is not an executable",
                                  hint=INSTALL_HINT)
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in _NCU_PLACES:
        for path in sorted(glob.glob(pattern), reverse=True):
            if os.access(path, os.X_OK):
                return path
    raise ProfilerUnavailable("profiling needs NVIDIA Nsight Compute (`ncu`), which is not "
                              "installed or not on PATH", hint=INSTALL_HINT)


def ncu_version(ncu: str) -> str:
    proc = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    m = re.search(r"Version\s+([\w.\-()]+)", proc.stdout)
    return m.group(1) if m else proc.stdout.strip().splitlines()[-1:][0] if proc.stdout else "?"


def profile_command(ncu: str, plan: CollectionPlan, kernel_regex: str, report: Path,
                    target: list[str]) -> list[str]:
    return [ncu, *plan.args(), "--import-source", "no", "--clock-control", "none",
            "-k", f"regex:{kernel_regex}", "-c", "1", "-f", "-o", str(report), *target]


def run_profiled(ncu: str, plan: CollectionPlan, kernel_regex: str, workdir: Path,
                 target: list[str], timeout_s: float) -> NcuRun:
    """Run ``target`` under ncu with ``plan``; export the source and raw pages."""
    import time

    report = workdir / "profile.ncu-rep"
    cmd = profile_command(ncu, plan, kernel_regex, report, target)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              env=_target_env())
    except subprocess.TimeoutExpired:
        raise ProfilerError(f"ncu did not finish within {timeout_s:.0f} s",
                            hint="pass a larger timeout_s, or a smaller problem") from None
    wall = time.perf_counter() - t0
    log = proc.stdout + proc.stderr
    _raise_for_permissions(log)
    source = raw = ""
    if report.exists():
        source = _export(ncu, report, ["--page", "source", "--csv", "--print-source", "sass"])
        raw = _export(ncu, report, ["--page", "raw", "--csv"])
    return NcuRun(plan, proc.returncode, log, source, raw, wall)


def _export(ncu: str, report: Path, args: list[str]) -> str:
    proc = subprocess.run([ncu, "--import", str(report), *args], capture_output=True,
                          text=True, timeout=300)
    return proc.stdout if proc.returncode == 0 else ""


def _raise_for_permissions(log: str) -> None:
    if "ERR_NVGPUCTRPERM" in log or "does not have permission to access NVIDIA GPU Perf" in log:
        raise ProfilerUnavailable("the profiler may not read the GPU's performance counters "
                                  "(ERR_NVGPUCTRPERM)", hint=PERMISSION_HINT)


def _target_env() -> dict[str, str]:
    env = dict(os.environ)
    # the child imports this tile_lab, wherever it was imported from
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def python_target(spec_path: Path) -> list[str]:
    return [sys.executable, "-m", "tile_lab.profiling.target", str(spec_path)]


def log_errors(log: str, limit: int = 6) -> str:
    """ncu's ==ERROR== lines (the useful part of a failed run's output)."""
    lines = [ln for ln in log.splitlines() if "==ERROR==" in ln or "Error" in ln]
    return "\n".join(lines[-limit:])
