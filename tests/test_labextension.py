"""The JupyterLab extension (labextension/): its unit tests, its data contract with the
Python side, and a UI test in a real browser against a JupyterLab server started here.

Node runs the extension's own tests (``npm test``: node's test runner on the compiled
TypeScript, jsdom for the DOM). The UI test drives the system Chromium with
playwright-core. Both skip, saying why, where Node, the installed node_modules or
Chromium are missing.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import browser_env
import lab_server as lab_server_mod
import pytest
from browser_env import node_module
from shared_kernels import vadd_cell

from tile_lab.compile.artifacts import MIME_TYPE, Inspection, Remark, StageText
from tile_lab.render.html import inspection_json

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "labextension"
FIXTURE = EXT / "test" / "fixtures" / "inspection.json.gz"  # gzip -9n
PROFILE_FIXTURE = EXT / "test" / "fixtures" / "profile.json.gz"  # gzip -9n
ARTIFACTS = ROOT / "test-artifacts"

KERNEL_CELL = "%%tile\n" + vadd_cell("vadd", header="")


def sample_inspection() -> Inspection:
    """A small, hand-made Inspection shaped like a real ``%%tile`` vector add."""
    lines = KERNEL_CELL.splitlines()
    source = "\n".join(lines[1:]) + "\n"
    tileir = StageText("tileir", "\n".join([
        "entry @vadd(%a: tile<ptr<f32>>, %b: tile<ptr<f32>>, %c: tile<ptr<f32>>) {",
        "  %bid = get_tile_block_id : tile<i32>",
        "  %ta = load_view_tko weak %va[%bid] : tile<128xf32>",
        "  %tb = load_view_tko weak %vb[%bid] : tile<128xf32>",
        "  %s = addf %ta, %tb : tile<128xf32>",
        "  store_view_tko weak %s, %vc[%bid] : tile<128xf32>",
        "  return",
        "}",
    ]), (None, 4, 5, 6, 7, 7, None, None))
    sass = StageText("sass", "\n".join([
        "        /*0000*/                   LDC R1, c[0x0][0x28] ;",
        "        /*0010*/                   S2R R0, SR_CTAID.X ;",
        "        /*0020*/                   LDG.E.128 R4, desc[UR4][R2.64] ;",
        "        /*0030*/                   LDG.E.128 R8, desc[UR4][R6.64] ;",
        "        /*0040*/                   FADD R4, R4, R8 ;",
        "        /*0050*/                   STG.E.128 desc[UR4][R10.64], R4 ;",
        "        /*0060*/                   EXIT ;",
    ]), (None, 4, 5, 6, 7, 7, None))
    return Inspection(
        kernel_name="vadd", filename="<tile-cell-1>", first_line=2, source=source,
        arch="sm_100", signature="f32[4096], f32[4096], f32[4096], TILE=128",
        hints={}, stages={"tileir": tileir, "sass": sass}, cubin=b"\x7fELF",
        remarks=(Remark("passed", "memory", "vectorized load <b>128-bit</b>", line=5, col=9,
                        pass_name="vectorize"),),
        versions={"cuda.tile": "1.7.0", "tileiras": "13.4"},
    )


def fixture_payload() -> dict:
    """The MIME payload exactly as the Python side writes it (inspection_json)."""
    return inspection_json(sample_inspection())


def profile_fixture() -> dict:
    """The committed profile fixture (gzipped to keep the repository small)."""
    return json.loads(gzip.decompress(PROFILE_FIXTURE.read_bytes()))


def profile_payload() -> dict:
    """The profile MIME payload of the tutorial GEMM (compiled here for sm_90, the same
    toolchain as the recorded H100 profiles) with the recorded best config's profile and
    the best-vs-cliff comparison, exactly as ``ProfileView`` emits it."""
    from tile_lab.render.profile_view import PROFILE_MIME_TYPE

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from gemm_kernels import gemm_naive
    finally:
        sys.path.remove(str(ROOT / "bench"))
    import tile_lab

    data = ROOT / "notebooks" / "data"
    insp = tile_lab.inspect(gemm_naive, "f16[4096,4096], f16[4096,4096], f16[4096,4096], "
                            "128, 128, 64", arch="sm_90", show="source,tileir,sass")
    profiles = {"best 128x128x64": tile_lab.load_profile(data / "profile_gemm_best.json.gz"),
                "cliff 256x256x32": tile_lab.load_profile(data / "profile_gemm_cliff.json.gz")}
    view = tile_lab.compare_profiles(profiles).view(insp)
    return view._repr_mimebundle_()[PROFILE_MIME_TYPE]


# -- environment probes ----------------------------------------------------------------





def _run(cmd: list[str], timeout: float, env: dict | None = None
         ) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, cwd=EXT, capture_output=True, text=True, timeout=timeout,
                              env=env)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        pytest.fail(f"{' '.join(cmd)} timed out after {timeout}s:\n{(err or '')[-4000:]}")
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-6000:]}\n"
                    f"{proc.stderr[-3000:]}")
    return proc


# -- the data contract ---------------------------------------------------------------------

def test_fixture_is_what_python_makes() -> None:
    """The extension's unit tests read a committed fixture; it must match the Python side.
    Regenerate with TILE_LAB_WRITE_FIXTURE=1."""
    payload = fixture_payload()
    if os.environ.get("TILE_LAB_WRITE_FIXTURE"):  # gzipped deterministically, as ``gzip -9n``
        text = json.dumps(payload, indent=1, sort_keys=True) + "\n"
        FIXTURE.write_bytes(gzip.compress(text.encode(), 9, mtime=0))
    assert json.loads(gzip.decompress(FIXTURE.read_bytes())) == payload


def test_profile_fixture_is_what_python_makes() -> None:
    """Same for the profile view's fixture (recorded H100 profiles over the GEMM compiled
    here). Regenerate with TILE_LAB_WRITE_FIXTURE=1."""
    payload = profile_payload()
    if os.environ.get("TILE_LAB_WRITE_FIXTURE"):  # gzipped deterministically, as ``gzip -9n``
        text = json.dumps(payload, indent=None, sort_keys=True) + "\n"
        PROFILE_FIXTURE.write_bytes(gzip.compress(text.encode(), 9, mtime=0))
    assert profile_fixture() == payload


@pytest.fixture(scope="module")
def compiled_tests() -> str:
    """Compile the extension's tests (TypeScript -> labextension/lib-test) once; returns
    the node executable."""
    node = browser_env.node()
    node_module("typescript")
    _run(["npm", "run", "--silent", "build:test"], timeout=300)
    return node


def test_python_view_payload_parses_in_the_extension(tmp_path: Path, compiled_tests: str
                                                     ) -> None:
    """What ``Inspection._repr_mimebundle_`` really emits is accepted by the extension's
    parser and links rows across panes."""
    bundle = sample_inspection()._repr_mimebundle_()
    assert MIME_TYPE in bundle
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps(bundle[MIME_TYPE]))
    proc = _run([compiled_tests, "lib-test/test/summarize.js", str(payload)], timeout=60)
    summary = json.loads(proc.stdout)
    assert summary["kernel"] == "vadd"
    # line 5 (the load of a) appears in source, Tile IR, SASS and remarks
    assert summary["linked"]["5"] == {"source": [3], "tileir": [2], "sass": [2], "remarks": [0]}


# -- the extension's own unit tests -------------------------------------------------------

def test_extension_unit_tests(compiled_tests: str, tmp_path: Path) -> None:
    """``npm test`` minus the compile step (done once by the fixture), every test file in
    one Node process: ``node --test`` starts one per file, each loading jsdom again
    (~5 s of CPU a run for the nine files)."""
    files = sorted((EXT / "lib-test" / "test").glob("*.test.js"))
    assert len(files) >= 5, files
    entry = tmp_path / "all.test.mjs"
    entry.write_text("".join(f"import {json.dumps(f.as_uri())};\n" for f in files))
    # jsdom makes short-lived objects by the million: with a 128 MB young generation
    # (V8's default: 16) fewer of them are copied between scavenges; measured, ~3 s of
    # the ~20 s of CPU these tests take
    proc = _run([compiled_tests, "--max-semi-space-size=128", "--test", str(entry)],
                timeout=300)
    out = proc.stdout
    assert "# fail 0" in out, out[-3000:]
    passed = int(out.split("# pass ")[1].split()[0])
    assert passed >= 30, out[-3000:]


# -- the UI test in a real browser ------------------------------------------------------



def _notebook(cells: list[dict]) -> dict:
    return {"cells": cells, "metadata": {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}


def _code_cell(cid: str, source: str, outputs: list[dict] | None = None) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": cid, "metadata": {},
            "outputs": outputs or [], "source": source}


@pytest.fixture
def lab_server(request, tmp_path_factory):
    """``(url, root)``: this process's JupyterLab server (tests/lab_server.py: one start
    for every UI test of the run), with no kernel running and no saved workspace."""
    url, root = lab_server_mod.shared(request.config, tmp_path_factory)
    lab_server_mod.reset(url)
    yield url, root
    lab_server_mod.reset(url)


def _ui(url: str, notebook: str, mode: str, screenshot: Path, timeout: float = 240) -> dict:
    node = browser_env.node()
    node_module("typescript")
    chromium = browser_env.chromium("ui")
    env = dict(os.environ, TILE_LAB_URL=url, TILE_LAB_NOTEBOOK=notebook, TILE_LAB_MODE=mode,
               TILE_LAB_SCREENSHOT=str(screenshot), TILE_LAB_CHROMIUM=chromium)
    proc = _run([node, "ui-test/hover.mjs"], timeout=timeout, env=env)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print("UI result:", json.dumps(result))  # shown by pytest when an assertion fails
    return result


@pytest.mark.slow
def test_ui_hover_links_stored_output(lab_server) -> None:
    """Open a notebook whose stored output holds the tile-lab JSON: the view renders with
    Tile IR colours, hovering a Tile IR row highlights the linked source row, and the
    %%tile cell editor shows its header decoration."""
    url, root = lab_server
    output = {"output_type": "display_data", "metadata": {},
              "data": {MIME_TYPE: fixture_payload(), "text/plain": ["Inspection(vadd)"]}}
    nb = _notebook([_code_cell("c1", KERNEL_CELL, [output])])
    (root / "stored.ipynb").write_text(json.dumps(nb))
    shot = ARTIFACTS / "labextension-hover.png"
    result = _ui(url, "stored.ipynb", "stored", shot)
    assert result["hovered"] == {"pane": "tileir", "line": 5}
    assert result["sourceLinked"] == ["5"]
    # Tile IR syntax colours (token runs from the bundle) and the line's colour band
    tileir = result["tileir"]
    assert tileir["keywordSpans"] >= 2 and tileir["tokenSpans"] >= 20
    assert tileir["keywordColour"] != tileir["textColour"]
    assert tileir["bandColour"] not in (None, "rgba(0, 0, 0, 0)")
    assert (ARTIFACTS / "labextension-hover-view.png").is_file()
    assert result["otherLinked"] == []  # nothing of other lines lit
    assert result["afterLeave"] == 0
    assert result["headerDecorated"] is True
    assert result["badge"] == "cuTile kernel"
    assert result["keywordHighlighted"] is True
    assert result["pageErrors"] == []
    assert shot.is_file() and shot.stat().st_size > 10_000
    # highlighted rows stay readable (WCAG AA contrast) in JupyterLab Light and Dark
    assert result["lightContrast"] >= 4.5, result
    assert result["darkContrast"] >= 4.5, result
    assert (ARTIFACTS / "labextension-hover-dark.png").is_file()


def _tile_magic_ready() -> str | None:
    try:
        from tile_lab import magic  # noqa: F401
    except ImportError as exc:
        return f"the %%tile magic is not available ({exc})"
    return None


@pytest.mark.slow
def test_ui_hover_after_running_tile_cell(lab_server) -> None:
    """Run a real %%tile cell in the kernel (compiling on the CPU); its output renders in
    the extension and hovering a Tile IR row highlights the linked source row."""
    reason = _tile_magic_ready()
    if reason:
        pytest.skip(reason)
    url, root = lab_server
    setup = "import cuda.tile as ct\n%load_ext tile_lab"
    cell = KERNEL_CELL.replace(
        "%%tile", '%%tile --sig "f32[4096], f32[4096], f32[4096], 128"', 1)
    nb = _notebook([_code_cell("c0", setup), _code_cell("c1", cell)])
    (root / "run.ipynb").write_text(json.dumps(nb))
    shot = ARTIFACTS / "labextension-hover-run.png"
    result = _ui(url, "run.ipynb", "run", shot, timeout=400)
    assert result["hovered"]["pane"] == "tileir"
    assert 2 <= result["hovered"]["line"] <= 7  # a line of the kernel, as the cell numbers it
    assert result["sourceLinked"] == [str(result["hovered"]["line"])]
    assert result["otherLinked"] == []
    assert result["headerDecorated"] is True
    assert result["keywordHighlighted"] is True
    # a kernel restart resets cells' mime types; the %%tile decoration and Python
    # highlighting stay
    assert result["afterRestart"] == {"headerDecorated": True, "keywordHighlighted": True}
    assert result["pageErrors"] == []


# -- an untrusted notebook with hostile outputs --------------------------------------------

# CSS escapes and functions other sanitizers miss, positioning, markup, prototype keys.
HOSTILE = [
    "u\\72l(https://evil.example/a.png)",
    "\\55 RL(https://evil.example/b.png)",
    'image-set("https://evil.example/c.png" 1x)',
    "position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:2147483647",
    '<svg xmlns="http://www.w3.org/2000/svg" style="position:fixed;inset:0;z-index:9999;'
    'background:u\\72l(https://evil.example/d.png)" filter="url(https://evil.example/e#x)">'
    '<rect width="99" height="99" fill="url(https://evil.example/f#p)"/>'
    '<image href="https://evil.example/g.png"/></svg>',
    "<style>*{background:url(https://evil.example/h.png)}</style>",
    '<img src="https://evil.example/i.png" onerror="globalThis.pwned=1">',
    "constructor",
]


def hostile_payloads() -> list[dict]:
    """One bundle with a hostile value in every field the extension renders, then one per
    field whose hostile value the extension must refuse (it shows an error line instead)."""
    h = " ".join(HOSTILE)
    lines = "\n".join(HOSTILE) + "\n"
    every = fixture_payload()
    every.update(kernel_name=h[:1000], filename=h[:1000], arch=h[:1000], signature=h,
                 source=lines, hints={h[:100]: h[:1000], "num_ctas": json.dumps({"style": h})},
                 versions={h[:100]: h[:1000]})
    every["stages"]["tileir"].update(text=lines, line_map=[5] * len(HOSTILE))
    every["stages"]["tileir"].pop("tokens")
    every["stages"]["constructor"] = {"text": lines, "line_map": [4]}
    every["show"] = [*every["show"], "constructor"]
    every["remarks"][0].update(kind=h, category=h, message=h, pass_name=h)
    every["tma"].update(arch=h[:1000], summary=h)
    every["tma"]["lines"][0].update(reason=h)
    refused = []
    for spoil in (lambda d: d["stages"]["tileir"]["tokens"][0].append([HOSTILE[0], 1]),
                  lambda d: d["line_colors"].update({HOSTILE[3]: 1}),
                  lambda d: d["stages"].update({HOSTILE[6]: d["stages"]["sass"]}),
                  lambda d: d["show"].append(HOSTILE[5]),
                  lambda d: d.update(version=HOSTILE[1]),
                  # fields the schema does not have are refused, not ignored (issue 28)
                  lambda d: d.update(style=h, diagram={"svg": HOSTILE[4], "footprints": []}),
                  lambda d: d["stages"]["sass"].update(name=h),
                  lambda d: d["tma"]["lines"][0].update(kind=HOSTILE[6])):
        d = fixture_payload()
        spoil(d)
        refused.append(d)
    return [every, *refused]


def hostile_profile_payloads() -> list[dict]:
    """A profile bundle with a hostile value in every text field the profile view draws,
    then ones the extension must refuse (a stall reason, a heat key, a metric)."""
    h = " ".join(HOSTILE)
    every = profile_fixture()
    every.update(summary=h, gpu=h, collection={"tool": h, "plan": h, "ncu_version": h, h: h})
    every["inspection"].update(kernel_name=h, signature=h)
    every["hot_lines"][0]["text"] = h
    every["stall_reasons"] = {k: h for k in every["stall_reasons"]}
    for entry in every["comparison"]:
        entry.update(label=h, summary=h, gpu=h, spills=h)
    refused = []
    for spoil in (lambda d: d["line_stalls"]["16"].update({HOSTILE[4]: 1}),
                  lambda d: d["line_heat"].update({HOSTILE[3]: 5}),
                  lambda d: d["metrics"].update(duration_ns=HOSTILE[0])):
        d = profile_fixture()
        spoil(d)
        refused.append(d)
    return [every, *refused]


@pytest.mark.slow
def test_ui_untrusted_hostile_notebook_fetches_nothing_and_draws_inside_its_outputs(
        lab_server) -> None:
    """An untrusted notebook whose outputs carry hostile values in every field of the
    tile-lab bundle and of the profile bundle (plus hostile CSS in text/html and SVG
    outputs for JupyterLab's own renderers):
    opening it makes no request to another host, nothing is drawn outside an output area,
    nothing runs, and the tile-lab outputs render as text or as a refusal. The driver's
    controls (an outside <img>, a position:fixed box put in by hand) prove both detectors
    fire."""
    from tile_lab.render.profile_view import PROFILE_MIME_TYPE

    url, root = lab_server
    payloads = hostile_payloads()
    outputs = [{"output_type": "display_data", "metadata": {},
                "data": {MIME_TYPE: p, "text/plain": ["Inspection(?)"]}} for p in payloads]
    profiles = hostile_profile_payloads()
    profile_outputs = [{"output_type": "display_data", "metadata": {},
                        "data": {PROFILE_MIME_TYPE: p, "text/plain": ["ProfileView(?)"]}}
                       for p in profiles]
    # JupyterLab's own HTML renderer loads <img src="https://..."> in untrusted output by
    # design, so its hostile output holds the CSS and SVG cases only.
    css_cases = "".join(x for x in HOSTILE if not x.startswith("<img"))
    html_out = {"output_type": "display_data", "metadata": {},
                "data": {"text/html": css_cases, "text/plain": ["?"]}}
    svg_out = {"output_type": "display_data", "metadata": {},
               "data": {"image/svg+xml": HOSTILE[4], "text/plain": ["?"]}}
    source = KERNEL_CELL + "# " + " ".join(HOSTILE) + "\n"
    nb = _notebook([_code_cell("c1", source, outputs[:3]), _code_cell("c2", "x", outputs[3:]),
                    _code_cell("c3", "y", [html_out, svg_out]),
                    _code_cell("c4", "z", profile_outputs)])
    (root / "hostile.ipynb").write_text(json.dumps(nb))  # unsigned: untrusted when opened
    node = browser_env.node()
    node_module("playwright-core")
    shot = ARTIFACTS / "labextension-hostile.png"
    env = dict(os.environ, TILE_LAB_URL=url, TILE_LAB_NOTEBOOK="hostile.ipynb",
               TILE_LAB_SCREENSHOT=str(shot), TILE_LAB_CHROMIUM=browser_env.chromium("ui"),
               TILE_LAB_VIEWS=str(len(payloads) + len(profiles)))
    proc = _run([node, "ui-test/hostile.mjs"], timeout=240, env=env)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print("UI result:", json.dumps(result)[:4000])
    assert result["trusted"] is False
    # each profile output holds one .tl-view: its inspection's, or the refusal
    assert result["views"] == len(payloads) + len(profiles)
    assert result["refused"] == len(payloads) - 1 + len(profiles) - 1
    assert result["profileViews"] == 1
    assert result["outsideRequests"] == []
    assert result["outsideDrawing"] == []
    assert result["nativeCodeTitles"] == 0  # a stage named constructor is titled by its name
    assert result["svgInViews"] == 0 and result["styledInViews"] == 0
    assert result["pwned"] is None
    assert result["pageErrors"] == []
    assert result["controls"] == {"requestSeen": True, "overlaySeen": True}


# -- a recorded GPU profile in the extension ---------------------------------------------

@pytest.mark.slow
def test_ui_profile_heat_gutter_and_stall_panel(lab_server) -> None:
    """A notebook whose stored output is the recorded H100 profile of the tutorial GEMM
    (best 128x128x64, with the cliff config beside it), as ``ProfileView`` emits it: the
    extension (not the HTML fallback) draws the heat gutter on the mma and load lines in
    every pane, and hovering the mma line's Tile IR row shows its stall reasons, in the
    light and the dark theme (screenshots in test-artifacts/)."""
    from tile_lab.render.profile_view import PROFILE_MIME_TYPE

    url, root = lab_server
    payload = profile_fixture()
    source = payload["inspection"]["source"].splitlines()
    first = payload["inspection"]["first_line"]
    line_of = {t.strip(): first + i for i, t in enumerate(source)}
    mma = line_of["acc = ct.mma(a, b, acc)"]
    loads = [n for t, n in line_of.items() if t.startswith(("a = ct.load(", "b = ct.load("))]
    assert len(loads) == 2
    output = {"output_type": "display_data", "metadata": {},
              "data": {PROFILE_MIME_TYPE: payload, "text/html": "<div class='tl-prof'>x</div>",
                       "text/plain": ["ProfileView(gemm_naive)"]}}
    nb = _notebook([_code_cell("c1", "tile_lab.compare_profiles(...).view(insp)", [output])])
    (root / "profile.ipynb").write_text(json.dumps(nb))
    shot = ARTIFACTS / "labextension-profile.png"
    env = dict(os.environ, TILE_LAB_URL=url, TILE_LAB_NOTEBOOK="profile.ipynb",
               TILE_LAB_SCREENSHOT=str(shot), TILE_LAB_CHROMIUM=browser_env.chromium("ui"),
               TILE_LAB_HOVER_LINE=str(mma))
    node = browser_env.node()
    node_module("playwright-core")
    proc = _run([node, "ui-test/profile.mjs"], timeout=240, env=env)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print("UI result:", json.dumps(result)[:4000])
    assert result["pageErrors"] == []
    for theme in ("light", "dark"):
        r = result[theme]
        assert r["htmlFallback"] == 0  # the extension's view, not the text/html output
        assert r["rowsWithGutter"] == r["rows"] > 100
        for pane in ("source", "tileir", "sass"):
            heat = r["heat"][pane]
            assert heat.get(str(mma)) == 5, (theme, pane, heat)
            # SASS heat is per instruction (share of the hottest one): there one load line's
            # instructions stay under 1% of the HGMMA wait's, the other does not
            hot_loads = [n for n in loads if heat.get(str(n), 0) >= 1]
            assert hot_loads == loads or (pane == "sass" and hot_loads), (theme, pane, heat)
        assert max(r["heat"]["source"].values()) == 5
        assert r["colour"] not in (None, "rgba(0, 0, 0, 0)") and r["width"] >= 4
        hover = r["hover"]
        assert hover["head"].startswith(f"line {mma}acc = ct.mma(a, b, acc)"), hover
        assert hover["reasons"][0] == "long_sb" and len(hover["reasons"]) >= 3
        assert hover["firstBarWidth"] > 50  # ~85% of a 12em box
        assert hover["firstBarColour"] not in (None, "rgba(0, 0, 0, 0)")
        assert hover["sourceLinked"] == [str(mma)]  # the panes stay linked
    assert result["light"]["colour"] != result["dark"]["colour"]
    assert result["hotTable"][0] == str(mma)
    assert result["compareLabels"] == ["best 128x128x64", "cliff 256x256x32"]
    for name in ("labextension-profile.png", "labextension-profile-dark.png"):
        assert (ARTIFACTS / name).stat().st_size > 20_000
