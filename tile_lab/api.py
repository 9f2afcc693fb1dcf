"""The Python API that runs a kernel: ``tile_lab.emulate``, ``trace``, ``sanitize``,
``launch``, ``crosscheck`` and ``profile``.

Each builds one frozen :class:`~tile_lab.request.Request` (its options typed and checked there:
:class:`~tile_lab.request.EmulateOptions`, :class:`~tile_lab.request.SanitizeOptions`,
:class:`~tile_lab.request.LaunchOptions`, :class:`~tile_lab.request.CrossCheckRun`,
:class:`~tile_lab.request.ProfileOptions`) and hands it to the core (``_run.py``), the same
function per mode that the ``%%tile`` magic's ``--emulate``, ``--trace``, ``--sanitize``,
``--launch``, ``--crosscheck`` and ``--profile`` reach. The core and the engines (the
emulator, the sanitizer, the GPU launcher, the crosscheck, the profiler) are imported when a
function is called, so reading these names imports none of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .request import (
    LAUNCH_TIMEOUT_S,
    PROFILE_TIMEOUT_S,
    CrossCheckRun,
    EmulateOptions,
    LaunchOptions,
    ProfileOptions,
    Request,
    SanitizeOptions,
)

if TYPE_CHECKING:
    import os

    from .crosschecking import CrossCheck, CrossCheckOptions, GpuSide
    from .profiling import Profile
    from .sanitizer.report import SanitizerReport
    from .tracing.trace import Trace

__all__ = ["crosscheck", "emulate", "launch", "profile", "sanitize", "trace"]


def emulate(kernel: Any, grid: Sequence[int], args: Sequence[Any], *,
            padding: str = "poison") -> None:
    """Run ``kernel`` over ``grid`` on the CPU, updating array arguments in place.

    Args:
        kernel: a ``@ct.kernel`` (or the plain Python function of one).
        grid: a tuple of 1 to 3 positive ints, as for ``ct.launch``.
        args: the kernel's arguments, as for ``ct.launch``: NumPy arrays (written in
            place), CuPy/torch/DLPack arrays (copied to the host and back), scalars, and
            ``ct.Constant`` values.

    Raises:
        EmulationError: bad arguments or grid, or the kernel did something invalid; the
            error points at the kernel line. EmulatorUnsupported: an operation the
            emulator does not implement.

    ``padding``: what lanes padded under ``PaddingMode.UNDETERMINED`` (cuTile's default)
    hold: ``"poison"`` (NaN for floats, bytes 0xDB for integers), ``"zero"``, or
    ``"hardware"`` (zero where the load can be a TMA copy, as TMA fills; poison elsewhere:
    README "Undetermined lanes"). Whichever, a warning names the load and the store when
    such lanes reach an output (see ``tile_lab.sanitize`` for the full report).
    """
    from ._run import emulate_request

    emulate_request(Request(kernel, args, grid=grid, mode="emulate",
                            emulate=EmulateOptions(padding=padding)))


def trace(kernel: Any, grid: Sequence[int], args: Sequence[Any], *,
          blocks: Sequence[Sequence[int]] | None = None, padding: str = "poison") -> Trace:
    """Run ``kernel`` like :func:`emulate` and return every memory access it made, as a
    :class:`~tile_lab.tracing.trace.Trace` (per access: block, kind, op, argument name, tile index
    and element box or element indices, lanes padded/discarded, source line, iteration),
    plus the shapes of every matrix product (``Trace.mma_calls``).

    ``blocks``: run only these block ids (each 1 to 3 ints inside ``grid``), in grid order,
    e.g. to sample a GPU-sized launch. The other blocks do not run, so the arrays hold a
    partial result and the trace (``Trace.blocks_run``) describes only these blocks.
    ``padding`` as for :func:`emulate`; undetermined values written to memory are listed in
    ``Trace.undetermined``.
    """
    from ._run import trace_request

    return trace_request(Request(kernel, args, grid=grid, mode="trace",
                                 emulate=EmulateOptions(padding=padding, blocks=blocks)))


def sanitize(kernel: Any, grid: Sequence[int], args: Sequence[Any], *,
             outputs: Iterable[str] | None = None,
             partial: Iterable[str] | None = None) -> SanitizerReport:
    """Emulate ``kernel`` on ``grid`` with ``args`` (like ``tile_lab.trace``: NumPy arrays
    are updated in place) and check every memory access it made.

    ``outputs``: argument names the kernel must write completely (an unwritten element is
    an error); ``partial``: write-only arguments it may write in part (the host fills the
    rest). See ``tile_lab.sanitizer.checks``' docstring for every check."""
    from ._run import sanitize_request

    return sanitize_request(Request(kernel, args, grid=grid, mode="sanitize",
                                    sanitize=SanitizeOptions(outputs, partial)))


def launch(kernel: Any, grid: Any, args: Sequence[Any], *, hints: dict[str, Any] | None = None,
           isolate: bool = False, stream: Any = None, fallback: str | None = None,
           timeout: float | None = LAUNCH_TIMEOUT_S) -> None:
    """Launch ``kernel`` over ``grid`` with ``args`` on the GPU (see ``tile_lab.gpu.launcher``'s
    docstring).

    ``isolate=True`` runs it in a worker process: a fault or a hang (``timeout`` seconds)
    becomes a LaunchError here and this process's CUDA context stays healthy.
    ``fallback="emulate"`` runs the tile_lab CPU emulator when there is no GPU, after printing
    one notice line. Without a GPU and without the fallback: NoGPUError.
    """
    from ._run import launch_request

    launch_request(Request(kernel, args, grid=grid, hints=hints, mode="launch",
                           launch=LaunchOptions(isolate=isolate, stream=stream,
                                                fallback=fallback, timeout=timeout)))


def crosscheck(kernel: Any, grid: Sequence[int], args: Sequence[Any], *,
               options: CrossCheckOptions | None = None,
               gpu: GpuSide | None = None) -> CrossCheck:
    """Run ``kernel`` over ``grid`` on the GPU and on the CPU emulator from identical copies
    of ``args`` (yours are not written) and compare every output array tile by tile.

    Returns a :class:`~tile_lab.crosschecking.result.CrossCheck`: per tile the blocks and source
    line that wrote it, max abs / ULP error, NaN and Inf placement, and a class for every
    difference — lanes the emulator marks undetermined, differences by design (approximate
    math, flush-to-zero, rounding modes, summation order: the op's line and mode), or a real
    mismatch (an emulator bug). ``gpu``: the GPU side (default :class:`CupyGpu`). Without a
    usable GPU: :class:`~tile_lab.errors.NoGPUError` saying what is missing.
    """
    from ._run import crosscheck_request

    return crosscheck_request(Request(kernel, args, grid=grid, mode="crosscheck",
                                      crosscheck=CrossCheckRun(options=options, gpu=gpu)))


def profile(kernel: Any, grid: Any, args: Sequence[Any], *,
            hints: Mapping[str, Any] | None = None, timeout_s: float = PROFILE_TIMEOUT_S,
            plans: Sequence[Any] | None = None,
            keep_report: str | os.PathLike | None = None) -> Profile:
    """Profile one launch of ``kernel`` on ``grid`` with ``args`` under Nsight Compute.

    Returns per SASS instruction the warp-stall samples by reason and the executed count,
    joined with tile_lab's SASS line map, plus duration, registers, spills, shared memory,
    occupancy and provenance. Raises :class:`~tile_lab.errors.ProfilerUnavailable` when
    ``ncu`` is missing or may not read the counters, :class:`~tile_lab.errors.NoGPUError`
    without a GPU. The arrays in ``args`` are copied; the caller's are not written.

    ``plans`` are tried in order; a later one runs only when the launch fails under the
    earlier (``Profile.collection`` records which plan gave the data and what failed).
    ``keep_report``: a folder to keep the Nsight Compute report (``profile.ncu-rep``, for
    the Nsight Compute GUI) and its CSV exports in.
    """
    from ._run import profile_request

    return profile_request(Request(kernel, args, grid=grid, hints=hints, mode="profile",
                                   profile=ProfileOptions(timeout_s=timeout_s, plans=plans,
                                                          keep_report=keep_report)))
