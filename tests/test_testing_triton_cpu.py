"""``triton.testing``'s timers on the host (``tile_lab/testing/triton_cpu.py``): a cuTile
program benchmarked the way TileGym's benchmarks are (Triton's driver for the device,
``do_bench`` with quantiles, ``do_bench_cudagraph``) runs unmodified under
``TILE_LAB_EMULATE=1 TILE_LAB_DEVICE=cpu``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="a real GPU answers 'cuda'")

from tile_lab.testing.triton_cpu import do_bench_host, host_benchmarking, summarize  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MS = r"(\d+\.\d+)"


@pytest.mark.timeout(300)
def test_a_program_timed_with_triton_testing_runs_on_the_cpu():
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILE_LAB_")}
    env.update(PYTHONPATH=str(ROOT), TILE_LAB_EMULATE="1", TILE_LAB_DEVICE="cpu")
    programs = ROOT / "tests" / "gpu_programs"
    done = subprocess.run([sys.executable, str(programs / "rms_norm_bench.py"), "--rows", "64",
                           "--cols", "100"], capture_output=True, text=True, timeout=280,
                          cwd=programs, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    found = re.fullmatch(rf"rms_norm 64x100: do_bench {MS} ms \({MS}-{MS}\), \S+ GB/s; "
                         rf"do_bench_cudagraph {MS} ms", done.stdout.strip())
    assert found, done.stdout
    ms, low, high, graph_ms = map(float, found.groups())
    assert 0 < low <= ms <= high and graph_ms > 0


def test_the_driver_is_a_host_stand_in_only_while_inside():
    import triton.runtime
    import triton.testing

    real_graph_bench = triton.testing.do_bench_cudagraph
    before = triton.runtime.driver._active
    with host_benchmarking((10, 0)):
        driver = triton.runtime.driver.active
        assert driver.get_active_torch_device() == torch.device("cuda", 0)
        assert driver.get_device_interface() is torch.cuda
        assert driver.get_current_target().arch == 100
        assert triton.testing.do_bench_cudagraph is do_bench_host
        with pytest.raises(NotImplementedError, match="need a GPU"):
            driver.map_python_to_cpp_type("fp32")
    assert triton.testing.do_bench_cudagraph is real_graph_bench
    assert triton.runtime.driver._active is before  # no stand-in left behind


def test_host_bench_calls_and_summaries():
    calls = []
    result = do_bench_host(lambda: calls.append(1), rep=0, return_mode="all")
    assert len(result) == 1 and len(calls) == 2  # one warm-up, one timed
    times = [4.0, 1.0, 3.0, 2.0]
    assert summarize(times, [0.5], "mean") == 2.5
    assert summarize(times, [0.0, 1.0], "mean") == [1.0, 4.0]
    assert [summarize(times, None, m) for m in ("min", "max", "mean", "median")] == \
        [1.0, 4.0, 2.5, 2.5]
    with pytest.raises(ValueError, match="return_mode must be one of"):
        do_bench_host(lambda: None, return_mode="p90")
