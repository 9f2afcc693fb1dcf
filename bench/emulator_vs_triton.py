"""tile_lab's CPU emulator vs Triton's CPU interpreter and plain NumPy, side by side.

Equivalent kernels in cuTile (run by ``tile_lab.emulate``) and Triton (run with
``TRITON_INTERPRET=1`` on CPU torch tensors), and the same work in plain NumPy, into a new
array and into an existing one (as the kernels write theirs):

* vector add of 2**22 float32 elements, 1024-element tiles (4096 blocks); NumPy ``c = a + b``
  and ``np.add(a, b, out=c)``;
* a 512x512x512 float32 GEMM with 64x64 output tiles and a K step of 32 (64 blocks); NumPy
  ``c = a @ b`` and ``np.matmul(a, b, out=c)``.

Every time is **CPU time** of the process doing the work (``time.process_time``: all its
threads, plus any child processes it waited for), so another job on the machine, which takes
turns on the cores with it, is not charged to either side; wall times are printed beside.
Every ratio is taken between measurements made side by side in one process.

* **FIRST call**: a fresh worker process imports everything (NumPy, torch, Triton, cuda.tile,
  tile_lab, and each engine's compiler front end) and makes the inputs before any timer, then
  times the first call of each engine, the two taking turns at going first. What a first
  call includes:

  - Triton: its interpreter's first-call set-up and the run. The interpreter keeps nothing
    on disk (``TRITON_CACHE_DIR`` stays empty), so every first call meets it the same way;
    ``import triton`` imported its compiler front end before the timer.
  - the emulator: cuTile's front-end check of the kernel for this signature, or that
    verdict read from tile_lab's on-disk verdict cache, then the run. ``import cuda.tile``
    does not import cuTile's compiler (its first launch does); the worker imports it before
    the timer, as ``import triton`` does Triton's. With the verdict cache **empty** (*cold*:
    the first run of this kernel ever on this machine) the first call type-checks the
    kernel; with the cache **filled** (*warm*: a notebook re-run, a script run again) it
    does not. In a process that has not imported cuTile's compiler, a cold first call also
    pays for that import: it is timed on its own in a fresh process and the ratio with it
    added is printed too (no goal).

  ``--processes`` workers run cold, each with a fresh empty verdict cache, and as many warm,
  sharing the cache the first cold one filled, interleaved; the ratio is taken in each
  worker and the median over the workers reported.
* **LATER calls**: in every worker, ``--rounds`` rounds after the first calls, each round
  one call each of the emulator, Triton and the two NumPy forms (the order rotating); ratios
  are taken within a round, and the median over all rounds of all workers is reported.

Goals (exit 1 when one is missed): vector add, first call >= 30x (cache cold and warm) and
later calls >= 300x Triton's interpreter, and later calls within 2x of NumPy (both forms);
GEMM, first call >= 10x and later calls >= 100x; the emulator's later calls under 1 s
(vector add) and 3 s (GEMM).

``--beside N`` keeps N CPU-bound Python loops running for the whole benchmark ("another job
on the machine"); they are stopped at the end.

It also reports what issue 16's additions cost (CPU time):

* the front-end gate (cuTile types each kernel signature before it is emulated): its cost
  on a launch with a new signature (cuTile's compiler already imported) and with a known one;
  and the one-off import of cuTile's compiler in a fresh process (which the on-disk verdict
  cache skips);
* taint tracking of undetermined values: a ragged row RMSNorm (1000 columns, 1024-wide
  tiles) with default padding, where every block's tiles are tainted, vs the same kernel
  with ``PaddingMode.ZERO`` (nothing tainted): the worst case. Kernels without undetermined
  padding never create tainted tiles.

Triton and torch are benchmark-only dependencies, not tile_lab's. Install them with::

    pip install torch triton    # CPU torch is enough: the interpreter needs no GPU

Run::

    python bench/emulator_vs_triton.py [--rounds 3] [--processes 3] [--only vadd|gemm]
                                       [--beside N]

Without torch/triton the emulator and NumPy are still timed and the comparison with
Triton is skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before triton is imported

import cuda.tile as ct
import numpy as np

N_VADD = 2**22
VADD_TILE = 1024
GEMM_SIZE = 512
GEMM_TILES = (64, 64, 32)
LIMITS = {"vadd": 1.0, "gemm": 3.0}  # CPU seconds, the emulator's later calls
FIRST_GOAL = {"vadd": 30.0, "gemm": 10.0}  # x Triton, first call in a fresh process
LATER_GOAL = {"vadd": 300.0, "gemm": 100.0}  # x Triton, later calls
NUMPY_GOAL = {"vadd": 2.0}  # emulator / NumPy, later calls (the GEMM has none)
GATE_FIRST_GOAL = 0.20  # share of a cold first call a new signature's type check may add
RMS_ROWS, RMS_COLS, RMS_TILE = 4096, 1000, 1024


# ---- the cuTile kernels -----------------------------------------------------------------

@ct.kernel
def vadd_tile(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, (bid,), ct.load(a, (bid,), (TILE,)) + ct.load(b, (bid,), (TILE,)))


@ct.kernel
def gemm_tile(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        acc = ct.mma(ct.load(A, (bm, k), (TM, TK)), ct.load(B, (k, bn), (TK, TN)), acc)
    ct.store(C, (bm, bn), acc)


@ct.kernel
def rmsnorm_default(x, y, n: ct.Constant[int], tn: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, tn))
    ct.store(y, (row, 0), t * ct.rsqrt(ct.sum(t * t, axis=1, keepdims=True) / n + 1e-6))


@ct.kernel
def rmsnorm_zero(x, y, n: ct.Constant[int], tn: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, tn), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (row, 0), t * ct.rsqrt(ct.sum(t * t, axis=1, keepdims=True) / n + 1e-6))


# ---- the Triton kernels (defined only when triton imports) ------------------------------------

def _triton_kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def vadd_triton(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        a = tl.load(a_ptr + offs, mask=mask)
        b = tl.load(b_ptr + offs, mask=mask)
        tl.store(c_ptr + offs, a + b, mask=mask)

    @triton.jit
    def gemm_triton(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        # sizes are constexpr: Triton 3.5's interpreter cannot run range() over a runtime
        # int with NumPy >= 2.4 (int() of a 1-element array); cuTile's kernel reads its own

        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)

    return triton, vadd_triton, gemm_triton


# ---- timing: CPU time -----------------------------------------------------------------------

def cpu_seconds() -> float:
    """CPU time of this process (all its threads) and of the child processes it waited for."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one call."""
    c0, w0 = cpu_seconds(), time.perf_counter()
    fn()
    return cpu_seconds() - c0, time.perf_counter() - w0


def median_cpu(fn: Callable[[], object], repeat: int) -> float:
    """Median CPU seconds of ``repeat`` calls after one untimed warm-up."""
    fn()
    return statistics.median(timed(fn)[0] for _ in range(repeat))


# ---- the three sides of each benchmark ---------------------------------------------------------

def setup_vadd(triton_parts):
    """(emulator call, Triton call or None, (NumPy into a new array, NumPy into an existing
    one), check, (kernel, args))."""
    from tile_lab import emulate

    rng = np.random.default_rng(0)
    a = rng.standard_normal(N_VADD).astype(np.float32)
    b = rng.standard_normal(N_VADD).astype(np.float32)
    c = np.zeros_like(a)
    grid = (N_VADD // VADD_TILE,)
    args = (a, b, c, VADD_TILE)
    triton_run, tc = None, None
    if triton_parts is not None:
        import torch

        _, vadd_triton, _ = triton_parts
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        tc = torch.zeros_like(ta)

        def triton_run():
            vadd_triton[grid](ta, tb, tc, N_VADD, BLOCK=VADD_TILE)
    held, into = [None], np.zeros_like(a)

    def numpy_new():  # c = a + b
        held[0] = a + b

    def numpy_into():
        np.add(a, b, out=into)

    def check():
        np.testing.assert_allclose(c, a + b)
        np.testing.assert_allclose(held[0], a + b)
        np.testing.assert_allclose(into, a + b)
        if tc is not None:
            np.testing.assert_allclose(tc.numpy(), a + b)
    return ((lambda: emulate(vadd_tile, grid, args)), triton_run, (numpy_new, numpy_into),
            check, (vadd_tile, args))


def setup_gemm(triton_parts):
    from tile_lab import emulate

    rng = np.random.default_rng(0)
    s = GEMM_SIZE
    a = rng.standard_normal((s, s)).astype(np.float32)
    b = rng.standard_normal((s, s)).astype(np.float32)
    c = np.zeros((s, s), np.float32)
    tm, tn, tk = GEMM_TILES
    grid = (s // tm, s // tn)
    args = (a, b, c, tm, tn, tk)
    triton_run, tc = None, None
    if triton_parts is not None:
        import torch

        _, _, gemm_triton = triton_parts
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        tc = torch.zeros((s, s), dtype=torch.float32)

        def triton_run():
            gemm_triton[grid](ta, tb, tc, s, s, s, BM=tm, BN=tn, BK=tk)
    held, into = [None], np.zeros_like(c)

    def numpy_new():  # c = a @ b
        held[0] = a @ b

    def numpy_into():
        np.matmul(a, b, out=into)

    def check():
        want = a.astype(np.float64) @ b.astype(np.float64)
        for got in (c, held[0], into, None if tc is None else tc.numpy()):
            if got is not None:
                np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)  # tf32-level
    return ((lambda: emulate(gemm_tile, grid, args)), triton_run, (numpy_new, numpy_into),
            check, (gemm_tile, args))


SETUPS = {"vadd": setup_vadd, "gemm": setup_gemm}


def worker(key: str, rounds: int, triton_first: bool) -> dict:
    """One fresh process: everything imported (torch and triton included) and the inputs
    made before any timer; then the FIRST call of each engine (nothing of this kernel cached
    in this process) and LATER calls in rounds of emulator, Triton and NumPy, the order
    rotating. Times are (CPU, wall) seconds."""
    triton_parts = _load_triton()[0]
    # each engine's compiler front end is imported before the timer: ``import triton`` imports
    # Triton's; ``import cuda.tile`` leaves cuTile's to the first launch, so it is imported
    # here (its one-off cost is timed on its own, compiler_import_seconds)
    import cuda.tile._compile  # noqa: F401

    emu, tri, (numpy_new, numpy_into), check, _ = SETUPS[key](triton_parts)
    order = [("tri", tri), ("emu", emu)] if triton_first else [("emu", emu), ("tri", tri)]
    first = {name: timed(fn) for name, fn in order if fn is not None}
    sides = [(name, fn) for name, fn in (("emu", emu), ("tri", tri), ("numpy", numpy_new),
                                         ("numpy_out", numpy_into)) if fn is not None]
    later = []
    for r in range(rounds):
        turn = sides[r % len(sides):] + sides[:r % len(sides)]
        later.append({name: timed(fn) for name, fn in turn})
    check()
    return {"first": first, "later": later}


def run_worker(key: str, rounds: int, triton_first: bool, cache_dir: str) -> dict:
    env = {**os.environ, "TILE_LAB_FRONTEND_CACHE": cache_dir}
    out = subprocess.run([sys.executable, __file__, "--worker", key, "--rounds", str(rounds),
                          *(["--triton-first"] if triton_first else [])],
                         capture_output=True, text=True, env=env, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"worker {key} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _load_triton():
    try:
        triton_parts = _triton_kernels()
        import torch
        return triton_parts, (f"triton {triton_parts[0].__version__} interpreter, "
                              f"torch {torch.__version__}")
    except ImportError as exc:
        return None, (f"Triton's interpreter skipped ({exc.name or exc} is not installed; "
                      "pip install torch triton)")


# ---- what issue 16 added: the gate and taint tracking -----------------------------------------

def gate_costs(kernel, args, repeat: int) -> tuple[float, float]:
    """(new-signature type check, known-signature check), CPU seconds."""
    from tile_lab.emulator import gate

    def fresh():
        gate.clear_cache()
        gate.check(kernel, args)

    return median_cpu(fresh, repeat), median_cpu(lambda: gate.check(kernel, args), repeat)


def compiler_import_seconds() -> float:
    """CPU seconds to import cuTile's compiler in a fresh process that imported torch, Triton
    and tile_lab first (as the workers did): what a cold first call pays for it."""
    code = ("import time, os; os.environ.setdefault('TRITON_INTERPRET', '1')\n"
            "try:\n    import torch, triton\nexcept ImportError:\n    pass\n"
            "from tile_lab import emulate\n"
            "t = time.process_time(); import cuda.tile._compile\n"
            "print(time.process_time() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip())


def taint_overhead(repeat: int) -> tuple[float, float]:
    """(default padding: every block tainted, PaddingMode.ZERO: nothing tainted), CPU s."""
    import warnings

    from tile_lab import emulate

    x = np.random.default_rng(0).standard_normal((RMS_ROWS, RMS_COLS)).astype(np.float32)
    y = np.zeros_like(x)
    args = (x, y, RMS_COLS, RMS_TILE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the undetermined-value warning is the point here
        return (median_cpu(lambda: emulate(rmsnorm_default, (RMS_ROWS,), args), repeat),
                median_cpu(lambda: emulate(rmsnorm_zero, (RMS_ROWS,), args), repeat))


# ---- the report ---------------------------------------------------------------------------------

def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def _spread(values: list[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}"


def report(key: str, label: str, cold: list[dict], warm: list[dict], has_triton: bool,
           t_import: float) -> tuple[list[str], bool]:
    """The printed lines for one benchmark and whether a goal was missed. ``t_import``: the
    CPU seconds of importing cuTile's compiler, which a cold first call in a process that
    had not imported it would add."""
    runs = cold + warm
    rounds = [r for w in runs for r in w["later"]]
    med = statistics.median
    emu_cold, emu_warm = (med(w["first"]["emu"][0] for w in ws) for ws in (cold, warm))
    emu_later = med(r["emu"][0] for r in rounds)
    lines = [f"{label}:",
             f"  emulator  first call {emu_cold:7.3f} s CPU (verdict cache cold, median of "
             f"{len(cold)}) | {emu_warm:7.3f} s (cache warm, median of {len(warm)}) | later calls "
             f"{emu_later:7.4f} s (limit {LIMITS[key]:.0f} s: "
             f"{_verdict(emu_later < LIMITS[key])})"]
    failed = emulator_slow = emu_later >= LIMITS[key]
    op = "+" if key == "vadd" else "@"
    ufunc = "add" if key == "vadd" else "matmul"
    for side, how in (("numpy", f"c = a {op} b"), ("numpy_out", f"np.{ufunc}(a, b, out=c)")):
        ratio = med(r["emu"][0] / r[side][0] for r in rounds)
        spread = _spread([r["emu"][0] / r[side][0] for r in rounds])
        goal = ""
        if key in NUMPY_GOAL:
            goal = f" (goal <= {NUMPY_GOAL[key]:.0f}x: {_verdict(ratio <= NUMPY_GOAL[key])})"
            failed |= ratio > NUMPY_GOAL[key]
        lines.append(f"  numpy     {how:24} {med(r[side][0] for r in rounds):7.4f} s CPU; "
                     f"emulator / this {ratio:5.2f}x (median of {len(rounds)} rounds, "
                     f"{spread}){goal}")
    if not has_triton:
        return lines, failed
    first_cold = [w["first"]["tri"][0] / w["first"]["emu"][0] for w in cold]
    first_warm = [w["first"]["tri"][0] / w["first"]["emu"][0] for w in warm]
    later = [r["tri"][0] / r["emu"][0] for r in rounds]
    walls = {"cold": med(w["first"]["tri"][1] / w["first"]["emu"][1] for w in cold),
             "warm": med(w["first"]["tri"][1] / w["first"]["emu"][1] for w in warm),
             "later": med(r["tri"][1] / r["emu"][1] for r in rounds)}
    goal_first, goal_later = FIRST_GOAL[key], LATER_GOAL[key]
    ok_cold, ok_warm = med(first_cold) >= goal_first, med(first_warm) >= goal_first
    ok_later = med(later) >= goal_later
    failed |= not (ok_cold and ok_warm and ok_later) or emulator_slow
    tri_first = med(w["first"]["tri"][0] for w in runs)
    with_import = [w["first"]["tri"][0] / (w["first"]["emu"][0] + t_import) for w in cold]
    lines += [
        f"  triton    first call {tri_first:7.3f} s CPU (median of {len(runs)}) | later calls "
        f"{med(r['tri'][0] for r in rounds):7.3f} s",
        f"  emulator faster than Triton, CPU time: FIRST call {med(first_cold):6.1f}x cache "
        f"cold ({_spread(first_cold)}; goal >= {goal_first:.0f}x: {_verdict(ok_cold)}), "
        f"{med(first_warm):6.1f}x cache warm ({_spread(first_warm)}; {_verdict(ok_warm)}) | "
        f"LATER calls {med(later):6.1f}x (median of {len(rounds)} rounds, {_spread(later)}; "
        f"goal >= {goal_later:.0f}x: {_verdict(ok_later)})",
        f"  (the same in wall time: first call {walls['cold']:.1f}x cold, {walls['warm']:.1f}x"
        f" warm, later calls {walls['later']:.1f}x)",
        f"  first call with the cache cold in a process that had not imported cuTile's "
        f"compiler (+{t_import * 1e3:.0f} ms): {med(with_import):.1f}x "
        f"({_spread(with_import)}; no goal: Triton's compiler import is outside its timer)"]
    return lines, failed


def _busy_loops(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--rounds", type=int, default=3,
                        help="later-call rounds per worker process")
    parser.add_argument("--processes", type=int, default=3,
                        help="worker processes per kernel with the verdict cache cold, and as "
                             "many with it warm")
    parser.add_argument("--only", choices=["vadd", "gemm"], help="run one benchmark")
    parser.add_argument("--beside", type=int, default=0,
                        help="CPU-bound Python loops to keep running beside the benchmark")
    parser.add_argument("--worker", choices=["vadd", "gemm"], help=argparse.SUPPRESS)
    parser.add_argument("--triton-first", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    for name in ("rounds", "processes"):
        if getattr(opts, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if opts.beside < 0:
        parser.error("--beside must be 0 or more")
    if opts.worker:
        print(json.dumps(worker(opts.worker, opts.rounds, opts.triton_first)))
        return 0
    loops = _busy_loops(opts.beside)
    try:
        return _benchmark(opts)
    finally:
        for p in loops:
            p.kill()
            p.wait()


def _benchmark(opts: argparse.Namespace) -> int:
    # this process's own launches (the gate's cost) leave nothing on disk; the workers get
    # verdict caches of their own
    os.environ["TILE_LAB_FRONTEND_CACHE"] = "off"
    triton_parts, other = _load_triton()
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs "
          f"(load average {os.getloadavg()[0]:.1f}); {other}; beside it: "
          f"{opts.beside} CPU-bound Python loop(s)", flush=True)
    labels = {"vadd": f"vector add, {N_VADD} f32, tile {VADD_TILE}",
              "gemm": f"GEMM {GEMM_SIZE}^3 f32, tiles {GEMM_TILES}"}
    failed = False
    gate_lines = []
    t_import = compiler_import_seconds()
    first_cold = {}
    for key, label in labels.items():
        if opts.only and opts.only != key:
            continue
        cold, warm = [], []
        with tempfile.TemporaryDirectory() as root:
            filled = os.path.join(root, "filled")  # the first cold worker fills it
            for i in range(opts.processes):
                cache = filled if i == 0 else os.path.join(root, f"empty{i}")
                cold.append(run_worker(key, opts.rounds, i % 2 == 1, cache))
                warm.append(run_worker(key, opts.rounds, i % 2 == 0, filled))
        lines, missed = report(key, label, cold, warm, triton_parts is not None, t_import)
        print("\n".join(lines), flush=True)
        failed |= missed
        first_cold[key] = statistics.median(w["first"]["emu"][0] for w in cold)
        kernel, args = SETUPS[key](None)[4]
        from tile_lab import emulate

        emulate(kernel, (1,), args)  # this process's own first call, untimed
        t_new, t_known = gate_costs(kernel, args, opts.rounds)
        share = t_new / (first_cold[key] + t_import)
        gate_lines.append(
            f"gate, {key}: new signature {t_new * 1e3:6.1f} ms CPU (compiler imported) = "
            f"{share:6.1%} of a first call with the cache cold, compiler import included "
            f"(goal < {GATE_FIRST_GOAL:.0%}:"
            f" {_verdict(share < GATE_FIRST_GOAL)}) | known signature {t_known * 1e3:5.2f} ms")
        failed |= share >= GATE_FIRST_GOAL
    for line in gate_lines:
        print(line)
    print(f"cuTile's compiler: importing it takes {t_import * 1e3:.0f} ms CPU in a fresh "
          "process with torch, Triton and tile_lab imported = " +
          ", ".join(f"{t_import / (t + t_import):.0%} of the {key} cold first call that "
                    "includes it" for key, t in first_cold.items()) +
          "; a verdict cached on disk skips it")
    if not opts.only:
        t_taint, t_clean = taint_overhead(opts.rounds)
        print(f"taint, worst case (ragged RMSNorm {RMS_ROWS}x{RMS_COLS}, tile {RMS_TILE}, "
              f"every block tainted): {t_taint:.3f} s vs {t_clean:.3f} s CPU with "
              f"PaddingMode.ZERO = {t_taint / t_clean:.2f}x")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
