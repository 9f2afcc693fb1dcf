"""tile_lab.render.triton_pair: the pair's table, outputs and both views, deterministic."""

from __future__ import annotations

import html as html_lib
from dataclasses import replace

from triton_cases import compared, needs_triton

pytestmark = needs_triton


def test_the_pair_renders_both_sides():
    from tile_lab.render.triton_pair import port_comparison_html

    cmp = compared("gemm")
    html = port_comparison_html(cmp)
    assert html == port_comparison_html(cmp)  # deterministic
    assert "matmul_kernel" in html and "matmul_tiles" in html
    assert f">{cmp.triton.resources.registers}<" in html
    assert f">{cmp.cutile.resources.registers}<" in html
    assert "tensor core" in html and "registers / thread" in html
    assert html.count("tl-pane-sass") >= 2 and html.count("tl-pane-source") >= 2
    # the crosscheck's own picture of the outputs
    assert html_lib.escape(cmp.outputs.summary().split(":")[0]) in html


def test_the_display_bundle():
    cmp = compared("vector_add")
    bundle = cmp._repr_mimebundle_()
    assert bundle["text/plain"] == str(cmp)
    assert "add_kernel" in bundle["text/html"]
    assert bundle["application/json"]["cutile"]["kernel"] == "vector_add"


def test_timings_render_when_present():
    from tile_lab.render.triton_pair import port_comparison_html

    row = {"regime": "burst", "triton_us": 12.5, "cutile_us": 10.0, "ratio": 0.8,
           "ci_low": 0.78, "ci_high": 0.82, "triton_sm_mhz": 1980, "cutile_sm_mhz": 1980,
           "clock_mismatch": False}
    cmp = replace(compared("vector_add"), timing={"device": "NVIDIA <H100>", "mode": "cold",
                                                  "rows": [row]})
    html = port_comparison_html(cmp)
    assert "NVIDIA &lt;H100&gt;" in html and "12.5 us" in html and "0.800 (0.780-0.820)" in html
