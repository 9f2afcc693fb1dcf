"""Running a kernel on the CPU: argument conversion, the grid loop, and the trace.

Arguments follow ``ct.launch(stream, grid, kernel, args)``: NumPy arrays are updated in
place; CuPy / torch / DLPack / CUDA-array-interface arrays are copied to the host, run,
and copied back. Python ints become int32 scalars (int64 when they do not fit or the
parameter is ``ct.ScalarInt64``), floats float32; ``ct.Constant`` parameters stay
compile-time Python values. Blocks run one after another, x fastest.
"""

from __future__ import annotations

import inspect
import linecache
import re
import typing
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import cuda.tile as ct
import numpy as np

from .._cutile_compat import is_kernel, is_tile_error, kernel_parameters, locate_tile_error
from .._cutile_compat.device import device_calls_routed
from ..array_like import ArgumentProblem
from ..array_like import is_array_like as _array_like
from ..array_like import to_host as _to_host
from ..errors import EmulationError, SourceLocation, TileLabError
from ..kernel_source import source_lines, source_lines_or_none
from ..request import check_padding
from ..tracing.trace import ArrayInfo, Trace, format_block
from . import batched, dtypes, gate, poison, state, stubs
from . import blocks as blocks_mod
from ._kernel_access import kernel_function
from .namespace import Rebuilder
from .ops_memory import Array, int32
from .probe import probe as _probe
from .tile import Tile


def emulate_kernel(kernel: Any, grid: Sequence[int], args: Sequence[Any], *,
                   padding: str = "poison") -> None:
    """The emulator under ``tile_lab.emulate`` (whose docstring says what it does), for the
    plain pieces: ``tile_lab.emulate`` hands its Request here through the core, and
    tile_lab's own callers (program mode, crosscheck, tuning) call it directly."""
    _launch(kernel, grid, args, record=False, padding=padding)


def trace_kernel(kernel: Any, grid: Sequence[int], args: Sequence[Any], *,
                 blocks: Sequence[Sequence[int]] | None = None, padding: str = "poison"
                 ) -> Trace:
    """:func:`emulate_kernel`, recording every access: the emulator under ``tile_lab.trace``
    (whose docstring says what it returns)."""
    result = _launch(kernel, grid, args, record=True, blocks=blocks, padding=padding)
    assert result is not None
    return result


# ---- the launch ---------------------------------------------------------------------------

def _launch(kernel: Any, grid: Sequence[int], args: Sequence[Any], *, record: bool,
            blocks: Sequence[Sequence[int]] | None = None, padding: str = "poison"):
    check_padding(padding)
    pyfunc = kernel_function(kernel)
    grid3 = _check_grid(grid)
    typed = gate.check(kernel, args)  # what cuTile's compiler rejects does not run here
    subset = None if blocks is None else _check_blocks(blocks, grid3)
    params = _parameters(pyfunc, args)
    converted, arrays, scalars, copy_back = _convert_args(kernel, pyfunc, params, args)
    rebuilder = Rebuilder()
    recorder: list | None = [] if record else None
    run = state.RunState(grid3, recorder, rebuilder.user_codes)
    run.grid_tiles = tuple(int32(g) for g in grid3)
    run.poison_values = padding != "zero"
    run.padding = padding
    run.typed = typed
    # cuTile's own device functions that the kernel reaches through an object (a stub in a
    # dict, a user class's method) run emulated too (stubs.py)
    with device_calls_routed(stubs.router(rebuilder.function)):
        return _run(pyfunc, converted, run, rebuilder, grid3, subset, copy_back,
                    (arrays, scalars) if record else None)


def _run(pyfunc, converted, run, rebuilder, grid3, subset, copy_back, traced):
    """Run the blocks; ``traced``: (arrays, scalars) of a traced launch, whose Trace returns."""
    record = traced is not None
    _, total = blocks_mod.block_ids(grid3, subset)
    limit = blocks_mod.current_limits()
    if total > limit.probe_blocks and limit.max_seconds != float("inf"):
        estimate = _probe(rebuilder.function(pyfunc), converted, run, subset, total)
        if estimate is not None:
            blocks_mod.check_budget(estimate, pyfunc.__name__, limit)
    if not record and subset is None and not limit.max_steps and \
            batched.try_run(pyfunc, converted, run, grid3):  # all blocks in one NumPy pass
        for restore in copy_back:
            restore()
        return None
    fn = rebuilder.function(pyfunc)  # rebuilt against the block-by-block namespace
    state.push(run)
    try:
        with np.errstate(all="ignore"):  # device arithmetic never warns (inf, NaN, wraparound)
            blocks_mod.run_blocks(fn, converted, run, grid3, subset,
                                  f"{'trace' if record else 'emulate'} {pyfunc.__name__}")
    except TileLabError as exc:
        if exc.location is None:
            exc.location = state.location_in_traceback(exc, rebuilder.user_codes)
        raise
    except Exception as exc:
        if is_tile_error(exc):  # cuTile's compile-time error, met as the kernel ran (a
            # `raise ct.static_exception(...)` where the gate did not look): cuTile's class
            from ..compile.errors import as_cutile_error

            _locate(exc, rebuilder.user_codes)
            raise as_cutile_error(exc) from None
        raise EmulationError(f"{type(exc).__name__}: {exc} "
                             f"(block {format_block(run.bid, run.grid)})",
                             state.location_in_traceback(exc, rebuilder.user_codes)) from exc
    finally:
        state.pop()
    for restore in copy_back:
        restore()
    if not record:
        _warn_undetermined(run.undetermined)
        _warn_outside(run.outside_tiles)
        return None
    arrays, scalars = traced
    return _make_trace(pyfunc, grid3, arrays, scalars, run.recorder or [],
                       run.mma_recorder or [], subset, run.undetermined)


def _locate(exc: BaseException, user_codes) -> None:
    """A cuTile error the kernel raised as it ran gets the kernel line (innermost user
    frame) as its cuTile location."""
    frames = [tb for tb in _walk(exc.__traceback__) if tb.tb_frame.f_code in user_codes]
    if frames:
        code, line = frames[-1].tb_frame.f_code, frames[-1].tb_lineno
        text = linecache.getline(code.co_filename, line)
        locate_tile_error(exc, code.co_filename, line, len(text) - len(text.lstrip()),
                          code.co_name)


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _check_grid(grid: Any) -> tuple[int, int, int]:
    ok = isinstance(grid, (tuple, list)) and 1 <= len(grid) <= 3 and all(
        isinstance(g, (int, np.integer)) and not isinstance(g, bool) and g > 0 for g in grid)
    if not ok:
        raise EmulationError(f"grid must be a tuple of 1 to 3 positive ints, got {grid!r}",
                             hint="for example grid=(8,) or grid=(4, 4)")
    g = tuple(int(v) for v in grid)
    return (*g, 1, 1)[:3]  # type: ignore[return-value]


def _check_blocks(blocks: Any, grid: tuple[int, int, int]) -> tuple[tuple[int, int, int], ...]:
    """Distinct block ids inside ``grid``, padded to 3 components, in grid (x fastest) order."""
    if not isinstance(blocks, (tuple, list)) or not blocks:
        raise EmulationError(f"blocks must be a non-empty list of block ids, got {blocks!r}",
                             hint="for example blocks=[(0, 0), (3, 1)]")
    out = set()
    for b in blocks:
        if isinstance(b, (int, np.integer)) and not isinstance(b, bool):
            b = (b,)
        ok = isinstance(b, (tuple, list)) and 1 <= len(b) <= 3 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in b)
        b3 = (*(int(v) for v in b), 0, 0)[:3] if ok else ()
        if not ok or not all(0 <= v < g for v, g in zip(b3, grid)):
            raise EmulationError(f"blocks: {b!r} is not a block id inside grid {grid}",
                                 hint="a block id is 1 to 3 ints, each 0 <= id < grid size")
        out.add(b3)
    return tuple(sorted(out, key=lambda b: (b[2], b[1], b[0])))


# ---- arguments ----------------------------------------------------------------------------------

def _def_location(pyfunc) -> SourceLocation:
    code = pyfunc.__code__
    try:
        lines, first = source_lines(pyfunc)
        offset = next(i for i, text in enumerate(lines) if text.lstrip().startswith("def "))
        line, text = first + offset, lines[offset]
    except (OSError, TypeError, StopIteration):
        line, text = code.co_firstlineno, linecache.getline(code.co_filename,
                                                            code.co_firstlineno) or None
    return SourceLocation(code.co_filename, line, text=text)


_SIGNATURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # pyfunc -> params


def _parameters(pyfunc, args: Sequence[Any]) -> list[inspect.Parameter]:
    params = _SIGNATURES.get(pyfunc)
    if params is None:  # a function's parameters never change: read once
        params = _SIGNATURES[pyfunc] = list(inspect.signature(pyfunc).parameters.values())
    if not isinstance(args, (tuple, list)):
        raise EmulationError(f"args must be a tuple or list of kernel arguments, got "
                             f"{type(args).__name__}", _def_location(pyfunc))
    if len(args) != len(params):
        sig = ", ".join(p.name for p in params)
        raise EmulationError(
            f"{pyfunc.__name__}({sig}) takes {len(params)} argument"
            f"{'s' if len(params) != 1 else ''} but {len(args)} "
            f"{'was' if len(args) == 1 else 'were'} given",
            _def_location(pyfunc))
    return params


@dataclass(frozen=True)
class _ParamSpec:
    """What a parameter's annotation means to the emulator."""

    constant: bool = False  # ct.Constant[...]: stays a compile-time Python value
    int64: bool = False  # ct.ScalarInt64
    static_dims: tuple[int, ...] = ()  # ct.ArrayAnnotation(static_shape_dims=...)
    array: bool = False  # annotated ct.Array
    int64_index: bool = False  # ct.IndexedWithInt64: shapes and strides may pass int32
    items: tuple[_ParamSpec, ...] | None = None  # a tuple annotation's items, when given
    each: _ParamSpec | None = None  # tuple[X, ...]: every item's

    def item(self, i: int) -> _ParamSpec:
        if self.items is not None and i < len(self.items):
            return self.items[i]
        return self.each if self.each is not None else _ParamSpec()


_SPECS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # pyfunc -> its specs


def _param_specs(kernel: Any, pyfunc, params) -> list[_ParamSpec]:
    """cuTile's own reading of the annotations for a ``@ct.kernel`` (read once per kernel:
    a kernel's annotations are fixed when it is defined); for a plain function, the same
    facts read from its type hints (every launch: they may name globals that change)."""
    if is_kernel(kernel):
        specs = _SPECS.get(pyfunc)
        if specs is None:
            specs = _SPECS[pyfunc] = [_spec_of(info) for info in kernel_parameters(kernel)]
        return specs
    return _specs_from_hints(pyfunc, params)


def _specs_from_hints(pyfunc, params) -> list[_ParamSpec]:
    try:
        hints = typing.get_type_hints(pyfunc, include_extras=True)
    except Exception:  # unresolvable forward references: treat as unannotated
        hints = {}
    specs = []
    for p in params:
        hint = hints.get(p.name)
        meta = getattr(hint, "__metadata__", ())
        specs.append(_ParamSpec(
            constant=any(isinstance(m, ct.ConstantAnnotation) for m in meta),
            int64=any(getattr(m, "dtype", None) is ct.int64 for m in meta),
            static_dims=next((tuple(m.static_shape_dims) for m in meta
                              if isinstance(m, ct.ArrayAnnotation)), ()),
            array=_names_array(hint)))
    return specs


def _spec_of(info: Any) -> _ParamSpec:
    return _ParamSpec(constant=info.constant, int64=info.scalar_dtype is ct.int64,
                      static_dims=info.static_shape_dims, array=_names_array(info.annotation),
                      int64_index=info.array_index_dtype is ct.int64,
                      items=None if info.items is None else tuple(map(_spec_of, info.items)),
                      each=_spec_of(info.each) if info.each is not None else
                      # a list's ct.ListAnnotation(element=...): what holds for each array
                      None if info.element is None else _spec_of(info.element))


def _names_array(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "Array"
    return annotation is ct.Array or getattr(annotation, "__origin__", None) is ct.Array


def _convert_args(kernel, pyfunc, params, args):
    converted: list[Any] = []
    arrays: list[ArrayInfo] = []
    scalars: dict[str, Any] = {}
    copy_back: list[Callable[[], None]] = []
    for pos, (p, spec, value) in enumerate(
            zip(params, _param_specs(kernel, pyfunc, params), args), start=1):
        if spec.constant:
            if _array_like(value):
                raise EmulationError(f"parameter {p.name!r} is ct.Constant but got an array",
                                     _def_location(pyfunc))
            converted.append(value)
            scalars[p.name] = _jsonable(value)
            continue
        try:
            converted.append(_convert_one(pyfunc, p.name, value, spec, arrays, scalars,
                                          copy_back))
        except ArgumentProblem as exc:  # named like inspect names it: position and name
            loc = _def_location(pyfunc)
            text = loc.text or ""
            m = re.search(rf"\b{re.escape(p.name)}\b", text[text.find("("):])  # the parameter
            col = text.find("(") + m.start() if m and "(" in text else None
            raise EmulationError(f"argument {pos} ({p.name!r}): {exc}",
                                 replace(loc, col=col)) from None
    return converted, arrays, scalars, copy_back


def _convert_one(pyfunc, name, value, spec: _ParamSpec, arrays, scalars, copy_back):
    if _array_like(value):
        if not spec.int64_index:
            _check_int32_layout(name, value)
        host = _to_host(value, copy_back)
        arr = Array(host, dtypes.from_numpy(host.dtype), name, static_dims=spec.static_dims)
        arrays.append(ArrayInfo(name, tuple(host.shape), str(arr.dtype)))
        return arr
    if isinstance(value, (list, tuple)):  # lists of arrays, tuples of arrays/scalars
        items = [spec.item(i) for i in range(len(value))]
        return type(value)(
            v if item.constant else  # tuple[int, ct.Constant[int]]: a compile-time value
            _convert_one(pyfunc, f"{name}[{i}]", v, item, arrays, scalars, copy_back)
            for i, (v, item) in enumerate(zip(value, items)))
    if spec.array:
        raise EmulationError(f"parameter {name!r} expects an array, got "
                             f"{type(value).__name__}", _def_location(pyfunc))
    if isinstance(value, (bool, np.bool_)):
        scalars[name] = bool(value)
        return Tile(np.array(bool(value)), ct.bool_)
    if isinstance(value, int):
        wide = spec.int64 or not -2**31 <= value < 2**31
        scalars[name] = int(value)
        return Tile(np.array(value, dtype=np.int64 if wide else np.int32),
                    ct.int64 if wide else ct.int32)
    if isinstance(value, (np.integer, np.floating)):
        scalars[name] = value.item()
        dt = dtypes.from_numpy(value.dtype)
        return Tile(np.array(value), dt)
    if isinstance(value, float):
        scalars[name] = value
        return Tile(np.array(value, dtype=np.float32), ct.float32)
    scalars[name] = _jsonable(value)
    return value  # dtypes, tuples of constants, None: passed through as Python values


_INT32_MAX = 2**31 - 1


def _check_int32_layout(name: str, value: Any) -> None:
    """cuTile passes an array's shape and strides as int32 unless the parameter is
    ``ct.IndexedWithInt64``, and refuses at launch (OverflowError) what does not fit;
    checked before the array is copied (a broadcast view may be huge once materialized)."""
    shape = tuple(int(n) for n in getattr(value, "shape", ()))
    stride = getattr(value, "stride", None)
    if callable(stride):  # torch: strides in elements
        strides = tuple(int(s) for s in stride())
    else:
        raw, item = getattr(value, "strides", None), getattr(value, "itemsize", None)
        if raw is None or not item:
            return
        strides = tuple(int(s) // int(item) for s in raw)
    big = [v for v in (*shape, *strides) if not -_INT32_MAX - 1 <= v <= _INT32_MAX]
    if big:
        raise OverflowError(
            f"argument {name!r}: shape {shape} / strides {strides} (elements) do not fit "
            "int32, cuTile's index type for arrays; annotate the parameter "
            "ct.IndexedWithInt64 for 64-bit indexing")


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return str(value)


# ---- errors and the trace -------------------------------------------------------------------

def _warn_outside(outside: dict) -> None:
    """One warning per line whose tiles lay entirely outside their array (the sanitizer's
    tile_out_of_bounds, which plain emulate would otherwise run silently)."""
    import warnings

    for (filename, line), (op, arg, tile, block, count) in outside.items():
        more = f" ({count} times on this line)" if count > 1 else ""
        warnings.warn_explicit(
            f"{op} of tile {tile} of {arg!r} (block {block}) lies entirely outside the array"
            f"{more}: undefined behaviour in cuTile; the emulator padded / discarded it. "
            "tile_lab.sanitize lists every occurrence", blocks_mod.OutOfArrayTileWarning,
            filename, line)


def _warn_undetermined(writes) -> None:
    """One warning per (writing line, load line): undetermined values reached memory."""
    import warnings

    seen = {}
    for w in writes:
        seen.setdefault((w.filename, w.line, w.load_line, w.arg), []).append(w)
    for (filename, line, load_line, arg), ws in seen.items():
        mixed = ws[0].mix_line
        how = f", mixed into kept lanes by {ws[0].mix_op} at line {mixed}" if mixed else ""
        n = sum(w.elements for w in ws)
        warnings.warn_explicit(
            f"undetermined values reach {arg!r} ({n} element{'s' if n != 1 else ''}, "
            f"{len(ws)} block{'s' if len(ws) != 1 else ''}): padded by the load at line "
            f"{load_line} (PaddingMode.UNDETERMINED){how}; on a GPU these elements can hold "
            "garbage. Mask the padded lanes with ct.where, or load with "
            "padding_mode=ct.PaddingMode.ZERO", poison.UndeterminedValueWarning, filename, line)


def _make_trace(pyfunc, grid, arrays, scalars, accesses, mma_calls, subset,
                undetermined=()) -> Trace:
    code = pyfunc.__code__
    found = source_lines_or_none(pyfunc)
    source, first = ("".join(found[0]), found[1]) if found else ("", code.co_firstlineno)
    return Trace(kernel=pyfunc.__name__, grid=grid, arrays=tuple(arrays),
                 accesses=tuple(accesses), source=source, first_line=first,
                 filename=code.co_filename, scalars=scalars, mma_calls=tuple(mma_calls),
                 blocks_run=subset, undetermined=tuple(undetermined))
