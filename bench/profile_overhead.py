"""Cost of profiling: wall time of one ``tile_lab.profile`` call (compile for the join, a
child process under Nsight Compute, the CSV exports) vs one ``tile_lab.launch`` of the same
launch, measured side by side in one run; the profiles taken are saved (``--out``, default
``notebooks/data``) as the recorded profiles the notebooks read.

Rows: vector add (2^24 float32), the tutorial GEMM at 4096^3 with its best tuning config
(128x128x64) and with its cliff config (256x256x32).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import tempfile
import time

from gpu_common import parse_args

N_VADD = 1 << 24
N_GEMM = 4096


def cases(cupy):
    from gemm_kernels import gemm_naive
    from gpu_kernels import vector_add

    a = cupy.ones(N_VADD, cupy.float32)
    b = cupy.ones(N_VADD, cupy.float32)
    c = cupy.zeros(N_VADD, cupy.float32)
    A = cupy.ones((N_GEMM, N_GEMM), cupy.float16)
    B = cupy.ones((N_GEMM, N_GEMM), cupy.float16)
    C = cupy.zeros((N_GEMM, N_GEMM), cupy.float16)
    yield "vector_add", vector_add, (N_VADD // 1024,), (a, b, c, 1024)
    for name, (tm, tn, tk) in (("gemm_best", (128, 128, 64)), ("gemm_cliff", (256, 256, 32))):
        yield name, gemm_naive, (N_GEMM // tm, N_GEMM // tn), (A, B, C, tm, tn, tk)


def launch_wall_s(cupy, kernel, grid, args) -> float:
    """Median wall time of one synchronised tile_lab.launch (after a warm-up launch)."""
    import tile_lab

    tile_lab.launch(kernel, grid, args)
    cupy.cuda.get_current_stream().synchronize()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        tile_lab.launch(kernel, grid, args)
        cupy.cuda.get_current_stream().synchronize()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def child_alone_s(kernel, grid, args) -> float:
    """Wall time of the profiled child process run without ncu (Python start, imports,
    cuTile JIT compile, one launch): the part of the cost that is not the profiler's."""
    from tile_lab.profiling.api import launch_job
    from tile_lab.profiling.ncu import python_target

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "job.pkl")
        with open(path, "wb") as f:
            pickle.dump(launch_job(kernel, grid, args), f)
        t0 = time.perf_counter()
        subprocess.run(python_target(path), check=True, capture_output=True)
        return time.perf_counter() - t0


def main() -> None:
    opts = parse_args(__doc__)
    opts.exports = os.environ.get("PROFILE_EXPORTS", os.path.join(opts.out, "ncu_exports"))
    import cupy

    import tile_lab
    from tile_lab.gpu.device import provenance

    prov = provenance()
    print(f"device: {prov.gpu}, SM clock {prov.sm_clock_mhz} MHz, driver {prov.driver}")
    rows = []
    for name, kernel, grid, args in cases(cupy):
        launch_s = launch_wall_s(cupy, kernel, grid, args)
        child_s = child_alone_s(kernel, grid, args)
        t0 = time.perf_counter()
        try:
            prof = tile_lab.profile(kernel, grid, args,
                                    keep_report=os.path.join(opts.exports, name))
        except tile_lab.TileLabError as err:
            print(f"{name}: {err.render()}")
            rows.append((name, launch_s, child_s, time.perf_counter() - t0, None, "FAILED"))
            continue
        wall = time.perf_counter() - t0
        os.makedirs(opts.out, exist_ok=True)
        path = os.path.join(opts.out, f"profile_{name}.json")
        prof.save(path)
        print(f"{name}: {prof.summary()}; plan {prof.collection['plan']!r}; "
              f"failed plans {prof.collection['failed_plans']}; saved {path}")
        rows.append((name, launch_s, child_s, wall, prof.collection["wall_s"],
                     prof.collection["plan"]))
    after = provenance()
    print(f"\n== profiling overhead on {prov.gpu} (SM clock {prov.sm_clock_mhz} MHz before, "
          f"{after.sm_clock_mhz} MHz after; clocks not locked, ncu --clock-control none) ==")
    print("launch: tile_lab.launch + sync (median of 5, warm); child: the profiled process "
          "without ncu;\nncu run: the same under ncu; profile: the whole tile_lab.profile call "
          "(+ compile for the line map, exports, retries)")
    print(f"{'kernel':12} {'launch ms':>10} {'child s':>8} {'ncu run s':>10} {'profile s':>10} "
          f"{'ncu - child s':>14}  plan")
    for name, launch_s, child_s, wall, ncu_s, plan in rows:
        ncu_text = f"{ncu_s:10.1f}" if ncu_s is not None else f"{'-':>10}"
        extra = f"{ncu_s - child_s:14.1f}" if ncu_s is not None else f"{'-':>14}"
        print(f"{name:12} {launch_s * 1e3:10.2f} {child_s:8.1f} {ncu_text} {wall:10.1f} "
              f"{extra}  {plan}")


if __name__ == "__main__":
    main()
