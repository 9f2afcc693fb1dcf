"""The emulator's runtime: arguments, grid, helpers, globals substitution, printing,
errors that name the user's line, and the completeness of the emulated namespace."""

from __future__ import annotations

import inspect
import types
from typing import Annotated

import cuda
import cuda.tile as ct
import numpy as np
import pytest
from cuda.tile import load as ct_load
from cuda.tile import store as ct_store

import tile_lab
from tile_lab._cutile_compat import python_function
from tile_lab.emulator import gate
from tile_lab.emulator.namespace import namespace
from tile_lab.emulator.registry import (
    IMPLEMENTATIONS,
    SignatureMismatch,
    emulates,
    emulation_of,
    operation_names,
)
from tile_lab.errors import EmulationError, EmulatorUnsupported


@pytest.fixture(autouse=True)
def _emulator_checks_alone():
    """These tests are about the emulator's own checks and messages; cuTile's front end
    (which rejects the same kernels first, see test_emulator_gate.py) is switched off."""
    with gate.disabled():
        yield



@ct.kernel
def scale(x, y, factor, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,)) * factor)


def _line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(python_function(kernel))
    return first + next(i for i, line in enumerate(lines) if text in line)


# ---- arguments and grid ------------------------------------------------------------------

def test_arrays_are_updated_in_place_and_inputs_untouched():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    tile_lab.emulate(scale, (2,), (x, y, 3.0, 4))
    np.testing.assert_array_equal(y, np.arange(8) * 3.0)
    np.testing.assert_array_equal(x, np.arange(8))


def test_non_contiguous_views_are_written_through():
    base = np.zeros((8, 2), np.float32)
    tile_lab.emulate(scale, (2,), (np.ones(8, np.float32), base[:, 1], 2.0, 4))
    np.testing.assert_array_equal(base[:, 1], np.full(8, 2.0))
    np.testing.assert_array_equal(base[:, 0], 0)


def test_wrong_number_of_arguments_names_the_signature():
    with pytest.raises(EmulationError, match=r"scale\(x, y, factor, TILE\) takes 4") as info:
        tile_lab.emulate(scale, (1,), (np.zeros(4, np.float32),))
    assert info.value.location.line == _line_of(scale, "def scale")


@pytest.mark.parametrize("grid", [4, (0,), (1, 2, 3, 4), (2.0,), (True,), "8", ()])
def test_bad_grid_is_rejected(grid):
    with pytest.raises(EmulationError, match="grid must be a tuple of 1 to 3 positive ints"):
        tile_lab.emulate(scale, grid, (np.zeros(4, np.float32), np.zeros(4, np.float32), 1.0, 4))


@ct.kernel
def annotated(x: ct.Array, y: ct.Array):
    ct.store(y, (0,), ct.load(x, (0,), (4,)))


def test_non_array_for_an_array_parameter_names_it():
    with pytest.raises(EmulationError, match="parameter 'y' expects an array, got int"):
        tile_lab.emulate(annotated, (1,), (np.zeros(4, np.float32), 5))


@ct.kernel
def widths(out, small, big: ct.ScalarInt64, flag, ratio):
    ct.static_assert(small.dtype == ct.int32)
    ct.static_assert(big.dtype == ct.int64)
    ct.static_assert(flag.dtype == ct.bool_)
    ct.static_assert(ratio.dtype == ct.float32)
    ct.store(out, (0,), (big + small).reshape((1,)))


def test_scalar_arguments_get_cutile_dtypes():
    out = np.zeros(1, np.int64)
    tile_lab.emulate(widths, (1,), (out, 2, 2**40, True, 0.5))
    assert out[0] == 2**40 + 2


@ct.kernel
def blocks_3d(out):
    bx, by, bz = ct.bid(0), ct.bid(1), ct.bid(2)
    nx, ny = ct.num_blocks(0), ct.num_blocks(1)
    ct.store(out, (bz * ny * nx + by * nx + bx,), (bx * 100 + by * 10 + bz).reshape((1,)))


def test_3d_grid_runs_every_block():
    out = np.full(24, -1, np.int32)
    tile_lab.emulate(blocks_3d, (2, 3, 4), (out,))
    want = [x * 100 + y * 10 + z for z in range(4) for y in range(3) for x in range(2)]
    np.testing.assert_array_equal(out, want)


# ---- helpers and globals substitution -----------------------------------------------------

@ct.function
def tile_helper(t):
    return plain_helper(t) + 1


def plain_helper(t):
    return ct.maximum(t, 0)


@ct.kernel
def uses_helpers(x, y):
    t = ct_load(x, (0,), (8,))  # names imported from cuda.tile directly
    ct_store(y, (0,), tile_helper(t) + max(t, t * 0) * 0 + min(t, t))


def test_helpers_and_from_imports_run_emulated():
    x = np.arange(-4, 4, dtype=np.float32)
    y = np.zeros(8, np.float32)
    tile_lab.emulate(uses_helpers, (1,), (x, y))
    np.testing.assert_array_equal(y, np.maximum(x, 0) + 1 + x)


def test_real_cuda_tile_is_never_patched():
    tile_lab.emulate(uses_helpers, (1,), (np.zeros(8, np.float32), np.zeros(8, np.float32)))
    assert ct.load is ct_load and ct.load.__module__.startswith("cuda.tile")
    with pytest.raises(Exception, match="device code"):
        ct.bid(0)  # outside a kernel the real stub still refuses to run


def make_kernel(offset):
    @ct.kernel
    def closure_kernel(x):
        ct.store(x, (0,), ct.full((4,), offset, dtype=ct.int32))
    return closure_kernel


def test_closures_see_the_emulated_namespace():
    x = np.zeros(4, np.int32)
    tile_lab.emulate(make_kernel(7), (1,), (x,))
    np.testing.assert_array_equal(x, 7)


# ---- printing and assertions --------------------------------------------------------------

@ct.kernel
def printing(x):
    t = ct.load(x, (0,), (4,))
    ct.print(f"block {ct.bid(0)}: {t}")
    ct.printf("first=%d sum=%lld\n", t.extract((0,), (1,)).reshape(()), ct.sum(t))
    print(f"{t.astype(ct.float32):.1f}")


def test_print_and_printf_write_stdout(capsys):
    tile_lab.emulate(printing, (2,), (np.arange(4, dtype=np.int64),))
    out = capsys.readouterr().out.splitlines()
    assert out == ["block 0: [0, 1, 2, 3]", "first=0 sum=6", "[0.0, 1.0, 2.0, 3.0]",
                   "block 1: [0, 1, 2, 3]", "first=0 sum=6", "[0.0, 1.0, 2.0, 3.0]"]


@ct.kernel
def asserting(x):
    t = ct.load(x, (0,), (4,))
    ct.assert_(t > 0, "inputs must be positive")


def test_assert_failure_names_the_line_and_block(capsys):
    with pytest.raises(EmulationError, match="inputs must be positive") as info:
        tile_lab.emulate(asserting, (1,), (np.array([1, 2, 0, 3], np.float32),))
    # cuTile prints the message where the condition is false, as the GPU prints it
    assert capsys.readouterr().out == "inputs must be positive\n"
    err = info.value
    assert err.location.line == _line_of(asserting, "ct.assert_")
    assert "block (0,)" in err.message  # the launch grid (1,) has one axis: so has the block
    assert "ct.assert_(t > 0" in err.render()


@ct.kernel
def python_error(x, n):
    values = (1, 2, 3)
    ct.store(x, (0,), ct.full((4,), values[n], dtype=ct.int32))


def test_python_errors_inside_kernels_carry_the_kernel_line():
    with pytest.raises(EmulationError, match="IndexError") as info:
        tile_lab.emulate(python_error, (1,), (np.zeros(4, np.int32), 5))
    assert info.value.location.line == _line_of(python_error, "values[n]")
    assert isinstance(info.value.__cause__, IndexError)


@ct.kernel
def foreign(x):
    ct.Array.from_foreign(x.foreign_pointer, (x.shape[0] + 1,), (1,))  # one past the end


def test_unsupported_features_raise_emulator_unsupported():
    with pytest.raises(EmulatorUnsupported, match="from_foreign") as info:
        tile_lab.emulate(foreign, (1,), (np.zeros(4, np.float32),))
    assert info.value.location.line == _line_of(foreign, "from_foreign")


# ---- completeness of the emulated namespace ---------------------------------------------------

def test_every_public_operation_is_emulated_or_refuses_by_name():
    ns = namespace()
    ops = operation_names()
    assert len(ops) > 90  # sanity: the enumeration found cuTile's operations
    supported = [name for name in ops if name in IMPLEMENTATIONS]
    for name in ops:
        impl = getattr(ns, name)
        assert impl is not getattr(ct, name), f"ct.{name} would run the real stub"
        if name not in IMPLEMENTATIONS:
            with pytest.raises(EmulatorUnsupported, match=name):
                impl()
    print(f"\nemulated cuTile operations: {len(supported)}/{len(ops)} "
          f"({100 * len(supported) / len(ops):.0f}%)")
    # non-operations (dtypes, enums, annotations) pass through unchanged
    assert ns.float16 == ct.float16 and ns.PaddingMode is ct.PaddingMode
    assert ns.Constant is ct.Constant


def test_registration_checks_signatures_against_cutile_stubs():
    def wrong_load(array, index, shape):  # positional-only marker and keywords missing
        return None

    with pytest.raises(SignatureMismatch, match=r"ct\.load"):
        emulates(ct.load)(wrong_load)
    assert IMPLEMENTATIONS["load"].__name__ == "load"  # the real one stays registered


def test_an_op_registers_with_its_taint_rule():
    wrapped = []

    class Rule:
        def wrap(self, name, impl):
            wrapped.append(name)
            return lambda *args: ("tainted", impl(*args))

    def double(x, /):  # the "stub"
        raise AssertionError("never called")

    def double_impl(x, /):
        return 2 * x

    try:
        registered = emulates(double, taint=Rule())(double_impl)
        assert wrapped == ["double"] and registered(3) == ("tainted", 6)
        assert emulation_of(double) is registered is IMPLEMENTATIONS["double"]
    finally:
        IMPLEMENTATIONS.pop("double", None)
    # Tile's methods find their op the same way; a stub nothing emulates says so
    assert emulation_of(ct.reshape) is IMPLEMENTATIONS["reshape"]
    with pytest.raises(EmulatorUnsupported, match=r"ct\.launch has no emulation"):
        emulation_of(ct.launch)


@ct.kernel
def static_length(x: Annotated[ct.Array, ct.ArrayAnnotation(static_shape_dims=(0,))], y):
    n = x.shape[0]  # a compile-time int: usable as a tile shape
    ct.store(y, (0,), ct.load(x, (0,), (n,)) + y.shape[0])


def test_static_shape_dims_are_compile_time_ints():
    x, y = np.arange(8, dtype=np.int32), np.zeros(8, np.int32)
    tile_lab.emulate(static_length, (1,), (x, y))
    np.testing.assert_array_equal(y, np.arange(8) + 8)


@ct.kernel
def dynamic_length(x, y):
    ct.store(y, (0,), ct.load(x, (0,), (x.shape[0],)))


def test_array_shapes_are_run_time_values_by_default():
    with pytest.raises(EmulationError, match="compile-time constant"):
        tile_lab.emulate(dynamic_length, (1,), (np.zeros(8, np.int32), np.zeros(8, np.int32)))


kernel_helpers = types.ModuleType("kernel_helpers")
exec("import cuda.tile as ct\n\ndef relu(t):\n    return ct.maximum(t, 0)\n",
     kernel_helpers.__dict__)


@ct.kernel
def via_modules(x, y):
    t = cuda.tile.load(x, (0,), (8,))  # the package path, not an alias
    cuda.tile.store(y, (0,), kernel_helpers.relu(t))  # a helper from another module


def test_module_attributes_resolve_to_emulated_functions():
    x, y = np.arange(-4, 4, dtype=np.float32), np.zeros(8, np.float32)
    tile_lab.emulate(via_modules, (1,), (x, y))
    np.testing.assert_array_equal(y, np.maximum(x, 0))


class _DLPackOnly:
    """A CPU array known only through the DLPack protocol (like a CPU torch tensor)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_cpu_dlpack_arrays_are_updated_in_place():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    tile_lab.emulate(scale, (2,), (_DLPackOnly(x), _DLPackOnly(y), 2.0, 4))
    np.testing.assert_array_equal(y, np.arange(8) * 2.0)


@pytest.mark.gpu
def test_cupy_arrays_are_copied_to_the_host_and_back():
    import cupy

    x = cupy.arange(8, dtype=cupy.float32)
    y = cupy.zeros(8, dtype=cupy.float32)
    tile_lab.emulate(scale, (2,), (x, y, 2.0, 4))
    np.testing.assert_array_equal(cupy.asnumpy(y), np.arange(8) * 2.0)


@ct.kernel
def foreign_dtypes(x, out):
    # NumPy dtypes work wherever cuTile takes a dtype; ct dtypes convert scalars
    idx = ct.arange(8, dtype=np.int32)
    scale = ct.float32(ct.bid(0) + 2)
    ct.static_assert(scale.dtype == ct.float32)
    t = ct.gather(x, idx).astype(np.float32) * scale
    ct.store(out, (0,), t + ct.full((8,), -np.inf, dtype=np.float32) * 0.0)


def test_numpy_dtypes_and_dtype_constructors():
    x = np.arange(8, dtype=np.float16)
    out = np.zeros(8, np.float32)
    tile_lab.emulate(foreign_dtypes, (1,), (x, out))
    np.testing.assert_array_equal(out, np.where(np.isnan(-np.inf * 0.0), np.nan, x * 2.0))


@ct.kernel
def from_strings(out):
    # a constant converts as Python converts it: float("-inf"), int("7")
    low = ct.full((4,), ct.float32("-inf"), dtype=ct.float32)
    ct.store(out, (0,), ct.maximum(low, ct.float32(ct.int32("7"))))


def test_dtype_constructors_take_constant_strings_as_cutile_does():
    out = np.zeros(4, np.float32)
    tile_lab.emulate(from_strings, (1,), (out,))
    np.testing.assert_array_equal(out, np.full(4, 7.0, np.float32))


@ct.kernel
def tuple_params(pair, scales, out):
    a, b = pair
    s0, s1 = scales
    ct.static_assert(s0.dtype == ct.int32)
    ct.store(out, (0,), ct.load(a, (0,), (4,)) * s0 + ct.load(b, (0,), (4,)) * s1)


def test_tuples_of_arrays_and_scalars_are_converted_elementwise():
    a, b = np.ones(4, np.float32), np.full(4, 2.0, np.float32)
    out = np.zeros(4, np.float32)
    tr = tile_lab.trace(tuple_params, (1,), ((a, b), (3, 5), out))
    np.testing.assert_array_equal(out, np.full(4, 13.0))
    assert [info.name for info in tr.arrays] == ["pair[0]", "pair[1]", "out"]
    assert tr.scalars == {"scales[0]": 3, "scales[1]": 5}


def test_launches_on_two_threads_do_not_mix_their_blocks():
    from concurrent.futures import ThreadPoolExecutor

    def run(factor):
        x = np.arange(4096, dtype=np.float32)
        y = np.zeros(4096, np.float32)
        tr = tile_lab.trace(scale, (64,), (x, y, factor, 64))
        return y, tr

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run, [2.0, 3.0]))
    for factor, (y, tr) in zip([2.0, 3.0], results):
        np.testing.assert_array_equal(y, np.arange(4096) * factor)
        assert [a.block[0] for a in tr.select(kind="store")] == list(range(64))


@ct.kernel
def touches_nothing(x):
    pass


@ct.kernel
def touches_nothing_64(x: ct.IndexedWithInt64):
    pass


def test_strides_past_int32_need_indexed_with_int64():
    base = np.zeros(4, np.int8)
    huge = np.lib.stride_tricks.as_strided(base, (2, 4), (2**32, 1))  # never materialized
    with pytest.raises(OverflowError, match="IndexedWithInt64"):
        tile_lab.emulate(touches_nothing, (1,), (huge,))
    tile_lab.emulate(touches_nothing_64, (1,), (huge,))


@ct.kernel
def first_rows_of_each(xs: Annotated[list, ct.ListAnnotation(element=ct.IndexedWithInt64)],
                       out):
    total = ct.zeros((4, 4), dtype=ct.int8)
    for i in range(len(xs)):
        total += ct.load(xs[i], (0, 0), (4, 4))
    ct.store(out, (0, 0), total)


def test_arrays_of_a_list_annotated_int64_may_pass_int32():
    """ct.ListAnnotation(element=ct.IndexedWithInt64): every array in the list may have more
    than 2**31 rows (broadcast views here: no memory behind them)."""
    rows = 2**32 + 16
    xs = [np.broadcast_to(np.full((1, 4), i + 1, np.int8), (rows, 4)) for i in range(3)]
    out = np.zeros((4, 4), np.int8)
    tile_lab.emulate(first_rows_of_each, (1,), (xs, out))
    np.testing.assert_array_equal(out, np.full((4, 4), 6, np.int8))
