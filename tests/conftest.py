"""Shared test configuration.

* the ``gpu`` marker skips where no CUDA GPU is usable, saying what the test needs;
* the notebooks are tested with ``--nbval-lax`` and ``notebooks/sanitize.cfg`` where nbval
  is installed: set here, not in ``addopts``, where they make pytest fail at start-up without
  nbval (e.g. ``pytest -m gpu tests`` on a GPU machine with only the runtime dependencies);
* the header says up front which groups of tests will skip on this machine, and why.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest
from gpu_presence import gpu_available

# Plots render headless in tests; notebooks choose their own backend.
os.environ.setdefault("MPLBACKEND", "Agg")

GPU_SKIP_REASON = "needs an NVIDIA GPU (Hopper or newer, driver ≥ r580) and CuPy"
SANITIZE_CFG = Path(__file__).resolve().parent.parent / "notebooks" / "sanitize.cfg"
_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def nbval_installed() -> bool:
    return importlib.util.find_spec("nbval") is not None


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("nbval"):
        return  # the header says the notebooks are not tested
    option = config.option  # options given on the command line win
    if not (option.nbval or option.nbval_lax):
        option.nbval_lax = True
    if not (option.nbval_sanitize_with or getattr(option, "sanitize_with", None)):
        option.nbval_sanitize_with = str(SANITIZE_CFG)


def pytest_report_header(config):
    lines = []
    if not gpu_available():
        lines.append(f"tile_lab: no usable GPU: tests marked gpu skip ({GPU_SKIP_REASON})")
    if not (os.environ.get("TILE_LAB_CHROMIUM")
            or any(shutil.which(n) for n in _CHROMIUM_NAMES)):
        lines.append("tile_lab: no Chromium: the browser tests (diagram screenshots, the "
                     "JupyterLab extension's UI test) skip; install Debian's `chromium` or "
                     "set TILE_LAB_CHROMIUM to run them")
    if shutil.which("node") is None:
        lines.append("tile_lab: no Node.js: the JupyterLab extension's tests skip "
                     "(install Node >= 20)")
    if importlib.util.find_spec("torch") is None:
        lines.append("tile_lab: torch is not installed: the torch-tensor tests skip "
                     "(tile_lab does not need torch; pip install torch to run them)")
    if not nbval_installed():
        lines.append("tile_lab: nbval is not installed: the notebooks are not tested "
                     "(pip install -e '.[test]')")
    return lines


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
