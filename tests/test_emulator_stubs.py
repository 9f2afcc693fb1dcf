"""cuTile's device functions never reach cuTile's host-side stub under emulation: each one is
emulated or refused with a tile_lab error naming it, however the kernel reaches it."""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.emulator import stubs
from tile_lab.errors import EmulatorUnsupported

# what the emulator refuses on purpose: nothing of cuda.tile 1.7 (foreign pointers are
# emulated over the argument's memory; foreign calls come from cuda.tile_preview)
REFUSED: set[str] = set()


def _device_functions_seen_from_outside() -> dict[str, object]:
    """Every device function a kernel can name: ``ct.<name>`` and the methods/properties of
    the classes a kernel gets objects of (found here without tile_lab's own enumeration)."""
    found = {}
    for name in dir(ct):
        obj = getattr(ct, name)
        if getattr(obj, "_cutile_function_wrapper", False):
            found[name] = obj
    import cuda.tile._stub as stub_module  # where cuTile defines the classes it documents
    raw = str(inspect.signature(ct.Array.get_raw_memory).return_annotation).strip("'\"")
    classes = [ct.Array, ct.Tile, ct.TiledView, ct.Slice, getattr(stub_module, raw)]
    for cls in classes:
        for attr, value in vars(cls).items():
            fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if getattr(fn, "_cutile_function_wrapper", False):
                found[f"{cls.__name__}.{attr}"] = fn
    return found


def test_every_cutile_device_function_is_emulated_or_refused_by_name():
    coverage = stubs.coverage()
    expected = _device_functions_seen_from_outside()
    missing = sorted(set(expected) - set(coverage))
    assert not missing, f"device functions the emulator does not know about: {missing}"
    assert len(coverage) >= 150  # cuTile 1.7 has 162
    refused = {name for name, verdict in coverage.items() if verdict != "emulated"}
    assert refused == REFUSED
    for name in refused:
        assert f"ct.{name}" in coverage[name]


def test_a_stub_without_an_emulation_is_refused_naming_it():
    def fake_stub():
        pass
    fake_stub.__qualname__ = "TiledView.no_such_op"
    fake_stub.__module__ = "cuda.tile._stub"
    with pytest.raises(EmulatorUnsupported, match=r"ct\.TiledView\.no_such_op"):
        stubs.resolve(fake_stub)


BY_CODE = {0: ct.atomic_or, 1: ct.atomic_and, 2: ct.atomic_xor}


@ct.kernel
def atomic_from_table(x, upd, CODE: ct.Constant[int]):
    op = ct.static_eval(BY_CODE[CODE])  # the real cuTile stub, picked at compile time
    lane = ct.arange(4, dtype=ct.int32)
    op(x, lane, ct.load(upd, (0,), (4,)))


@pytest.mark.parametrize("code, ref", [(0, np.bitwise_or), (1, np.bitwise_and),
                                       (2, np.bitwise_xor)])
def test_stub_held_in_a_dict_runs_emulated(code, ref):
    x = np.array([1, 2, 12, 7], np.int32)
    upd = np.array([6, 3, 10, 1], np.int32)
    want = ref(x, upd)
    tile_lab.emulate(atomic_from_table, (1,), (x, upd, code))
    np.testing.assert_array_equal(x, want)


@dataclass(frozen=True)
class Scaled:
    target: ct.Array

    def __setitem__(self, i, v):  # a user class's method: its globals see the real ct
        ct.scatter(self.target, i, v * 3)

    @contextlib.contextmanager
    def bracket(self, first, last):
        ct.scatter(self.target, 0, first)
        yield
        ct.scatter(self.target, 3, last)


@ct.kernel
def through_methods(x):
    s = Scaled(x)
    with s.bracket(4, 9):
        s[1] = 5
        tv = x.tiled_view((2,))
        ct.TiledView.store(tv, 1, ct.TiledView.load(tv, 1) + 1)  # unbound method form


def test_methods_of_user_classes_and_unbound_stub_methods_run_emulated():
    x = np.zeros(4, np.int32)
    tile_lab.emulate(through_methods, (1,), (x,))
    np.testing.assert_array_equal(x, [4, 15, 1, 9])


@ct.kernel
def uses_foreign_pointer(x):
    p = x.foreign_pointer
    v = ct.Array.from_foreign(p, (x.shape[0] * 2,), x.strides)  # twice the argument
    ct.store(x, (0,), ct.load(v, (0,), (4,)))


def test_refused_ops_name_themselves():
    with pytest.raises(EmulatorUnsupported, match=r"Array\.from_foreign"):
        tile_lab.emulate(uses_foreign_pointer, (1,), (np.zeros(4, np.float32),))
