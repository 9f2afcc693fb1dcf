"""One JupyterLab server per test process for every browser test that opens notebooks in
JupyterLab (tests/test_labextension*.py): a start costs seconds of CPU, and the suite's
files run on the same xdist worker one after another. ``shared(config, tmp_path_factory)``
starts it on first use and stops it when the session ends; ``reset(url)`` shuts down the
kernels an earlier test started and forgets the saved workspaces, so each test's page opens
only its own notebook, as on a fresh server.

The server: a free port, no token, the freshly built extension from tile_lab/labextension
loaded ahead of any installed copy, no build check (the newcomer test starts JupyterLab as a
user does instead: tests/test_newcomer.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TextIO

import pytest
from browser_env import free_port

BUILT = Path(__file__).resolve().parents[1] / "tile_lab" / "labextension"

_RUNNING: dict[str, tuple[str, Path]] = {}  # "server": (url, notebook root)
_SETTINGS: dict[str, Path] = {}  # url: its user-settings folder
# what every test starts from: no "get notified about Jupyter news?" toast over the screenshots
_NOTIFICATION = Path("@jupyterlab") / "apputils-extension" / "notification.jupyterlab-settings"


# the server's config file: tests/lab_contents.py's contents manager (that module says why)
SERVER_CONFIG = f"""\
import sys

sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from lab_contents import FastContentsManager

c.ServerApp.contents_manager_class = FastContentsManager
"""


def shared(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[str, Path]:
    """``(url, root)`` of this process's server, started on first use."""
    if "server" not in _RUNNING:
        require_built()
        proc, url, root, log = start(tmp_path_factory.mktemp("jupyterlab"))
        _RUNNING["server"] = (url, root)
        config.add_cleanup(lambda: stop(proc, log))
    return _RUNNING["server"]


def require_built() -> None:
    """Skip (saying how to build it) unless the extension is built in tile_lab/labextension."""
    if not (BUILT / "package.json").is_file():
        pytest.skip("the extension is not built (tile_lab/labextension/); "
                    "run `npm run build:prod` in labextension/ or pip install .")


def _request(url: str, method: str = "GET", timeout: float = 60):
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
    except urllib.error.HTTPError as err:
        if method == "DELETE" and err.code == 404:
            return None  # gone already (a session's kernel goes with its session)
        raise
    return json.loads(body) if body else None


def reset(url: str) -> None:
    """No session, no kernel running, no saved workspace (a page would restore its open
    notebooks) and no setting an earlier test changed (a theme switched to dark)."""
    settings = _SETTINGS[url]
    for path in settings.rglob("*.jupyterlab-settings"):
        if path.relative_to(settings) != _NOTIFICATION:
            path.unlink()
    for session in _request(f"{url}/api/sessions"):
        _request(f"{url}/api/sessions/{session['id']}", "DELETE")
    for kernel in _request(f"{url}/api/kernels"):
        _request(f"{url}/api/kernels/{kernel['id']}", "DELETE")
    listing = _request(f"{url}/lab/api/workspaces")
    for name in listing.get("workspaces", {}).get("ids", []):
        _request(f"{url}/lab/api/workspaces/{name}", "DELETE")


def start(tmp: Path) -> tuple[subprocess.Popen, str, Path, TextIO]:
    """A JupyterLab server in the fresh folder ``tmp``: ``(process, url, notebook root, log
    file)``; :func:`stop` stops it (bench/labextension_size.py starts one too)."""
    data_dir = tmp / "jupyter-data"
    (data_dir / "labextensions").mkdir(parents=True)
    (data_dir / "labextensions" / "tile-lab").symlink_to(BUILT)
    root = tmp / "root"
    root.mkdir()
    port = free_port()
    env = dict(os.environ)
    env["JUPYTER_PATH"] = os.pathsep.join([str(data_dir), env.get("JUPYTER_PATH", "")])
    env["JUPYTER_CONFIG_DIR"] = str(tmp / "config")
    env["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    env["IPYTHONDIR"] = str(tmp / "ipython")
    settings = tmp / "config" / "lab" / "user-settings"
    (settings / _NOTIFICATION).parent.mkdir(parents=True)
    (settings / _NOTIFICATION).write_text(json.dumps({"fetchNews": "false"}))
    (tmp / "config" / "jupyter_server_config.py").write_text(SERVER_CONFIG)
    # no "build recommended?" check: each page load asked the server, which ran `yarn config`
    # (~0.5 s of CPU) to answer for an app folder these tests never build
    (tmp / "config" / "labconfig").mkdir()
    (tmp / "config" / "labconfig" / "page_config.json").write_text(
        json.dumps({"buildCheck": False, "buildAvailable": False}))
    log = (tmp / "server.log").open("w")
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", *as_root, f"--port={port}", "--ip=127.0.0.1",
         "--no-browser",
         "--ServerApp.open_browser=False", "--IdentityProvider.token=",
         "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
         "--LabApp.expose_app_in_browser=True",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        # (generous hang guards: a 2-core machine shared with other jobs starts JupyterLab
        # and answers its first requests several times slower than an idle one)
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.close()
                    pytest.fail("JupyterLab did not start:\n"
                                + (tmp / "server.log").read_text()[-4000:])
                time.sleep(0.3)
        exts = {e["name"]: e for e in _request(f"{url}/lab/api/extensions", timeout=120)}
        assert "tile-lab" in exts, f"server does not list tile-lab: {sorted(exts)}"
        _SETTINGS[url] = settings
    except BaseException:
        stop(proc, log)
        raise
    return proc, url, root, log


def stop(proc: subprocess.Popen, log: TextIO) -> None:
    """Stop a server :func:`start` started and close its log."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=20)
    log.close()
