"""CUDA Tile C++ vs cuTile Python: the same kernels timed side by side in one run.

    python bench/cpp_vs_python.py [--samples 30] [--rounds 5] [--mode cold]

Kernels: vector add (1024-element tiles) and a float32 GEMM with ``mma`` (64x64x32 tiles),
each written in C++ (tests/cpp_examples/*.cu, compiled with the pip nvcc by
``tile_lab.inspect_cpp``) and in Python (below, the same tiles). Both run on the same CuPy
arrays; their results are checked against each other first. Timing: CUDA events around
each launch (``tile_lab.gpu.timing``, L2 flushed before each sample in ``cold`` mode),
rounds alternate C++ and Python so clock drift hits both; the median of all samples is
reported with the C++/Python ratio. Needs a GPU (raises NoGPUError without one).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cuda.tile as ct

from tile_lab.cpp import launch_cpp
from tile_lab.gpu.device import device_info, require_gpu
from tile_lab.gpu.timing import StreamHold, l2_flush_buffer, summarize, time_samples

EXAMPLES = Path(__file__).resolve().parent.parent / "tests" / "cpp_examples"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from precompile_cpp import cpp_inspection  # noqa: E402

# The Python twins of the C++ examples (the same tiles), shared with the tests.
sys.path.insert(0, str(EXAMPLES))
from py_twins import gemm, vector_add  # noqa: E402


def cases(cp):
    """(name, C++ file, Python kernel, grid, C++ args, Python args, output, work, unit)."""
    n = 1 << 26
    a, b = cp.random.rand(n, dtype=cp.float32), cp.random.rand(n, dtype=cp.float32)
    c = cp.empty_like(a)
    yield ("vector_add", "vector_add.cu", vector_add, (n // 1024,), [a, b, c, n], (a, b, c),
           c, 3 * 4 * n, "GB/s")
    m = 4096
    A, B = cp.random.rand(m, m, dtype=cp.float32), cp.random.rand(m, m, dtype=cp.float32)
    C = cp.empty((m, m), dtype=cp.float32)
    yield ("gemm", "gemm.cu", gemm, (m // 64, m // 64), [A, B, C, m, m, m], (A, B, C), C,
           2 * m**3, "TFLOP/s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--samples", type=int, default=30, help="samples per round and language")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--mode", choices=("cold", "warm"), default="cold")
    opts = p.parse_args()

    cp = require_gpu("bench/cpp_vs_python.py")
    info = device_info()
    stream = cp.cuda.Stream(non_blocking=True)
    flush = l2_flush_buffer(cp, info.l2_bytes)
    hold = StreamHold(cp)  # host launch overhead (ct.launch vs the driver) stays out of spans
    print(f"device: {info.name} ({info.arch}), mode={opts.mode}, "
          f"{opts.rounds} rounds x {opts.samples} samples per language")
    print(f"{'kernel':<12}{'C++ median':>14}{'Python median':>16}{'time C++/Py':>12}"
          f"{'C++ rate':>16}{'Python rate':>16}")
    for name, cu_file, py_kernel, grid, cpp_args, py_args, out, work, unit in cases(cp):
        insp = cpp_inspection(EXAMPLES / cu_file, info.arch)

        def run_cpp(insp=insp, grid=grid, cpp_args=cpp_args):
            launch_cpp(insp, None, grid, cpp_args, stream=stream)

        def run_py(py_kernel=py_kernel, grid=grid, py_args=py_args):
            ct.launch(stream, grid, py_kernel, py_args)

        # same answer from both before any timing
        run_cpp()
        stream.synchronize()
        cpp_out = out.copy()
        run_py()
        stream.synchronize()
        scale = float(cp.abs(out).max()) or 1.0
        diff = float(cp.abs(out - cpp_out).max()) / scale
        if diff > 1e-3:
            raise SystemExit(f"{name}: C++ and Python results differ (max rel diff {diff:.2e})")

        times = {"cpp": [], "py": []}
        for _ in range(opts.rounds):
            for lang, fn in (("cpp", run_cpp), ("py", run_py)):
                fn()  # warm: module load, JIT cache
                times[lang] += time_samples(cp, stream, fn, mode=opts.mode,
                                            samples=opts.samples, flush_buffer=flush, hold=hold)
        cpp_s, py_s = summarize(times["cpp"]), summarize(times["py"])
        scale_unit = 1e9 if unit == "GB/s" else 1e12
        print(f"{name:<12}{cpp_s.median * 1e3:>11.4f} ms{py_s.median * 1e3:>13.4f} ms"
              f"{cpp_s.median / py_s.median:>12.3f}"
              f"{work / cpp_s.median / scale_unit:>11.1f} {unit:<4}"
              f"{work / py_s.median / scale_unit:>11.1f} {unit:<4}")


if __name__ == "__main__":
    main()
