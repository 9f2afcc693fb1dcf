"""``cuda.tile.tune`` under emulation: every config runs on the emulator, none is timed.

``ct.tune.exhaustive_search`` times each config through two cuTile internals: ``_benchmark``
(CUDA events around a launch on the caller's stream) and ``benchmark_with_timeout`` (the
launch serialised as a CUDA IPC payload and run in a worker process, killed past the time
limit). Without a GPU both fail for every config, so a program that autotunes ended in
"No valid config found in search space". While emulation is on (``program.enable``) both are
replaced (``_cutile_compat.device.replace_tuning_benchmarks``) by :func:`emulated_benchmark` and
:func:`emulated_benchmark_with_timeout`; the search itself stays cuTile's.

What that means (README, "Tuning under emulation"):

* every launch the search makes runs on the emulator, as on the GPU (3 warm-ups and at
  least 5 samples per config), so a config the emulator or cuTile's front end rejects is a
  failure in ``TuningResult.failures`` exactly as a GPU failure would be;
* CPU time says nothing about GPU time, so nothing is measured: every launch reports
  :data:`EMULATED_TIME_US` (0 us). All configs tie, the spread is 0, each converges after
  cuTile's minimum number of samples, and ``min`` keeps the first: **the best config is the
  first valid config of the search space**, deterministically. A warning says so, once;
* ``single_run_timeout_sec`` is a wall-clock limit on the emulated launch (the main thread
  is interrupted as by Ctrl-C; the launch fails with cuTile's ``TileLaunchTimeoutError``).
  Outside the main thread no limit can be enforced and the launch runs to its end.
"""

from __future__ import annotations

import _thread
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

EMULATED_TIME_US = 0.0
NOT_TIMED = ("tile_lab emulation: ct.tune runs every config on the CPU emulator but times "
             "none (CPU time says nothing about the GPU): each launch reports 0 us, so the "
             "first config that runs is the best")


def emulated_benchmark(stream: Any, grid: Any, kernel: Any, pyargs: Sequence[Any],
                       flush_l2: bool = True) -> float:
    """cuTile's ``_benchmark`` on the emulator: run the launch, report 0 us."""
    from .runtime import emulate_kernel

    warnings.warn(NOT_TIMED, stacklevel=2)
    emulate_kernel(kernel, (grid,) if isinstance(grid, int) else tuple(grid), tuple(pyargs))
    return EMULATED_TIME_US


def emulated_benchmark_with_timeout(stream: Any, grid: Any, kernel: Any, pyargs: Sequence[Any],
                                    timeout_sec: float, flush_l2: bool = True
                                    ) -> tuple[float, float]:
    """cuTile's ``benchmark_with_timeout``: ``(elapsed_us, wall seconds)``; a launch still
    running after ``timeout_sec`` is stopped and raises cuTile's ``TileLaunchTimeoutError``."""
    started = time.perf_counter()
    elapsed = _within(timeout_sec, lambda: emulated_benchmark(stream, grid, kernel, pyargs))
    return elapsed, time.perf_counter() - started


def _within(timeout_sec: float, run: Callable[[], float]) -> float:
    if threading.current_thread() is not threading.main_thread():
        return run()  # only the main thread can be interrupted: no limit here (documented)
    lock = threading.Lock()
    state = {"done": False, "fired": False}

    def fire() -> None:
        with lock:
            if not state["done"]:
                state["fired"] = True
                _thread.interrupt_main()  # the emulator stops as for Ctrl-C

    timer = threading.Timer(timeout_sec, fire)
    timer.daemon = True
    timer.start()
    try:
        result = run()
        with lock:
            state["done"] = True
        return result
    except KeyboardInterrupt:
        with lock:
            state["done"] = True
        if not state["fired"]:
            raise  # the user's own Ctrl-C
        from .._cutile_compat.device import tuning_timeout_error

        raise tuning_timeout_error()(
            f"CUDA kernel launch exceeded timeout {timeout_sec} sec "
            "(emulated launch, stopped by tile_lab)") from None
    finally:
        timer.cancel()


def switch_on() -> Callable[[], None]:
    """Replace cuTile's tuning benchmarks by the emulated ones; returns the undo."""
    from .._cutile_compat.device import replace_tuning_benchmarks

    return replace_tuning_benchmarks(emulated_benchmark, emulated_benchmark_with_timeout)
