"""Both kernels of a port run on the same inputs, outputs compared element by element.

The Triton kernel runs in Triton's interpreter, the cuTile kernel in tile_lab's emulator (on
a GPU: both for real, see :mod:`tile_lab.triton.gpu`), each on its own copy of the inputs. The
cuTile run's access trace says which tiles each output is made of; every differing element
gets the crosscheck's class (:mod:`tile_lab.crosschecking.compare`): ``undetermined`` (lanes the
emulator marks undetermined, or a race), ``design`` (within the error the two kernels' ops
allow: approximate math, summation order, FMA contraction, on either side), or ``mismatch``
(the port computes something else). The result is a :class:`~tile_lab.crosschecking.CrossCheck`
whose "device" is the Triton side, so it reads and renders as a crosscheck does.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from ..array_like import is_array_like
from ..crosschecking import Budget, CrossCheck, DesignSite, design_sites
from ..crosschecking.compare import compare_outputs, hazards_of
from ..crosschecking.sites import APPROX_OPS, ORDER_OPS
from ..errors import SignatureError
from ..kernel_source import source_lines_or_none

__all__ = ["array_positions", "check_pair_arrays", "compare_runs", "triton_sites"]

# Triton calls that sum in an order the device picks, besides the cuTile names they share
_TRITON_ORDER = ORDER_OPS | {"dot", "dot_scaled", "xor_sum"}


def array_positions(args: Sequence[Any]) -> list[int]:
    return [i for i, a in enumerate(args) if is_array_like(a)]


def _describe(a: Any) -> str:
    dt = str(getattr(a, "dtype", "?")).removeprefix("torch.")
    return f"{dt}[{', '.join(str(int(s)) for s in a.shape)}]"


def check_pair_arrays(t_names: Sequence[str], t_args: Sequence[Any],
                      c_names: Sequence[str], c_args: Sequence[Any]) -> list[tuple[int, int]]:
    """Pair the two sides' array arguments in order; a different count, shape or dtype is a
    SignatureError naming both arguments. Returns (Triton index, cuTile index) pairs."""
    tp, cp = array_positions(t_args), array_positions(c_args)
    if len(tp) != len(cp):
        raise SignatureError(
            f"the pair's signatures do not match: the Triton kernel gets {len(tp)} arrays "
            f"({', '.join(t_names[i] for i in tp)}), the cuTile kernel {len(cp)} "
            f"({', '.join(c_names[i] for i in cp)})",
            hint="pass the same arrays, in the same order, to both kernels")
    for k, (i, j) in enumerate(zip(tp, cp), start=1):
        a, b = t_args[i], c_args[j]
        if tuple(a.shape) != tuple(b.shape) or _describe(a).split("[")[0] != \
                _describe(b).split("[")[0]:
            raise SignatureError(
                f"the pair's signatures do not match: array {k} is {_describe(a)} for Triton "
                f"({t_names[i]}) but {_describe(b)} for cuTile ({c_names[j]})",
                hint="pass the same arrays, in the same order, to both kernels")
    return list(zip(tp, cp))


def triton_sites(kernel: Any) -> tuple[DesignSite, ...]:
    """By-design sites of a ``@triton.jit`` kernel: ``tl.exp`` and the like (approximate
    math), ``tl.sum`` / ``tl.dot`` (summation order), ``a * b + c`` (FMA contraction)."""
    fn = kernel.fn
    read = source_lines_or_none(fn)
    if read is None:
        return ()
    lines, first = read
    filename, env, found = fn.__code__.co_filename, fn.__globals__, {}
    for node in ast.walk(ast.parse(textwrap.dedent("".join(lines)))):
        line = getattr(node, "lineno", 1) + first - 1
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and any(
                isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mult)
                for s in (node.left, node.right)):
            found[(line, "fma")] = DesignSite(line, "a * b ± c", "fma", "compiler contraction",
                                              filename)
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        base = env.get(node.func.value.id) if isinstance(node.func.value, ast.Name) else None
        if not (isinstance(base, ModuleType) and base.__name__.startswith("triton.language")):
            continue
        name = node.func.attr
        if name in APPROX_OPS:
            found[(line, name)] = DesignSite(line, f"tl.{name}", "approx", "device default",
                                             filename)
        elif name in _TRITON_ORDER:
            found[(line, name)] = DesignSite(line, f"tl.{name}", "order", "device default",
                                             filename)
    return tuple(sorted(found.values(), key=lambda s: (s.line, s.op)))


def compare_runs(cutile_kernel: Any, grid: tuple[int, ...], c_names: Sequence[str],
                 triton_out: dict[str, np.ndarray], cutile_out: dict[str, np.ndarray],
                 trace: Any, triton_sites_: Sequence[DesignSite], device: str,
                 budget: Budget | None = None) -> CrossCheck:
    """The outputs (cuTile names; the Triton side's arrays under the cuTile name they pair
    with) compared with the crosscheck's classes; ``device`` names the Triton side."""
    written = [n for n in c_names if any(a.arg == n and a.is_write for a in trace.accesses)]
    sites = tuple(design_sites(cutile_kernel)) + tuple(triton_sites_)
    outputs = compare_outputs(written, triton_out, cutile_out, trace, sites,
                              budget or Budget())
    notes = () if written else (f"{trace.kernel} wrote no array: nothing to compare",)
    return CrossCheck(kernel=trace.kernel, grid=grid, device=device, outputs=outputs,
                      sites=sites, hazards=hazards_of(trace), filename=trace.filename,
                      source=trace.source, first_line=trace.first_line, notes=notes)
