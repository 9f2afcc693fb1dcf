"""A Triton kernel and its cuTile port side by side: ``tile_lab.compare(triton_k, cutile_k,
...)``.

Both are compiled for one arch on this machine (Triton with its own ptxas, cuTile with
tileiras), their SASS read into registers, shared memory and an instruction mix, and, given a
grid, both run on copies of the same inputs (on a CPU: Triton's interpreter and tile_lab's
emulator) with the outputs compared element by element (:mod:`tile_lab.triton.outputs`). The
result, :class:`PortComparison`, is plain data; ``tile_lab.render.triton_pair`` draws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..compile.artifacts import Inspection
from ..crosschecking import Budget, CrossCheck
from ..errors import ArgumentTypeError
from ._require import require_triton
from .build import compile_triton, triton_arch
from .kernel import jit_function, param_names
from .resources import Resources, cubin_resources, instruction_mix

__all__ = ["PortComparison", "PortSide", "compare_triton", "cutile_kernel_of"]


@dataclass(frozen=True)
class PortSide:
    """One kernel of the pair: its compile, what its SASS uses, and its launch grid."""

    language: str  # "Triton" or "cuTile"
    inspection: Inspection
    resources: Resources
    mix: dict[str, int]
    grid: tuple[int, ...] | None

    @property
    def instructions(self) -> int:
        return sum(self.mix.values())

    def to_json(self) -> dict[str, Any]:
        i = self.inspection
        return {"language": self.language, "kernel": i.kernel_name, "arch": i.arch,
                "signature": i.signature, "grid": list(self.grid) if self.grid else None,
                "resources": self.resources.to_json(), "mix": dict(self.mix),
                "instructions": self.instructions, "versions": dict(i.versions)}


@dataclass(frozen=True)
class PortComparison:
    """The pair: ``outputs`` compares the Triton run with the cuTile run (None when no grid
    was given); ``timing`` holds ``compare_timed``'s result as JSON where it was timed."""

    triton: PortSide
    cutile: PortSide
    outputs: CrossCheck | None
    timing: dict[str, Any] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def agree(self) -> bool | None:
        return None if self.outputs is None else self.outputs.ok

    def summary(self) -> str:
        t, c = self.triton, self.cutile
        head = (f"Triton {t.inspection.kernel_name} vs cuTile {c.inspection.kernel_name} "
                f"({c.inspection.arch}): {t.instructions} vs {c.instructions} SASS "
                f"instructions, {t.resources.registers} vs {c.resources.registers} registers")
        if self.outputs is None:
            return head + "; not run (give a grid to compare outputs)."
        return f"{head}; outputs: {self.outputs.agreement}."

    def to_json(self) -> dict[str, Any]:
        return {"triton": self.triton.to_json(), "cutile": self.cutile.to_json(),
                "outputs": self.outputs.to_json() if self.outputs else None,
                "timing": self.timing, "summary": self.summary(), "notes": list(self.notes)}

    def __str__(self) -> str:
        return self.summary() if self.outputs is None else \
            "\n".join([self.summary(), str(self.outputs)])

    def __repr__(self) -> str:
        return f"PortComparison({self.summary()})"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ..display import mimebundle

        return mimebundle(self)


def cutile_kernel_of(obj: Any, what: str) -> Any:
    from .._cutile_compat import is_kernel

    if is_kernel(obj):
        return obj
    from .kernel import is_triton_kernel

    kind = "a @triton.jit kernel" if is_triton_kernel(obj) else f"a {type(obj).__name__}"
    raise ArgumentTypeError(f"{what} must be a cuTile kernel (@ct.kernel), got {kind}",
                            hint="tile_lab.compare(triton_kernel, cutile_kernel, ...): the "
                                 "Triton kernel first")


def _entry(insp: Inspection) -> str:
    """The kernel's symbol in its cubin: the first function label of its SASS."""
    for row in insp.stages["sass"].rows:
        text = row.text.strip()
        if text.endswith(":") and not text.startswith(".") and " " not in text:
            return text[:-1]
    return insp.kernel_name


def _side(language: str, insp: Inspection, grid: Any, dynamic_shared: int = 0) -> PortSide:
    rows = insp.stages["sass"].rows
    res = cubin_resources(insp.cubin, _entry(insp), dynamic_shared=dynamic_shared,
                          sass_rows=rows)
    return PortSide(language, insp, res, instruction_mix(rows),
                    tuple(int(g) for g in grid) if grid is not None else None)


def _cutile_names(kernel: Any) -> list[str]:
    import inspect

    from .._cutile_compat import python_function

    return list(inspect.signature(python_function(kernel)).parameters)


def _host_copies(args: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(np.array(np.asarray(a), copy=True) if hasattr(a, "shape") else a
                 for a in args)


def _host(a: Any) -> np.ndarray:
    if hasattr(a, "detach"):  # a torch tensor (CPU)
        return a.detach().cpu().numpy()
    return np.asarray(a)


def compare_triton(triton_kernel: Any, cutile_kernel: Any, *, args: Sequence[Any] | str,
                   grid: Sequence[int] | None = None, cutile_args: Sequence[Any] | None = None,
                   cutile_grid: Sequence[int] | None = None, arch: Any = None,
                   num_warps: int = 4, budget: Budget | None = None) -> PortComparison:
    """Put a ``@triton.jit`` kernel and a ``@ct.kernel`` port of it side by side.

    ``args``: the Triton kernel's example arguments (or a Triton spec string, then nothing
    runs); ``cutile_args``: the cuTile kernel's (default: the same). Their arrays pair up in
    order and must match in count, shape and dtype. Both compile for ``arch`` (default sm_90)
    on this machine. Given ``grid`` (the Triton launch grid; ``cutile_grid`` defaults to it)
    both run on copies of the same inputs, Triton's through its interpreter and cuTile's
    through the emulator, and the outputs are compared element by element.
    """
    from ..compile.inspect import inspect as inspect_cutile
    from ..emulator import trace_kernel as emulate_trace
    from .interpret import run_triton_cpu
    from .outputs import check_pair_arrays, compare_runs, triton_sites

    require_triton("tile_lab.compare of a Triton kernel and a cuTile kernel")
    tk = jit_function(triton_kernel, "tile_lab.compare: argument 1 (the Triton kernel)")
    ck = cutile_kernel_of(cutile_kernel, "tile_lab.compare: argument 2 (the cuTile kernel)")
    c_args = args if cutile_args is None else cutile_args
    if isinstance(c_args, str) and cutile_args is None:
        raise ArgumentTypeError("tile_lab.compare: with a Triton spec string as args, pass "
                                "cutile_args (example arguments or a cuTile sig spec)")
    t_names, c_names = param_names(tk), _cutile_names(ck)
    runs = grid is not None and not isinstance(args, str) and not isinstance(c_args, str)
    if not isinstance(args, str) and not isinstance(c_args, str):
        pairs = check_pair_arrays(t_names, list(args), c_names, list(c_args))
    arch_name, _ = triton_arch(arch)
    build = compile_triton(tk, args, arch=arch_name, num_warps=num_warps)
    c_insp = inspect_cutile(ck, c_args, arch=arch_name)
    t_side = _side("Triton", build.inspection, grid, build.shared_bytes)
    c_grid = cutile_grid if cutile_grid is not None else grid
    c_side = _side("cuTile", c_insp, c_grid)
    if not runs:
        return PortComparison(t_side, c_side, None)
    t_run, c_run = _host_copies(list(args)), _host_copies(list(c_args))
    run_triton_cpu(tk, tuple(grid), t_run)
    tr = emulate_trace(ck, tuple(c_grid), c_run)
    t_out = {c_names[j]: _host(t_run[i]) for i, j in pairs}
    c_out = {c_names[j]: _host(c_run[j]) for _, j in pairs}
    outputs = compare_runs(ck, tuple(int(g) for g in c_grid), c_names, t_out, c_out, tr,
                           triton_sites(tk), f"Triton's {tk.__name__} (interpreter, CPU)",
                           budget)
    return PortComparison(t_side, c_side, outputs)
