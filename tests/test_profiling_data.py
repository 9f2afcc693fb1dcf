"""Profile data from recorded Nsight Compute exports (H100, ncu 2025.3.1; see
fixtures/profile/README.md): parsing, the offset join with tile_lab's SASS line map,
per-line aggregation, JSON round trip."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from fixture_files import fixture_text

import tile_lab
from tile_lab.compile.artifacts import StageText
from tile_lab.profiling.data import InstructionSample, Profile, join_lines, opcode
from tile_lab.profiling.ncu_csv import (
    metrics_from_raw,
    parse_raw_csv,
    parse_source_csv,
    static_spills,
)

FIX = Path(__file__).parent / "fixtures" / "profile"
DATA = Path(__file__).parent.parent / "notebooks" / "data"


def read(name: str) -> str:
    return fixture_text(f"profile/{name}")


def test_source_page_with_source_counters():
    page = parse_source_csv(read("vector_add.source.csv"))
    assert page.function_name.startswith("vector_add_")
    assert page.has_samples and page.has_executed
    assert len(page.instructions) == 136
    assert [i.offset for i in page.instructions[:3]] == [0, 0x10, 0x20]
    first = page.instructions[0]
    assert first.sass == "LDC R1, c[0x0][0x28]" and first.opcode == "LDC"
    hottest = max(page.instructions, key=lambda i: i.samples)
    assert hottest.opcode == "FADD"  # waiting for the loads at their first use
    assert max(hottest.stalls, key=hottest.stalls.get) == "long_sb"
    # stall_* columns sum to the total (the "(Not Issued)" twins are not counted again)
    assert sum(hottest.stalls.values()) == hottest.samples


def test_source_page_of_pc_sampling_only_maps_reason_names():
    page = parse_source_csv(read("gemm_cliff_sampling_head.source.csv"))
    assert page.has_samples and not page.has_executed
    reasons = {r for i in page.instructions for r in i.stalls}
    assert reasons and reasons <= set(tile_lab.profiling.data.STALL_REASONS)
    assert all(i.executed == 0 for i in page.instructions)


def test_failed_launch_gives_sass_but_no_metrics():
    page = parse_source_csv(read("gemm_cliff_failed_head.source.csv"))
    assert page.instructions and sum(i.samples for i in page.instructions) == 0
    metrics = metrics_from_raw(parse_raw_csv(read("gemm_cliff_failed.raw.csv")))
    assert metrics.duration_ns is None and metrics.grid_size is None


def test_raw_page_units_are_normalised():
    m = metrics_from_raw(parse_raw_csv(read("vector_add.raw.csv")))
    assert m.duration_ns == pytest.approx(62944, rel=0.05)  # exported in µs
    assert m.registers_per_thread == 28 and m.block_size == 128 and m.grid_size == 16384
    assert m.shared_mem_per_block_bytes == pytest.approx(1024)  # exported in Kbyte
    assert 80 < m.achieved_occupancy_pct <= m.theoretical_occupancy_pct == 100
    cliff = metrics_from_raw(parse_raw_csv(read("gemm_cliff.raw.csv")))
    assert cliff.duration_ns > 1e6 and cliff.registers_per_thread == 255


def test_static_spills_and_stack_frame_from_the_prologue():
    ins = (InstructionSample(0, "LDC R1, c[0x0][0x28]", 0, 0),
           InstructionSample(0x10, "VIADD R1, R1, 0xfffff168", 0, 0),
           InstructionSample(0x20, "STL [R1+0x10], R4", 0, 0),
           InstructionSample(0x30, "@!P0 LDL R4, [R1+0x10]", 0, 0))
    assert static_spills(ins) == {"spill_loads": 1, "spill_stores": 1, "stack_frame_bytes": 3736}
    assert opcode("@!P1  BRA 0x7f10177ad060") == "BRA"
    assert opcode("HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ") == "HGMMA"


def test_join_by_offset_checks_the_opcode():
    sass = StageText("sass", "\n".join([
        ".L_x_0:",
        "        /*0000*/                   LDC R1, c[0x0][0x28] ;",
        "        /*0010*/                   FADD R5, R13, R5 ;",
        "        /*0020*/                   EXIT ;"]), (None, 5, 7, 8))
    ins = (InstructionSample(0, "LDC R1, c[0x0][0x28]", 1, 1),
           InstructionSample(0x10, "FADD R5, R13, R5", 9, 1),
           InstructionSample(0x20, "BRA 0x7f00", 2, 1))  # another cubin: no line
    joined, matched = join_lines(ins, sass)
    assert [i.line for i in joined] == [5, 7, None] and matched == 2


@pytest.fixture(scope="module")
def gemm_best() -> Profile:
    return tile_lab.load_profile(DATA / "profile_gemm_best.json.gz")


@pytest.fixture(scope="module")
def gemm_cliff() -> Profile:
    return tile_lab.load_profile(DATA / "profile_gemm_cliff.json.gz")


def test_recorded_gemm_hot_lines_are_the_k_loop(gemm_best):
    assert gemm_best.matched_instructions == len(gemm_best.instructions)
    hot = [lp.text for lp in gemm_best.hot_lines(3)]
    assert hot[0] == "acc = ct.mma(a, b, acc)"
    assert "a = ct.load(A, index=(bx, k), shape=(TM, TK))" in hot
    assert gemm_best.provenance["gpu"].startswith("NVIDIA H100")
    assert gemm_best.collection["plan"] == "source counters"


def test_per_line_sums_are_the_instruction_sums(gemm_best):
    lines = gemm_best.by_line()
    assert [lp.line for lp in lines] == sorted(lp.line for lp in lines)
    assert (sum(lp.samples for lp in lines) + gemm_best.unattributed_samples()
            == gemm_best.total_samples)
    mma = next(lp for lp in lines if "ct.mma" in lp.text)
    ins = [i for i in gemm_best.instructions if i.line == mma.line]
    assert mma.instructions == len(ins) and mma.executed == sum(i.executed for i in ins)
    assert mma.stalls == {k: v for k, v in sorted(
        ((r, sum(i.stalls.get(r, 0) for i in ins)) for r in mma.stalls),
        key=lambda kv: (-kv[1], kv[0]))}


def test_recorded_cliff_shows_its_spills(gemm_cliff):
    m = gemm_cliff.metrics
    assert m.spill_loads > 1000 and m.spill_stores > 900 and m.stack_frame_bytes == 3736
    assert gemm_cliff.collection["plan"] == "stall sampling only"
    assert "LaunchFailed" in gemm_cliff.collection["failed_plans"][0]
    assert not gemm_cliff.has_executed
    spill = sum(i.samples for i in gemm_cliff.instructions if i.opcode in ("LDL", "STL"))
    assert spill > 0.3 * gemm_cliff.total_samples
    assert gemm_cliff.stall_totals().get("lg", 0) > 0.1 * gemm_cliff.total_samples


def test_json_round_trip(gemm_best, tmp_path):
    again = Profile.from_json(gemm_best.to_json())
    assert again == gemm_best
    path = tmp_path / "p.json"
    gemm_best.save(path)
    assert tile_lab.load_profile(path) == gemm_best
    # .gz: compressed, the same bytes for the same profile, read back whole
    packed = tmp_path / "p.json.gz"
    gemm_best.save(packed)
    first = packed.read_bytes()
    assert first[:2] == b"\x1f\x8b" and len(first) < path.stat().st_size / 4
    gemm_best.save(packed)
    assert packed.read_bytes() == first
    assert tile_lab.load_profile(packed) == gemm_best


def test_shift_and_rejoin(gemm_best):
    moved = gemm_best.shifted_to(gemm_best.first_line + 10)
    assert [lp.line - 10 for lp in moved.by_line()] == [lp.line for lp in gemm_best.by_line()]
    stripped = replace(gemm_best, instructions=tuple(replace(i, line=None)
                                                     for i in gemm_best.instructions))
    assert stripped.hot_lines() == ()


def test_tileir_ops_get_their_source_lines_samples(gemm_best):
    mma = next(lp for lp in gemm_best.by_line() if "ct.mma" in lp.text)
    load = next(lp for lp in gemm_best.by_line() if "ct.load(A" in lp.text)
    text = "\n".join([
        "  %tile, %result_token = load_view_tko weak %pview_16[%blockId_x, %loopIdx] token = %0",
        "    %3 = mmaf %tile, %tile_19, %iterArg0 : tile<64x32xf16>",
        "  } loc(#loc20)"])
    ops = gemm_best.by_tileir_op(text, (load.line, mma.line, None))
    assert [(op, line, n) for _, op, line, n in ops] == [
        ("load_view_tko", load.line, load.samples), ("mmaf", mma.line, mma.samples)]


def test_lines_outside_the_kernel_are_not_attributed(gemm_best):
    from tile_lab.compile.artifacts import Inspection

    sass = StageText("sass", "\n".join([
        "        /*0000*/                   LDC R1, c[0x0][0x28] ;",
        "        /*0010*/                   S2R R5, SR_TID.X ;"]), (3, 12))
    insp = Inspection(kernel_name="k", filename="<cell>", first_line=2,
                      source="@ct.kernel\ndef k(a):\n    pass\n", arch="sm_90", signature="",
                      hints={}, stages={"sass": sass})
    joined = gemm_best.with_lines(insp)
    assert [i.line for i in joined.instructions[:2]] == [3, None]  # 12 is past the kernel
