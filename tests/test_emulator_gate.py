"""The front-end gate: kernels cuTile's compiler rejects fail under the emulator too, with
cuTile's message at the kernel line; each (kernel, signature) is typed once."""

from __future__ import annotations

import collections
import inspect
import math
import pickle
import re
import textwrap

import cuda.tile as ct
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

import tile_lab
from tile_lab import _cutile_compat as compat
from tile_lab.compile.signature import build_signature
from tile_lab.emulator import gate
from tile_lab.errors import CompileError


@ct.kernel
def negative_step(x, y):
    t = ct.load(x, index=(0,), shape=(8,))
    for _ in range(4, 0, -1):
        t = t + 1
    ct.store(y, index=(0,), tile=t)


@ct.kernel
def dtype_by_path(x, y, flag: int):
    if flag > 0:  # noqa: SIM108 (the if/else statement is what cuTile rejects)
        t = ct.load(x, index=(0,), shape=(8,))
    else:
        t = ct.zeros((8,), ct.int32)
    ct.store(y, index=(0,), tile=t)


@ct.kernel
def list_of_tiles(x, y):
    ts = [ct.load(x, index=(0,), shape=(8,)), ct.zeros((8,), ct.float32)]
    ct.store(y, index=(0,), tile=ts[0])


@ct.kernel
def fine(x, y):
    ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(8,)) + 1)


def _line(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel._pyfunc)
    return next(first + i for i, t in enumerate(lines) if text in t)


REJECTED = [
    (negative_step, (), "Step must be positive", "range(4, 0, -1)"),
    (dtype_by_path, (1,), "Type of `t` depends on path taken", "t = ct.zeros"),
    (list_of_tiles, (), "Unsupported syntax", "ts = ["),
]


@pytest.mark.parametrize("kernel, extra, message, at", REJECTED,
                         ids=["negative_step", "dtype_by_path", "list_of_tiles"])
def test_rejected_kernels_fail_with_cuTiles_message_at_the_line(kernel, extra, message, at):
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(CompileError, match=message) as info:
        tile_lab.emulate(kernel, (1,), (x, y, *extra))
    assert info.value.location.line == _line(kernel, at)
    assert "compiler rejects this kernel" in info.value.hint
    assert (y == 0).all()  # nothing ran
    with gate.disabled():  # the emulator alone would have run it
        tile_lab.emulate(kernel, (1,), (x, y, *extra))
    assert (y != 0).any()


def test_each_signature_is_typed_once(monkeypatch):
    monkeypatch.setenv("TILE_LAB_FRONTEND_CACHE", "off")  # this process's memory alone
    calls = []
    real = compat.check_frontend
    monkeypatch.setattr(compat, "check_frontend", lambda k, s: (calls.append(k), real(k, s)))
    gate.clear_cache()
    x = np.ones(8, np.float32)
    for _ in range(3):
        tile_lab.emulate(fine, (1,), (x, np.zeros(8, np.float32)))
    assert len(calls) == 1
    tile_lab.emulate(fine, (1,), (np.ones(8, np.float16), np.zeros(8, np.float16)))
    assert len(calls) == 2  # a new dtype is a new signature


def test_plain_functions_are_not_gated(monkeypatch):
    monkeypatch.setattr(compat, "check_frontend", lambda k, s: pytest.fail("gated"))
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    tile_lab.emulate(fine._pyfunc, (1,), (x, y))
    assert (y == 2).all()


def test_emulate_cell_fails_at_the_cell_line(capsys):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tile_lab")
    shell.user_ns["gx"], shell.user_ns["gy"] = np.ones(8, np.float32), np.zeros(8, np.float32)
    cell = textwrap.dedent('''\
        %%tile --emulate --grid 1 --args "gx, gy"
        import cuda.tile as ct

        @ct.kernel
        def down(x, y):
            t = ct.load(x, index=(0,), shape=(8,))
            for _ in range(4, 0, -1):
                t = t + 1
            ct.store(y, index=(0,), tile=t)
        ''')
    capsys.readouterr()
    result = shell.run_cell(cell)
    out = capsys.readouterr().out
    assert not result.success and isinstance(result.error_in_exec, CompileError)
    err = result.error_in_exec
    assert err.location.filename.startswith("Cell In[") and err.location.line == 7
    assert "Step must be positive" in out and "for _ in range(4, 0, -1):" in out
    assert (shell.user_ns["gy"] == 0).all()


def test_torch_cpu_tensors_are_gated_too():
    torch = pytest.importorskip("torch")
    x, y = torch.ones(8), torch.zeros(8)
    with pytest.raises(CompileError, match="Step must be positive"):
        tile_lab.emulate(negative_step, (1,), (x, y))
    assert (y == 0).all()


# ---- cuTile's own exceptions: code written against native cuTile catches them unchanged ----

@ct.kernel
def bits_of_floats(x):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(x, index=(0,), tile=t | t)


@ct.kernel
def host_math(x):
    t = ct.load(x, index=(0,), shape=(8,))
    ct.store(x, index=(0,), tile=t + math.floor(2.5))


@ct.kernel
def load_at_compile_time(x):
    t = ct.static_eval(ct.load(x, index=(0,), shape=(8,)))
    ct.store(x, index=(0,), tile=t)


@ct.kernel
def eight_wide(x, n: ct.Constant[int]):
    ct.static_assert(n == 8, "eight lanes expected")
    ct.store(x, index=(0,), tile=ct.load(x, index=(0,), shape=(n,)))


NATIVE_CLASSES = [
    (bits_of_floats, (), ct.TileTypeError, "Bitwise operations require integers"),
    (host_math, (), ct.TileError, "floor\\(\\) is not supported in device code"),
    (load_at_compile_time, (), ct.TileStaticEvalError, "cannot be called inside static_eval"),
    (eight_wide, (16,), ct.TileStaticAssertionError,
     "Static assertion failed: eight lanes expected"),
]


@pytest.mark.parametrize("kernel, extra, cls, message", NATIVE_CLASSES,
                         ids=["type", "host_call", "static_eval", "static_assert"])
def test_rejections_raise_cuTiles_class_and_message(kernel, extra, cls, message):
    x = np.arange(16, dtype=np.float32)
    with pytest.raises(cls, match=message) as info:
        tile_lab.emulate(kernel, (1,), (x, *extra))
    err = info.value
    assert isinstance(err, CompileError)  # and still tile_lab's error
    assert (x == np.arange(16)).all()  # nothing ran
    # str() is exactly what cuTile's own front end says for this signature
    signature = build_signature(kernel, [x, *extra]).kernel_signature
    with pytest.raises(cls) as native:
        compat.check_frontend(kernel, signature)
    assert str(err) == str(native.value)
    assert err.message == compat.tile_error_message(native.value)


def test_host_calls_are_cuTiles_UnsupportedCallError():
    from cuda.tile._exception import UnsupportedCallError  # the class ct.launch raises

    with pytest.raises(UnsupportedCallError, match=r"floor\(\) is not supported"):
        tile_lab.emulate(host_math, (1,), (np.zeros(8, np.float32),))


def test_rejection_keeps_tile_labs_caret_rendering():
    with pytest.raises(ct.TileTypeError) as info:
        tile_lab.emulate(bits_of_floats, (1,), (np.zeros(8, np.float32),))
    shown = info.value.render()
    assert shown.startswith("CompileError: cuTile type error: Bitwise operations")
    line = _line(bits_of_floats, "t | t")
    assert f"line {line}" in shown and "tile=t | t)" in shown
    assert "\n       |" in shown and "^" in shown.splitlines()[3]
    assert "compiler rejects this kernel" in shown
    assert info.value._render_traceback_() == shown.splitlines()


def test_rejection_survives_pickling():
    with pytest.raises(ct.TileTypeError) as info:
        tile_lab.emulate(bits_of_floats, (1,), (np.zeros(8, np.float32),))
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is type(info.value)
    assert isinstance(back, ct.TileTypeError) and isinstance(back, CompileError)
    assert str(back) == str(info.value) and back.render() == info.value.render()


def test_launch_under_emulation_raises_cuTiles_class():
    x = np.zeros(8, np.float32)
    with tile_lab.emulation(), pytest.raises(ct.TileTypeError, match="Bitwise operations"):
        ct.launch(None, (1,), bits_of_floats, (x,))


# ---- ct.launch's own argument checks, before any compile ----------------------------------

@ct.kernel
def pair_sum(out, pair: tuple[int, ct.Constant[int]]):
    ct.scatter(out, (0,), pair[0] + pair[1])


@ct.kernel
def anything(out, extra):
    ct.scatter(out, (0,), 1)


@ct.kernel
def folded(out, cfg: ct.Constant[tuple]):
    ct.scatter(out, (0,), cfg[0])


@ct.kernel
def wide_constant(out, n: ct.Constant[ct.ScalarInt64]):
    ct.scatter(out, (0,), n)


Point = collections.namedtuple("Point", "x y")

LAUNCH_CHECKS = [
    (pair_sum, ((1, 2, 3),), "Received a tuple of length 3 for a parameter annotated as a "
                             "tuple of length 2"),
    (pair_sum, ((1,),), "Received a tuple of length 1 for a parameter annotated as a tuple "
                        "of length 2"),
    (pair_sum, (5,), "Received a non-tuple argument for a parameter annotated as a tuple"),
    (pair_sum, (), "Kernel expects 2 arguments but 1 was given"),
    (anything, (Point(1, 2),), "Invalid kernel argument #1: 'Point' is a subclass of "
                               "'tuple'. Only plain tuples are accepted."),
    (folded, ((np.zeros(2), 1),), "Invalid item #0 of kernel argument #1: Could not "
                                  "interpret object of type 'numpy.ndarray' as a constant."),
    (wide_constant, (3,), "Constant annotation cannot be combined with "
                          "ScalarAnnotation/ScalarInt64"),
]


@pytest.mark.parametrize("kernel, extra, message", LAUNCH_CHECKS,
                         ids=["tuple_too_long", "tuple_too_short", "not_a_tuple", "too_few",
                              "namedtuple", "array_as_constant", "constant_and_int64"])
def test_launch_argument_checks_raise_cuTiles_TypeError(kernel, extra, message):
    out = np.zeros(1, np.int32)
    with pytest.raises(TypeError, match=re.escape(message)):
        tile_lab.emulate(kernel, (1,), (out, *extra))
    assert out[0] == 0


def test_right_arguments_pass_the_launch_checks():
    out = np.zeros(1, np.int32)
    tile_lab.emulate(pair_sum, (1,), (out, (4, 5)))
    assert out[0] == 9


def test_an_argument_cutiles_launcher_refuses_is_its_value_error():
    """An axis annotated static beyond the array's rank: ct.launch raises a ValueError with
    cuTile's wording before compiling; the emulator raises the same class, not the front
    end's parameter error."""
    from typing import Annotated

    def copy(x, y):
        ct.store(y, (0, 0), ct.load(x, (0, 0), (4, 4)))

    copy.__annotations__ = {"x": Annotated[ct.Array, ct.ArrayAnnotation(static_shape_dims=(3,))]}
    x = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match="static_shape_dims contains axis 3 but array rank is 2"):
        tile_lab.emulate(ct.kernel(copy), (1,), (x, np.zeros_like(x)))


@ct.kernel
def fp8_product(a, b, c):
    acc = ct.mma(ct.load(a, (0, 0), (16, 16)), ct.load(b, (0, 0), (16, 16)),
                 ct.zeros((16, 16), ct.float32))
    ct.store(c, (0, 0), acc)


def test_a_replaced_kernel_compile_decides_as_it_would_for_ct_launch(monkeypatch):
    """Something that replaces ``ct.kernel._compile`` (here: to compile for sm_80) is what
    ct.launch would run, so the gate runs it on every launch: float8 on sm_80 is refused
    with cuTile's own error, though the same kernel passed for the emulated sm_90."""
    import ml_dtypes
    from cuda.tile._exception import TileUnsupportedFeatureError

    from tile_lab._cutile_compat.device import emulated_device_queries

    a = np.ones((16, 16), ml_dtypes.float8_e4m3fn)
    c = np.zeros((16, 16), np.float32)
    calls = []
    cutiles_compile = ct.kernel._compile

    def compile_for_sm80(self, signature, context, compute_capability):
        calls.append(compute_capability)
        return cutiles_compile(self, signature, context, (8, 0))

    gate.clear_cache()
    with emulated_device_queries((9, 0)):
        tile_lab.emulate(fp8_product, (1,), (a, a, c))
        np.testing.assert_array_equal(c, np.full((16, 16), 16, np.float32))
        monkeypatch.setattr(ct.kernel, "_compile", compile_for_sm80)
        for _ in range(2):  # refused each time: a replaced compile is not remembered
            with pytest.raises(TileUnsupportedFeatureError, match="not supported on sm_80"):
                tile_lab.emulate(fp8_product, (1,), (a, a, c))
    assert calls == [(9, 0), (9, 0)]  # what cuTile's device query answers
