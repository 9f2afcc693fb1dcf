"""Notebook testing options, set only where nbval is installed.

``pytest`` (the README's and CI's command) tests the notebooks with ``--nbval-lax`` and
``notebooks/sanitize.cfg``. These options are not in ``addopts``: there they make pytest
fail at start-up wherever nbval is missing, e.g. ``pytest -m gpu tests`` on a GPU machine
with only the runtime dependencies. Options given on the command line win.
"""

from __future__ import annotations

from pathlib import Path

SANITIZE_CFG = Path(__file__).resolve().parent / "notebooks" / "sanitize.cfg"


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("nbval"):
        return  # nbval not installed: the notebooks are skipped (tests/conftest.py says so)
    option = config.option
    if not (option.nbval or option.nbval_lax):
        option.nbval_lax = True
    if not (option.nbval_sanitize_with or getattr(option, "sanitize_with", None)):
        option.nbval_sanitize_with = str(SANITIZE_CFG)
