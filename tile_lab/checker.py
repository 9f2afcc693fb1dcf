"""``tile_lab.check``: exercise checkers in the style of GPU/Triton puzzles.

The learner's kernel runs on random inputs (on the CPU emulator, or the GPU when there is one);
the output is compared with a NumPy reference. On failure the verdict names the *blocks* that
wrote the wrong elements (and the elements no block wrote), and shows that block's footprint on
the partition diagram — because "not close" teaches nothing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import TileLabError

Block = tuple[int, ...]  # a block index with as many axes as the launch grid: (5,) for grid (16,)


class CheckSetupError(TileLabError):
    """The check itself is mis-specified (shapes, outputs, reference)."""


@dataclass(frozen=True)
class BadBlock:
    block: Block
    wrong: int  # wrong elements this block wrote
    first: tuple[int, ...]  # first wrong element (array index) it wrote
    lines: tuple[int, ...]  # source lines of the stores that wrote them


@dataclass(frozen=True)
class TileVerdict:
    """One tile of the output: who wrote it, and what is wrong with it."""

    index: tuple[int, ...]  # tile index in the output's tile grid
    elements: str  # the element range, e.g. "960–1023" (1-D) or "(0, 64)–(63, 127)"
    writer: tuple[int, ...] | None  # the block that wrote it last (None: nobody)
    wrong: int  # elements written with a wrong value
    unwritten: int  # elements no block wrote
    owner: tuple[int, ...] | None = None  # the block that should write it, when known
    owner_in_grid: bool = True
    owner_assumed: bool = False  # True: no store to learn from, block b → tile b assumed


@dataclass(frozen=True)
class CheckMap:
    """Every tile of a checked output (drawn by ``render/check_view.py``)."""

    output: str
    shape: tuple[int, ...]
    tile: tuple[int, ...]
    grid: tuple[int, ...]  # the launch grid, as given
    tiles: tuple[TileVerdict, ...]  # every tile of the output, row-major


@dataclass(frozen=True)
class CheckResult:
    """The verdict for one output array; ``ok`` is the bottom line. A failed check carries
    its output's tiles (``tile_map``), drawn as ``diagram_svg`` and in the rich display."""

    kernel: str
    output: str
    ok: bool
    device: str  # "emulator" or the GPU name
    total: int
    wrong: int
    unwritten: int
    max_abs_err: float
    max_rel_err: float
    bad_blocks: tuple[BadBlock, ...] = ()
    tile_map: CheckMap | None = field(default=None, repr=False)
    diagram_error: str | None = field(default=None, repr=False)  # why there is no tile map

    def verdict(self) -> str:
        if self.ok:
            return (f"✓ {self.kernel}: {self.output} matches the reference ({self.total} "
                    f"elements, max abs err {self.max_abs_err:.3g}, on {self.device})")
        err = ("no element was written" if self.unwritten == self.total else
               f"max abs err of written elements {self.max_abs_err:.3g}")
        lines = [f"✗ {self.kernel}: {self.wrong} of {self.total} elements of {self.output} are "
                 f"wrong ({err}, on {self.device})"]
        if self.unwritten:
            lines.append(f"  {self.unwritten} elements were never written by any block")
        for b in self.bad_blocks[:8]:
            where = ", ".join(str(x) for x in b.lines) or "?"
            lines.append(f"  block {_fmt_block(b.block)} wrote {b.wrong} wrong elements "
                         f"(first at {b.first}; store on line {where})")
        if len(self.bad_blocks) > 8:
            lines.append(f"  … and {len(self.bad_blocks) - 8} more blocks")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.verdict()

    def __repr__(self) -> str:
        return self.verdict()

    @functools.cached_property
    def diagram_svg(self) -> str:
        """The output's tiles marked right / wrong / never written, as SVG ("" when the
        check passed); drawn by render/check_view.py, looked up by type in
        :mod:`tile_lab.display`."""
        from .display import drawing

        return drawing(self, "image/svg+xml")

    def _repr_html_(self) -> str:
        from .display import mimebundle  # drawn by render/check_view.py

        return str(mimebundle(self).get("text/html", ""))


def check(kernel: Any, spec: Callable[..., Any], *, grid: Sequence[int],
          shapes: Sequence[Sequence[int]], constants: Sequence[Any] = (),
          dtype: Any = np.float32, outputs: int = 1, seed: int = 0,
          tol: tuple[float, float] = (1e-5, 1e-6), device: str = "auto") -> CheckResult:
    """Run ``kernel`` on random inputs and compare its output with ``spec``.

    The kernel's arguments are the arrays of ``shapes`` (the last ``outputs`` of them are
    outputs) followed by ``constants``. ``spec(*inputs)`` returns the expected output (a tuple
    when ``outputs > 1``); the first output is checked and diagnosed, an element being wrong
    when ``|got - want| > atol + rtol·|want|`` for ``tol=(rtol, atol)``. ``device``: "auto" (GPU
    if present, else the emulator), "emulator" or "gpu".
    """
    rtol, atol = tol
    if outputs < 1 or outputs > len(shapes):
        raise CheckSetupError(f"outputs={outputs}, but only {len(shapes)} arrays are given")
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n_in = len(shapes) - outputs
    inputs = [_random(rng, tuple(s), dt) for s in shapes[:n_in]]
    outs = [_poisoned(tuple(s), dt) for s in shapes[n_in:]]
    expected = spec(*[x.copy() for x in inputs])
    expected = expected if isinstance(expected, tuple) else (expected,)
    want = np.asarray(expected[0])
    if want.shape != outs[0].shape:
        raise CheckSetupError(f"the reference returned shape {want.shape}, but the output "
                              f"array has shape {outs[0].shape}")
    grid_t = tuple(int(g) for g in grid)
    args = (*inputs, *outs, *constants)
    from .emulator.runtime import trace_kernel as emulate_and_trace

    used = _pick_device(device)
    trace = None
    if used == "emulator":
        trace = emulate_and_trace(kernel, grid_t, args)
        got = outs[0]
    else:
        got = _run_on_gpu(kernel, grid_t, inputs, outs, constants)
    name = _output_name(kernel, n_in)
    wrong_mask, abs_err, rel_err = _compare(got, want, rtol, atol)
    unwritten_mask = _unwritten(got)
    # Errors are reported over the elements that were written; unwritten ones are counted apart.
    abs_err, rel_err = abs_err[~unwritten_mask], rel_err[~unwritten_mask]
    ok = not wrong_mask.any()
    bad: tuple[BadBlock, ...] = ()
    tile_map: CheckMap | None = None
    why: str | None = None
    if not ok:
        if trace is None:  # attribute on the emulator even when the verdict came from the GPU
            replay = [_poisoned(o.shape, dt) for o in outs]
            trace = emulate_and_trace(kernel, grid_t, (*[x.copy() for x in inputs], *replay,
                                                    *constants))
        bad = _blame(trace, name, wrong_mask & ~unwritten_mask)
        bad = tuple(BadBlock(b.block[:len(grid_t)], b.wrong, b.first, b.lines) for b in bad)
        tile_map, why = _tile_map(trace, name, got, wrong_mask, unwritten_mask, grid_t)
    return CheckResult(kernel=_kernel_name(kernel), output=name, ok=ok, device=used,
                       total=int(want.size), wrong=int(wrong_mask.sum()),
                       unwritten=int(unwritten_mask.sum()),
                       max_abs_err=float(np.nanmax(abs_err)) if abs_err.size else 0.0,
                       max_rel_err=float(np.nanmax(rel_err)) if rel_err.size else 0.0,
                       bad_blocks=bad, tile_map=tile_map, diagram_error=why)


# ---- pieces -------------------------------------------------------------------------------------
def _random(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    if dt.kind == "f" or dt.name in ("bfloat16",):
        return rng.standard_normal(shape).astype(dt)
    if dt.kind in "iu":
        return rng.integers(0, 100, size=shape).astype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    raise CheckSetupError(f"unsupported dtype {dt} for random inputs")


_INT_POISON = -123456789


def _poisoned(shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    # NaN (or a sentinel) marks "never written": zeros would hide a missing store.
    if dt.kind == "f":
        return np.full(shape, np.nan, dtype=dt)
    return np.full(shape, _INT_POISON if dt.kind == "i" else 0, dtype=dt)


def _unwritten(got: np.ndarray) -> np.ndarray:
    if got.dtype.kind == "f":
        return np.isnan(got)
    if got.dtype.kind == "i":
        return got == _INT_POISON
    return np.zeros(got.shape, bool)


def _compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float):
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    abs_err = np.abs(g - w)
    abs_err = np.where(np.isnan(abs_err), np.inf, abs_err)
    rel_err = abs_err / np.maximum(np.abs(w), 1e-30)
    wrong = abs_err > atol + rtol * np.abs(w)
    return wrong, abs_err, rel_err


def _blame(trace: Any, arg: str, wrong_written: np.ndarray) -> tuple[BadBlock, ...]:
    """Which block wrote which wrong elements (the last writer of each element wins)."""
    shape = wrong_written.shape
    last_writer = np.full(shape, -1, dtype=np.int64)
    writes = list(trace.select(arg=arg, kind="write"))
    for i, a in enumerate(writes):
        last_writer[a.mask(shape)] = i
    per_block: dict[Block, list[int]] = {}
    for flat in np.flatnonzero(wrong_written & (last_writer >= 0)):
        w = writes[int(last_writer.reshape(-1)[flat])]
        per_block.setdefault(w.block, []).append(int(flat))
    out = []
    for blk in sorted(per_block):
        flats = per_block[blk]
        lines = sorted({writes[int(last_writer.reshape(-1)[f])].line for f in flats})
        first = tuple(int(i) for i in np.unravel_index(flats[0], shape))
        out.append(BadBlock(blk, len(flats), first, tuple(lines)))
    return tuple(out)


def _tile_map(trace: Any, arg: str, got: np.ndarray, wrong: np.ndarray, unwritten: np.ndarray,
              grid: tuple[int, ...]) -> tuple[CheckMap | None, str | None]:
    """The output's tile map, or None and why it could not be made."""
    try:
        return check_map(trace, arg, got.shape, wrong & ~unwritten, unwritten, grid), None
    except Exception as e:  # the verdict stands without the picture
        return None, str(e)


def check_map(trace: Any, arg: str, shape: tuple[int, ...], wrong: np.ndarray,
              unwritten: np.ndarray, grid: tuple[int, ...]) -> CheckMap | None:
    """Per output tile: who wrote it, how many elements are wrong or unwritten, and which
    block should have written it (when every store shows block b writing tile b). The tile
    is the shape the kernel stored, or the array split evenly over the grid (None: more than
    4096 tiles, or more than 3 axes)."""
    nd = len(shape)
    writes = [a for a in trace.select(arg=arg, kind="write") if a.box_start is not None]
    if writes:
        tile = tuple(int(b - a) for a, b in zip(writes[0].box_start, writes[0].box_stop))
    else:
        tile = tuple(math.ceil(s / (grid[i] if i < len(grid) else 1))
                     for i, s in enumerate(shape))
    counts = tuple(math.ceil(s / t) for s, t in zip(shape, tile))
    if math.prod(counts) > 4096 or nd > 3:
        return None
    rank = len(grid)
    # the block that wrote each element last, and whether blocks map to tiles one to one
    writer = np.full(shape, -1, dtype=np.int64)
    blocks: list[tuple[int, ...]] = []
    identity = bool(writes) and rank >= nd
    for a in trace.select(arg=arg, kind="write"):
        blocks.append(tuple(a.block[:rank]))
        writer[a.mask(shape)] = len(blocks) - 1
        if a.tile_index is None or tuple(a.tile_index) != tuple(a.block[:nd]):
            identity = False
    verdicts = []
    for idx in np.ndindex(*counts):
        sl = tuple(slice(i * t, min((i + 1) * t, s)) for i, t, s in zip(idx, tile, shape))
        w = writer[sl]
        last = int(w.max()) if (w >= 0).any() else -1
        owner = None
        if identity or not writes:  # block b writes tile b (or nothing was written)
            owner = tuple(int(i) for i in idx) + (0,) * (rank - nd)
        lo = tuple(s.start for s in sl)
        hi = tuple(s.stop - 1 for s in sl)
        verdicts.append(TileVerdict(
            index=tuple(int(i) for i in idx), elements=f"{_elem(lo)}–{_elem(hi)}",
            writer=blocks[last] if last >= 0 else None,
            wrong=int(wrong[sl].sum()), unwritten=int(unwritten[sl].sum()),
            owner=owner if owner is not None and len(owner) == rank else None,
            owner_in_grid=owner is None or all(o < g for o, g in zip(owner, grid)),
            owner_assumed=not writes))
    return CheckMap(arg, tuple(shape), tile, grid, tuple(verdicts))


def _elem(t: Sequence[int]) -> str:
    """An element index as a user writes it: ``960`` in a 1-D array, ``(3, 64)`` in 2-D."""
    return str(t[0]) if len(t) == 1 else _tup(t)


def _tup(t: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, t)) + ("," if len(t) == 1 else "") + ")"


def _pick_device(device: str) -> str:
    if device not in ("auto", "emulator", "gpu"):
        raise CheckSetupError(f"device must be 'auto', 'emulator' or 'gpu', not {device!r}")
    if device == "emulator":
        return "emulator"
    try:
        from .gpu.device import device_info, gpu_available

        if gpu_available():
            return device_info().name
    except Exception:
        pass
    if device == "gpu":
        from .errors import NoGPUError

        raise NoGPUError("check(device='gpu') needs a CUDA GPU; device='auto' uses the emulator")
    return "emulator"


def _run_on_gpu(kernel: Any, grid: tuple[int, ...], inputs: list[np.ndarray],
                outs: list[np.ndarray], constants: Sequence[Any]) -> np.ndarray:
    import cupy as cp

    from .gpu import launch_kernel

    d_in = [cp.asarray(x) for x in inputs]
    d_out = [cp.asarray(o) for o in outs]
    launch_kernel(kernel, grid, (*d_in, *d_out, *constants))
    cp.cuda.get_current_stream().synchronize()
    return cp.asnumpy(d_out[0])


def _output_name(kernel: Any, index: int) -> str:
    from ._cutile_compat import kernel_parameters

    params = kernel_parameters(kernel)
    return params[index].name if index < len(params) else f"arg{index}"


def _kernel_name(kernel: Any) -> str:
    from ._cutile_compat import python_function

    return python_function(kernel).__name__


def _fmt_block(b: Block) -> str:
    # blocks carry the launch grid's axes already: (3,) for grid (16,), as bad_blocks holds
    return _tup(b)
