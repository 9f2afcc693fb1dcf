"""The profile views, from the recorded H100 profiles in notebooks/data and the kernels
compiled here for sm_90 (same toolchain: every instruction joins)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import tile_lab
from tile_lab.render.html import view_class
from tile_lab.render.profile_view import (
    PROFILE_MIME_TYPE,
    heat_level,
    profile_comparison_html,
    profile_overlay_json,
    profile_summary_html,
    profile_view_html,
)

ROOT = Path(__file__).parent.parent
DATA = ROOT / "notebooks" / "data"
SIG = "f16[4096,4096], f16[4096,4096], f16[4096,4096], 128, 128, 64"


@pytest.fixture(scope="module")
def gemm():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from gemm_kernels import gemm_naive
    finally:
        sys.path.remove(str(ROOT / "bench"))
    insp = tile_lab.inspect(gemm_naive, SIG, arch="sm_90", show="source,tileir,sass")
    return insp, tile_lab.load_profile(DATA / "profile_gemm_best.json.gz")


def _heat_rules(page: str, vclass: str) -> dict[int, int]:
    return {int(n): int(h) for n, h in re.findall(
        rf"\.{vclass} \.tl-l(\d+)>\.tl-g\{{background:var\(--tl-h(\d)\)\}}", page)}


def test_heat_on_the_mma_and_load_lines(gemm):
    insp, prof = gemm
    page = profile_view_html(insp, prof)
    heat = _heat_rules(page, view_class(insp))
    src = dict(insp.source_lines)
    mma = next(n for n, t in src.items() if "ct.mma" in t)
    load_a = next(n for n, t in src.items() if "ct.load(A" in t)
    assert heat[mma] == 5  # the hottest line
    assert heat[load_a] >= 1
    assert all(level <= heat[mma] for level in heat.values())
    # the same rule colours that line in every pane: rows of all three carry tl-l<mma>
    for pane in ("source", "tileir", "sass"):
        body = page.split(f'tl-pane-{pane}"', 1)[1].split("</section>", 1)[0]
        assert f"tl-l{mma}" in body
    # per-instruction heat in the SASS pane, and the hover panel for the mma line
    assert re.search(r"\.tl-pane-sass \.tl-code>:nth-child\(\d+\)>\.tl-g\{background:var"
                     r"\(--tl-h5\)\}", page)
    assert f".tl-prof:has(.tl-l{mma}:hover) .tl-stall-{mma}{{display:block}}" in page
    assert f'class="tl-stall tl-stall-{mma}"' in page


def test_sass_heat_rows_are_the_hottest_instruction(gemm):
    insp, prof = gemm
    page = profile_view_html(insp, prof)
    rows = [int(n) for n in re.findall(
        r"\.tl-pane-sass \.tl-code>:nth-child\((\d+)\)>\.tl-g\{background:var\(--tl-h5\)\}",
        page)]
    hottest = prof.hot_instructions(1)[0]
    text_lines = insp.stages["sass"].text.splitlines()
    assert any(f"/*{hottest.offset:04x}*/" in text_lines[r - 1] for r in rows)


def test_hot_table_and_determinism(gemm):
    insp, prof = gemm
    page = profile_view_html(insp, prof)
    assert page == profile_view_html(insp, prof)
    assert "/tmp/" not in page and "ipykernel" not in page
    table = page.split('<table class="tl-hot"', 1)[1].split("</table>", 1)[0]
    first = table.split("<tr", 2)[2]  # the first data row
    assert "acc = ct.mma(a, b, acc)" in first and "long_sb" in first
    assert "(instructions with no source line)" in table
    assert "NVIDIA H100 80GB HBM3" in page and "source counters" in page


def test_summary_and_comparison_show_the_cliff():
    best = tile_lab.load_profile(DATA / "profile_gemm_best.json.gz")
    cliff = tile_lab.load_profile(DATA / "profile_gemm_cliff.json.gz")
    assert "spills" not in profile_summary_html(best)
    assert "986 STL + 1,103 LDL, 3,736 B stack/thread" in profile_summary_html(cliff)
    page = profile_comparison_html([("best", best), ("cliff", cliff)])
    assert page == profile_comparison_html([("best", best), ("cliff", cliff)])
    assert "spill instructions (LDL/STL, any line)" in page
    assert page.count("<tr>") == 1 + len({lp.line for p in (best, cliff)
                                          for lp in p.by_line()}) + 2
    bundle = tile_lab.compare_profiles({"best": best, "cliff": cliff})._repr_mimebundle_()
    assert bundle["text/html"] == page and "cliff: gemm_naive" in bundle["text/plain"]


def test_profile_shifts_to_the_same_source_elsewhere(gemm):
    insp, prof = gemm
    moved = prof.shifted_to(prof.first_line + 3)
    assert _heat_rules(profile_view_html(insp, moved), view_class(insp)) == \
        _heat_rules(profile_view_html(insp, prof), view_class(insp))


def test_heat_levels():
    assert heat_level(0, 100) == 0 and heat_level(100, 0) == 0
    assert heat_level(0, 1000) == 0 and heat_level(9, 1000) == 0  # under 1%: no heat
    assert heat_level(10, 1000) == 1 and heat_level(1000, 1000) == 5
    assert heat_level(601, 1000) == 4


def test_overlay_json_matches_the_html(gemm):
    insp, prof = gemm
    overlay = profile_overlay_json(insp, prof)
    assert json.loads(json.dumps(overlay)) == overlay  # plain JSON
    heat = _heat_rules(profile_view_html(insp, prof), view_class(insp))
    assert {int(k): v for k, v in overlay["line_heat"].items() if v} == heat
    assert overlay["hot_lines"][0]["text"] == "acc = ct.mma(a, b, acc)"
    assert overlay["version"] == 1 and overlay["inspection"]["version"] == 2
    assert "schema" not in overlay and "schema_version" not in overlay  # one version field
    rows = insp.stages["sass"].text.splitlines()
    hottest = prof.hot_instructions(1)[0]
    hot_rows = [int(r) for r, level in overlay["sass_row_heat"].items() if level == 5]
    assert any(f"/*{hottest.offset:04x}*/" in rows[r] for r in hot_rows)
    bundle = prof.view(insp)._repr_mimebundle_()
    assert bundle[PROFILE_MIME_TYPE] == overlay


# -- the MIME contract: profile_schema.json (its inspection is mime_schema.json) -------------

def _profile_validator():
    jsonschema = pytest.importorskip("jsonschema", reason="pip install -e '.[test]'")
    referencing = pytest.importorskip("referencing", reason="pip install -e '.[test]'")
    from tile_lab.render.mime import mime_schema
    from tile_lab.render.profile_view import PROFILE_SCHEMA_FILE

    schema = json.loads(PROFILE_SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    registry = referencing.Registry().with_resource(
        "mime_schema.json", referencing.Resource.from_contents(mime_schema()))
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _errors(validator, data) -> list[str]:
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(data)]


@pytest.fixture(scope="module")
def compared(gemm):
    insp, best = gemm
    cliff = tile_lab.load_profile(DATA / "profile_gemm_cliff.json.gz")
    return tile_lab.compare_profiles({"best 128x128x64": best, "cliff 256x256x32": cliff}
                                     ).view(insp)


def test_profile_bundle_validates_against_its_schema(gemm, compared):
    validator = _profile_validator()
    insp, prof = gemm
    assert _errors(validator, profile_overlay_json(insp, prof)) == []
    vadd = tile_lab.load_profile(DATA / "profile_vector_add.json.gz")
    assert vadd.total_samples > 0
    bundle = compared._repr_mimebundle_()
    data = bundle[PROFILE_MIME_TYPE]
    assert _errors(validator, data) == []
    # the comparison carries both configs, lines in the inspection's numbering, and the
    # cliff's spills; the HTML of the same output shows the same side by side
    best, cliff = data["comparison"]
    assert (best["label"], cliff["label"]) == ("best 128x128x64", "cliff 256x256x32")
    assert best["spills"] == "" and "986 STL + 1,103 LDL" in cliff["spills"]
    assert cliff["spill_instructions"]["samples"] > 0
    src = dict(insp.source_lines)
    assert set(best["line_samples"]) <= {str(n) for n in src}
    assert set(cliff["line_samples"]) <= {str(n) for n in src}
    assert "spill instructions (LDL/STL, any line)" in bundle["text/html"]
    assert sum(best["line_samples"].values()) + best["unattributed"]["samples"] == \
        best["total_samples"]


def test_profile_schema_rejects_what_the_extension_would_refuse(gemm, compared):
    validator = _profile_validator()
    good = compared._repr_mimebundle_()[PROFILE_MIME_TYPE]
    bad_cases = {
        "old schema fields": lambda d: d.update(schema="tile-lab.profile-overlay",
                                                schema_version=1),
        "version 2": lambda d: d.update(version=2),
        "no version": lambda d: d.pop("version"),
        "heat 6": lambda d: d["line_heat"].update({"16": 6}),
        "heat key not a line": lambda d: d["line_heat"].update({"position:fixed": 1}),
        "line 0": lambda d: d["line_samples"].update({"0": 1}),
        "negative samples": lambda d: d["line_samples"].update({"16": -1}),
        "fractional samples": lambda d: d.update(total_samples=1.5),
        "stall reason with markup": lambda d: d["line_stalls"]["16"].update({"<b>": 1}),
        "stall reason __proto__": lambda d: d["stall_reasons"].update({"__proto__": "x"}),
        "sass row key": lambda d: d["sass_row_heat"].update({"-1": 1}),
        "hot line text not a string": lambda d: d["hot_lines"][0].update(text=["<i>"]),
        "hot line extra field": lambda d: d["hot_lines"][0].update(style="color:red"),
        "metric that is text": lambda d: d["metrics"].update(duration_ns="url(x)"),
        "comparison label not a string": lambda d: d["comparison"][0].update(label=1),
        "comparison stall count": lambda d: d["comparison"][1]["line_stalls"]["16"].update(
            long_sb="9"),
        "bad inspection": lambda d: d["inspection"].update(version=3),
    }
    for name, spoil in bad_cases.items():
        d = json.loads(json.dumps(good))
        spoil(d)
        assert _errors(validator, d), f"the schema accepts {name}"


def test_extension_profile_colours_are_the_html_views():
    """labextension/style/profile.css draws heat and stall bars in this module's colours."""
    from tile_lab.render import profile_view as pv

    css = (ROOT / "labextension" / "style" / "profile.css").read_text()
    light, dark = css.split("[data-jp-theme-light='false'] .tl-prof-view {", 1)
    for i, (lc, dc) in enumerate(pv._HEAT):
        assert f"--tl-h{i}: {lc};" in light and f"--tl-h{i}: {dc};" in dark.split("}", 1)[0]
    for reason, colour in pv._STALL_COLORS.items():
        assert f".tl-s-{reason} {{\n  background: {colour};\n}}" in css
    assert f".tl-s-other {{\n  background: {pv._OTHER_COLOR};\n}}" in css
    ts = (ROOT / "labextension" / "src" / "profileView.ts").read_text()
    assert all(f"'{reason}'" in ts for reason in pv._STALL_COLORS)


def test_overlay_keeps_the_hottest_lines_within_the_schemas_limit(gemm, monkeypatch):
    """Per-line maps hold at most the schema's maxProperties (2,000) source lines; over it
    the writer keeps the hottest (here the limit is set to 2 to see it)."""
    from tile_lab.render import profile_view as pv

    insp, prof = gemm
    assert pv._profile_line_limit() == 2000  # read from profile_schema.json
    monkeypatch.setattr(pv, "_profile_line_limit", lambda: 2)
    data = pv.profile_overlay_json(insp, prof, compare=[("best", prof)])
    hottest = sorted(prof.by_line(), key=lambda lp: -lp.samples)[:2]
    assert sorted(data["line_samples"]) == sorted(str(lp.line) for lp in hottest)
    assert set(data["line_heat"]) == set(data["line_stalls"]) == set(data["line_samples"])
    assert len(data["comparison"][0]["line_samples"]) == 2


def test_the_profile_view_builds_the_inspection_payload_once(gemm, monkeypatch):
    import tile_lab.render.html as html_module
    import tile_lab.render.profile_view as profile_module

    insp, prof = gemm
    built = []
    real = html_module.inspection_json

    def counting(i):
        built.append(i.kernel_name)
        return real(i)

    monkeypatch.setattr(html_module, "inspection_json", counting)
    monkeypatch.setattr(profile_module, "inspection_json", counting)
    bundle = prof.view(insp)._repr_mimebundle_()
    assert built == ["gemm_naive"]  # the HTML's class, its panes and the overlay share it
    assert bundle[PROFILE_MIME_TYPE]["inspection"] == real(insp)
    assert bundle["text/plain"].startswith("ProfileView(")
