"""tile_lab.triton.build: a Triton kernel compiled for sm_90 on this CPU into an Inspection
with line-mapped stages; its compile errors at the kernel's line, with a caret."""

from __future__ import annotations

import inspect
import sys

import pytest
from triton_cases import needs_triton

from tile_lab.compile.stage_rows import SassRow
from tile_lab.errors import CompileError

pytestmark = needs_triton


@pytest.fixture(scope="module")
def vadd():
    from tile_lab.examples.triton_ports import add_kernel
    from tile_lab.triton import inspect_triton

    return inspect_triton(add_kernel, "*fp32, *fp32, *fp32, i32, 1024")


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, t in enumerate(lines) if text in t)


def test_stages_for_sm90_compiled_on_the_cpu(vadd):
    assert vadd.arch == "sm_90" and vadd.kernel_name == "add_kernel"
    assert list(vadd.stages) == ["ttir", "ttgir", "ptx", "sass"]
    assert "tt.load" in vadd.stages["ttir"].text and "#ttg.blocked" in vadd.stages["ttgir"].text
    assert ".target sm_90" in vadd.stages["ptx"].text
    ops = {r.opcode for r in vadd.stages["sass"].rows if isinstance(r, SassRow)}
    assert {"LDG", "STG", "FADD", "EXIT"} <= {o.split(".")[0] for o in ops if o}
    assert vadd.versions["triton"] and vadd.cubin[:4] == b"\x7fELF"


def test_every_stage_maps_to_the_kernel_lines(vadd):
    from tile_lab.examples.triton_ports import add_kernel

    lines, first = inspect.getsourcelines(add_kernel.fn)
    body = set(range(first, first + len(lines)))
    store = _line_of(add_kernel, "tl.store(")
    for name, st in vadd.stages.items():
        mapped = {x for x in st.line_map if x is not None}
        assert mapped and mapped <= body, name
    # the stores in the SASS come from the tl.store line, the loads from the tl.load lines
    sass = vadd.stages["sass"].rows
    assert {r.line for r in sass if isinstance(r, SassRow) and (r.opcode or "").startswith(
        "STG")} == {store}
    assert {r.line for r in sass if isinstance(r, SassRow) and (r.opcode or "").startswith(
        "LDG")} == {_line_of(add_kernel, "x = tl.load"), _line_of(add_kernel, "y = tl.load")}


def test_the_view_renders_with_triton_titles(vadd):
    from tile_lab.render.html import inspection_html, inspection_json

    html = inspection_html(vadd.with_show(("source", "ttir", "ttgir", "ptx", "sass")))
    assert "Triton IR" in html and "TritonGPU IR" in html and "SASS" in html
    assert html == inspection_html(vadd.with_show(("source", "ttir", "ttgir", "ptx", "sass")))
    data = inspection_json(vadd)
    assert set(data["stages"]) == {"ttir", "sass"}  # the default panes: source, ttir, sass


def test_the_mime_bundle_meets_the_schema(vadd):
    import jsonschema

    from tile_lab.render.html import inspection_json
    from tile_lab.render.mime import mime_schema

    jsonschema.validate(inspection_json(vadd.with_show(("source", "ttgir", "ptx", "sass"))),
                        mime_schema())


def test_compile_error_at_the_kernel_line_with_a_caret():
    from triton_cases import bad_name

    from tile_lab.triton import inspect_triton

    with pytest.raises(CompileError) as info:
        inspect_triton(bad_name, "*fp32, i32, 128")
    err = info.value
    line = _line_of(bad_name, "not_defined_anywhere")
    assert err.location.line == line and err.location.filename.endswith("triton_cases.py")
    assert err.location.text.strip().startswith("y = x + not_defined_anywhere")
    assert err.location.text[err.location.col:].startswith("not_defined_anywhere")
    assert "not_defined_anywhere" in err.message and "bad_name" in err.message
    rendered = err.render()
    assert "^" in rendered and f"line {line}" in rendered


@pytest.mark.parametrize("arch, expect", [("sm_90", "sm_90"), (90, "sm_90"),
                                          ("sm_90a", "sm_90"), ("8.0", "sm_80")])
def test_arch_spellings(arch, expect):
    from tile_lab.triton.build import triton_arch

    assert triton_arch(arch)[0] == expect


@pytest.mark.parametrize("arch", ["hopper", "sm_60"])
def test_bad_arch(arch):
    from tile_lab.triton.build import triton_arch

    with pytest.raises(CompileError, match="arch"):
        triton_arch(arch)


def test_missing_triton_says_what_is_missing(monkeypatch):
    from tile_lab.examples.triton_ports import add_kernel
    from tile_lab.triton import TritonMissing, inspect_triton

    monkeypatch.setitem(sys.modules, "triton", None)  # import triton raises ImportError
    with pytest.raises(TritonMissing) as info:
        inspect_triton(add_kernel, "*fp32, *fp32, *fp32, i32, 1024")
    assert "compiling a Triton kernel needs Triton, which is not installed" in \
        info.value.message
    assert 'pip install "tile_lab[triton]"' in info.value.hint


SAME_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def twice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''


def test_the_same_kernel_in_another_checkout_maps_to_its_own_file(tmp_path):
    # Triton's disk cache is keyed by the source text: a copy at another path must not get
    # IR locations naming the first copy's file (then no line of its own would map)
    import importlib.util

    from tile_lab.triton import compile_triton

    builds = []
    for where in ("first", "second"):
        path = tmp_path / where / "ported.py"
        path.parent.mkdir()
        path.write_text(SAME_KERNEL)
        spec = importlib.util.spec_from_file_location(f"ported_{where}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        builds.append(compile_triton(module.twice, "*fp32, *fp32, i32, 128").inspection)
    for build in builds:  # lines 7-9: the def, offs, the load/store
        assert {8, 9} <= {x for x in build.stages["ttir"].line_map if x is not None} <= {7, 8, 9}
