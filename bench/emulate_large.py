"""GPU programs at 10^8 elements on the CPU (issue 48): each of ``tests/gpu_programs/`` run
unmodified under ``TILE_LAB_EMULATE=1 TILE_LAB_DEVICE=cpu``, beside the same program with
plain torch on the CPU doing the kernel's work. Goal: each emulated program, 10^8 elements,
finishes in under a minute of CPU time on 2 cores.

Per workload, one process at a time (they hold several GB each):

* **emulated**: the GPU program as a user runs it (its torch check and its CUDA-event timing
  included: one checked launch, one warm-up, ``--iters`` timed);
* **torch**: a control process that makes the same tensors, computes the same result with
  torch's own CPU kernel as many times as the program launches, and checks it the same way.

Both report the process's CPU time (user + system, ``os.wait4``), its wall time and its
peak RSS, plus the time per launch (emulated: what the program's CUDA events printed, which
under the emulator is the host's wall time per launch; torch: ``time.perf_counter`` around
the op). CPU time is the honest measure on a shared machine: wall time grows with the load.

Run::

    python bench/emulate_large.py                    # the three 10^8 workloads
    python bench/emulate_large.py --scale 0.1        # a tenth of the size
    python bench/emulate_large.py --only softmax --save bench/results/emulate_large.json
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "gpu_programs"
GOAL_CPU_S = 60.0

# name: (program, its arguments at scale 1, the torch op on the program's tensors, check)
WORKLOADS = {
    "vector_add": ("vector_add.py", {"--n": 100_000_000, "--tile": 1024},
                   "a = torch.randn(n); b = torch.randn(n); c = torch.empty_like(a)",
                   "torch.add(a, b, out=c)", "torch.testing.assert_close(c, a + b)"),
    "softmax": ("softmax_rows.py", {"--rows": 131_072, "--cols": 763},
                "x = torch.randn(rows, cols); y = torch.empty_like(x)",
                "y = torch.softmax(x, dim=1)",
                "torch.testing.assert_close(y, torch.softmax(x, dim=1))"),
    "reduce_sum": ("reduce_sum.py", {"--n": 100_000_000, "--tile": 4096},
                   "x = torch.rand(n); out = torch.zeros(1)",
                   "torch.sum(x, dim=0, keepdim=True, out=out)",
                   "torch.testing.assert_close(out[0], x.double().sum().float(), rtol=1e-5, "
                   "atol=0)"),
}

CONTROL = """
import sys, time, torch
torch.manual_seed(0)
{sizes}
{make}
{op}
{check}
{op}  # the warm-up launch
times = []
for _ in range({iters}):
    t0 = time.perf_counter()
    {op}
    times.append(time.perf_counter() - t0)
print("per launch ms", sum(times) / len(times) * 1e3)
"""


@dataclass(frozen=True)
class Run:
    """One process: CPU seconds (user + system), wall seconds, peak RSS in MiB, and the
    milliseconds per launch it reported."""

    cpu_s: float
    wall_s: float
    peak_rss_mib: float
    per_launch_ms: float


def run_process(argv: list[str], env: dict[str, str], pattern: str) -> Run:
    """Run ``argv`` to the end; its own resource use (``os.wait4``: this child only)."""
    with tempfile.TemporaryFile("w+") as out_file, tempfile.TemporaryFile("w+") as err_file:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out_file, stderr=err_file, env=env, cwd=PROGRAMS)
        _, status, usage = os.wait4(child.pid, 0)  # reaped here, with its own usage
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read(), err_file.read()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{err[-3000:]}")
    found = re.search(pattern, out)
    if not found:
        raise SystemExit(f"{' '.join(argv)}: no timing line in {out!r}")
    return Run(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024,
               float(found.group(1)))


def workload(name: str, scale: float, iters: int) -> dict[str, object]:
    program, args, make, op, check = WORKLOADS[name]
    first = next(iter(args))  # the size that scales: elements, or rows of a fixed width
    sized = {k: max(1, round(v * scale)) if k == first else v for k, v in args.items()}
    base = {k: v for k, v in os.environ.items() if not k.startswith("TILE_LAB_")}
    argv = [str(a) for kv in sized.items() for a in kv]
    emulated = run_process(
        [sys.executable, str(PROGRAMS / program), *argv, "--iters", str(iters)],
        {**base, "PYTHONPATH": str(ROOT), "TILE_LAB_EMULATE": "1", "TILE_LAB_DEVICE": "cpu"},
        r": ([\d.]+) ms")
    sizes = "; ".join(f"{k[2:]} = {v}" for k, v in sized.items())
    control = CONTROL.format(sizes=sizes, make=make, op=op, check=check, iters=iters)
    torch_run = run_process([sys.executable, "-c", control], base, r"per launch ms ([\d.]+)")
    elements = 1
    for k, v in sized.items():
        if k != "--tile":
            elements *= v
    return {"workload": name, "elements": elements, "arguments": sized, "iters": iters,
            "emulated": asdict(emulated), "torch": asdict(torch_run)}


def report(row: dict) -> str:
    e, t = row["emulated"], row["torch"]
    met = "met" if e["cpu_s"] < GOAL_CPU_S else "MISSED"
    return (f"{row['workload']}, {row['elements']:,} elements {row['arguments']}:\n"
            f"  emulated program  CPU {e['cpu_s']:6.1f} s  wall {e['wall_s']:6.1f} s  peak RSS "
            f"{e['peak_rss_mib']:6.0f} MiB  per launch {e['per_launch_ms']:9.1f} ms (host)  "
            f"(goal CPU < {GOAL_CPU_S:.0f} s: {met})\n"
            f"  torch on the CPU  CPU {t['cpu_s']:6.1f} s  wall {t['wall_s']:6.1f} s  peak RSS "
            f"{t['peak_rss_mib']:6.0f} MiB  per launch {t['per_launch_ms']:9.1f} ms\n"
            f"  emulated / torch: per launch {e['per_launch_ms'] / t['per_launch_ms']:.1f}x, "
            f"whole program CPU {e['cpu_s'] / t['cpu_s']:.1f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="problem size relative to 10^8 elements")
    parser.add_argument("--iters", type=int, default=1, help="timed launches per program")
    parser.add_argument("--save", help="write the rows as JSON here")
    opts = parser.parse_args()
    import numpy
    import torch

    load = os.getloadavg()[0]
    print(f"python {sys.version.split()[0]}, numpy {numpy.__version__}, torch "
          f"{torch.__version__}, {os.cpu_count()} CPUs, load average {load:.1f} at the start",
          flush=True)
    rows = []
    for name in opts.only or list(WORKLOADS):
        rows.append(workload(name, opts.scale, opts.iters))
        print(report(rows[-1]), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    if opts.save:
        sys.path.insert(0, str(ROOT / "bench"))
        from sweep_common import save_payload

        save_payload({"cpus": os.cpu_count(), "load_start": load,
                      "load_end": os.getloadavg()[0], "rows": rows}, opts.save)
    return 0 if all(r["emulated"]["cpu_s"] < GOAL_CPU_S for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
