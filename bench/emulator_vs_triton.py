"""tile_lab's CPU emulator vs Triton's CPU interpreter, measured side by side.

Equivalent kernels in cuTile (run by ``tile_lab.emulate``) and Triton (run with
``TRITON_INTERPRET=1`` on CPU torch tensors):

* vector add of 2**22 float32 elements, 1024-element tiles (4096 blocks);
* a 512x512x512 float32 GEMM with 64x64 output tiles and a K step of 32 (64 blocks).

Two regimes, each measured side by side in one process (issue 23):

* **FIRST call**: a fresh process imports everything (numpy, torch, triton, tile_lab) and
  makes the inputs before any timer, then times the first call of each engine: for the
  emulator cuTile's front-end check of the kernel (or its verdict read from the on-disk cache)
  and every cache of this process cold; for Triton its interpreter's first-call set-up. One
  process runs with the emulator's verdict cache empty (**cold**: the first run ever of this
  kernel), ``--processes`` more with it filled by the first (**warm**: a notebook re-run, a
  script run again); the emulator and Triton take turns going first.
* **LATER calls**: in each of those processes, ``--repeat`` alternating rounds (emulator,
  Triton, ...) after the first calls, best of each; the ratio is taken per process and the
  median reported, so load that comes and goes on a shared machine hits both sides.

Goals: first call >= 10x and later calls >= 100x Triton's interpreter on both kernels; the
emulator under 1 s (vector add) and 3 s (GEMM). Exits 1 when one is missed.

It also reports what issue 16's additions cost:

* the front-end gate (cuTile types each kernel signature before it is emulated): its cost
  on a launch with a new signature (cuTile's compiler already imported) and with a known one;
  and the one-off import of cuTile's compiler in a fresh process (which the on-disk verdict
  cache skips);
* taint tracking of undetermined values: a ragged row RMSNorm (1000 columns, 1024-wide
  tiles) with default padding, where every block's tiles are tainted, vs the same kernel
  with ``PaddingMode.ZERO`` (nothing tainted): the worst case. Kernels without undetermined
  padding never create tainted tiles.

Triton and torch are benchmark-only dependencies, not tile_lab's. Install them with::

    pip install torch==2.13.0 triton    # CPU torch; the interpreter needs no GPU

Run::

    python bench/emulator_vs_triton.py [--repeat 3] [--processes 3] [--only vadd|gemm]

Without torch/triton the emulator is still timed and the comparison is skipped with a note.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable

os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before triton is imported

import cuda.tile as ct
import numpy as np

N_VADD = 2**22
VADD_TILE = 1024
GEMM_SIZE = 512
GEMM_TILES = (64, 64, 32)
GOALS = {"vadd": 1.0, "gemm": 3.0}  # seconds, emulator
SPEEDUP_GOAL = 100.0  # later calls
FIRST_SPEEDUP_GOAL = 10.0  # the first call of a kernel in a fresh process
GATE_FIRST_GOAL = 0.20  # share of the emulation a new signature's type check may add
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
    def gemm_triton(a_ptr, b_ptr, c_ptr, M, N, K,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
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


# ---- timing --------------------------------------------------------------------------------

def best_of(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up, untimed
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def alternating(first: Callable[[], object], second: Callable[[], object] | None,
                repeat: int) -> tuple[float, float | None]:
    """Best of ``repeat`` rounds of each, taken in turns (the first calls already made)."""
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for k, fn in enumerate((first, second)):
            if fn is None:
                continue
            best[k] = min(best[k], timed(fn))
    return best[0], (best[1] if second is not None else None)


def setup_vadd(triton_parts):
    """(emulator call, Triton call or None, check, (kernel, args))."""
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

    def check():
        np.testing.assert_allclose(c, a + b)
        if tc is not None:
            np.testing.assert_allclose(tc.numpy(), a + b)
    return (lambda: emulate(vadd_tile, grid, args)), triton_run, check, (vadd_tile, args)


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

    def check():
        want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(c, want, rtol=1e-2, atol=1e-2)  # tf32-level tolerance
        if tc is not None:
            np.testing.assert_allclose(tc.numpy(), want, rtol=1e-2, atol=1e-2)
    return (lambda: emulate(gemm_tile, grid, args)), triton_run, check, (gemm_tile, args)


SETUPS = {"vadd": setup_vadd, "gemm": setup_gemm}


def worker(key: str, repeat: int, triton_first: bool) -> dict:
    """One fresh process: everything imported (torch and triton included) and the inputs
    made before any timer; then the FIRST call of each engine (nothing of this kernel cached
    in this process: the emulator's front-end check, its caches, Triton's interpreter set-up)
    and then LATER calls in alternating rounds."""
    triton_parts = _load_triton()[0]
    emu, tri, check, _ = SETUPS[key](triton_parts)
    order = [("tri", tri), ("emu", emu)] if triton_first else [("emu", emu), ("tri", tri)]
    first = {name: timed(fn) for name, fn in order if fn is not None}
    t_emu, t_tri = alternating(emu, tri, repeat)
    check()
    import sys as _sys

    return {"emu_first": first["emu"], "tri_first": first.get("tri"), "emu_later": t_emu,
            "tri_later": t_tri, "compiler_imported": "cuda.tile._compile" in _sys.modules}


def run_worker(key: str, repeat: int, triton_first: bool, cache_dir: str) -> dict:
    import json
    import subprocess

    env = {**os.environ, "TILE_LAB_FRONTEND_CACHE": cache_dir}
    out = subprocess.run([sys.executable, __file__, "--worker", key, "--repeat", str(repeat),
                          *(["--triton-first"] if triton_first else [])],
                         capture_output=True, text=True, env=env, timeout=1800)
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
                      "pip install torch==2.13.0 triton)")


# ---- what issue 16 added: the gate and taint tracking -----------------------------------------

def gate_costs(kernel, args, t_emu: float, repeat: int) -> tuple[float, float]:
    """(new-signature type check, known-signature check), in seconds."""
    from tile_lab.emulator import gate

    def fresh():
        gate.clear_cache()
        gate.check(kernel, args)

    t_new = best_of(fresh, repeat)
    t_known = best_of(lambda: gate.check(kernel, args), repeat)
    return t_new, t_known


def compiler_import_seconds() -> float:
    """Importing cuTile's compiler in a fresh process (paid once, by the first launch)."""
    import subprocess

    code = ("import time; t = time.perf_counter(); import cuda.tile._compile; "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip())


def taint_overhead(repeat: int) -> tuple[float, float]:
    """(default padding: every block tainted, PaddingMode.ZERO: nothing tainted), seconds."""
    import warnings

    from tile_lab import emulate

    x = np.random.default_rng(0).standard_normal((RMS_ROWS, RMS_COLS)).astype(np.float32)
    y = np.zeros_like(x)
    args = (x, y, RMS_COLS, RMS_TILE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the undetermined-value warning is the point here
        emulate(rmsnorm_default, (RMS_ROWS,), args)  # warm-ups
        emulate(rmsnorm_zero, (RMS_ROWS,), args)
        return alternating(lambda: emulate(rmsnorm_default, (RMS_ROWS,), args),
                           lambda: emulate(rmsnorm_zero, (RMS_ROWS,), args), repeat)


def main(argv: list[str] | None = None) -> int:
    import json
    import statistics
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--repeat", type=int, default=3,
                        help="later-call rounds per process (best kept)")
    parser.add_argument("--processes", type=int, default=3,
                        help="fresh processes per kernel with the verdict cache warm (after one "
                             "with it cold)")
    parser.add_argument("--only", choices=["vadd", "gemm"], help="run one benchmark")
    parser.add_argument("--worker", choices=["vadd", "gemm"], help=argparse.SUPPRESS)
    parser.add_argument("--triton-first", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    for name in ("repeat", "processes"):
        if getattr(opts, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if opts.worker:
        print(json.dumps(worker(opts.worker, opts.repeat, opts.triton_first)))
        return 0

    # this process's own launches (the gate's cost) leave nothing on disk; the workers get a
    # verdict cache of their own, cold for the first, warm for the others
    os.environ["TILE_LAB_FRONTEND_CACHE"] = "off"
    triton_parts, other = _load_triton()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs (load average {load:.1f}); {other}")

    labels = {"vadd": f"vector add, {N_VADD} f32, tile {VADD_TILE}",
              "gemm": f"GEMM {GEMM_SIZE}^3 f32, tiles {GEMM_TILES}"}
    failed = False
    gate_lines = []
    for key, label in labels.items():
        if opts.only and opts.only != key:
            continue
        with tempfile.TemporaryDirectory() as cache:
            runs = [run_worker(key, opts.repeat, False, cache)]  # verdict cache cold
            runs += [run_worker(key, opts.repeat, i % 2 == 0, cache)  # warm; turns go first
                     for i in range(opts.processes)]
        cold, warm = runs[0], runs[1:]
        emu_first = statistics.median(r["emu_first"] for r in warm)
        emu_later = min(r["emu_later"] for r in runs)
        goal = GOALS[key]
        print(f"{label}:")
        print(f"  emulator  first call {cold['emu_first']:7.3f} s (verdict cache cold: "
              f"cuTile's compiler imported and run) | {emu_first:7.3f} s (cache warm, median "
              f"of {len(warm)} processes; compiler imported: "
              f"{any(r['compiler_imported'] for r in warm)}) | later calls {emu_later:7.3f} s "
              f"(goal < {goal:.0f} s: {'met' if emu_later < goal else 'MISSED'})")
        failed |= emu_later >= goal
        if triton_parts is not None:
            tri_first = statistics.median(r["tri_first"] for r in runs)
            tri_later = min(r["tri_later"] for r in runs)
            first_cold = cold["tri_first"] / cold["emu_first"]
            first_warm = statistics.median(r["tri_first"] / r["emu_first"] for r in warm)
            later = [r["tri_later"] / r["emu_later"] for r in runs]
            later_ratio = statistics.median(later)
            ok_first = min(first_cold, first_warm) >= FIRST_SPEEDUP_GOAL
            ok_later = later_ratio >= SPEEDUP_GOAL
            failed |= not (ok_first and ok_later)
            print(f"  triton    first call {tri_first:7.3f} s (median) | later calls "
                  f"{tri_later:7.3f} s")
            print(f"  emulator faster, side by side in each process: FIRST call "
                  f"{first_cold:6.1f}x (cache cold), {first_warm:6.1f}x (warm, median) "
                  f"(goal >= {FIRST_SPEEDUP_GOAL:.0f}x: {'met' if ok_first else 'MISSED'}) | "
                  f"LATER calls {later_ratio:6.1f}x (median of {len(runs)} processes, "
                  f"{min(later):.1f}-{max(later):.1f}x) (goal >= {SPEEDUP_GOAL:.0f}x: "
                  f"{'met' if ok_later else 'MISSED'})", flush=True)
        kernel, args = SETUPS[key](None)[3]
        from tile_lab import emulate

        emulate(kernel, (1,), args)  # this process's own first call, untimed
        t_new, t_known = gate_costs(kernel, args, emu_later, opts.repeat)
        share = t_new / cold["emu_first"]
        gate_lines.append(
            f"gate, {key}: new signature {t_new * 1e3:6.1f} ms (compiler imported) = {share:6.1%}"
            f" of a first call with the cache cold (goal < {GATE_FIRST_GOAL:.0%}: "
            f"{'met' if share < GATE_FIRST_GOAL else 'MISSED'}), "
            f"{t_new / emu_later:.0%} of a later call | known signature "
            f"{t_known * 1e3:5.2f} ms = {t_known / emu_later:5.1%} of a later call")
    for line in gate_lines:
        print(line)
    print(f"gate, once per process: importing cuTile's compiler takes "
          f"{compiler_import_seconds():.2f} s in a fresh process (it imports torch when "
          "torch is installed); a verdict cached on disk skips it")
    if not opts.only:
        t_taint, t_clean = taint_overhead(opts.repeat)
        print(f"taint, worst case (ragged RMSNorm {RMS_ROWS}x{RMS_COLS}, tile {RMS_TILE}, "
              f"every block tainted): {t_taint:.3f} s vs {t_clean:.3f} s with "
              f"PaddingMode.ZERO = {t_taint / t_clean:.2f}x")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
