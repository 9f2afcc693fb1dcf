"""The MIME contract: what inspection_json writes validates against the one schema file, the
token runs reproduce the text, and the extension's colour stylesheet is generated from the
Python palette and token colours."""

from __future__ import annotations

import copy
import gzip
import json
from functools import cache
from pathlib import Path

import pytest
from test_render_html import gemm_inspection

from tile_lab.render import html as html_mod
from tile_lab.render.html import inspection_json
from tile_lab.render.lexers import TileIRLexer
from tile_lab.render.mime import extension_css, mime_schema, token_runs
from tile_lab.render.palette import TOKEN_COLORS

jsonschema = pytest.importorskip("jsonschema", reason="pip install -e '.[test]' (jsonschema)")

COLORS_CSS = Path(__file__).resolve().parents[1] / "labextension" / "style" / "colors.css"


@cache  # the schema is checked and compiled once; a validator keeps no state between uses
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
    assert data["version"] == 2
    assert set(data["stages"]) == set(show) & set(insp.stages)
    # the TMA verdict travels only where the view shows both stages it reads
    assert ("tma" in data) == ({"tileir", "sass"} <= set(show))


def test_the_schema_rejects_what_the_extension_would_refuse():
    good = inspection_json(gemm_inspection())
    bad_cases = {
        "version": lambda d: d.update(version=3),
        "tma in a version-1 view": lambda d: d.update(version=1),
        "tma kind": lambda d: d["tma"]["lines"][0].update(kind="gather"),
        "tma opcode": lambda d: d["tma"]["lines"][0]["sass_ops"].append("<b>"),
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
    assert set(enum) == {""} | set(TOKEN_COLORS)
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
    for k, (light, dark) in TOKEN_COLORS.items():
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


# -- the one list of cases, shared with the extension's parser ------------------------------

CASES = Path(__file__).resolve().parents[1] / "labextension" / "test" / "fixtures"
SIZE_KEYWORDS = {"maxLength", "maxItems", "maxProperties"}


def _generate(g: dict):
    if "lines" in g:
        return f"{g['lines']}\n" * g["n"]
    if "chars" in g:
        return "x" * g["chars"]
    if "repeat" in g:
        return [copy.deepcopy(g["repeat"]) for _ in range(g["n"])]
    return {(f"{g['prefix']}{i}" if "prefix" in g else str(g["from"] + i)): g["value"]
            for i in range(g["keys"])}


def apply_case(case: dict) -> dict:
    """The case's payload, made as labextension/test/cases.ts makes it."""
    base = CASES / f"{case['base']}.json"  # the profile fixture is gzipped (profile.json.gz)
    d = json.loads(base.read_text() if base.exists()
                   else gzip.decompress(base.with_name(base.name + ".gz").read_bytes()))
    for op, where, *args in case["ops"]:
        parent = d
        for k in where[:-1]:
            parent = parent[k]
        last = where[-1]
        if op == "set":
            parent[last] = args[0]
        elif op == "delete":
            del parent[last]
        elif op == "append":
            parent[last].append(args[0])
        elif op == "raw":
            parent[last] = json.loads(args[0])
        elif op == "repeat_item":
            parent[last] = [parent[last][args[0]]] * args[1]
        elif op == "generate":
            parent[last] = _generate(args[0])
        else:
            raise AssertionError(f"unknown op {op}")
    return d


def _json_key(item):
    """A hashable key equal for two items exactly when they are the same JSON value (True and
    1, 1 and 1.0 stay apart), or None where there is none."""
    if item is None or isinstance(item, (bool, int, float, str)):
        return (type(item), item)
    try:
        return json.dumps(item, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _items_once(validator, items, instance, schema):
    """jsonschema's ``items`` keyword, but an item with the same JSON value as an earlier item
    of the same array that had no error is not walked again. ``items`` checks every item
    against the same subschema, on its own, so such an item has no error either; any other
    item (new, or one whose twin had errors) is checked as jsonschema checks it. The shared
    cases' big arrays are one value repeated (250,001 nulls, 10,001 equal remarks): jsonschema
    walked every copy, most of this file's CPU time."""
    items_keyword = jsonschema.Draft202012Validator.VALIDATORS["items"]
    if items is False or not validator.is_type(instance, "array"):
        yield from items_keyword(validator, items, instance, schema)
        return
    valid = set()
    for index in range(len(schema.get("prefixItems", [])), len(instance)):
        key = _json_key(instance[index])
        if key is not None and key in valid:
            continue
        errors = list(validator.descend(instance=instance[index], schema=items, path=index))
        if not errors and key is not None:
            valid.add(key)
        yield from errors


ItemsOnceValidator = jsonschema.validators.extend(jsonschema.Draft202012Validator,
                                                  {"items": _items_once})


def test_the_items_once_validator_finds_what_jsonschema_finds():
    """Same errors (keyword, path, message, leaves under anyOf) as Draft202012Validator on
    arrays mixing repeated valid and invalid items, nested arrays and repeated objects."""
    data = inspection_json(gemm_inspection())
    sass = data["stages"]["sass"]
    sass["line_map"] = [1, 1, None, None, 0, 0, "x", "x", 1.0, 1, True, True, 1.5, 7, 7]
    data["stages"]["tileir"]["tokens"][0] = [["k", 2], ["k", 2], ["k", 0], ["k", 0], ["?", 1],
                                             ["k", 2], ["k", 2, 3], ["k", 2]]
    remark = {"kind": "missed", "category": "c", "message": "m", "line": 5, "col": None,
              "pass_name": "p"}
    data["remarks"] = [remark, dict(remark), dict(remark, line=0), dict(remark, line=0),
                       dict(remark, col="x"), remark]
    data["show"] = ["sass", "sass", "nope", "nope"]

    def found(cls):
        errors = list(cls(mime_schema()).iter_errors(data))
        return sorted((e.validator, tuple(e.absolute_path), e.message)
                      for e in [*errors, *_leaf_errors(errors)])

    plain = found(jsonschema.Draft202012Validator)
    assert len({path for _, path, _ in plain}) >= 10, plain
    assert found(ItemsOnceValidator) == plain


def _profile_validator(cls=jsonschema.Draft202012Validator):
    referencing = pytest.importorskip("referencing")
    from tile_lab.render.profile_view import PROFILE_SCHEMA_FILE

    schema = json.loads(PROFILE_SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    registry = referencing.Registry().with_resource(
        "mime_schema.json", referencing.Resource.from_contents(mime_schema()))
    return cls(schema, registry=registry)


def _leaf_errors(errors) -> list:
    """The errors under anyOf/allOf branches, flattened (a size error inside a branch)."""
    out = []
    for e in errors:
        out.extend(_leaf_errors(e.context) if e.context else [e])
    return out


def test_schema_agrees_with_the_shared_cases():
    """labextension/test/fixtures/schema_cases.json.gz: the same cases the extension's parser
    is tested on (test/schema.test.ts). valid: no error; cut: only size errors (the parser
    shows the data cut, with a notice); refused: another error (the parser refuses it)."""
    cases = json.loads(gzip.decompress((CASES / "schema_cases.json.gz").read_bytes()))["cases"]
    # each distinct item of an array checked once (_items_once): the same errors, found
    # without walking 250,001 equal entries one by one
    validators = {"inspection": ItemsOnceValidator(mime_schema()),
                  "profile": _profile_validator(ItemsOnceValidator)}
    seen = {"valid": 0, "cut": 0, "refused": 0}
    for case in cases:
        errors = list(validators[case["base"]].iter_errors(apply_case(case)))
        leaves = {e.validator for e in _leaf_errors(errors)}
        seen[case["expect"]] += 1
        if case["expect"] == "valid":
            assert errors == [], (case["name"], [e.message[:200] for e in errors])
        elif case["expect"] == "cut":
            assert errors and leaves <= SIZE_KEYWORDS, (case["name"], leaves)
        else:
            assert errors and not leaves <= SIZE_KEYWORDS, (case["name"], leaves)
    assert seen["valid"] >= 5 and seen["cut"] >= 10 and seen["refused"] >= 50, seen


def test_the_tma_opcode_enums_are_the_analysis_opcode_lists():
    from tile_lab.render.tma import PLAIN_OPCODES, TMA_OPCODES

    d = mime_schema()["$defs"]
    assert tuple(d["tmaOpcode"]["enum"]) == TMA_OPCODES
    assert tuple(d["plainOpcode"]["enum"]) == PLAIN_OPCODES


def test_a_version_1_view_without_tma_still_validates():
    """Notebooks saved before version 2 hold version-1 views (no ``tma``): still valid."""
    data = inspection_json(gemm_inspection())
    data.pop("tma")
    data["version"] = 1
    assert _errors(data) == []


def test_the_writer_cuts_to_the_limits_and_says_so(monkeypatch):
    """An Inspection over the limits (here the schema's limits scaled down, so the test is
    quick: a SASS longer than `rows`, more remarks than `remarks`, a long kernel name) is
    written cut to them, valid against the schema, with the sizes before in `truncated`."""
    from dataclasses import replace

    from tile_lab.compile.artifacts import Remark, StageText
    from tile_lab.render import mime as mime_mod

    real = mime_mod.mime_limits()
    lim = replace(real, rows=1000, remarks=50, text_chars=30_000, tma_lines=2)
    monkeypatch.setattr(mime_mod, "mime_limits", lambda: lim)
    insp = gemm_inspection(show=("source", "tileir", "sass", "remarks"))
    n = 1500
    sass = StageText("sass", "  /*0000*/ NOP ;\n" * n, (None,) * n)
    remarks = tuple(Remark("missed", "c", "m", line=None) for _ in range(80))
    big = replace(insp, kernel_name="k" * 5000, remarks=remarks,
                  stages={**insp.stages, "sass": sass})
    data = inspection_json(big)
    assert _errors(data) == []
    assert data["truncated"] == {"stages.sass.text": n, "remarks": 80, "tma.lines": 3}
    assert [t["line"] for t in data["tma"]["lines"]] == [16, 17]
    assert data["tma"]["summary"].startswith("0 of 3 ")  # still counts every line
    assert len(data["stages"]["sass"]["line_map"]) == 1000
    assert data["stages"]["sass"]["text"].count("\n") == 1000
    assert len(data["remarks"]) == 50
    assert len(data["kernel_name"]) == real.name_chars and data["kernel_name"].endswith("…")
    # the character limit cuts at a line break too
    wide = replace(big, stages={**insp.stages, "sass": StageText("sass", "x" * 99 + "\n" * 0
                                                                 + ("y" * 99 + "\n") * 900,
                                                                 (None,) * 901)})
    text = inspection_json(wide)["stages"]["sass"]["text"]
    assert len(text) <= 30_000 and text.endswith("\n")
    # below the limits nothing changes: no `truncated` field
    monkeypatch.setattr(mime_mod, "mime_limits", lambda: real)
    assert "truncated" not in inspection_json(insp)
