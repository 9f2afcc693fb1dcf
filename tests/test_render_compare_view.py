"""render/compare_view.py: a Comparison of two kernels' Tile IR drawn as one escaped,
deterministic table, one row per aligned pair."""

from __future__ import annotations

import re

from tile_lab.cpp.compare import KINDS, Comparison, OpLine, OpPair
from tile_lab.render.compare_view import comparison_html


def _cmp() -> Comparison:
    load = OpLine("load_view_tko", "%1 = load_view_tko %v : tile<1024xf32>", 7, "ta = ct.load(a)")
    add_py = OpLine("addf", "%2 = addf %1, %1 : tile<1024xf32>", 9, "t = ta + tb <x>")
    add_cpp = OpLine("addf", "%9 = addf %8, %8 : tile<1024xf32>", 12, None)
    only = OpLine("assume", "%3 = assume div_by<16> %0", None, None)
    return Comparison("vector_add", "vec<add>", "sm_90", "sm_90",
                      (OpPair("same", load, load), OpPair("similar", add_py, add_cpp),
                       OpPair("py_only", only, None)))


def test_one_row_per_pair_with_its_kind_and_escaped_text():
    page = comparison_html(_cmp())
    rows = re.findall(r"<tr class='(\w+)'>(.*?)</tr>", page)
    assert [k for k, _ in rows] == ["same", "similar", "py_only"]
    assert all(k in KINDS for k, _ in rows)
    # the C++ side of a Python-only op is an empty pair of cells; the mark names the kind
    assert "<td class='ln'></td><td class='ir cpp'></td>" in rows[2][1]
    assert f"<td class='mark'>{KINDS['similar']}</td>" in rows[1][1]
    assert "tile&lt;1024xf32&gt;" in page and "C++: vec&lt;add&gt; (sm_90)" in page
    assert "title='t = ta + tb &lt;x&gt;'" in page and ">L9<" in page
    assert "<script" not in page and "<x>" not in page


def test_the_rich_display_is_this_table_and_deterministic():
    cmp = _cmp()
    assert cmp._repr_html_() == comparison_html(cmp) == comparison_html(_cmp())
