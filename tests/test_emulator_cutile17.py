"""cuTile 1.6 and 1.7 language features on the emulator, one test per feature.

Each kernel is also compiled by cuTile on this CPU (its front end and tileiras, for sm_100:
``tile_lab.inspect``), and what the compiled code says the GPU does (the Tile IR op and its
attributes, the SASS instruction, the printf format) is what the emulator's answer is checked
against, through NumPy. What cannot run on a CPU is refused by name at the kernel's line.
"""

from __future__ import annotations

import contextlib
import re
import sys
import types
import warnings
from dataclasses import dataclass

import cuda.tile as ct
import numpy as np
import pytest
from test_emulator_harness import Case

import tile_lab
from tile_lab.emulator import gate
from tile_lab.errors import CompileError, EmulationError, EmulatorUnsupported

ARCH = "sm_100"


def _compiled(kernel, args):
    """cuTile and tileiras compile ``kernel`` for ``args`` here: the Inspection."""
    return tile_lab.inspect(kernel, args, arch=ARCH)


def _tileir(kernel, args) -> str:
    return _compiled(kernel, args).stages["tileir"].text


def _line_of(kernel, text: str) -> int:
    import inspect

    fn = getattr(kernel, "_pyfunc", None) or getattr(kernel, "__wrapped__", None) or kernel
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _printed(tileir: str, *values) -> str:
    """What the GPU prints: the compiled ``print`` op's C format filled with ``values``."""
    fmt = re.search(r'print_tko "((?:[^"\\]|\\.)*)"', tileir).group(1)
    fmt = re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), fmt)
    return fmt % values


# ---- divmod (1.6): integers only, floored like Python -------------------------------------

@ct.kernel
def divmods(x, y, q, r):
    a = ct.load(x, (0,), (8,))
    b = ct.load(y, (0,), (8,))
    quot, rem = divmod(a, b)  # the builtin
    ct.store(q, (0,), quot)
    q3, r3 = ct.divmod(a, 3)
    ct.store(r, (0,), rem * 100 + r3 + q3 * 0)


def test_divmod():
    x = np.array([7, -7, 7, -7, 0, 5, -5, -9], np.int32)
    y = np.array([2, 2, -2, -2, 3, -3, 3, 4], np.int32)
    q, r = np.zeros(8, np.int32), np.zeros(8, np.int32)
    ir = _tileir(divmods, (x, y, q, r))
    assert re.search(r"divi .* signed rounding<negative_inf>", ir)  # the GPU floors
    tile_lab.emulate(divmods, (1,), (x, y, q, r))
    np.testing.assert_array_equal(q, np.floor_divide(x, y))
    np.testing.assert_array_equal(r, np.mod(x, y) * 100 + np.mod(x, 3))


@ct.kernel
def float_divmod(x, y):
    ct.store(y, (0,), divmod(ct.load(x, (0,), (4,)), 2.5)[0])


def plain_float_divmod(x, y):
    ct.store(y, (0,), divmod(ct.load(x, (0,), (4,)), 2.5)[0])


def test_divmod_of_floats_is_refused_as_cutile_refuses():
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(CompileError, match="divmod"):
        _compiled(float_divmod, (x, y))
    with pytest.raises(ct.TileTypeError, match="not implemented for floating point"):
        tile_lab.emulate(float_divmod, (1,), (x, y))
    with pytest.raises(EmulationError, match="not implemented for floating-point") as info:
        tile_lab.emulate(plain_float_divmod, (1,), (x, y))  # no gate: the emulator's own
    assert info.value.location.line == _line_of(plain_float_divmod, "divmod(ct.load")


# ---- static_exception (1.7) ---------------------------------------------------------------

@ct.kernel
def sized(x, N: ct.Constant[int]):
    if N > 4:
        raise ct.static_exception(ValueError(f"N={N} is too big"))
    ct.store(x, (0,), ct.full((4,), N, ct.int32))


def plain_sized(x, N):
    if N > 4:
        raise ct.static_exception(ValueError(f"N={N} is too big"))
    ct.store(x, (0,), ct.full((4,), N, ct.int32))


def test_static_exception():
    x = np.zeros(4, np.int32)
    _compiled(sized, (x, 3))
    tile_lab.emulate(sized, (1,), (x, 3))
    assert x.tolist() == [3] * 4
    with pytest.raises(CompileError, match=r"compile time \(ValueError: N=5 is too big\)"):
        _compiled(sized, (x, 5))
    for kernel in (sized, plain_sized):  # gated by cuTile's front end, and not
        with pytest.raises(ct.StaticException,
                           match=r"^Exception was raised at compile time \(ValueError: N=5 "
                                 r"is too big\)") as info:
            tile_lab.emulate(kernel, (1,), (x, 5))
        assert info.value.location.line == _line_of(kernel, "raise ct.static_exception")
        assert f"line {info.value.location.line}" in str(info.value)  # as cuTile words it
    assert x.tolist() == [3] * 4  # nothing ran


def _checked_width(n: int) -> int:
    if n > 4:
        raise ValueError(f"n={n} is too big")
    return n


@ct.kernel
def sized_by_helper(x, N: ct.Constant[int]):
    n = ct.static_eval(_checked_width(N))  # a raise inside static_eval: a StaticException too
    ct.store(x, (0,), ct.full((4,), n, ct.int32))


def test_static_exception_from_inside_static_eval():
    x = np.zeros(4, np.int32)
    with pytest.raises(ct.StaticException,
                       match=r"^Exception was raised inside static_eval\(\) \(ValueError: "
                             r"n=5 is too big\)") as info:
        tile_lab.emulate(sized_by_helper, (1,), (x, 5))
    assert info.value.location.line == _line_of(sized_by_helper, "static_eval(")
    with pytest.raises(CompileError, match="inside static_eval"):
        _compiled(sized_by_helper, (x, 5))
    tile_lab.emulate(sized_by_helper, (1,), (x, 2))
    assert x.tolist() == [2] * 4


STATIC_EXCEPTION_CELL = """import cuda.tile as ct
import numpy as np
import tile_lab

@ct.kernel
def sized(x, N: ct.Constant[int]):
    if N > 4:
        raise ct.static_exception(ValueError(f"N={N} is too big"))
    ct.store(x, (0,), ct.full((4,), N, ct.int32))

tile_lab.emulate(sized, (1,), (np.zeros(4, np.int32), 5))
"""


def test_static_exception_in_a_notebook_cell_names_the_cell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    result = shell.run_cell(STATIC_EXCEPTION_CELL, store_history=True)
    err = result.error_in_exec
    assert isinstance(err, ct.StaticException)
    text = err.render()
    assert f"Cell In[{result.execution_count}], line 8" in text
    assert "ValueError: N=5 is too big" in text


# ---- foreign pointers (1.7): emulated over the argument's memory -------------------------

@ct.kernel
def transposed_copy(x, y):
    xt = ct.Array.from_foreign(x.foreign_pointer, (x.shape[1], x.shape[0]),
                               (x.strides[1], x.strides[0]))
    ct.store(y, (0, ct.bid(0)), ct.load(xt, (0, ct.bid(0)), (8, 4)))


def test_foreign_pointer_and_from_foreign():
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    y = np.zeros((8, 8), np.float32)
    ir = _tileir(transposed_copy, (x, y))
    assert re.search(r"make_tensor_view .*strides = \[1, ", ir)  # x's memory, transposed
    tr = tile_lab.trace(transposed_copy, (2,), (x, y))
    np.testing.assert_array_equal(y, x.T)
    reads = [a for a in tr.accesses if a.kind == "load"]
    assert [a.arg for a in reads] == ["x", "x"]
    read = np.sort(np.concatenate([a.flat_indices for a in reads]))
    np.testing.assert_array_equal(read, np.arange(64))  # every element of x, as x's


@ct.kernel
def into_evens(x, y):
    v = ct.Array.from_foreign(x.foreign_pointer, (x.shape[0] // 2,), (2,))
    ct.store(v, (0,), ct.load(y, (0,), (8,)))  # y has 6: lanes 6, 7 are padding


def test_from_foreign_view_reports_in_the_arguments_elements():
    x, y = np.zeros(16, np.float32), np.arange(1, 7, dtype=np.float32)
    _compiled(into_evens, (x, y))
    tr = tile_lab.trace(into_evens, (1,), (x, y))
    np.testing.assert_array_equal(x[0:12:2], y)
    assert (x[1::2] == 0).all()
    store = next(a for a in tr.accesses if a.kind == "store")
    assert store.arg == "x" and store.flat_indices.tolist() == list(range(0, 16, 2))
    [bad] = tr.undetermined  # padded lanes reached x[12] and x[14]
    assert (bad.arg, bad.box_start, bad.box_stop, bad.elements) == ("x", (12,), (15,), 2)


@ct.kernel
def through_a_view(x, y):
    evens = ct.Array.from_foreign(x.foreign_pointer, (x.shape[0] // 2,), (2,))
    part = evens.slice(0, 1, 5)  # x[2], x[4], ..., x[8]
    dense = ct.Array.from_foreign(part.foreign_pointer, (8,), (1,))  # memory from x[2] on
    ct.store(y, (0,), ct.load(dense, (0,), (8,)))


def test_from_foreign_strides_count_memory_elements_not_the_views():
    x, y = np.arange(16, dtype=np.float32), np.zeros(8, np.float32)
    _compiled(through_a_view, (x, y))
    tr = tile_lab.trace(through_a_view, (1,), (x, y))
    np.testing.assert_array_equal(y, x[2:10])
    load = next(a for a in tr.accesses if a.kind == "load")
    assert load.flat_indices.tolist() == list(range(2, 10)) and load.out_of_bounds == 0


@ct.kernel
def foreign_overrun(x, y):
    v = ct.Array.from_foreign(x.foreign_pointer, (x.shape[0] * 2,), (1,))
    ct.store(y, (0,), ct.load(v, (0,), (8,)))


def test_from_foreign_past_the_argument_is_refused_by_name():
    x, y = np.zeros(4, np.float32), np.zeros(8, np.float32)
    _compiled(foreign_overrun, (x, y))  # the GPU would run it, reading past x
    with pytest.raises(EmulatorUnsupported, match=r"Array\.from_foreign.* past the 4 "
                                                   r"elements of 'x'") as info:
        tile_lab.emulate(foreign_overrun, (1,), (x, y))
    assert info.value.location.line == _line_of(foreign_overrun, "from_foreign")


# ---- foreign calls (1.7, NVSHMEM): refused by name ------------------------------------------

def test_nvshmem_foreign_calls_are_refused_by_name(monkeypatch):
    # cuTile's foreign calls come from cuda.tile_preview, which PyPI has only as a 0.0.0a0
    # placeholder: a stand-in module of that name carries the call here, and no compile
    preview = types.ModuleType("cuda.tile_preview")

    def nvshmem_my_pe():
        raise AssertionError("a foreign call reached its host stand-in")

    nvshmem_my_pe.__module__ = "cuda.tile_preview"
    nvshmem_my_pe.__qualname__ = "nvshmem_my_pe"
    preview.nvshmem_my_pe = nvshmem_my_pe
    monkeypatch.setitem(sys.modules, "cuda.tile_preview", preview)
    namespace = {"ct": ct, "ctp": preview, "my_pe": nvshmem_my_pe}
    exec(compile("def by_module(x):\n    ct.store(x, (0,), ctp.nvshmem_my_pe())\n"
                 "def by_name(x):\n    ct.store(x, (0,), my_pe())\n", __file__, "exec"),
         namespace)
    for name in ("by_module", "by_name"):
        with pytest.raises(EmulatorUnsupported,
                           match=r"cuda\.tile_preview\.nvshmem_my_pe is a foreign call "
                                 r"\(.*NVSHMEM") as info:
            tile_lab.emulate(namespace[name], (1,), (np.zeros(4, np.int32),))
        assert info.value.location.line == 2 + 2 * (name == "by_name")


# ---- return inside loops (1.7) ------------------------------------------------------------

@ct.function
def first_block_over(x, limit):
    for i in range(x.shape[0] // 4):
        if ct.sum(ct.load(x, (i,), (4,))) > limit:
            return i
    return x.shape[0]


@ct.kernel
def early_returns(x, out, limit: int):
    ct.store(out, (1,), ct.full((1,), first_block_over(x, limit), ct.int32))
    i = 0
    while i < x.shape[0] // 4:
        if ct.max(ct.load(x, (i,), (4,))) > limit:
            ct.store(out, (0,), ct.full((1,), i, ct.int32))
            return
        i += 1
    ct.store(out, (0,), ct.full((1,), -1, ct.int32))


@ct.kernel
def spin_until(x, out):
    i = 0
    while True:
        if ct.max(ct.load(x, (i,), (4,))) > 10:
            ct.store(out, (0,), ct.full((1,), i, ct.int32))
            return
        i += 1


def test_while_true_left_only_by_return_is_a_compiler_failure_named_as_such():
    # cuTile 1.7 asserts inside its compiler here: no "loop without an exit" (the loop has
    # one). The emulator still runs such a kernel, as it runs any kernel cuTile fails on
    # internally (gate.py: no verdict), which its step budget and Ctrl-C handling rely on.
    x, out = np.arange(32, dtype=np.int32), np.zeros(1, np.int32)
    with pytest.raises(CompileError) as info:
        _compiled(spin_until, (x, out))
    assert "only exit is a `return`" in info.value.render()
    assert "without an exit" not in info.value.render()
    assert info.value.location.line == _line_of(spin_until, "while True")


def test_return_inside_loops():
    x = np.arange(32, dtype=np.int32)
    out = np.zeros(2, np.int32)
    _compiled(early_returns, (x, out, 10))
    for limit in (10, 50, 1000):
        tile_lab.emulate(early_returns, (1,), (x, out, limit))
        sums, maxes = x.reshape(-1, 4).sum(1), x.reshape(-1, 4).max(1)
        want_sum = np.flatnonzero(sums > limit)
        want_max = np.flatnonzero(maxes > limit)
        assert out[1] == (want_sum[0] if want_sum.size else 32)
        assert out[0] == (want_max[0] if want_max.size else -1)


# ---- str.join (1.7) -----------------------------------------------------------------------

@ct.kernel
def joined(x):
    t = ct.load(x, (0,), (4,))
    ct.print(", ".join((f"sum={ct.sum(t)}", f"max={ct.max(t)}", "end")))


def test_str_join(capsys):
    x = np.array([3, 9, -2, 5], np.int32)
    ir = _tileir(joined, (x,))
    capsys.readouterr()
    tile_lab.emulate(joined, (1,), (x,))
    assert capsys.readouterr().out == _printed(ir, 15, 9) == "sum=15, max=9, end\n"


# ---- insert (1.6) ---------------------------------------------------------------------------

@ct.kernel
def patched(x, y):
    t = ct.load(x, (0, 0), (4, 8))
    ct.store(y, (0, 0), ct.insert(t, (1, 1), ct.full((2, 4), -1, ct.int32)))
    ct.store(y, (1, 0), t.insert((0, 3), ct.extract(t, (0, 1), (4, 2)) * 10))


def test_insert():
    x = np.arange(64, dtype=np.int32).reshape(8, 8)
    y = np.zeros((8, 8), np.int32)
    _compiled(patched, (x, y))
    tile_lab.emulate(patched, (1,), (x, y))
    top, bottom = x[:4].copy(), x[:4].copy()
    top[2:4, 4:8] = -1
    bottom[:, 6:8] = x[:4, 2:4] * 10
    np.testing.assert_array_equal(y[:4], top)
    np.testing.assert_array_equal(y[4:], bottom)


# ---- check_bounds= (1.6) ----------------------------------------------------------------

@ct.kernel
def shifted(x, y, CHECK: ct.Constant[bool]):
    t = ct.load(x, (ct.bid(0),), (8,), check_bounds=CHECK)
    ct.store(y, (ct.bid(0),), t + 1, check_bounds=CHECK)


@ct.kernel
def padded_unchecked(x, y):
    t = ct.load(x, (ct.bid(0),), (8,), check_bounds=False, padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (ct.bid(0),), t)


def test_check_bounds():
    x = np.arange(24, dtype=np.float32)
    for check in (True, False):
        y = np.zeros(24, np.float32)
        ir = _tileir(shifted, (x, y, check))
        assert ("inbounds = [true]" in ir) is (not check)  # unchecked: declared in bounds
        tr = tile_lab.trace(shifted, (3,), (x, y, check))
        np.testing.assert_array_equal(y, x + 1)
        assert all(a.unchecked is (not check) for a in tr.accesses)
    # past the end without bounds checks is undefined behaviour: the sanitizer says so
    report = tile_lab.sanitize(shifted, (4,), (x, np.zeros(32, np.float32), False))
    assert report.findings
    # a padding for lanes declared in bounds: tileiras fails, and so does the emulator
    with pytest.raises(CompileError, match="tileiras"):
        _compiled(padded_unchecked, (x, np.zeros(24, np.float32)))
    with pytest.raises(CompileError, match="check_bounds=False and padding_mode=ZERO") as info:
        tile_lab.emulate(padded_unchecked, (3,), (x, np.zeros(24, np.float32)))
    assert info.value.location.line == _line_of(padded_unchecked, "check_bounds=False")


# ---- propagate_nan= (1.6) -----------------------------------------------------------------

@ct.kernel
def extremes(x, out, f, P: ct.Constant[bool]):
    t = ct.load(x, (0, 0), (4, 8))
    u = ct.load(x, (0, 1), (4, 8))
    ct.store(out, (0, 0), ct.max(t, axis=1, keepdims=True, propagate_nan=P))
    ct.store(out, (0, 1), ct.min(t, axis=1, keepdims=True, propagate_nan=P))
    ct.store(out, (0, 2), ct.astype(ct.argmax(t, axis=1, keepdims=True, propagate_nan=P),
                                    ct.float32))
    ct.store(out, (0, 3), ct.astype(ct.argmin(t, axis=1, keepdims=True, propagate_nan=P),
                                    ct.float32))
    ct.store(f, (0, 0), ct.maximum(t, u, propagate_nan=P))
    ct.store(f, (0, 1), ct.minimum(t, u, propagate_nan=P))


def _first_nan_or(values: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    nan = np.isnan(values)
    return np.where(nan.any(1), nan.argmax(1), fallback)


def test_propagate_nan():
    x = np.random.default_rng(7).standard_normal((4, 16)).astype(np.float32)
    x[0, 3], x[1, 0], x[1, 5], x[2, 12] = np.nan, np.nan, np.nan, np.nan  # row 3: none
    t, u = x[:, :8], x[:, 8:]
    for propagate in (False, True):
        out, f = np.zeros((4, 4), np.float32), np.zeros((4, 16), np.float32)
        ir = _tileir(extremes, (x, out, f, propagate))
        assert bool(re.search(r"maxf .* propagate_nan", ir)) is propagate
        tile_lab.emulate(extremes, (1,), (x, out, f, propagate))
        if propagate:  # NaN wins; arg* give the first NaN
            want = [np.max(t, 1), np.min(t, 1), _first_nan_or(t, np.argmax(t, 1)),
                    _first_nan_or(t, np.argmin(t, 1))]
            pair = [np.maximum(t, u), np.minimum(t, u)]
        else:  # NaN ignored (no row is all NaN)
            want = [np.nanmax(t, 1), np.nanmin(t, 1), np.nanargmax(t, 1), np.nanargmin(t, 1)]
            pair = [np.fmax(t, u), np.fmin(t, u)]
        np.testing.assert_array_equal(out, np.stack(want, 1).astype(np.float32))
        np.testing.assert_array_equal(f, np.concatenate(pair, 1))


# ---- ensure_constant (1.6) ----------------------------------------------------------------

@ct.kernel
def folded(x, N: ct.Constant[int]):
    if ct.ensure_constant(N > 2):
        ct.store(x, (0,), ct.full((4,), 1, ct.int32))
    else:
        ct.store(x, (0,), ct.full((4,), 2, ct.int32))


@ct.kernel
def not_constant(x):
    ct.store(x, (0,), ct.full((4,), ct.ensure_constant(ct.bid(0)), ct.int32))


def plain_not_constant(x):
    ct.store(x, (0,), ct.full((4,), ct.ensure_constant(ct.bid(0)), ct.int32))


def test_ensure_constant():
    x = np.zeros(4, np.int32)
    for n, want in ((3, 1), (1, 2)):
        _compiled(folded, (x, n))
        tile_lab.emulate(folded, (1,), (x, n))
        assert x.tolist() == [want] * 4
    with pytest.raises(CompileError, match="not a compile-time constant"):
        _compiled(not_constant, (x,))
    for kernel in (not_constant, plain_not_constant):  # gated by cuTile, and not
        with pytest.raises(ct.TileStaticAssertionError,
                           match="^Static assertion failed: Argument of ensure_constant"
                                 r"\(\) is not a compile-time constant") as info:
            tile_lab.emulate(kernel, (1,), (x,))
        assert info.value.location.line == _line_of(kernel, "ensure_constant(ct.bid")


# ---- break in non-static loops (1.6) ------------------------------------------------------

@ct.kernel
def sum_until_negative(x, out):
    acc = ct.zeros((4,), ct.int32)
    for i in range(x.shape[0] // 4):
        t = ct.load(x, (i,), (4,))
        if ct.min(t) < 0:
            break
        acc = acc + t
    ct.store(out, (0,), acc)


def test_break_in_loop():
    x = np.arange(32, dtype=np.int32)
    out = np.zeros(4, np.int32)
    _compiled(sum_until_negative, (x, out))
    for stop in (9, 0, None):
        xs = x.copy()
        if stop is not None:
            xs[stop] = -1
        tile_lab.emulate(sum_until_negative, (1,), (xs, out))
        blocks = xs.reshape(-1, 4)
        n = len(blocks) if stop is None else stop // 4
        np.testing.assert_array_equal(out, blocks[:n].sum(0))


# ---- @contextlib.contextmanager (1.6) -----------------------------------------------------

@contextlib.contextmanager
def scaled_then_bumped(arr, k):
    t = ct.load(arr, (0,), (4,))
    yield t * k
    ct.store(arr, (0,), t + 1)


@ct.kernel
def with_block(x, y):
    with scaled_then_bumped(x, 3) as t:
        ct.store(y, (0,), t)


def test_contextmanager():
    x, y = np.arange(4, dtype=np.int32), np.zeros(4, np.int32)
    _compiled(with_block, (x, y))
    tile_lab.emulate(with_block, (1,), (x, y))
    np.testing.assert_array_equal(y, np.arange(4) * 3)
    np.testing.assert_array_equal(x, np.arange(4) + 1)


# ---- dataclass dunders (1.6) --------------------------------------------------------------

@dataclass(frozen=True)
class Rows:
    arr: ct.Array
    scale: int

    def __post_init__(self):
        ct.scatter(self.arr, 31, 7)

    def __getitem__(self, i):
        return ct.load(self.arr, (i,), (4,))

    def __setitem__(self, i, t):
        ct.store(self.arr, (i,), t)

    def __call__(self, t):
        return t * self.scale

    def __str__(self):
        return f"Rows(first={ct.sum(self[0])})"

    def __repr__(self):
        return f"Rows<{self.scale}>"


@ct.kernel
def dunders(x):
    rows = Rows(x, 2)
    rows[1] = rows(rows[2])
    ct.print(f"{rows} {repr(rows)}")  # noqa: RUF010 (cuTile refuses !r in kernels)


def test_dataclass_dunders(capsys):
    x = np.arange(32, dtype=np.int32)
    ir = _tileir(dunders, (x.copy(),))
    capsys.readouterr()
    tile_lab.emulate(dunders, (1,), (x,))
    want = np.arange(32)
    want[4:8] = want[8:12] * 2
    want[31] = 7
    np.testing.assert_array_equal(x, want)
    assert capsys.readouterr().out == _printed(ir, 6, 2) == "Rows(first=6) Rows<2>\n"


# ---- rounding modes of packed float32 add/sub (1.6: f32x2) -------------------------------

LANES = 1024  # enough per thread that tileiras packs float32 adds in pairs (FADD2) on sm_100


@ct.kernel
def directed(x, y, out):
    a = ct.load(x, (0,), (LANES,))
    b = ct.load(y, (0,), (LANES,))
    ct.store(out, (0,), ct.add(a, b, rounding_mode=ct.RoundingMode.RZ))
    ct.store(out, (1,), ct.sub(a, b, rounding_mode=ct.RoundingMode.RP, flush_to_zero=True))
    ct.store(out, (2,), ct.add(a, b, rounding_mode=ct.RoundingMode.RM))


def _directed(exact: np.ndarray, mode: str) -> np.ndarray:
    """``exact`` (float64) rounded to float32 toward zero / +inf / -inf."""
    near = exact.astype(np.float32)
    back = near.astype(np.float64)
    goal = {"RZ": np.where(exact > 0, -np.inf, np.inf), "RP": np.inf, "RM": -np.inf}[mode]
    wrong = {"RZ": np.abs(back) > np.abs(exact), "RP": back < exact, "RM": back > exact}[mode]
    return np.where(wrong, np.nextafter(near, np.float32(goal) * np.ones_like(near)), near)


def _close_floats(rng):
    """Operands less than 29 binades apart (float64 holds every sum exactly), and two pairs
    of float32 subnormals (which flush_to_zero flushes)."""
    sign = rng.choice([-1.0, 1.0], (2, LANES))
    x = (sign[0] * rng.uniform(0.5, 50, LANES)).astype(np.float32)
    y = (sign[1] * rng.uniform(1e-4, 1e-3, LANES)).astype(np.float32)
    x[:2], y[:2] = [5e-39, 3e-39], [1e-39, -2e-39]
    return x, y, np.zeros(3 * LANES, np.float32)


def _directed_reference(a):
    x64, y64 = a[0].astype(np.float64), a[1].astype(np.float64)
    assert ((x64 + y64) - x64 == y64).all() and ((x64 - y64) - x64 == -y64).all()
    tiny = np.finfo(np.float32).tiny
    xf, yf = (np.where(np.abs(v) < tiny, 0.0, v) for v in (x64, y64))
    return {2: np.concatenate([_directed(x64 + y64, "RZ"), _directed(xf - yf, "RP"),
                               _directed(x64 + y64, "RM")])}


def test_rounding_modes_of_packed_float32_add_and_sub():
    x, y, out = _close_floats(np.random.default_rng(3))
    sass = _compiled(directed, (x, y, out)).sass
    # the GPU adds pairs of lanes in one instruction, rounding as asked
    for op in (r"FADD2\.RZ ", r"FADD2\.(FTZ\.RP|RP\.FTZ) ", r"FADD2\.RM "):
        assert re.search(op, sass), op
    want = _directed_reference((x, y))[2]
    for gated in (True, False):  # cuTile's front end is not what makes these pass
        out[:] = 0
        with contextlib.nullcontext() if gated else gate.disabled():
            tile_lab.emulate(directed, (1,), (x, y, out))
        np.testing.assert_array_equal(out, want)
    nearest = np.concatenate([x + y, x - np.where(np.abs(y) < 1.2e-38, 0, y), x + y])
    assert (out != nearest).sum() > LANES  # the modes changed many results


# ---- the same kernels against a GPU ---------------------------------------------------------
# Run here against NumPy; with a GPU (pytest -m gpu) the GPU's result against the emulator's,
# including what the emulator chooses where the documentation is silent (rows all NaN).

def _nan_rows(rng) -> np.ndarray:
    x = rng.standard_normal((4, 16)).astype(np.float32)
    x[0, 3], x[1, 0], x[1, 5] = np.nan, np.nan, np.nan
    x[2, :8] = np.nan  # a row of t entirely NaN
    x[3, [1, 6]] = [-0.0, 0.0]
    return x


def _extremes_reference(propagate: bool):
    def reference(a):
        t, u = a[0][:, :8], a[0][:, 8:]
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # nanmax of an all-NaN row
            if propagate:
                cols = [np.max(t, 1), np.min(t, 1), _first_nan_or(t, np.argmax(t, 1)),
                        _first_nan_or(t, np.argmin(t, 1))]
                pair = [np.maximum(t, u), np.minimum(t, u)]
            else:  # an all-NaN row: NaN, and index 0 (the emulator's choice)
                clean = np.where(np.isnan(t), -np.inf, t), np.where(np.isnan(t), np.inf, t)
                cols = [np.nanmax(t, 1), np.nanmin(t, 1), clean[0].argmax(1),
                        clean[1].argmin(1)]
                pair = [np.fmax(t, u), np.fmin(t, u)]
        return {1: np.stack(cols, 1).astype(np.float32), 2: np.concatenate(pair, 1)}
    return reference


def _int_pairs(rng):
    x = rng.integers(-50, 50, 8).astype(np.int32)
    y = rng.integers(1, 9, 8).astype(np.int32) * rng.choice([-1, 1], 8).astype(np.int32)
    return x, y, np.zeros(8, np.int32), np.zeros(8, np.int32)


PARITY = [
    Case("divmod", divmods, (1,), _int_pairs,
         lambda a: {2: np.floor_divide(a[0], a[1]),
                    3: np.mod(a[0], a[1]) * 100 + np.mod(a[0], 3)}),
    *(Case(f"propagate_nan={p}", extremes, (1,),
           lambda rng, p=p: (_nan_rows(rng), np.zeros((4, 4), np.float32),
                             np.zeros((4, 16), np.float32), p),
           _extremes_reference(p), rtol=0, atol=0, gpu_rtol=0, gpu_atol=0)
      for p in (False, True)),
    Case("rounding_mode", directed, (1,), _close_floats, _directed_reference, rtol=0,
         atol=0, gpu_rtol=0, gpu_atol=0),
    Case("from_foreign", transposed_copy, (2,),
         lambda rng: (rng.standard_normal((8, 8)).astype(np.float32),
                      np.zeros((8, 8), np.float32)),
         lambda a: {1: a[0].T.copy()}, rtol=0, atol=0),
    Case("check_bounds=False", shifted, (3,),
         lambda rng: (rng.standard_normal(24).astype(np.float32), np.zeros(24, np.float32),
                      False),
         lambda a: {1: a[0] + np.float32(1)}, rtol=0, atol=0),
    Case("insert", patched, (1,),
         lambda rng: (rng.integers(0, 99, (8, 8)).astype(np.int32), np.zeros((8, 8), np.int32)),
         lambda a: {1: np.concatenate([np.where(np.pad(np.ones((2, 4), bool), ((2, 0), (4, 0))),
                                                -1, a[0][:4]),
                                       np.concatenate([a[0][:4, :6], a[0][:4, 2:4] * 10], 1)
                                       ]).astype(np.int32)}),
    Case("break", sum_until_negative, (1,),
         lambda rng: (np.where(np.arange(32) == 21, -1, rng.integers(0, 9, 32)).astype(np.int32),
                      np.zeros(4, np.int32)),
         lambda a: {1: a[0].reshape(-1, 4)[:5].sum(0).astype(np.int32)}),
    Case("return in loops", early_returns, (1,),
         lambda rng: (np.arange(32, dtype=np.int32), np.zeros(2, np.int32), 20),
         lambda a: {1: np.array([5, 1], np.int32)}),  # max 23 > 20 in block 5, sum 22 in 1
    Case("contextmanager", with_block, (1,),
         lambda rng: (rng.integers(-9, 9, 4).astype(np.int32), np.zeros(4, np.int32)),
         lambda a: {0: a[0] + 1, 1: a[0] * 3}),
]


@pytest.mark.parametrize("case", PARITY, ids=str)
def test_matches_numpy_and_the_gpu(case, check_case):
    check_case(case)
