"""tile_lab.examples: the shared tutorial kernels agree with NumPy and compile for sm_90;
the Tile Puzzles' solutions pass their checks and wrong answers are blamed on the right block."""

from __future__ import annotations

import math

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.examples import attention, norms, puzzles
from tile_lab.examples.gemm import gemm_grouped, gemm_naive, gemm_persistent
from tile_lab.examples.puzzle_solutions import SOLUTIONS

_DT = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.int32): "i32"}


@pytest.mark.parametrize("causal", [0, 1])
def test_flash_attention_matches_numpy(causal: int) -> None:
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 96, 32)).astype(np.float16) for _ in range(3))
    o = np.full_like(q, np.nan)
    tile_lab.emulate(attention.flash_attention, attention.grid(q.shape, 32),
                     (q, k, v, o, attention.LOG2_E / math.sqrt(32), 32, 32, 32, causal))
    ref = attention.attention_reference(q, k, v, causal=bool(causal))
    assert np.abs(o - ref).max() < 5e-3
    if causal:  # the first query row attends only to key 0: its output is v[:, 0]
        np.testing.assert_allclose(o[:, 0], v[:, 0], atol=1e-3)


def test_causal_attention_skips_key_tiles_after_the_diagonal() -> None:
    q = np.zeros((1, 128, 32), np.float16)
    args = (q, q, q, np.zeros_like(q), 0.1, 32, 32, 32, 1)
    tr = tile_lab.trace(attention.flash_attention, (4, 1), args)
    # query tile i reads key tiles 0..i: 1 + 2 + 3 + 4 K loads in all
    assert len(tr.select(arg="K", kind="load")) == 10
    assert len(tr.select(block=(0, 0), arg="K", kind="load")) == 1


def test_rms_norm_and_rope_match_numpy() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 80)).astype(np.float32)  # 80 < TN=128: padded lanes
    w = rng.standard_normal(80).astype(np.float32)
    y = np.zeros_like(x)
    tile_lab.emulate(norms.rms_norm, (4,), (x, w, y, 1e-6, 8, 128))
    np.testing.assert_allclose(y, norms.rms_norm_reference(x, w, 1e-6), rtol=1e-5, atol=1e-5)
    xr = rng.standard_normal((2, 32, 16)).astype(np.float32)
    cos, sin = norms.rope_angles(32, 16)
    yr = np.zeros_like(xr)
    tile_lab.emulate(norms.rope, (2, 2), (xr, cos, sin, yr, 16, 16))
    np.testing.assert_allclose(yr, norms.rope_reference(xr, cos, sin), rtol=1e-5, atol=1e-5)
    # a rotation keeps each (x1, x2) pair's length
    np.testing.assert_allclose(np.linalg.norm(yr, axis=-1), np.linalg.norm(xr, axis=-1),
                               rtol=1e-5)


def test_gemm_variants_agree() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    for kern, grid, consts in [(gemm_naive, (2, 2), (64, 64, 32)),
                               (gemm_grouped, (4,), (64, 64, 32, 2, 3)),
                               (gemm_persistent, (3,), (64, 64, 32, 2, 3))]:
        c = np.zeros((128, 128), np.float16)
        tile_lab.emulate(kern, grid, (a, b, c, *consts))
        np.testing.assert_allclose(c.astype(np.float32), ref, atol=0.1, rtol=1e-2)


def test_there_are_seventeen_puzzles_with_solutions() -> None:
    assert [p.number for p in puzzles.PUZZLES] == list(range(1, 18))
    assert sorted(SOLUTIONS) == list(range(1, 18))
    assert "Puzzle 12" in puzzles.puzzle(12)._repr_markdown_()
    with pytest.raises(ValueError, match="puzzles 1 to 17"):
        puzzles.puzzle(18)


@pytest.mark.parametrize("n", range(1, 18))
def test_each_solution_passes_its_check(n: int) -> None:
    result = puzzles.check(n, SOLUTIONS[n])
    assert result.ok, result.verdict()


def test_an_unsolved_stub_reports_every_element_unwritten() -> None:
    @ct.kernel
    def copy(x, y, T: ct.Constant[int]):
        pass

    result = puzzles.check(1, copy)
    assert not result.ok and result.unwritten == 512 and result.bad_blocks == ()
    assert "no element was written" in result.verdict()
    # the picture blames nobody: every tile never written, each with the block that should
    assert "block (0)" not in result.diagram_svg
    assert "tile 0 (elements 0–" in result.diagram_svg and "∅" in result.diagram_svg
    assert ("no block stored anything to y; blocks (0,) … (7,) would each write their "
            "tile (if block b writes tile b)") in result.diagram_svg


def test_a_wrong_answer_names_the_block_that_wrote_it() -> None:
    @ct.kernel
    def double(x, y, T: ct.Constant[int]):
        i = ct.bid(0)
        t = ct.load(x, index=(i,), shape=(T,))
        ct.store(y, index=(i,), tile=ct.where(i == 5, t, 2 * t))  # block 5 forgets to double

    result = puzzles.check(3, double)
    assert not result.ok
    # one notation: the launch grid is 1-D, so are the blocks in the data and the words
    assert [b.block for b in result.bad_blocks] == [(5,)]
    assert "block (5,)" in result.verdict() and "<svg" in result.diagram_svg
    assert "tile 5 (elements 640–767): 128 wrong" in result.diagram_svg
    assert "written by block (5,)" in result.diagram_svg


def test_a_grid_one_block_short_marks_the_tile_no_block_wrote() -> None:
    @ct.kernel
    def axpb(x, y, alpha: float, TILE: ct.Constant[int]):
        bid = ct.bid(0)
        ct.store(y, index=(bid,), tile=alpha * ct.load(x, index=(bid,), shape=(TILE,)) + 1)

    result = tile_lab.check(axpb, spec=lambda x: 3.0 * x + 1, grid=(15,),
                            shapes=[(1024,), (1024,)], constants=(3.0, 64), device="emulator")
    assert not result.ok and result.unwritten == 64
    svg = result.diagram_svg
    # the missing tile is marked, with the block that would have written it (none of block
    # 0's correct tiles is blamed)
    assert ("tile 15 (elements 960–1023): never written; block (15,) would write "
            "it, but grid (15,) has no such block") in svg
    assert "1 of 16 tiles" in svg and "block (0)" not in svg


def _signature(p: puzzles.Puzzle) -> str:
    arrays = [f"{_DT[np.dtype(p.dtype)]}[{','.join(map(str, s))}]" for s in p.shapes]
    return ", ".join(arrays + [repr(c) for c in p.constants])


@pytest.mark.parametrize("n", [5, 11, 12, 17])
def test_solutions_compile_for_hopper(n: int) -> None:
    # the emulator is not the judge: the views, order= loads and online softmax must compile
    insp = tile_lab.inspect(SOLUTIONS[n], _signature(puzzles.puzzle(n)), arch="sm_90")
    assert "_tko" in insp.tileir


def test_flash_attention_compiles_for_hopper() -> None:
    sig = ", ".join(["f16[8,1024,64]"] * 4 + ["0.18", "64", "64", "64", "1"])
    insp = tile_lab.inspect(attention.flash_attention, sig, arch="sm_90")
    assert insp.tileir.count("mma") >= 2


def test_tuned_flash_attention_matches_numpy_on_the_emulator() -> None:
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 256, 32)).astype(np.float16) for _ in range(3))
    scale = attention.LOG2_E / math.sqrt(32)
    for causal, (bm, bn) in ((0, (64, 64)), (1, (64, 128)), (1, (128, 64))):
        out = np.zeros_like(q)
        tile_lab.emulate(attention.flash_attention_tuned, attention.grid(q.shape, bm),
                         (q, k, v, out, scale, bm, bn, 32, causal, 2))
        want = attention.attention_reference(q, k, v, causal=bool(causal))
        assert np.abs(out.astype(np.float64) - want).max() < 2e-3, (causal, bm, bn)


def test_recorded_attention_run_has_provenance_and_its_best_config_does_not_spill() -> None:
    # notebook 15 shows this file; every number in it must say where and how it was measured
    import gzip
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "attention.json.gz"
    rec = json.loads(gzip.decompress(path.read_bytes()))
    prov = rec["env"]["provenance"]
    assert {"gpu", "driver", "cuda_tile", "tileiras", "max_sm_clock_mhz"} <= set(prov)
    assert rec["env"]["stream_hold"] == "on" and not rec["failures"]
    assert {r["regime"] for r in rec["rows"]} == {"burst", "sustained"}
    for r in rec["rows"]:
        assert r["ci_low"] <= r["ratio"] <= r["ci_high"] and r["ours_sm_mhz"] > 0
        assert abs(r["ratio"] - r["baseline_median_s"] / r["ours_median_s"]) < 0.1 * r["ratio"]
        assert r["max_abs_err"] < 2e-2
    for b in rec["baselines"]:  # the baseline is the fastest SDPA candidate that ran
        assert b["candidates_us"][b["picked"]] == min(b["candidates_us"].values())
    best = rec["tuning"]["D=128 causal=False"]["best"]["config"]
    sig = ", ".join(["f16[4,1024,128]"] * 4 + ["0.18", str(best["BM"]), str(best["BN"]), "128",
                                                "0", str(best["latency"])])
    insp = tile_lab.inspect(attention.flash_attention_tuned, sig, arch="sm_90",
                            hints={k: best[k] for k in ("num_worker_warps", "occupancy")})
    assert insp.spill_instructions() == {"LDL": 0, "STL": 0}
