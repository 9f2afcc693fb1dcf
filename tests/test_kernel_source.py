"""``kernel.py`` of a reproducer: the kernel as written, after the names it reads (helpers,
``@ct.function`` helpers and their own globals, constants, ``ct.Constant`` aliases), and a
clear list of what could not be written out."""

from __future__ import annotations

from kernels_share import reads_a_dict, scale_rows, tileiras_rejects, uses_a_ct_function

from tile_lab.kernel_source import kernel_module


def _runs(text: str) -> dict:
    ns: dict = {}
    exec(compile(text, "kernel.py", "exec"), ns)  # the generated module defines the kernel
    return ns


def test_helpers_constants_and_annotations_are_written_out():
    m = kernel_module(scale_rows, "kernels_share.py")
    assert m.unresolved == ()
    assert "Const = ct.Constant[int]" in m.text and "def _scaled(tile, factor):" in m.text
    assert m.text.index("def _scaled") < m.text.index("def scale_rows")
    assert m.text.splitlines()[m.kernel_line - 1] == "@ct.kernel"
    assert "scale_rows" in _runs(m.text)


def test_a_ct_function_helper_brings_its_own_globals():
    m = kernel_module(uses_a_ct_function, "kernels_share.py")
    assert "SCALE = 2.0" in m.text and "@ct.function\ndef twice(t):" in m.text
    assert m.unresolved == ()
    ns = _runs(m.text)
    assert ns["SCALE"] == 2.0 and "uses_a_ct_function" in ns


def test_locals_are_not_globals_and_unwritable_names_are_listed():
    m = kernel_module(tileiras_rejects, "kernels_share.py")
    assert "ROWS = 1" in m.text and m.unresolved == ()
    for local in ("row", "matrix", "result"):
        assert f"{local} = " not in m.text.split("@ct.kernel")[0]
    bad = kernel_module(reads_a_dict, "kernels_share.py")
    assert bad.unresolved == ("LIMITS",)
    assert "# NOT WRITTEN OUT (define these by hand): LIMITS" in bad.text
