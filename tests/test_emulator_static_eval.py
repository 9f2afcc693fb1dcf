"""What cuTile settles at compile time, the emulator settles the same way: constants that
cuTile's front end folds (tuple items annotated ``ct.Constant``, arithmetic on constants),
``static_assert`` on them, dtype constructors (``ct.float32()``, ``torch.float32(x)``),
shape ``()`` in ``extract``/``num_tiles``, ``ct.cat`` of one tile, and methods of user
dataclasses (``__post_init__``, ``__setitem__``, ``@contextmanager`` methods), which cuTile
inlines and the emulator rebuilds so no cuTile device stub is ever called."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.errors import EmulationError

# ---- constants cuTile folds --------------------------------------------------------------

@ct.kernel
def width_from_tuple(src, dst, cfg: tuple[int, ct.Constant[int]]):
    t = ct.load(src, index=(0,), shape=(cfg[1],))  # a shape: must be a compile-time constant
    ct.store(dst, index=(0,), tile=t * cfg[0])


@ct.kernel
def width_from_variadic(src, dst, widths: tuple[ct.Constant[int], ...]):
    t = ct.load(src, index=(0,), shape=(widths[0],))
    ct.store(dst, index=(0,), tile=t + widths[1])


def test_constant_items_of_tuple_parameters_are_compile_time_values():
    src = np.arange(8, dtype=np.int32)
    dst = np.zeros(8, np.int32)
    tile_lab.emulate(width_from_tuple, (1,), (src, dst, (3, 8)))
    assert (dst == src * 3).all()
    dst[:] = 0
    tile_lab.emulate(width_from_variadic, (1,), (src, dst, (4, 10)))
    assert (dst[:4] == src[:4] + 10).all() and (dst[4:] == 0).all()


@ct.kernel
def folded_sum(dst, n: ct.Constant[int]):
    total = n + ct.int16(3)  # a strictly typed int16 constant to cuTile
    ct.static_assert(total == 8)
    ct.scatter(dst, ct.arange(4, dtype=ct.int32), ct.arange(4, dtype=ct.int8) + total)


def test_static_assert_on_a_folded_constant():
    dst = np.zeros(4, np.int32)
    tile_lab.emulate(folded_sum, (1,), (dst, 5))
    assert dst.tolist() == [8, 9, 10, 11]


def test_folded_static_assert_that_fails_is_cuTiles_error():
    with pytest.raises(ct.TileStaticAssertionError, match="Static assertion failed"):
        tile_lab.emulate(folded_sum, (1,), (np.zeros(4, np.int32), 6))


def test_tiles_are_still_refused_as_shapes_without_cuTiles_verdict():
    """Outside the gate (a plain function) the emulator's own check stays strict."""
    def plain(src, dst, cfg):
        t = ct.load(src, index=(0,), shape=(cfg[1],))
        ct.store(dst, index=(0,), tile=t)

    with pytest.raises(EmulationError, match="compile-time constant int, got Tile"):
        tile_lab.emulate(plain, (1,), (np.zeros(8, np.int32), np.zeros(8, np.int32), (1, 8)))


# ---- dtype constructors --------------------------------------------------------------------

@ct.kernel
def zero_fill(dst, N: ct.Constant[int]):
    ct.store(dst, index=(0,), tile=ct.full((N,), ct.float16(), ct.float16))


def test_a_dtype_called_without_a_value_is_zero():
    dst = np.ones(16, np.float16)
    tile_lab.emulate(zero_fill, (1,), (dst, 16))
    assert (dst == 0).all()


def test_torch_dtypes_construct_values_in_kernels():
    torch = pytest.importorskip("torch")

    @ct.kernel
    def half_fill(dst, N: ct.Constant[int]):
        ct.store(dst, index=(0,), tile=ct.full((N,), torch.float32(0.5), torch.float32))

    dst = np.zeros(16, np.float32)
    tile_lab.emulate(half_fill, (1,), (dst, 16))
    assert (dst == 0.5).all()


# ---- shape () and one-tile cat ------------------------------------------------------------

@ct.kernel
def middle_plus_one(src, dst, N: ct.Constant[int]):
    t = ct.load(src, index=(0,), shape=(N,))
    mid = ct.extract(t, index=(N // 2,), shape=())  # a 0-d tile
    t = ct.insert(t, N // 2, mid + 1)
    ct.store(dst, index=(0,), tile=ct.cat((t,), 0))  # one tile: cat is the tile itself


def test_extract_with_empty_shape_and_cat_of_one_tile():
    src = np.arange(16, dtype=np.float32)
    dst = np.zeros(16, np.float32)
    tile_lab.emulate(middle_plus_one, (1,), (src, dst, 16))
    want = src.copy()
    want[8] += 1
    assert (dst == want).all()


@ct.kernel
def uneven_cat(src, dst):
    a = ct.load(src, index=(0,), shape=(4,))
    b = ct.load(src, index=(0,), shape=(12,))  # 4 + 12 = 16 lanes, a power of two
    ct.store(dst, index=(0,), tile=ct.cat((b, a), 0))


def test_cat_of_tiles_differing_along_the_axis():
    src = np.arange(16, dtype=np.int32)
    dst = np.zeros(16, np.int32)
    with pytest.raises(ct.TileTypeError):  # 12 is not a power of two: cuTile refuses
        tile_lab.emulate(uneven_cat, (1,), (src, dst))


@ct.kernel
def tiles_per_row(x):
    ct.store(x, 0, tile=ct.num_tiles(x, axis=0, shape=()))


def test_num_tiles_with_empty_shape_counts_single_elements():
    x = np.zeros(7, np.int32)
    tile_lab.emulate(tiles_per_row, (1,), (x,))
    assert x[0] == 7


# ---- dataclass methods run emulated ---------------------------------------------------------

@dataclass(frozen=True)
class Scaled:
    target: ct.Array
    factor: int

    def __setitem__(self, i, value):
        ct.scatter(self.target, i, value * self.factor)

    @contextlib.contextmanager
    def bracket(self, first, last):
        ct.scatter(self.target, 0, first)
        yield first
        ct.scatter(self.target, 3, last)


@dataclass(frozen=True)
class Marked:
    target: ct.Array
    mark: int

    def __post_init__(self):
        ct.scatter(self.target, 2, self.mark)


@ct.kernel
def use_methods(x):
    s = Scaled(x, 10)
    s[1] = 4
    Marked(x, 7)
    with s.bracket(5, 9) as v:
        ct.static_assert(v == 5)


def test_dataclass_methods_run_emulated():
    x = np.zeros(4, np.int32)
    tile_lab.emulate(use_methods, (1,), (x,))
    assert x.tolist() == [5, 40, 7, 9]
    assert type(Scaled(x, 1)) is Scaled  # the user's class itself is untouched
