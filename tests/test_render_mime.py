"""The MIME contract: what inspection_json writes validates against the one schema file, the
token runs reproduce the text, and the extension's colour stylesheet is generated from the
Python palette and token colours."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from test_render_html import gemm_inspection

from tile_lab.render import html as html_mod
from tile_lab.render.html import inspection_json
from tile_lab.render.lexers import TileIRLexer
from tile_lab.render.mime import extension_css, mime_schema, token_runs

jsonschema = pytest.importorskip("jsonschema", reason="pip install -e '.[test]' (jsonschema)")

COLORS_CSS = Path(__file__).resolve().parents[1] / "labextension" / "style" / "colors.css"


def _validator():
    schema = mime_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(data) -> list[str]:
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in _validator().iter_errors(data)]


@pytest.mark.parametrize("show", [("source", "tileir", "sass", "remarks"),
                                  ("source", "cutile", "tileir", "ptx", "sass", "remarks"),
                                  ("tileir",)])
def test_the_bundle_python_writes_validates_against_the_schema(show):
    insp = gemm_inspection(show=show)
    data = inspection_json(insp)
    assert _errors(data) == []
    assert data["version"] == 1
    assert set(data["stages"]) == set(show) & set(insp.stages)


def test_the_schema_rejects_what_the_extension_would_refuse():
    good = inspection_json(gemm_inspection())
    bad_cases = {
        "version": lambda d: d.update(version=2),
        "schema_version": lambda d: d.update(schema_version=1),  # one version field only
        "diagram": lambda d: d.update(diagram={"svg": "<svg/>", "footprints": []}),
        "stage name": lambda d: d["stages"].update({"Bad Name": d["stages"]["sass"]}),
        "token class": lambda d: d["stages"]["tileir"]["tokens"][0].append(["evil", 1]),
        "line map": lambda d: d["stages"]["sass"]["line_map"].__setitem__(0, 0),
        "line colour": lambda d: d["line_colors"].update({"3": 99}),
    }
    for name, spoil in bad_cases.items():
        d = copy.deepcopy(good)
        spoil(d)
        assert _errors(d), f"the schema accepts a bad {name}"


def test_token_class_enum_is_the_html_views_token_classes():
    enum = mime_schema()["$defs"]["tokenClass"]["enum"]
    assert set(enum) == {""} | set(html_mod._TOKEN_COLORS)
    assert set(html_mod._TOKEN_CLASSES.values()) <= set(enum)


def test_token_runs_cover_each_line_and_match_the_html_colours():
    insp = gemm_inspection()
    text = insp.stages["tileir"].text
    runs = token_runs(text, TileIRLexer(stripnl=False), html_mod._token_class)
    lines = text.splitlines()
    assert len(runs) == len(lines)
    frags = html_mod.highlight_lines(text, TileIRLexer(stripnl=False))
    for line, line_runs, frag in zip(lines, runs, frags):
        assert sum(n for _, n in line_runs) == len(line)
        for cls, _ in line_runs:  # every coloured run is coloured the same in the HTML view
            assert cls == "" or f'class="tl-t{cls}"' in frag
    assert any(cls == "k" for line in runs for cls, _ in line)  # keywords are coloured
    assert inspection_json(insp)["stages"]["tileir"]["tokens"] == runs


def test_token_runs_count_code_points_not_bytes():
    runs = token_runs("// é😀 x\n", TileIRLexer(stripnl=False), html_mod._token_class)
    assert sum(n for _, n in runs[0]) == len("// é😀 x") == 7


def test_extension_colors_css_is_generated_from_the_python_palette():
    """labextension/style/colors.css is what extension_css() makes; regenerate with
    TILE_LAB_WRITE_FIXTURE=1."""
    import os

    css = extension_css()
    if os.environ.get("TILE_LAB_WRITE_FIXTURE"):
        COLORS_CSS.write_text(css)
    assert COLORS_CSS.read_text() == css
    for k, (light, dark) in html_mod._TOKEN_COLORS.items():
        assert f"--tl-t{k}:{light};" in css and f"--tl-t{k}:{dark};" in css


def test_a_real_compile_with_every_pane_validates():
    """A kernel compiled here (cuTile + tileiras on the CPU), all panes shown, hints set."""
    import kernels_inspect as K

    import tile_lab

    insp = tile_lab.inspect(K.gemm, "f16[256,128], f16[128,256], f32[256,256], 64, 64, 32",
                            arch="sm_90")
    insp = insp.with_show(("source", "cutile", "tileir", "ptx", "sass", "remarks"))
    data = inspection_json(insp)
    assert _errors(data) == []
    assert data["stages"]["tileir"]["tokens"] and data["line_colors"]
