"""torch's CUDA device played by the CPU (``tile_lab/testing/torch_cpu.py``): GPU programs as
users write them (``tests/gpu_programs/``: torch tensors on ``"cuda"``, ``ct.launch`` on
``torch.cuda.current_stream()``, CUDA events for timing) run unmodified under
``TILE_LAB_EMULATE=1 TILE_LAB_DEVICE=cpu``, timing code included; and the stand-ins they
reach, one by one, in process."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="a real GPU answers 'cuda'")

from tile_lab.testing.torch_cpu import active, cuda_on_cpu  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "gpu_programs"
NUMBER = r"(\d+(?:\.\d+)?(?:e[-+]\d+)?)"


def _run(program: str, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILE_LAB_")}
    env.update(PYTHONPATH=str(ROOT), TILE_LAB_EMULATE="1", TILE_LAB_DEVICE="cpu")
    return subprocess.run([sys.executable, str(PROGRAMS / program), *argv],
                          capture_output=True, text=True, timeout=280, cwd=PROGRAMS, env=env)


def _timed(line: str, pattern: str) -> list[float]:
    """The numbers a program's timing line printed (they must be positive)."""
    found = re.fullmatch(pattern, line)
    assert found, line
    numbers = [float(g) for g in found.groups() if re.fullmatch(NUMBER, g or "")]
    assert numbers and all(n > 0 for n in numbers), line
    return numbers


@pytest.mark.timeout(300)
def test_vector_add_checks_and_times_itself():
    done = _run("vector_add.py", "--n", "300001", "--tile", "512")
    assert done.returncode == 0, done.stderr[-3000:]
    _timed(done.stdout.strip(), rf"vector_add n=300001 tile=512: {NUMBER} ms, {NUMBER} GB/s "
           r"on tile_lab CPU emulator \(sm_90\)")


@pytest.mark.timeout(300)
def test_row_softmax_on_a_side_stream():
    done = _run("softmax_rows.py", "--rows", "300", "--cols", "77")
    assert done.returncode == 0, done.stderr[-3000:]
    _timed(done.stdout.strip(), rf"softmax_rows 300x77: {NUMBER} ms, {NUMBER} GB/s on "
           r"tile_lab CPU emulator \(sm_90\)")


@pytest.mark.timeout(300)
def test_gemm_grouped_and_persistent_sized_by_the_sm_count():
    done = _run("matmul.py", "--m", "200", "--n", "136", "--k", "72")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "tile_lab CPU emulator (sm_90) (sm_90)"
    _timed(lines[1], rf"matmul 200x136x72: {NUMBER} ms, {NUMBER} TFLOPS")
    _timed(lines[2], rf"matmul_persistent 200x136x72: {NUMBER} ms, {NUMBER} TFLOPS")


@pytest.mark.timeout(300)
def test_two_launch_reduction_with_memory_queries():
    done = _run("reduce_sum.py", "--n", "1000003", "--tile", "1024")
    assert done.returncode == 0, done.stderr[-3000:]
    info, timing = done.stdout.strip().splitlines()
    free, total = _timed(info, rf"tile_lab CPU emulator \(sm_90\): {NUMBER} of {NUMBER} GiB free")
    assert free <= total == round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
                                  / 2**30, 1)  # the host's memory, not a made-up GPU's
    _timed(timing, rf"reduce_sum n=1000003: {NUMBER} ms, {NUMBER} GB/s, peak 0 MiB allocated")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ten_million_elements_cost_cpu_seconds_not_minutes():
    """Row softmax over 10^7 elements (3 launches: the check, a warm-up, one timed): the
    CPU time of the whole program, torch's import included, is bounded (1/10 of issue 48's
    minute for 10^8 elements); bench/emulate_large.py measures 10^8."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = _run("softmax_rows.py", "--rows", "13107", "--cols", "763", "--iters", "1")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr[-3000:]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 30, f"{cpu:.1f} s of CPU"


# ---- the stand-ins, in process ---------------------------------------------------------------

def test_seeding_through_torch_and_torch_cuda_seeds_what_cuda_tensors_draw_from():
    with cuda_on_cpu():
        assert active()
        torch.manual_seed(7)  # calls torch.cuda.manual_seed_all: no recursion
        first = torch.randn(5, device="cuda")
        torch.cuda.manual_seed(7)
        again = torch.randn(5, device="cuda")
        assert torch.cuda.initial_seed() == 7
    assert not active()
    assert torch.equal(first, again)


def test_device_indexes_pinned_memory_and_non_blocking_moves():
    with cuda_on_cpu():
        assert torch.zeros(3, device=0).device.type == "cpu"
        x = torch.arange(4.0)
        moved = x.to(0, non_blocking=True)
        pinned = x.pin_memory()
        staged = torch.empty(4, pin_memory=True)
    for y in (moved, pinned):
        assert torch.equal(y, x) and y.data_ptr() != x.data_ptr()
    assert staged.shape == (4,)


def test_memory_queries_answer_for_the_host():
    with cuda_on_cpu():
        free, total = torch.cuda.mem_get_info()
        assert 0 < free <= total == torch.cuda.get_device_properties(0).total_memory
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.reset_max_memory_allocated()
        assert torch.cuda.max_memory_allocated() == torch.cuda.memory_reserved() == 0
    assert total == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def test_events_time_host_work():
    import time

    with cuda_on_cpu():
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        time.sleep(0.02)
        end.record()
        end.synchronize()
        assert start.elapsed_time(end) >= 20.0  # milliseconds of host time, at least the sleep
        with pytest.raises(RuntimeError, match="both events must be recorded"):
            torch.cuda.Event(enable_timing=True).elapsed_time(end)
