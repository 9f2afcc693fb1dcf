"""K-loop pipeline depth read from real sm_90 compiles of one GEMM with latency=1/4/10."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_files import inspection_fixture

from tile_lab.analysis.pipeline import k_loop
from tile_lab.compile.artifacts import Inspection
from tile_lab.render.pipeline import pipeline_picture

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> Inspection:
    return inspection_fixture(name)


@pytest.mark.parametrize(("latency", "stages", "ring_kib", "other_kib"),
                         [(1, 2, 128, 64), (4, 4, 192, 64), (10, 6, 216, 24)])
def test_latency_hint_sets_the_pipeline_depth(latency, stages, ring_kib, other_kib):
    """Same GEMM (f16, 128×128×64 tiles: 32 KiB per iteration), three latency hints."""
    loop = k_loop(load(f"pipeline_gemm_latency{latency}_sm_90"))
    assert loop.loop_line == 10 and loop.mma_line == 13
    assert [(ld.line, ld.latency, ld.tile_bytes) for ld in loop.loads] == [
        (11, latency, 128 * 64 * 2), (12, latency, 64 * 128 * 2)]
    assert loop.stages == stages and loop.barrier_span == 16 * stages
    assert loop.ring_bytes == ring_kib * 1024 and loop.other_bytes == other_kib * 1024
    assert "(estimate)" in loop.evidence()


def test_default_latency_and_picture():
    insp = load("tma_gemm_sm_90")  # no latency hint
    loop = k_loop(insp)
    assert [ld.latency for ld in loop.loads] == [None, None]
    p = pipeline_picture(insp)
    texts = [it for g in p.scene.items for it in getattr(g, "items", (g,))
             if hasattr(it, "text")]
    assert any("latency=default" in t.text for t in texts)
    assert any("stages 8–10 not drawn" in t.text for t in texts)  # 11 stages, 8 drawn
    assert k_loop(insp).other_bytes == 16 * 1024  # the 64×64 f32 C tile of the epilogue
    assert pipeline_picture(insp).svg == p.svg


def test_no_depth_without_a_tma_barrier_pair():
    from dataclasses import replace

    insp = load("tma_gemm_sm_90")
    bare = k_loop(replace(insp, stages={"tileir": insp.stages["tileir"]}))
    assert bare.stages is None and "depth not read" in bare.evidence()
    # A loaded with LDG (rows of 2008 bytes), B with TMA: no pair, no guessed depth
    mixed = load("tma_gemm_k1004_sm_90")
    assert k_loop(mixed).stages is None
    p = pipeline_picture(mixed)
    assert "depth not read from the SASS" in p.scene.label and "stage 0" not in p.svg


def test_a_persistent_kernel_pipelines_its_inner_k_loop():
    """bench/gemm_kernels.py::gemm_persistent (128×128×64, LAT=3) on sm_90: the loop over
    output tiles (line 55) holds the K-loop of the k_loop helper (line 32)."""
    insp = load("pipeline_gemm_persistent_sm_90")
    loop = k_loop(insp)
    assert loop.loop_line == 32 and [ld.line for ld in loop.loads] == [33, 34]
    assert [ld.latency for ld in loop.loads] == [3, 3] and loop.stages == 3
    p = pipeline_picture(insp)
    assert "32  (in a helper function)" in p.svg  # its text is not in the kernel's source
