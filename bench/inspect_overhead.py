"""How much does ``tile_lab.inspect`` add on top of cuTile's own compile?

For each kernel and arch, in one run, interleaved, several repeats:

* cuTile: ``compile_tile`` to a cubin (front end + cuTile's own tileiras call), what a
  first launch pays;
* (a) inspect: the ``tile_lab.inspect`` call from a spec string (signature, front end,
  tileiras with remarks, tileirdisasm, parsing), with tile_lab's memo caches cleared. It
  returns before the SASS/PTX exist: nvdisasm runs in a background thread from the moment
  the cubin exists. This is what the API, the tuner and every view without the SASS/PTX
  panes pay, and what the goal is about;
* (b) inspect + .sass: the same call followed at once by reading ``.sass``, which waits
  for nvdisasm: what a full view with the SASS pane pays (information, not the goal).
  (a) and (b) are two clocks on the same call;
* re-inspect: (b) for the unchanged kernel again (memo caches kept), what re-running an
  unchanged ``%%tile`` cell costs (information).

Each inspect's background nvdisasm is finished (by reading ``.sass``) before the next
measurement starts, so it never runs during another one. cuTile's disk cache is switched
off (CUDA_TILE_CACHE_DIR=off) so both compile for real; ``--cutile-cache fresh`` keeps it
on but empties it before each of cuTile's compiles (cuTile's default first launch).

Prints medians of wall time and of CPU time (this process plus its finished tool
subprocesses; steadier than wall time on a shared machine), overheads in ms and as
ratios, and a per-stage breakdown of the inspect path. Goal, for (a), in wall time:
overhead < 10% or < 100 ms. Exits 1 when (a) misses it. nvdisasm's start-up alone costs
about 0.5 s of CPU for any cubin, however small, which is why (b) misses it.

    python bench/inspect_overhead.py [--repeat 5] [--arch sm_90 --arch sm_100]
                                     [--cutile-cache off|fresh]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
parser.add_argument("--repeat", type=int, default=5)
parser.add_argument("--arch", action="append", default=None)
parser.add_argument("--cutile-cache", choices=("off", "fresh"), default="off",
                    help="cuTile's disk cache for the baseline: off (default; cuTile then "
                         "runs tileiras without remarks), or fresh: on, emptied before "
                         "every compile, so each is a cache miss like a first launch with "
                         "cuTile's default settings (tileiras also writes remarks, and "
                         "the cubin is stored)")
ARGS = parser.parse_args() if __name__ == "__main__" else parser.parse_args([])
# before cuda.tile reads it, at import
FRESH_CACHE = tempfile.mkdtemp(prefix="tile_lab_bench_") if ARGS.cutile_cache == "fresh" else None
os.environ["CUDA_TILE_CACHE_DIR"] = FRESH_CACHE or "off"
# tile_lab's own disk cache of tool outputs off too: the stages below are measured cold
os.environ["TILE_LAB_CACHE_DIR"] = "off"

# imported only now: cuda.tile reads CUDA_TILE_CACHE_DIR at import
import cuda.tile as ct  # noqa: E402

import tile_lab  # noqa: E402
from tile_lab import _cutile_compat as compat  # noqa: E402
from tile_lab.compile import disassembly, pipeline, tileir  # noqa: E402
from tile_lab.compile.signature import signature_from_spec  # noqa: E402


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))
    y = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=x + y)


@ct.kernel
def gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK))
        b = ct.load(B, index=(k, bn), shape=(TK, TN))
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


CASES = [
    ("vector add", vector_add, "f32[1048576], f32[1048576], f32[1048576], 1024"),
    ("gemm 128x128x32", gemm, "f16[4096,4096], f16[4096,4096], f32[4096,4096], 128, 128, 32"),
]


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (tileiras, nvdisasm, ...): on a
    shared, loaded machine this moves much less than wall time."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.1f}"


def stage_breakdown(kernel, spec: str, arch: str) -> dict[str, float]:
    """One cold inspect path, stage by stage (sequential, unlike inspect's overlap)."""
    pipeline.clear_caches()
    t = {}
    t0 = time.perf_counter()
    sig = signature_from_spec(kernel, spec).kernel_signature
    options = compat.compiler_options(kernel)
    t["signature"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    front = compat.compile_frontend(kernel, sig, arch, options)
    t["front end"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    cubin, _ = pipeline.run_tileiras(front.bytecode, arch)
    t["tileiras"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    tileir.disassemble_tileir(front.bytecode)
    t["tileirdisasm"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    disassembly.sass_from_cubin(cubin, arch)
    t["nvdisasm"] = time.perf_counter() - t0
    return t


def goal_met(overhead: float, base: float) -> bool:
    return overhead < 0.100 or overhead / base < 0.10


def empty_cutile_cache() -> None:
    """With ``--cutile-cache fresh``: make cuTile's next compile a cache miss (untimed)."""
    if FRESH_CACHE is not None:
        shutil.rmtree(FRESH_CACHE, ignore_errors=True)
        os.makedirs(FRESH_CACHE)


def measure(kernel, spec: str, sig, options, arch: str, repeat: int) -> dict[str, float]:
    """Medians (seconds) of the interleaved measurements of one case."""
    # warm-up: imports, tileiras' bytecode-version probe, tool version lookups
    empty_cutile_cache()
    compat.compile_cubin_like_cutile(kernel, sig, arch, options)
    pipeline.clear_caches()
    _ = tile_lab.inspect(kernel, spec, arch=arch).sass
    samples: dict[str, list[float]] = {k: [] for k in (
        "cutile", "a", "b", "cutile_cpu", "a_cpu", "b_cpu", "warm")}
    for _ in range(repeat):
        empty_cutile_cache()
        c0, t0 = cpu_seconds(), time.perf_counter()
        compat.compile_cubin_like_cutile(kernel, sig, arch, options)
        samples["cutile"].append(time.perf_counter() - t0)
        samples["cutile_cpu"].append(cpu_seconds() - c0)
        pipeline.clear_caches()
        c0, t0 = cpu_seconds(), time.perf_counter()
        insp = tile_lab.inspect(kernel, spec, arch=arch)
        t1, c1 = time.perf_counter(), cpu_seconds()
        _ = insp.sass  # waits for the background nvdisasm
        t2, c2 = time.perf_counter(), cpu_seconds()
        samples["a"].append(t1 - t0)
        samples["a_cpu"].append(c1 - c0)  # nvdisasm still running: not counted here
        samples["b"].append(t2 - t0)
        samples["b_cpu"].append(c2 - c0)
    # unchanged kernel again: tool outputs come from tile_lab's memo caches
    for _ in range(repeat):
        t0 = time.perf_counter()
        _ = tile_lab.inspect(kernel, spec, arch=arch).sass
        samples["warm"].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in samples.items()}


def main() -> int:
    args = ARGS
    arches = args.arch or ["sm_90", "sm_100"]
    try:
        return report(args.repeat, arches)
    finally:
        if FRESH_CACHE is not None:
            shutil.rmtree(FRESH_CACHE, ignore_errors=True)


def report(repeat: int, arches: list[str]) -> int:
    baseline = ("cuTile disk cache off" if FRESH_CACHE is None else
                "cuTile disk cache on, emptied before each compile")
    print(f"cuda.tile {compat.installed_version()}, "
          f"tileiras {tile_lab.compile.toolchain.tool_version('tileiras')}, "
          f"{os.cpu_count()} CPUs, median of {repeat} cold compiles each; "
          f"baseline: {baseline}\n")
    print("(a) = the inspect() call (the goal); (b) = inspect() then reading .sass "
          "(information)\n")
    header = (f"{'kernel':<16} {'arch':<7} {'cuTile ms':>9} | {'(a) ms':>8} "
              f"{'over ms':>8} {'ratio':>5} {'goal':<6} | {'(b) ms':>8} {'over ms':>8} "
              f"{'ratio':>5} {'<goal?':<6} | {'re-inspect':>10}")
    print("wall time")
    print(header)
    print("-" * len(header))
    all_met = True
    rows, breakdowns = [], []
    for label, kernel, spec in CASES:
        sig = signature_from_spec(kernel, spec).kernel_signature
        options = compat.compiler_options(kernel)
        for arch in arches:
            m = measure(kernel, spec, sig, options, arch, repeat)
            base = m["cutile"]
            over_a, over_b = m["a"] - base, m["b"] - base
            met_a, met_b = goal_met(over_a, base), goal_met(over_b, base)
            all_met &= met_a
            print(f"{label:<16} {arch:<7} {ms(base):>9} | {ms(m['a']):>8} {ms(over_a):>8} "
                  f"{m['a'] / base:5.2f} {'met' if met_a else 'MISSED':<6} | "
                  f"{ms(m['b']):>8} {ms(over_b):>8} {m['b'] / base:5.2f} "
                  f"{'yes' if met_b else 'no':<6} | {ms(m['warm']):>10}")
            rows.append((label, arch, m))
            breakdowns.append((label, arch, stage_breakdown(kernel, spec, arch)))

    print("\nCPU time (this process + finished tool subprocesses; (a) stops counting when "
          "inspect returns, before nvdisasm ends)")
    cpu_header = (f"{'kernel':<16} {'arch':<7} {'cuTile ms':>9} | {'(a) ms':>8} "
                  f"{'ratio':>5} | {'(b) ms':>8} {'ratio':>5}")
    print(cpu_header)
    print("-" * len(cpu_header))
    for label, arch, m in rows:
        base = m["cutile_cpu"]
        print(f"{label:<16} {arch:<7} {ms(base):>9} | {ms(m['a_cpu']):>8} "
              f"{m['a_cpu'] / base:5.2f} | {ms(m['b_cpu']):>8} {m['b_cpu'] / base:5.2f}")

    print("\ninspect path, one cold run per case, stage by stage (ms; inspect overlaps "
          "tileirdisasm with tileiras and runs nvdisasm in the background):")
    names = list(breakdowns[0][2])
    print(f"{'kernel':<16} {'arch':<7} " + " ".join(f"{n:>12}" for n in names))
    for label, arch, t in breakdowns:
        print(f"{label:<16} {arch:<7} " + " ".join(f"{ms(t[n]):>12}" for n in names))
    print("\ngoal for (a), the inspect() call: overhead < 10% or < 100 ms:",
          "met" if all_met else "MISSED")
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
