"""K-loop pipeline depth read from real sm_90 compiles of one GEMM with latency=1/4/10."""

from __future__ import annotations

from pathlib import Path

import pytest

from tile_lab.artifacts import Inspection
from tile_lab.render.pipeline import k_loop, pipeline_picture

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> Inspection:
    return Inspection.from_json((FIXTURES / f"{name}.json").read_text())


@pytest.mark.parametrize(("latency", "ring_kib", "stages"), [(1, 128, 4), (4, 192, 6),
                                                            (10, 216, 6)])
def test_latency_hint_sets_the_ring(latency, ring_kib, stages):
    loop = k_loop(load(f"pipeline_gemm_latency{latency}_sm_90"))
    assert loop.loop_line == 10 and loop.mma_line == 13
    assert [(ld.line, ld.latency, ld.tile_bytes) for ld in loop.loads] == [
        (11, latency, 128 * 64 * 2), (12, latency, 64 * 128 * 2)]
    assert loop.ring_bytes == ring_kib * 1024 and loop.stages == stages
    assert "(estimate)" in loop.evidence()


def test_default_latency_and_picture():
    insp = load("tma_gemm_sm_90")  # no latency hint
    loop = k_loop(insp)
    assert [ld.latency for ld in loop.loads] == [None, None]
    p = pipeline_picture(insp)
    texts = [it for g in p.scene.items for it in getattr(g, "items", (g,))
             if hasattr(it, "text")]
    assert any("latency=default" in t.text for t in texts)
    assert any("stages 8–12 not drawn" in t.text for t in texts)  # 13 stages, 8 drawn
    assert pipeline_picture(insp).svg == p.svg


def test_no_ring_without_sass():
    insp = load("tma_gemm_sm_90")
    from dataclasses import replace

    bare = replace(insp, stages={"tileir": insp.stages["tileir"]})
    loop = k_loop(bare)
    assert loop.stages is None and "no shared-memory ring" in loop.evidence()
