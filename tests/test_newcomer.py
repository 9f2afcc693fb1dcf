"""The newcomer check (issue 7): the README's main command opens JupyterLab with the
tutorials, and notebook 1 runs top to bottom in a real browser with the inspect view and a
diagram on screen.

CI runs this on a fresh clone, so it checks what a newcomer gets. The server is started
with the command the README gives (read from README.md, run with the venv running the
tests) plus what a headless test needs: no browser, a free port, no token, the app exposed
to the page. It serves a copy of ``notebooks/`` with the stored outputs removed, so what
the browser shows comes from this run and the committed notebooks are never rewritten by
JupyterLab's autosave. The browser side is ``labextension/ui-test/newcomer.mjs``
(system Chromium driven by playwright-core from labextension/node_modules); it skips,
saying why, where Node, playwright-core or Chromium are missing.

The screenshot lands in ``test-artifacts/newcomer-notebook1.png``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import browser_env
import pytest
from browser_env import free_port, node_module

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
EXT = ROOT / "labextension"
BUILT = ROOT / "tile_lab" / "labextension"
DRIVER = EXT / "ui-test" / "newcomer.mjs"
SCREENSHOT = ROOT / "test-artifacts" / "newcomer-notebook1.png"
NOTEBOOK_1 = "01_first_tile_kernel.ipynb"


def readme_main_command() -> list[str]:
    """The README's "open the tutorials" command, as the words of its last step
    (``.venv/bin/jupyter lab notebooks/``): the first command block of the Set up section."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    assert blocks, "README.md has no ```bash block"
    return blocks[0].strip().split("&&")[-1].split()


def test_readme_main_command_opens_jupyterlab_on_the_notebooks() -> None:
    """The fixture below starts exactly this command; if the README changes its main
    command, this says so rather than checking something the README no longer says."""
    words = readme_main_command()
    assert Path(words[0]).name == "jupyter", words
    assert words[1:] == ["lab", "notebooks/"], words


# -- environment probes ----------------------------------------------------------------





def _venv_jupyter() -> str:
    """``.venv/bin/jupyter`` of the README, i.e. the jupyter of the running interpreter."""
    found = shutil.which("jupyter", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"no `jupyter` next to {sys.executable}: jupyterlab is a dependency of "
                    "tile_lab, so `pip install -e .` should have installed it")
    return found


def _copy_without_outputs(src: Path, dst: Path) -> list[str]:
    """Copy the notebooks (and their data) with every stored output removed."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(
        "src", ".ipynb_checkpoints", "__pycache__"))
    names = []
    for path in sorted(dst.glob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                cell["outputs"] = []
                cell["execution_count"] = None
        path.write_text(json.dumps(nb, indent=1) + "\n")
        names.append(path.name)
    return names


def _federated_extensions(lab_page: str) -> dict[str, dict]:
    """The prebuilt extensions the /lab page tells the browser to load (name -> entry with
    its ``load`` path), from the page's jupyter-config-data."""
    m = re.search(r'<script id="jupyter-config-data"[^>]*>(.*?)</script>', lab_page, re.S)
    assert m, "the /lab page has no jupyter-config-data"
    return {e["name"]: e for e in json.loads(m.group(1)).get("federated_extensions", [])}


# -- the server the README starts -------------------------------------------------------

@pytest.fixture(scope="module")
def newcomer_lab(tmp_path_factory: pytest.TempPathFactory):
    """``jupyter lab notebooks/`` from a clone's root, on a copy of the notebooks.

    Jupyter's per-user directories point into the temporary folder (a newcomer has no
    settings, kernels or extensions of their own); JUPYTER_PATH is left as it is, so the
    extension found is the one the install put into the environment."""
    base = tmp_path_factory.mktemp("newcomer")
    clone = base / "clone"
    names = _copy_without_outputs(NOTEBOOKS, clone / "notebooks")
    home = base / "home"
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("MPLBACKEND", "PYTEST_CURRENT_TEST")}  # set by the test session
    env.update(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"))
    # No "get notified about Jupyter news?" toast over the screenshot.
    settings = (home / "config" / "lab" / "user-settings" / "@jupyterlab"
                / "apputils-extension" / "notification.jupyterlab-settings")
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"fetchNews": "false"}))

    words = readme_main_command()
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    cmd = [_venv_jupyter(), *words[1:], *as_root, "--no-browser", f"--port={port}",
           "--ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=",
           "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log_path = base / "server.log"
    log = log_path.open("w")
    proc = subprocess.Popen(cmd, cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # two shared cores: be generous (a hang guard)
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(f"`{' '.join(cmd)}` did not start:\n"
                                + log_path.read_text()[-4000:])
                time.sleep(0.3)
        with urllib.request.urlopen(f"{url}/lab/api/extensions", timeout=120) as r:
            extensions = {e["name"]: e for e in json.load(r)}
        with urllib.request.urlopen(f"{url}/lab", timeout=120) as r:
            loaded = _federated_extensions(r.read().decode())
        yield {"url": url, "notebooks": names, "extensions": extensions, "loaded": loaded,
               "log": log_path}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_newcomer_gets_the_extension(newcomer_lab: dict) -> None:
    """The install put the tile-lab JupyterLab extension where ``jupyter lab`` finds it,
    and it is the build in this checkout (not a copy left from an older install)."""
    if not (BUILT / "package.json").is_file():
        pytest.skip("the extension is not built (tile_lab/labextension/): the install ran "
                    "without Node, so JupyterLab shows the HTML fallback view")
    ext = newcomer_lab["extensions"].get("tile-lab")
    assert ext is not None, (
        f"`jupyter lab` of {sys.prefix} does not list the tile-lab extension "
        f"(has {sorted(newcomer_lab['extensions'])}); `pip install -e .` installs it")
    assert ext["enabled"] is True and ext["status"] == "ok", ext
    loaded = newcomer_lab["loaded"].get("tile-lab")
    assert loaded is not None, f"the /lab page does not load tile-lab: {newcomer_lab['loaded']}"
    built = json.loads((BUILT / "package.json").read_text())["jupyterlab"]["_build"]
    assert loaded["load"] == built["load"], (
        f"JupyterLab loads {loaded['load']} but this checkout built {built['load']}: the "
        "installed copy is stale; re-run `pip install -e .`")


@pytest.mark.slow
def test_notebook_1_run_all_in_a_browser(newcomer_lab: dict) -> None:
    """Open notebook 1 from the file browser, Run All, and see the inspect view with
    Tile IR and a partition diagram on screen, with no cell errors."""
    node = browser_env.node()
    node_module("playwright-core")
    chromium = browser_env.chromium("ui")
    if SCREENSHOT.exists():
        SCREENSHOT.unlink()  # the file checked below must be this run's
    env = dict(os.environ, TILE_LAB_URL=newcomer_lab["url"], TILE_LAB_NOTEBOOK=NOTEBOOK_1,
               TILE_LAB_SCREENSHOT=str(SCREENSHOT), TILE_LAB_CHROMIUM=chromium)
    try:
        proc = subprocess.run([node, str(DRIVER.relative_to(EXT))], cwd=EXT, env=env,
                              capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        pytest.fail(f"the browser driver timed out:\n{(err or '')[-4000:]}")
    if proc.returncode != 0:
        pytest.fail(f"the browser driver failed ({proc.returncode}):\n{proc.stderr[-6000:]}\n"
                    f"server log:\n{newcomer_lab['log'].read_text()[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print("driver steps:\n" + proc.stderr)  # shown by pytest when an assertion fails
    print("result:", json.dumps(result, indent=1))

    # JupyterLab opened on the notebooks folder: the file browser lists the tutorials.
    listed = sorted(n for n in result["listing"] if n.endswith(".ipynb"))
    assert listed == newcomer_lab["notebooks"]
    assert len(listed) >= 9
    assert result["kernelName"] == "python3"

    # Run All went through every code cell without an error.
    assert result["errorOutputs"] == []
    assert result["ranAll"] is True
    assert result["cells"], "no code cells seen"
    not_run = [c["index"] for c in result["cells"] if c["executionCount"] is None]
    assert not_run == [], f"cells never ran: {not_run}"
    assert "correct: True" in result["outputText"]  # the launch (emulator here) was right

    # The inspect view, with Tile IR lines, rendered by the extension when installed.
    expected = "extension" if "tile-lab" in newcomer_lab["extensions"] else "html"
    assert result["renderer"] == expected
    assert result["tileirRows"] >= 5
    assert "load_view_tko" in result["tileirText"]
    assert "store_view_tko" in result["tileirText"]

    # A partition diagram, and both it and the view on screen in the screenshot.
    assert result["diagramCount"] >= 1
    assert result["visible"] == {"view": True, "diagram": True}
    assert result["pageErrors"] == []
    assert SCREENSHOT.is_file() and SCREENSHOT.stat().st_size > 20_000
