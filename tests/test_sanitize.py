"""The sanitizer: unit tests on hand-built traces for every check, then the seeded-bug
corpus (every bug flagged with the expected kind, argument and line) run through the
emulator."""

from __future__ import annotations

import itertools

import cuda.tile as ct
import numpy as np
import pytest
from corpus import buggy, export_tileir

from tile_lab.api import sanitize
from tile_lab.sanitizer.array_checks import boxes_from_mask
from tile_lab.sanitizer.checks import (
    KINDS,
    Finding,
    SanitizerReport,
    check_trace,
    format_box,
)
from tile_lab.tracing.trace import ArrayInfo, MemoryAccess, Trace

# ---- building synthetic traces ---------------------------------------------------------


class _Builder:
    """Accumulates MemoryAccess records with increasing ``seq``."""

    def __init__(self) -> None:
        self.accesses: list[MemoryAccess] = []

    def box(self, block, kind, arg, start, stop, *, line=10, op=None, unchecked=False):
        n = len(start)
        tile = tuple(e - s for s, e in zip(start, stop))
        self.accesses.append(MemoryAccess(
            seq=len(self.accesses), block=_b(block), kind=kind, op=op or kind, arg=arg,
            line=line, iteration=0, tile_index=tuple(s // max(t, 1) for s, t in
                                                     zip(start, tile)),
            tile_shape=tile, box_start=tuple(start), box_stop=tuple(stop),
            unchecked=unchecked))
        assert n == len(stop)

    def flat(self, block, kind, arg, indices, *, line=20, op=None, oob=0, unchecked=False):
        self.accesses.append(MemoryAccess(
            seq=len(self.accesses), block=_b(block), kind=kind, op=op or kind, arg=arg,
            line=line, iteration=0, flat_indices=np.asarray(indices, dtype=np.int64),
            out_of_bounds=oob, unchecked=unchecked))

    def trace(self, *arrays: tuple[str, tuple[int, ...]], grid=(4, 1, 1)) -> Trace:
        return Trace(kernel="k", grid=grid,
                     arrays=tuple(ArrayInfo(n, s, "float32") for n, s in arrays),
                     accesses=tuple(self.accesses))


def _b(block) -> tuple[int, int, int]:
    block = (block,) if isinstance(block, int) else tuple(block)
    return (*block, 0, 0)[:3]


def _kinds(report: SanitizerReport) -> list[str]:
    return [f.kind for f in report.findings]


# ---- tile entirely outside ----------------------------------------------------------------

def test_tile_entirely_outside_is_reported_with_block_line_and_box():
    t = _Builder()
    t.box(0, "store", "C", (0,), (128,), line=7)
    t.box(1, "store", "C", (128,), (256,), line=7)
    t.box(2, "store", "C", (256,), (384,), line=7)  # C has 200 elements: outside
    r = check_trace(t.trace(("C", (200,))))
    [f] = r.of_kind("tile_out_of_bounds")
    assert (f.arg, f.line, f.block) == ("C", 7, (2, 0, 0))
    assert f.boxes == (((256,), (384,)),)
    assert "C[256:384]" in f.message and "undefined behaviour" in f.message


def test_partially_outside_tiles_are_fine():
    t = _Builder()
    t.box(0, "load", "A", (0, 0), (64, 64))
    t.box(0, "store", "C", (-32, 40), (32, 104))  # partly outside on both axes
    r = check_trace(t.trace(("A", (50, 50)), ("C", (50, 50))))
    assert "tile_out_of_bounds" not in _kinds(r)


def test_negative_tile_index_load_is_entirely_outside():
    t = _Builder()
    t.box(0, "load", "X", (-16, 0), (0, 16), line=3)
    r = check_trace(t.trace(("X", (64, 16))))
    [f] = r.of_kind("tile_out_of_bounds")
    assert f.boxes == (((-16, 0), (0, 16)),)


def test_outside_tiles_of_one_line_are_grouped():
    t = _Builder()
    for blk in range(3):
        t.box(blk, "load", "A", (100 + 10 * blk,), (110 + 10 * blk,), line=5)
    [f] = check_trace(t.trace(("A", (100,)))).findings
    assert f.occurrences == 3 and f.block == (0, 0, 0) and f.count == 30


def test_advanced_indexing_tile_with_every_lane_outside_is_reported():
    t = _Builder()
    t.flat(0, "gather", "x", [], op="load_advanced_indexing", oob=16, line=6)
    t.flat(1, "gather", "x", [60, 61], op="load_advanced_indexing", oob=14, line=6)
    [f] = check_trace(t.trace(("x", (8, 8)))).findings
    assert (f.kind, f.block, f.line, f.count) == ("tile_out_of_bounds", (0, 0, 0), 6, 16)


# ---- unchecked gathers/scatters -------------------------------------------------------------

def test_unchecked_gather_out_of_range_is_reported():
    t = _Builder()
    t.flat(0, "gather", "a", np.arange(100), oob=28, unchecked=True, line=4)
    [f] = check_trace(t.trace(("a", (100,)))).findings
    assert (f.kind, f.arg, f.line, f.count) == ("unchecked_out_of_bounds", "a", 4, 28)


def test_checked_gather_out_of_range_is_padding_by_design():
    t = _Builder()
    t.flat(0, "gather", "a", np.arange(100), oob=28, unchecked=False)
    assert check_trace(t.trace(("a", (100,)))).ok


# ---- write races ------------------------------------------------------------------------------

def test_two_blocks_storing_the_same_elements_race():
    t = _Builder()
    t.box(0, "store", "C", (0, 0), (4, 8), line=9)
    t.box(1, "store", "C", (2, 0), (6, 8), line=9)
    r = check_trace(t.trace(("C", (6, 8))))
    [f] = r.of_kind("write_race")
    assert (f.block, f.other_block, f.line, f.other_line) == ((1, 0, 0), (0, 0, 0), 9, 9)
    assert f.count == 16 and f.boxes == (((2, 0), (4, 8)),)
    assert "without atomics" in f.message


@pytest.mark.parametrize("blocks", [2, 10])
def test_a_race_counts_every_racing_write_once(blocks):
    # two blocks storing the same tile are two writes (it said "over 1 write"), ten are ten,
    # the same count the read check gives ten blocks reading it ("over 10 reads")
    t = _Builder()
    for blk in range(blocks):
        t.box(blk, "store", "C", (0,), (4,), line=7)
    [f] = check_trace(t.trace(("C", (4,)), grid=(blocks, 1, 1))).findings
    assert f.occurrences == blocks and f.count == 4
    assert f"4 elements over {blocks} writes, at C[0:4]" in f.message


def test_separate_racing_pairs_on_one_line_count_all_four_writes():
    t = _Builder()
    for blk, start in ((0, 0), (1, 0), (2, 8), (3, 8)):
        t.box(blk, "store", "C", (start,), (start + 8,), line=7)
    [f] = check_trace(t.trace(("C", (16,)))).findings
    assert f.occurrences == 4 and f.count == 16 and "16 elements over 4 writes" in f.message


def test_a_block_rewriting_its_own_elements_is_fine():
    t = _Builder()
    t.box(0, "store", "C", (0,), (8,))
    t.box(0, "store", "C", (0,), (8,))
    t.box(1, "store", "C", (8,), (16,))
    assert check_trace(t.trace(("C", (16,)))).ok


def test_atomics_from_many_blocks_do_not_race():
    t = _Builder()
    for blk in range(4):
        t.flat(blk, "atomic", "Out", [0, 0, 1], op="atomic_add")
    assert check_trace(t.trace(("Out", (2,)))).ok


def test_plain_write_and_atomic_from_different_blocks_race_in_either_order():
    for plain_first in (True, False):
        t = _Builder()
        if plain_first:
            t.box(0, "store", "Out", (0,), (1,), line=1)
        t.flat(1, "atomic", "Out", [0], op="atomic_add", line=2)
        t.flat(2, "atomic", "Out", [0], op="atomic_add", line=2)
        if not plain_first:
            t.box(2, "store", "Out", (0,), (1,), line=1)
        r = check_trace(t.trace(("Out", (1,))))
        assert _kinds(r) == ["write_race"], plain_first


def _locked_update(t: _Builder, block: int, *, lock=True, release_op="atomic_xchg"):
    if lock:
        t.flat(block, "atomic", "Locks", [1], op="atomic_cas", line=30)
        t.flat(block, "atomic", "Locks", [1], op="atomic_cas", line=30)  # spin again
    t.box(block, "load", "DW", (1, 0), (2, 8), line=31)
    t.box(block, "store", "DW", (1, 0), (2, 8), line=32)
    if lock:
        t.flat(block, "atomic", "Locks", [1], op=release_op, line=33)


def test_writes_inside_an_atomic_cas_spin_lock_do_not_race():
    t = _Builder()
    t.box(0, "store", "DW", (0, 0), (1, 8))  # row 0 belongs to block 0 alone
    for blk in range(3):
        _locked_update(t, blk)
    r = check_trace(t.trace(("DW", (2, 8)), ("Locks", (4,))))
    assert r.ok, str(r)


def test_the_same_update_without_the_lock_races_and_reads_depend_on_order():
    t = _Builder()
    t.box(0, "store", "DW", (0, 0), (1, 8))
    for blk in range(3):
        _locked_update(t, blk, lock=False)
    r = check_trace(t.trace(("DW", (2, 8)), ("Locks", (4,))))
    assert sorted(set(_kinds(r))) == ["order_dependent_read", "write_race"]
    race = r.of_kind("write_race")[0]
    assert race.line == 32 and race.boxes == (((1, 0), (2, 8)),) and race.occurrences == 3


def test_a_cas_that_is_never_released_is_not_a_lock():
    t = _Builder()
    for blk in range(2):
        t.flat(blk, "atomic", "Locks", [1], op="atomic_cas", line=30)
        t.box(blk, "store", "DW", (0, 0), (2, 8), line=32)
    r = check_trace(t.trace(("DW", (2, 8)), ("Locks", (4,))))
    assert _kinds(r) == ["write_race"]


def test_scatter_lanes_hitting_one_element_collide():
    t = _Builder()
    t.flat(0, "scatter", "bins", [0, 1, 1, 1, 2, 3], line=12)
    r = check_trace(t.trace(("bins", (4,))))
    [f] = r.findings
    assert (f.kind, f.line, f.count) == ("scatter_collision", 12, 2)


# ---- order-dependent reads ------------------------------------------------------------------

def test_read_after_another_blocks_write_is_order_dependent():
    t = _Builder()
    t.box(0, "store", "c", (0,), (8,), line=5)
    t.box(1, "store", "c", (8,), (16,), line=5)
    t.box(1, "load", "c", (0,), (8,), line=6)
    [f] = check_trace(t.trace(("c", (16,)))).findings
    assert (f.kind, f.block, f.other_block, f.line, f.other_line) == (
        "order_dependent_read", (1, 0, 0), (0, 0, 0), 6, 5)
    assert f.boxes == (((0,), (8,)),) and "came after the write" in f.message


def test_read_before_another_blocks_write_is_order_dependent():
    t = _Builder()
    t.flat(0, "gather", "x", np.arange(1, 9), line=3)
    t.flat(0, "scatter", "x", np.arange(0, 8), line=4)
    t.flat(1, "gather", "x", np.arange(9, 16), line=3, oob=1)
    t.flat(1, "scatter", "x", np.arange(8, 16), line=4)
    r = check_trace(t.trace(("x", (16,))))
    [f] = r.findings
    assert f.kind == "order_dependent_read" and f.block == (0, 0, 0)
    assert f.boxes == (((8,), (9,)),) and f.count == 1 and "came before" in f.message


def test_reads_of_own_writes_inputs_and_atomic_results_are_fine():
    t = _Builder()
    t.box(0, "load", "x", (0,), (16,))  # input read by everyone
    t.box(1, "load", "x", (0,), (16,))
    t.box(0, "store", "y", (0,), (8,))
    t.box(0, "load", "y", (0,), (8,))  # own write
    t.flat(1, "atomic", "cnt", [0], op="atomic_add")
    t.box(0, "load", "cnt", (0,), (1,))  # value of an atomic counter: excluded
    assert "order_dependent_read" not in _kinds(check_trace(
        t.trace(("x", (16,)), ("y", (8,)), ("cnt", (1,)))))


# ---- uncovered outputs --------------------------------------------------------------------------

def test_uncovered_output_elements_are_reported_as_compact_boxes():
    t = _Builder()
    for bm, bn in itertools.product(range(2), range(2)):
        t.box((bm, bn), "store", "C", (32 * bm, 32 * bn), (32 * bm + 32, 32 * bn + 32), line=8)
    r = check_trace(t.trace(("C", (80, 64)), grid=(2, 2, 1)))
    [f] = r.findings
    assert (f.kind, f.arg, f.line, f.count) == ("uncovered_output", "C", 8, 16 * 64)
    assert f.boxes == (((64, 0), (80, 64)),)
    assert "C[64:80, 0:64]" in f.message


def test_arrays_only_read_or_only_updated_atomically_are_not_outputs():
    t = _Builder()
    t.box(0, "load", "A", (0,), (4,))
    t.flat(0, "atomic", "hist", [3], op="atomic_add")
    assert check_trace(t.trace(("A", (100,)), ("hist", (16,)))).ok


def test_atomics_count_as_writes_for_coverage():
    t = _Builder()
    t.box(0, "store", "y", (0,), (2,))
    t.flat(1, "atomic", "y", [2, 3], op="atomic_add")
    assert "uncovered_output" not in _kinds(check_trace(t.trace(("y", (4,)))))


# ---- honest coverage: in-place and host-prefilled partial writes ------------------------------

@ct.kernel
def rope_first_quarter(q, cos, sin, rot: ct.Constant[int]):
    """RoPE rotating only the first `rot` of head_dim in place; the rest passes through."""
    row = ct.bid(0)
    half = rot // 2
    x1 = ct.load(q, index=(row, 0), shape=(1, half))
    x2 = ct.load(q, index=(row, 1), shape=(1, half))
    c = ct.load(cos, index=(row, 0), shape=(1, half))
    s = ct.load(sin, index=(row, 0), shape=(1, half))
    ct.store(q, index=(row, 0), tile=x1 * c - x2 * s)
    ct.store(q, index=(row, 1), tile=x2 * c + x1 * s)


@ct.kernel
def fill_counts(counts, out, n: ct.Constant[int]):
    """Writes only the first n entries of `out`; the host pre-fills the rest with -1."""
    ct.store(out, index=(0,), tile=ct.load(counts, index=(0,), shape=(n,)) * 2)


def _rope_args():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((4, 64)).astype(np.float32)
    ang = rng.standard_normal((4, 8)).astype(np.float32)
    return q, np.cos(ang), np.sin(ang)


def test_in_place_partial_update_is_not_an_uncovered_output():
    q, cos, sin = _rope_args()
    before = q.copy()
    report = sanitize(rope_first_quarter, (4,), (q, cos, sin, 16))
    assert report.ok and not report.findings, str(report)
    x1, x2 = before[:, :8], before[:, 8:16]
    np.testing.assert_allclose(q[:, :8], x1 * cos - x2 * sin, rtol=1e-6)
    np.testing.assert_allclose(q[:, 8:16], x2 * cos + x1 * sin, rtol=1e-6)
    np.testing.assert_array_equal(q[:, 16:], before[:, 16:])  # three quarters untouched


def test_write_only_partial_output_is_a_warning_that_says_how_it_was_decided():
    counts, out = np.arange(8, dtype=np.int32), np.full(32, -1, np.int32)
    report = sanitize(fill_counts, (1,), (counts, out, 8))
    [f] = report.findings
    assert (f.kind, f.severity, f.count) == ("uncovered_output", "warning", 24)
    assert report.ok  # a warning, not an error
    assert "only writes out, never reads it" in f.message and "partial=['out']" in f.message
    assert "warning" in str(report)


def test_partial_silences_and_outputs_makes_it_an_error():
    counts = np.arange(8, dtype=np.int32)
    assert not sanitize(fill_counts, (1,), (counts, np.zeros(32, np.int32), 8),
                        partial=["out"]).findings
    report = sanitize(fill_counts, (1,), (counts, np.zeros(32, np.int32), 8), outputs="out")
    [f] = report.findings
    assert f.severity == "error" and not report.ok and "is in outputs=" in f.message
    # an in-place array named in outputs= is held to it too
    q, cos, sin = _rope_args()
    [f] = sanitize(rope_first_quarter, (4,), (q, cos, sin, 16), outputs=["q"]).findings
    assert (f.kind, f.arg, f.count) == ("uncovered_output", "q", 4 * 48)


def test_contract_names_must_be_array_arguments():
    counts = np.arange(8, dtype=np.int32)
    with pytest.raises(ValueError, match="names outt, not an array argument"):
        sanitize(fill_counts, (1,), (counts, np.zeros(32, np.int32), 8), partial=["outt"])
    with pytest.raises(ValueError, match="both outputs= and partial="):
        sanitize(fill_counts, (1,), (counts, np.zeros(32, np.int32), 8), partial=["out"],
                 outputs=["out"])


# ---- boxes ------------------------------------------------------------------------------------

def test_boxes_from_mask_cover_exactly_and_are_disjoint():
    rng = np.random.default_rng(1)
    for shape in [(17,), (9, 13), (4, 5, 6)]:
        mask = rng.random(shape) < 0.4
        rebuilt = np.zeros(shape, dtype=np.int32)
        for start, stop in boxes_from_mask(mask):
            rebuilt[tuple(slice(s, e) for s, e in zip(start, stop))] += 1
        assert np.array_equal(rebuilt, mask.astype(np.int32)), shape


def test_boxes_from_mask_merges_identical_rows():
    mask = np.zeros((100, 50), dtype=bool)
    mask[10:90, 20:30] = True
    mask[95, :] = True
    assert boxes_from_mask(mask) == [((10, 20), (90, 30)), ((95, 0), (96, 50))]
    assert format_box("Y", ((95, 0), (96, 50))) == "Y[95, 0:50]"


# ---- the report object ---------------------------------------------------------------------

def _racy_trace(kernel="k") -> Trace:
    t = _Builder()
    t.box(0, "store", "C", (0,), (8,), line=9)
    t.box(1, "store", "C", (0,), (8,), line=9)
    tr = t.trace(("C", (8,)))
    return Trace(kernel=kernel, grid=tr.grid, arrays=tr.arrays, accesses=tr.accesses)


def test_report_text_html_and_json_are_deterministic_and_escaped():
    r1 = check_trace(_racy_trace("<b>k&</b>"))
    r2 = check_trace(Trace.from_json(_racy_trace("<b>k&</b>").to_json()))
    assert not r1.ok and r1.summary().endswith("1 finding: 1 write_race")
    assert "[write_race] line 9, C:" in str(r1)
    html = r1._repr_html_()
    assert "<b>k&</b>" not in html and "&lt;b&gt;k&amp;&lt;/b&gt;" in html
    assert html == r2._repr_html_() and str(r1) == str(r2)
    assert r1.to_json() == r2.to_json()
    assert r1.to_json()["findings"][0]["boxes"] == [[[0], [8]]]


def test_report_displays_as_its_text_in_a_terminal_and_as_html_in_jupyter():
    from IPython.core.formatters import DisplayFormatter

    report = check_trace(_racy_trace("k"))
    # a terminal IPython asks for text/plain only: the report's text, not the dataclass repr
    terminal, _ = DisplayFormatter().format(report, include={"text/plain"})
    assert terminal == {"text/plain": str(report)}
    assert str(report).startswith("sanitizer: k grid=(4,)")
    jupyter, _ = DisplayFormatter().format(report)
    assert jupyter["text/html"] == report._repr_html_() and "tile-lab-sanitizer" in \
        jupyter["text/html"]


def test_clean_report():
    t = _Builder()
    t.box(0, "store", "C", (0,), (8,))
    r = check_trace(t.trace(("C", (8,))))
    assert r.ok and r.findings == () and "no problems found" in r.summary()
    assert "tile-lab-sanitizer-ok" in r._repr_html_()


def test_of_kind_rejects_unknown_kinds():
    with pytest.raises(ValueError, match="write_race"):
        SanitizerReport(kernel="k", grid=(1, 1, 1)).of_kind("race")
    assert set(KINDS) >= {"write_race", "uncovered_output"}
    assert Finding(kind="write_race", message="m", arg="C").ranges() == ""


# ---- the seeded-bug corpus through the emulator --------------------------------------------------

BUGGY = {c.name: c for c in buggy.CASES}


def test_the_seeded_bug_corpus_is_big_enough_and_documented():
    assert len(BUGGY) >= 10
    assert all(c.bug and c.expect for c in BUGGY.values())


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_seeded_bug_compiles_with_cutile(name):
    case = BUGGY[name]
    _, args = case.build()
    assert len(export_tileir(case.kernel, args)) > 0


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_seeded_bug_is_flagged(name):

    case = BUGGY[name]
    grid, args = case.build()
    report = sanitize(case.kernel, grid, args)
    found = {(f.kind, f.arg, f.line) for f in report.findings}
    expected = {(e.kind, e.arg, case.line(e.line_text)) for e in case.expect}
    assert expected <= found, f"missing {expected - found}\n{report}"
    # and nothing else: every finding is one the bug explains
    assert {(k, a) for k, a, _ in found} == {(k, a) for k, a, _ in expected}, str(report)
    for f in report.findings:
        assert f.block is not None or f.kind == "uncovered_output"
        assert f.filename.endswith("buggy.py")


def test_tile_lab_sanitize_is_the_function_even_after_importing_its_module():
    import tile_lab
    import tile_lab.sanitizer.checks

    case = BUGGY["missing_tail"]
    grid, args = case.build()
    report = tile_lab.sanitize(case.kernel, grid, args)
    assert isinstance(report, SanitizerReport)
    assert [f.kind for f in report.findings] == ["uncovered_output"]


def test_sanitize_raises_the_emulators_clear_errors_for_bad_input():
    from tile_lab.errors import EmulationError

    case = BUGGY["missing_tail"]
    _, args = case.build()
    with pytest.raises(EmulationError, match="grid must be a tuple of 1 to 3 positive ints"):
        sanitize(case.kernel, (0,), args)


def test_a_trace_read_back_from_json_gives_the_same_report():
    from tile_lab.emulator import trace_kernel as trace

    case = BUGGY["histogram_scatter"]
    grid, args = case.build()
    tr = trace(case.kernel, grid, args)
    again = check_trace(Trace.from_json(tr.to_json()))
    assert check_trace(tr).to_json() == again.to_json()
    assert len(again.findings) == 3


def test_the_k_loop_bug_is_pinned_to_the_last_loop_iteration():
    case = BUGGY["gemm_shifted_k"]
    grid, args = case.build()
    [f] = sanitize(case.kernel, grid, args).findings
    n_k = args[0].shape[1] // args[5]
    assert f.iteration == n_k - 1 and f.occurrences == grid[0] * grid[1]
    assert f.boxes[0] == ((0, 64), (32, 80)) and f"iteration {n_k - 1}" in f.message


def test_big_traces_show_progress_per_check(monkeypatch):
    import tile_lab.progress
    import tile_lab.sanitizer.checks as sanitizer_module

    seen = []
    real = tile_lab.progress.progress

    def spy(total, desc, **kw):
        seen.append((total, desc))
        return real(total, desc, **kw)

    monkeypatch.setattr(tile_lab.progress, "progress", spy)
    t = _Builder()
    t.box(0, "store", "y", (0,), (4,))
    check_trace(t.trace(("y", (4,)), ("x", (4,))))
    assert seen == []
    monkeypatch.setattr(sanitizer_module, "PROGRESS_MIN_ACCESSES", 1)
    check_trace(t.trace(("y", (4,)), ("x", (4,))))
    assert seen == [(9, "sanitize k")]
