"""The power-state trap, recorded: the same cuBLAS call timed on a rested GPU and right after a
few seconds of load, with the NVML state of every sample; and an NVML trace of the card heating
up under back-to-back cuBLAS and cooling down again (replayed by the CPU tests and notebook 8).

    python bench/gpu_power_state.py [--quick] [--out DIR] [--trace-out FILE]

Writes ``power_state.json.gz`` (two Measurements: burst = rested, sustained = right after the
warm-up, same call, same protocol), its summary (``power_state_summary.json.gz``) and the trace
(``nvml_trace_cublas.json.gz``) to --out, gzipped as notebooks/data keeps them.
"""

from __future__ import annotations

import argparse
import os
import time

from gpu_common import HERE, environment, save_json


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    p.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "notebooks", "data"))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--load-s", type=float, default=3.0, help="seconds of warm-up load")
    opts = p.parse_args()
    os.makedirs(opts.out, exist_ok=True)
    import cupy

    from tile_lab.gpu import TimedWork, bench_work, save_measurements
    from tile_lab.gpu.baselines import cupy_version
    from tile_lab.gpu.device import device_info, nvml_reader
    from tile_lab.gpu.metrics import matmul_flops
    from tile_lab.gpu.options import TimingOptions
    from tile_lab.gpu.state import record_trace, save_trace

    n = 2048 if opts.quick else opts.size
    rng = cupy.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=cupy.float32).astype(cupy.float16)
    b = rng.standard_normal((n, n), dtype=cupy.float32).astype(cupy.float16)
    c = cupy.empty((n, n), cupy.float16)
    flops = matmul_flops(n, n, n)
    gemm = TimedWork("cupy.matmul", lambda: cupy.matmul(a, b, out=c), flops=flops,
                     baseline=f"cupy.matmul (cuBLAS), {cupy_version()}")
    reader = nvml_reader()
    info = device_info()

    def load(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for _ in range(20):
                cupy.matmul(a, b, out=c)
            cupy.cuda.get_current_stream().synchronize()

    # 1. the trace: idle, then load, then idle again (the card cools down)
    def idle() -> None:
        time.sleep(0.05)

    def busy() -> None:
        for _ in range(20):
            cupy.matmul(a, b, out=c)
        cupy.cuda.get_current_stream().synchronize()

    trace = record_trace(reader, idle, seconds=1.0)
    trace += record_trace(reader, busy, seconds=opts.load_s + 1.0)
    trace += record_trace(reader, idle, seconds=2.0)
    save_trace(trace, os.path.join(opts.out, "nvml_trace_cublas.json.gz"),
               max_sm_mhz=reader.max_sm_mhz(), device=info.name)

    # 2. the trap: the same call, rested (burst: wait for recovery) vs right after the load
    time.sleep(2.0)
    rested = bench_work(gemm, timing=TimingOptions(samples=30, regime="burst"),
                        label="cupy.matmul, rested")
    load(opts.load_s)
    hot = bench_work(gemm, timing=TimingOptions(samples=30, regime="sustained"),
                     label=f"cupy.matmul, right after {opts.load_s:g} s of load")
    save_measurements([rested, hot], os.path.join(opts.out, "power_state.json.gz"))
    save_json(dict(env=environment(), size=n, load_s=opts.load_s,
                   rested=dict(tflops=rested.tflops, sm_mhz=rested.sm_mhz,
                               power_w=rested.power_w, throttled=rested.throttled_samples),
                   after_load=dict(tflops=hot.tflops, sm_mhz=hot.sm_mhz, power_w=hot.power_w,
                                   throttled=hot.throttled_samples)),
              opts.out, "power_state_summary.json.gz")
    peak_sm = max((s.sm_mhz or 0) for s in trace)
    low_sm = min(((s.sm_mhz or 1e9) for s in trace if s.power_w and s.power_w > 200),
                 default=float("nan"))
    print(f"\n== power state on {info.name} ==")
    print(f"trace: {len(trace)} readings; SM clock {low_sm:.0f}..{peak_sm:.0f} MHz under load, "
          f"power up to {max((s.power_w or 0) for s in trace):.0f} W, reasons seen "
          f"{sorted({hex(s.reasons) for s in trace})}")
    for m in (rested, hot):
        print(f"{m.label:44} {m.tflops:7.1f} TFLOPS at SM {m.sm_mhz} MHz, "
              f"{m.power_w} W, {m.throttled_samples}/{m.n} samples throttled")
    print(f"same call, ratio rested/after-load: {rested.tflops / hot.tflops:.3f}")


if __name__ == "__main__":
    main()
