"""``tile_lab.profile``: one launch under Nsight Compute, on tile_lab's source lines.

A table of contents: check the profiler and GPU, compile the kernel as ``tile_lab.inspect``
does (its SASS line map is the join key), launch it once in a child process under ``ncu``
(trying the collection plans in order until one gives data), parse the exports, join by
instruction offset, and return a frozen :class:`~tile_lab.profiling.data.Profile`.
"""

from __future__ import annotations

import inspect as pyinspect
import os
import pickle
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._cutile_compat import python_function
from ..errors import ProfilerError, ToolchainError
from ..kernel_source import source_lines_or_none
from ..request import PROFILE_TIMEOUT_S
from . import ncu
from .data import InstructionSample, KernelMetrics, Profile
from .ncu_csv import metrics_from_raw, parse_raw_csv, parse_source_csv, static_spills

if TYPE_CHECKING:
    from ..gpu.job import ShippedJob

def profile_kernel(kernel: Any, grid: Any, args: Sequence[Any], *,
            hints: Mapping[str, Any] | None = None, timeout_s: float = PROFILE_TIMEOUT_S,
            plans: Sequence[ncu.CollectionPlan] = ncu.PLANS,
            keep_report: str | os.PathLike | None = None) -> Profile:
    """The engine of :func:`tile_lab.profile` (its docstring says what it does), called by the
    core (``tile_lab._run.profile_request``) with a request's pieces."""
    from ..compile.inspect import inspect
    from ..gpu.device import local_arch, provenance, require_gpu
    from ..gpu.launcher import check_grid, with_hints

    ncu_path = ncu.find_ncu()
    require_gpu("tile_lab.profile")
    dims = check_grid(grid)
    hinted = with_hints(kernel, dict(hints) if hints else None)
    arch = local_arch() or "sm_90"
    try:
        insp = inspect(hinted, list(args), arch=arch)
        insp.stages["sass"]  # the disassembly runs in the background: wait, raise here
    except ToolchainError as err:
        # no disassembler here: profile anyway; Profile.with_lines(inspection) joins later
        insp, line_map_note = None, f"no line map: {err.message}"
    else:
        line_map_note = "tile_lab SASS line map, joined by instruction offset"
    name = insp.kernel_name if insp is not None else python_function(kernel).__name__
    job = launch_job(hinted, dims, args)
    regex = f"^{re.escape(name)}(_|$)"
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tile_lab_profile_") as tmp:
        work = Path(tmp)
        spec_path = work / "job.pkl"
        spec_path.write_bytes(pickle.dumps(job))
        for plan in plans:
            run = ncu.run_profiled(ncu_path, plan, regex, work,
                                   ncu.python_target(spec_path), timeout_s)
            page = parse_source_csv(run.source_csv) if run.source_csv else None
            if run.returncode == 0 and page is not None and page.has_samples:
                break
            failures.append(f"{plan.name}: exit {run.returncode}; "
                            f"{ncu.log_errors(run.log) or 'no report'}")
        else:
            _keep(work, keep_report, run)
            raise ProfilerError(f"Nsight Compute gave no profile of {name}:\n"
                                + "\n".join(failures),
                                hint="run the same launch with tile_lab.launch to see "
                                     "whether it works without the profiler")
        _keep(work, keep_report, run)
    collection = {"tool": "Nsight Compute", "ncu_version": ncu.ncu_version(ncu_path),
                  "plan": run.plan.name, "sections": list(run.plan.sections),
                  "replay_mode": run.plan.replay_mode, "clock_control": "none",
                  "failed_plans": failures, "wall_s": round(run.wall_s, 3),
                  "line_map": line_map_note}
    return join_profile(
        page.instructions, raw_csv=run.raw_csv, function_name=page.function_name,
        kernel=KernelSource.of(kernel, arch), inspection=insp,
        config=launch_config(kernel, dims, args, hints), collection=collection,
        provenance=provenance().to_json_dict())


def launch_job(kernel: Any, grid: tuple[int, ...], args: Sequence[Any]) -> ShippedJob:
    """What the profiled child process needs (pickled): the kernel job, shipped (the kernel by
    module or source, host copies of the arguments)."""
    from ..gpu.job import KernelJob, TileKernel

    return KernelJob(TileKernel(kernel), tuple(grid), tuple(args)).shipped()


@dataclass(frozen=True)
class KernelSource:
    """Which kernel a profile is of: its name, source text and first line, and the arch."""

    name: str
    source: str
    first_line: int
    arch: str

    @classmethod
    def of(cls, kernel: Any, arch: str) -> KernelSource:
        func = python_function(kernel)
        # profiling needs no source; the line join does
        lines, first = source_lines_or_none(func) or ([], 1)
        return cls(func.__name__, "".join(lines), first, arch)


def join_profile(instructions: Sequence[InstructionSample], *, raw_csv: str,
                 function_name: str, kernel: KernelSource, inspection: Any,
                 config: dict[str, Any], collection: dict[str, Any],
                 provenance: dict[str, Any]) -> Profile:
    """Build the Profile from ncu's instructions and raw page; ``inspection`` (or None)
    gives the source lines (see ``Profile.with_lines``)."""
    metrics = metrics_from_raw(parse_raw_csv(raw_csv)) if raw_csv else KernelMetrics()
    metrics = replace(metrics, **static_spills(tuple(instructions)))
    bare = Profile(kernel_name=kernel.name, function_name=function_name, arch=kernel.arch,
                   source=kernel.source, first_line=kernel.first_line, config=config,
                   instructions=tuple(instructions), metrics=metrics, collection=collection,
                   provenance=provenance)
    return bare if inspection is None else bare.with_lines(inspection)


def launch_config(kernel: Any, grid: tuple[int, ...], args: Sequence[Any],
                  hints: Mapping[str, Any] | None) -> dict[str, Any]:
    """The launch's scalar arguments by parameter name, array shapes/dtypes, grid, hints —
    JSON-native, so a profile's config round-trips unchanged."""
    from .._cutile_compat import python_function

    names = list(pyinspect.signature(python_function(kernel)).parameters)
    config: dict[str, Any] = {}
    for name, value in zip(names, args):
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            config[name] = f"{value.dtype}{list(value.shape)}"
        elif isinstance(value, (bool, int, float, str)):
            config[name] = value
        else:
            config[name] = repr(value)
    config["grid"] = list(grid)
    for k, v in sorted((hints or {}).items()):
        config[k] = v
    return config


def _keep(work: Path, folder: str | os.PathLike | None, run: ncu.NcuRun) -> None:
    if folder is None:
        return
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    if (work / "profile.ncu-rep").exists():
        shutil.copyfile(work / "profile.ncu-rep", out / "profile.ncu-rep")
    (out / "source.csv").write_text(run.source_csv)
    (out / "raw.csv").write_text(run.raw_csv)
    (out / "ncu.log").write_text(run.log)
