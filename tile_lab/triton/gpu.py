"""The GPU side of a port: both kernels run for real, outputs compared, then timed.

:func:`time_pair` launches the Triton kernel (``kernel[grid](*args)`` on torch CUDA tensors) and
the cuTile kernel (``ct.launch``) once each on copies of the same inputs, compares the outputs
element by element with the crosscheck's classes (the cuTile kernel's emulator trace of the
same launch says which tiles make each output and which lanes are undetermined), then times
the two with :func:`tile_lab.gpu.compare_timed` in both regimes (burst and sustained),
interleaved, with the clocks each ran at. GPU only: without one, NoGPUError.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..crosschecking import Budget
from ._require import require_torch, require_triton
from .kernel import jit_function
from .pair import PortComparison, compare_triton, cutile_kernel_of

__all__ = ["time_pair", "timing_rows"]


def timing_rows(cmp_json: dict[str, Any]) -> list[dict[str, Any]]:
    """Per regime: both medians (us), cuTile / Triton time ratio with its CI, SM clocks."""
    rows = []
    for r in cmp_json["regimes"]:
        a, b = r["a"], r["b"]

        def mhz(side: dict[str, Any]) -> int | None:
            v = [s.get("sm_mhz") for s in side["states"] if s.get("sm_mhz")]
            return round(statistics.median(v)) if v else None

        rows.append({"regime": r["regime"], "triton_us": statistics.median(a["times_s"]) * 1e6,
                     "cutile_us": statistics.median(b["times_s"]) * 1e6, "ratio": r["ratio"],
                     "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     "triton_sm_mhz": mhz(a), "cutile_sm_mhz": mhz(b),
                     "clock_mismatch": r["clock_mismatch"]})
    return rows


def _clones(torch: Any, args: Sequence[Any]) -> list[Any]:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def time_pair(triton_kernel: Any, cutile_kernel: Any, *, args: Sequence[Any],
              grid: Sequence[int], cutile_args: Sequence[Any] | None = None,
              cutile_grid: Sequence[int] | None = None, options: Any = None,
              mode: str = "cold", budget: Budget | None = None) -> PortComparison:
    """Compile, run, compare and time a Triton kernel and its cuTile port on this GPU.

    ``args`` / ``cutile_args``: torch CUDA tensors and scalars (the same tensors may appear on
    both sides: each run gets its own copies). ``options``: a
    :class:`tile_lab.gpu.regimes.CompareOptions` (default: both regimes). The result is
    :func:`compare_triton`'s (compiled for this GPU's arch, outputs compared on the GPU)
    with ``timing`` filled in."""
    from ..emulator import trace_kernel as emulate_trace
    from ..gpu.device import device_info, require_gpu
    from ..gpu.inprocess import kernel_work
    from ..gpu.regimes import CompareOptions, compare_timed
    from ..gpu.sampling import TimedWork
    from .outputs import check_pair_arrays, compare_runs, triton_sites
    from .pair import _cutile_names, _host

    require_triton("timing a Triton kernel against its cuTile port")
    torch = require_torch("timing a Triton kernel against its cuTile port")
    cupy = require_gpu("tile_lab.triton.time_pair")
    tk = jit_function(triton_kernel, "time_pair: argument 1 (the Triton kernel)")
    ck = cutile_kernel_of(cutile_kernel, "time_pair: argument 2 (the cuTile kernel)")
    c_args = list(args if cutile_args is None else cutile_args)
    c_grid = tuple(cutile_grid if cutile_grid is not None else grid)
    grid = tuple(grid)
    info = device_info()
    arch = "sm_{}{}".format(*info.compute_capability)
    # the static part (compiles, resources, mix) exactly as on a CPU, for this GPU's arch
    static = compare_triton(tk, ck, args=list(args), cutile_args=c_args, arch=arch)
    c_names = _cutile_names(ck)
    pairs = check_pair_arrays(list(tk.arg_names), list(args), c_names, c_args)
    t_run, c_run = _clones(torch, args), _clones(torch, c_args)
    tk[grid](*t_run)
    from cuda.tile import launch

    launch(cupy.cuda.get_current_stream(), c_grid, ck, tuple(c_run))
    torch.cuda.synchronize()
    host_in = [_host(a) if isinstance(a, torch.Tensor) else a for a in c_args]
    tr = emulate_trace(ck, c_grid, [np.array(a, copy=True) if isinstance(a, np.ndarray)
                                    else a for a in host_in])
    outputs = compare_runs(ck, c_grid, c_names,
                           {c_names[j]: _host(t_run[i]) for i, j in pairs},
                           {c_names[j]: _host(c_run[j]) for _, j in pairs}, tr,
                           triton_sites(tk), f"Triton's {tk.__name__} on {info.name}", budget)
    a = TimedWork(f"Triton {tk.__name__}", lambda: tk[grid](*t_run))
    b = kernel_work(ck, c_grid, tuple(c_run), name=f"cuTile {static.cutile.inspection.kernel_name}")
    cmp = compare_timed(a, b, options or CompareOptions(), mode=mode)
    cj = cmp.to_json_dict()
    timing = {"device": info.name, "mode": mode, "comparison": cj, "rows": timing_rows(cj),
              "versions": {"triton": require_triton("").__version__,
                           "torch": torch.__version__}}
    return replace(static, outputs=outputs, timing=timing)
