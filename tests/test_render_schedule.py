"""SM timeline and L2 order pictures: the wave/tail arithmetic, the grouped order, the SVG."""

from __future__ import annotations

import pytest
from svg_items import flatten

from tile_lab.analysis.schedule import SmTimeline, grouped_order
from tile_lab.render.schedule import l2_order, sm_timeline
from tile_lab.render.svg import Group


def titles(items) -> list[str]:
    out = []
    for it in items:
        if isinstance(it, Group):
            if it.title:
                out.append(it.title)
            out.extend(titles(it.items))
    return out


def test_waves_and_tail():
    tl = SmTimeline(300, 132)
    assert (tl.waves, tl.tail_blocks) == (3, 36)
    assert tl.utilization == pytest.approx(300 / 396)
    assert tl.placement(0) == (0, 0, 0) and tl.placement(131) == (131, 0, 0)
    assert tl.placement(132) == (0, 0, 1) and tl.placement(299) == (35, 0, 2)
    assert SmTimeline(264, 132).tail_blocks == 0 and SmTimeline(264, 132).utilization == 1.0
    two = SmTimeline(20, 8, blocks_per_sm=2)  # 16 slots: block 8 is SM 0's second slot
    assert two.slots == 16 and two.placement(8) == (0, 1, 0) and two.placement(16) == (0, 0, 1)
    assert "3 waves (2 full waves + a tail of 36 blocks)" in tl.summary()


def test_timeline_draws_every_block_once_and_the_idle_tail():
    p = sm_timeline(300, "H100 SXM")
    t = titles(p.scene.items)
    blocks = [s for s in t if s.startswith("block ")]
    assert len(blocks) == 300 and len(set(blocks)) == 300
    idle = [s for s in t if "idle in wave 2" in s]
    assert len(idle) == 132 - 36
    assert "block 299 → SM 35, wave 2" in t
    assert p.svg == sm_timeline(300, "H100 SXM").svg  # deterministic
    assert "tl-k-w2:hover" in p.svg  # the wave hover rule
    with pytest.raises(ValueError):
        sm_timeline(0)


def test_grouped_order_matches_the_bench_formula():
    # group_m = 1 is row-major
    assert [grouped_order(t, 3, 4, 1) for t in range(5)] == [
        (0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    # groups of 2 rows walked column by column; the last group has one row
    assert [grouped_order(t, 3, 2, 2) for t in range(6)] == [
        (0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]
    order = {grouped_order(t, 5, 7, 3) for t in range(35)}
    assert len(order) == 35  # a permutation of the tiles


def test_l2_order_counts_panels_per_wave():
    p = l2_order(16, 16, group_m=4, num_sms=32)
    row_major, grouped = p.data
    w0 = row_major.waves[0]
    assert w0.a_panels == (0, 1) and w0.b_panels == tuple(range(16)) and w0.panels == 18
    g0 = grouped.waves[0]
    assert g0.a_panels == (0, 1, 2, 3) and g0.b_panels == tuple(range(8)) and g0.panels == 12
    assert len(row_major.waves) == len(grouped.waves) == 8
    assert grouped.panels_per_wave < row_major.panels_per_wave
    texts = [it.text for it in flatten(p.scene.items) if hasattr(it, "text")]
    assert any("18 panels in row-major order, 12 in groups of 4" in s for s in texts)
    with pytest.raises(ValueError, match="wave=9"):
        l2_order(16, 16, 4, 32, wave=9)


def test_grid_tuple_and_picture_exports(tmp_path):
    p = sm_timeline((16, 19), 132)  # 304 blocks
    assert p.data.blocks == 304 and p.data.waves == 3
    assert repr(p).startswith("Picture(SmTimeline") and p._repr_svg_() == p.svg
    assert 'class="tile-lab-diagram-wrap"' in p._repr_html_()
    png = p.to_png(tmp_path / "t.png", dpi=50)
    svg = p.save_svg(tmp_path / "t.svg")
    assert png.stat().st_size > 1000 and svg.read_text() == p.svg
