"""What the browser tests need from the machine (Node, Chromium, playwright-core, a free port):
one place for the probes, each skipping with the reason and the fix when something is missing."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

import pytest

EXT = Path(__file__).resolve().parent.parent / "labextension"
# Debian's chromium-headless-shell first: the same engine without the full browser's
# UI process, ~20 % less CPU for the same UI tests (.ci/run installs it beside chromium)
CHROMIUM_CANDIDATES = ("chromium-headless-shell", "chromium", "chromium-browser",
                       "google-chrome", "google-chrome-stable")


def node(why: str = "the browser tests need node >= 20") -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip(f"Node.js is not installed; {why}")
    return found


def node_module(name: str) -> None:
    """Skip unless ``labextension/node_modules/<name>`` is installed."""
    if not (EXT / "node_modules" / name).is_dir():
        pytest.skip(f"labextension/node_modules/{name} is missing: run `npm ci` in "
                    "labextension/ (pip install with Node present does it)")


def chromium(kind: str | None = None) -> str:
    """The system Chromium's path. With ``kind`` ("ui": the JupyterLab drivers of
    labextension/ui-test, "probe": tests/browser_probe.mjs), also this process's shared
    browser of that kind (:func:`shared_browser`), which the drivers then connect to."""
    path = os.environ.get("TILE_LAB_CHROMIUM")
    if not path:
        path = next((p for p in map(shutil.which, CHROMIUM_CANDIDATES) if p), None)
    if not path:
        pytest.skip("no Chromium found (install Debian's `chromium` or set TILE_LAB_CHROMIUM)")
        raise AssertionError  # unreachable
    if kind:
        shared_browser(kind, path)
    return path


# kind -> (the browser server, its endpoint): one per test process, for all its drivers
_SERVERS: dict[str, tuple[subprocess.Popen, str]] = {}


def shared_browser(kind: str, chromium_path: str) -> str | None:
    """This process's Chromium for the drivers of ``kind``: a playwright browser server
    (labextension/ui-test/browser_server.mjs, launched with the arguments the drivers would
    launch with), started on first use and stopped when the process exits. A driver connects
    to it through ``TILE_LAB_BROWSER_WS_<KIND>`` (set here in os.environ, which the drivers'
    environments are made from) instead of starting a browser (~1.5 s of CPU each, ~20 per
    run). Where it cannot start, the variable is left unset and each driver launches its own.
    ``TILE_LAB_SHARED_BROWSER=0`` turns it off."""
    var = f"TILE_LAB_BROWSER_WS_{kind.upper()}"
    known = _SERVERS.get(kind)
    if known and known[0].poll() is None:
        return known[1]
    os.environ.pop(var, None)
    if os.environ.get("TILE_LAB_SHARED_BROWSER") == "0" or shutil.which("node") is None:
        return None
    proc = subprocess.Popen(["node", str(EXT / "ui-test" / "browser_server.mjs")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, TILE_LAB_CHROMIUM=chromium_path,
                                     TILE_LAB_BROWSER_KIND=kind))
    ready = threading.Event()
    first: list[str] = []

    def read_endpoint() -> None:
        first.append(proc.stdout.readline().strip() if proc.stdout else "")
        ready.set()

    threading.Thread(target=read_endpoint, daemon=True).start()
    # an event, not a clock: the line comes once the browser is up (a busy machine takes
    # longer); the bound only ends a start that hangs
    if not ready.wait(120) or not first[0].startswith("ws://"):
        _stop(proc)
        print(f"tile_lab tests: the shared {kind} browser did not start; each driver "
              "launches its own", file=sys.stderr)
        return None
    _SERVERS[kind] = (proc, first[0])
    os.environ[var] = first[0]
    return first[0]


def _stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(OSError, ValueError):
        if proc.stdin:
            proc.stdin.close()  # the server closes its browser and exits
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@atexit.register
def _stop_all() -> None:
    if _PROBE.proc is not None:
        _stop(_PROBE.proc)  # first: it is a client of the probe browser
        _PROBE.proc = None
    for proc, _ in _SERVERS.values():
        _stop(proc)
    _SERVERS.clear()


PROBE_SCRIPT = Path(__file__).resolve().parent / "browser_probe.mjs"


class _ProbeServer:
    """This process's ``browser_probe.mjs`` serving job lists (one Node start for all the
    picture checks of a test process instead of one per check), its answers read by a
    thread into a queue so that a wait can be bounded."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.answers: queue.Queue[str] = queue.Queue()
        self.stderr: IO[bytes] | None = None
        self.lock = threading.Lock()

    def start(self, chromium_path: str) -> None:
        if self.stderr is None:
            # the probe's messages, read back when it fails; open while this process lives
            self.stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.answers = queue.Queue()
        self.proc = subprocess.Popen(
            [node(), str(PROBE_SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, text=True,
            env=dict(os.environ, TILE_LAB_EXT=str(EXT), TILE_LAB_CHROMIUM=chromium_path))
        proc, answers = self.proc, self.answers

        def read() -> None:
            for line in proc.stdout or ():
                answers.put(line)
            answers.put("")  # the probe exited

        threading.Thread(target=read, name="browser-probe", daemon=True).start()

    def stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        self.stderr.seek(0)
        return self.stderr.read()[-3000:].decode(errors="replace")


_PROBE = _ProbeServer()


def probe_job(page: Path, width: int, height: int, *, prepare: str | None = None,
              hover: str | None = None, evaluate: str | None = None,
              screenshot: Path | None = None) -> dict:
    """One job of ``browser_probe.mjs``: open ``page`` in a ``width`` x ``height`` window, run
    ``prepare``, hover ``hover`` (a CSS selector), evaluate ``evaluate``, save ``screenshot``
    (the full page)."""
    return {"page": str(page), "width": width, "height": height, "prepare": prepare,
            "hover": hover, "evaluate": evaluate,
            "screenshot": None if screenshot is None else str(screenshot)}


def probe(jobs_file: Path, chromium_path: str, timeout: float = 300) -> list[dict]:
    """The results of ``browser_probe.mjs`` for the job list in ``jobs_file``, one per job
    (``{"hovered", "value", "errors"}``), from this process's serving probe connected to
    the shared probe browser, or, where that browser is off (``TILE_LAB_SHARED_BROWSER=0``,
    no Node), from a probe run for this list alone. ``timeout`` only ends a probe that
    hangs; a failure raises RuntimeError with the probe's own message."""
    if shared_browser("probe", chromium_path) is None:
        proc = subprocess.run(
            [node(), str(PROBE_SCRIPT)], capture_output=True, text=True, timeout=timeout,
            env=dict(os.environ, TILE_LAB_EXT=str(EXT), TILE_LAB_CHROMIUM=chromium_path,
                     TILE_LAB_JOBS=str(jobs_file)))
        if proc.returncode != 0:
            raise RuntimeError(f"the browser probe failed: {proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])
    with _PROBE.lock:
        if _PROBE.proc is None or _PROBE.proc.poll() is not None:
            _PROBE.start(chromium_path)
        assert _PROBE.proc is not None and _PROBE.proc.stdin is not None
        try:
            _PROBE.proc.stdin.write(f"{jobs_file}\n")
            _PROBE.proc.stdin.flush()
            line = _PROBE.answers.get(timeout=timeout)
        except (OSError, queue.Empty) as e:
            line, why = "", f"no answer ({type(e).__name__})"
        else:
            why = "it exited"
        if not line:
            _stop(_PROBE.proc)
            _PROBE.proc = None
            raise RuntimeError(f"the browser probe gave no answer, {why}: "
                               f"{_PROBE.stderr_tail()}")
    answer = json.loads(line)
    if "error" in answer:
        raise RuntimeError(f"the browser probe failed: {answer['error'][-3000:]}")
    return answer["results"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
