"""What the browser tests need from the machine (Node, Chromium, playwright-core, a free port):
one place for the probes, each skipping with the reason and the fix when something is missing."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parent.parent / "labextension"
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


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


def chromium() -> str:
    env = os.environ.get("TILE_LAB_CHROMIUM")
    if env:
        return env
    for name in CHROMIUM_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium found (install Debian's `chromium` or set TILE_LAB_CHROMIUM)")
    raise AssertionError  # unreachable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
