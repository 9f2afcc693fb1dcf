"""The access trace recorded by ``tile_lab.trace`` and its query API."""

from __future__ import annotations

import inspect

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab._cutile_compat import python_function
from tile_lab.tracing.trace import MemoryAccess, Trace


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    x = ct.load(a, (i,), (TILE,))
    y = ct.load(b, (i,), (TILE,))
    ct.store(c, (i,), x + y)


@ct.kernel
def gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (ct.bid(0), ct.bid(1)), acc)


@ct.kernel
def gathers(x, y, limit, TILE: ct.Constant[int]):
    idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    v = ct.gather(x, idx, mask=idx < limit)
    ct.scatter(y, idx, v, check_bounds=False)


@ct.kernel
def sliced_and_transposed(x, out):
    sub = x.slice(axis=0, start=2, stop=6)
    ct.store(out, (0, 0), ct.load(sub, (1, 0), (2, 4), order="F"))


def _line(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(python_function(kernel))
    return first + next(i for i, line in enumerate(lines) if text in line)


def _vadd_trace(n=1000, tile=256):
    a, b = np.ones(n, np.float32), np.ones(n, np.float32)
    return tile_lab.trace(vadd, (4,), (a, b, np.zeros(n, np.float32), tile))


def test_trace_records_every_tile_access_with_its_line():
    tr = _vadd_trace()
    assert isinstance(tr, Trace) and tr.kernel == "vadd" and tr.grid == (4, 1, 1)
    assert [(a.name, a.shape, a.dtype) for a in tr.arrays] == [
        ("a", (1000,), "float32"), ("b", (1000,), "float32"), ("c", (1000,), "float32")]
    assert len(tr) == 12
    first = tr.accesses[0]
    assert (first.block, first.kind, first.op, first.arg) == ((0, 0, 0), "load", "load", "a")
    assert first.line == _line(vadd, "ct.load(a")
    assert first.filename == python_function(vadd).__code__.co_filename
    assert (first.tile_index, first.tile_shape, first.box_start, first.box_stop) == \
        ((0,), (256,), (0,), (256,))
    assert tr.lines() == [_line(vadd, "ct.load(a"), _line(vadd, "ct.load(b"),
                          _line(vadd, "ct.store(c")]
    assert [a.seq for a in tr] == list(range(12))
    assert tr.scalars == {"TILE": 256}
    assert "def vadd" in tr.source and tr.first_line == _line(vadd, "@ct.kernel")


def test_ragged_tail_counts_lanes_outside_the_array():
    tr = _vadd_trace()
    last_store = tr.select(block=(3,), kind="store")[0]
    assert last_store.box_stop == (1024,)
    assert last_store.element_count((1000,)) == 232
    assert last_store.outside_count((1000,)) == 24
    np.testing.assert_array_equal(tr.coverage("c"), np.ones(1000, np.int32))


def test_loop_iterations_and_footprints():
    A = np.ones((64, 48), np.float16)
    B = np.ones((48, 32), np.float16)
    tr = tile_lab.trace(gemm, (4, 2), (A, B, np.zeros((64, 32), np.float32), 16, 16, 16))
    loads = tr.select(block=(1, 1), arg="A")
    assert [a.iteration for a in loads] == [0, 1, 2]
    assert [a.box_start for a in loads] == [(16, 0), (16, 16), (16, 32)]
    assert tr.max_iteration() == 2
    fp = tr.footprint((1, 1), "C")
    assert fp.sum() == 256 and fp[16:32, 16:32].all()
    readers = tr.readers("A", (20, 40))
    assert {a.block for a in readers} == {(1, 0, 0), (1, 1, 0)}
    writers = tr.writers("C", (63, 31))
    assert [w.block for w in writers] == [(3, 1, 0)]
    assert tr.tile_shapes("A") == [(16, 16)]


def test_gather_records_flat_indices_masks_and_unchecked():
    x = np.arange(40, dtype=np.float32)
    y = np.zeros(40, np.float32)
    tr = tile_lab.trace(gathers, (3,), (x, y, 36, 16))
    g = tr.select(block=(2,), kind="gather")[0]
    # block 2 covers 32..47: lanes >= 36 are masked off, none in range is out of bounds
    np.testing.assert_array_equal(g.flat_indices, np.arange(32, 36))
    assert (g.masked_off, g.out_of_bounds, g.unchecked) == (12, 0, False)
    s = tr.select(block=(2,), kind="scatter")[0]
    np.testing.assert_array_equal(s.flat_indices, np.arange(32, 40))
    assert (s.out_of_bounds, s.unchecked) == (8, True)


def test_sliced_and_transposed_accesses_use_argument_coordinates():
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    out = np.zeros((2, 4), np.float32)
    tr = tile_lab.trace(sliced_and_transposed, (1,), (x, out))
    # order="F" tiles the transposed slice x[2:6].T; tile (1, 0) of shape (2, 4) is
    # columns 2..4 of rows 0..4 of the slice, i.e. rows 2..6 and columns 2..4 of x
    np.testing.assert_array_equal(out, x[2:6, 2:4].T)
    load = tr.select(arg="x")[0]
    assert (load.box_start, load.box_stop) == ((2, 2), (6, 4))
    assert load.tile_index == (1, 0) and load.tile_shape == (2, 4)
    assert tr.footprint((0,), "x").sum() == 8


def test_atomics_record_their_elements():
    @ct.kernel
    def bump(counter):
        ct.atomic_add(counter, 0, 1)

    tr = tile_lab.trace(bump, (3,), (np.zeros(2, np.int32),))
    assert [(a.kind, a.op, a.block) for a in tr] == [
        ("atomic", "atomic_add", (b, 0, 0)) for b in range(3)]
    assert all(a.is_read and a.is_write for a in tr)
    np.testing.assert_array_equal(tr.coverage("counter"), [3, 0])
    # "read" / "write" select by direction (the checker's blame asks for writes)
    assert len(tr.select(kind="write")) == len(tr.select(kind="read")) == 3
    assert tr.select(kind="store") == []


def test_json_round_trip_keeps_every_field():
    x = np.arange(40, dtype=np.float32)
    tr = tile_lab.trace(gathers, (3,), (x, np.zeros(40, np.float32), 36, 16))
    back = Trace.from_json(tr.to_json())
    assert back.kernel == tr.kernel and back.grid == tr.grid and back.arrays == tr.arrays
    assert len(back) == len(tr)
    for a, b in zip(tr, back):
        assert a.to_json() == b.to_json()


def test_emulate_records_nothing_and_trace_matches_emulate_results():
    a, b = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    c1, c2 = np.zeros(8, np.float32), np.zeros(8, np.float32)
    assert tile_lab.emulate(vadd, (2,), (a, b, c1, 4)) is None
    tile_lab.trace(vadd, (2,), (a, b, c2, 4))
    np.testing.assert_array_equal(c1, c2)


def test_select_rejects_unknown_argument_names():
    tr = _vadd_trace()
    with pytest.raises(KeyError, match="the kernel's arrays are: a, b, c"):
        tr.select(arg="d")


def test_memory_access_is_plain_data():
    acc = _vadd_trace().accesses[0]
    assert isinstance(acc, MemoryAccess)
    assert MemoryAccess.from_json(acc.to_json()).to_json() == acc.to_json()


@ct.kernel
def overlapping(x, TILE: ct.Constant[int]):
    # every block writes tiles 0 and 1, tile 1 twice; scatter hits element 0 twice
    ct.store(x, (0,), ct.zeros((TILE,), dtype=ct.float32))
    ct.store(x, (1,), ct.zeros((TILE,), dtype=ct.float32))
    ct.store(x, (1,), ct.zeros((TILE,), dtype=ct.float32))
    ct.scatter(x, ct.zeros((TILE,), dtype=ct.int32), 1.0)


def test_coverage_counts_distinct_blocks_per_element():
    tr = tile_lab.trace(overlapping, (3,), (np.zeros(12, np.float32), 4))
    np.testing.assert_array_equal(tr.coverage("x"), [3] * 8 + [0] * 4)
    one_block = tile_lab.trace(overlapping, (1,), (np.zeros(12, np.float32), 4))
    np.testing.assert_array_equal(one_block.coverage("x"), [1] * 8 + [0] * 4)
    assert tr.coverage("x", kind="read").sum() == 0


@pytest.mark.parametrize("first", ["import tile_lab; tile_lab.emulate",
                                   "import tile_lab.tracing.trace"])
def test_tile_lab_trace_is_the_function_whatever_was_imported_first(first):
    # the data model lives in tile_lab.tracing.trace, so nothing shadows tile_lab.trace
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        {first}
        import numpy as np, tile_lab, test_tracing_trace
        from tile_lab.tracing.trace import Trace
        tr = tile_lab.trace(test_tracing_trace.vadd, (2,), (np.ones(8, np.float32),
                            np.ones(8, np.float32), np.zeros(8, np.float32), 4))
        assert isinstance(tr, Trace) and len(tr) == 6, tr
    """)
    here = str(__import__("pathlib").Path(__file__).parent)
    done = subprocess.run([sys.executable, "-c", code], cwd=here, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
