"""Shared test configuration.

* the ``gpu`` marker skips where no CUDA GPU is usable, saying what the test needs;
* the notebooks are tested with ``--nbval-lax`` and ``notebooks/sanitize.cfg`` where nbval
  is installed: set here, not in ``addopts``, where they make pytest fail at start-up without
  nbval (e.g. ``pytest -m gpu tests`` on a GPU machine with only the runtime dependencies);
* the header says up front which groups of tests will skip on this machine, and why;
* the whole suite (``pytest`` with no paths: pyproject's ``testpaths``) runs on every core
  with pytest-xdist (``--dist loadfile``: a file's tests, a notebook's cells and its
  geometry item stay on one worker, in order, so module fixtures such as the Ray instance
  start once; the files longest first, from ``tests/scope_seconds.json.gz``). A run given
  paths stays in one process unless it passes ``-n``; ``-p no:xdist`` or ``-n 0`` turns it off;
* while tests run, a line every minute says what each worker is running and for how long
  (``progress.py``);
* the compile tools' disk cache (``tile_lab.compile.toolchain.run_cached``) is one folder for
  the whole run, shared by every xdist worker, notebook kernel and subprocess (they inherit
  the environment): a kernel one of them compiled is not compiled again by another. It is under
  pytest's basetemp, never the user's cache (no entries from an earlier toolchain, nothing
  left in the home folder); ``TILE_LAB_TEST_CACHE_DIR=/abs/dir`` names one to keep between
  runs (to measure a warm run), ``TILE_LAB_TEST_CACHE_DIR=off`` turns it off.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
from pathlib import Path

import cpu_account
import progress
import pytest
from browser_env import CHROMIUM_CANDIDATES
from gpu_presence import gpu_available
from run_settings import (
    allow_bytecode,
    compile_sources,
    expected_seconds,
    longest_first,
    scope_of,
    worker_count,
)

# Plots render headless in tests; notebooks choose their own backend.
os.environ.setdefault("MPLBACKEND", "Agg")


allow_bytecode()

GPU_SKIP_REASON = "needs an NVIDIA GPU (Hopper or newer, driver ≥ r580) and CuPy"
SANITIZE_CFG = Path(__file__).resolve().parent.parent / "notebooks" / "sanitize.cfg"


def nbval_installed() -> bool:
    return importlib.util.find_spec("nbval") is not None


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which turns -n into workers
def pytest_cmdline_main(config):
    if (hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("xdist")
            or config.option.collectonly):
        return
    # one process where a GPU is: its timing tests must not share the GPU with each other
    whole_suite = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if (whole_suite and config.option.numprocesses is None and not config.option.usepdb
            and not gpu_available()):
        config.option.numprocesses = worker_count()
    if config.option.numprocesses and config.option.dist == "no":
        config.option.dist = "loadfile"
        # files in collection order (the longest first, below), not xdist's default of the
        # files with the most tests first, which left the one-test size file to the end
        config.option.loadscopereorder = False


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """loadfile's scheduling with ``run_settings.scope_of``'s units: a file, or the files of
    a shared unit (the JupyterLab UI tests, one server and browser for all) together."""
    if config.option.dist != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return UnitScheduling(config, log)


def pytest_configure(config):
    progress.register(config)
    cpu_account.register(config)
    if not config.pluginmanager.hasplugin("nbval"):
        return  # the header says the notebooks are not tested
    option = config.option  # options given on the command line win
    if not (option.nbval or option.nbval_lax):
        option.nbval_lax = True
    if not (option.nbval_sanitize_with or getattr(option, "sanitize_with", None)):
        option.nbval_sanitize_with = str(SANITIZE_CFG)


def pytest_sessionstart(session):
    # before xdist's own (trylast), which starts the workers: they inherit the environment
    if hasattr(session.config, "workerinput"):
        return
    if session.config.option.numprocesses:
        compile_sources(str(session.config.rootpath))
    chosen = os.environ.get("TILE_LAB_TEST_CACHE_DIR", "")
    if chosen.lower() == "off":  # every tool runs every time, as before the cache
        os.environ["TILE_LAB_CACHE_DIR"] = "off"
        return
    where = Path(chosen) if chosen else \
        session.config._tmp_path_factory.getbasetemp() / "tool_cache"
    os.environ["TILE_LAB_CACHE_DIR"] = str(where.resolve())


def pytest_report_header(config):
    lines = []
    if not gpu_available():
        lines.append(f"tile_lab: no usable GPU: tests marked gpu skip ({GPU_SKIP_REASON})")
    if not (os.environ.get("TILE_LAB_CHROMIUM")
            or any(shutil.which(n) for n in CHROMIUM_CANDIDATES)):
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


@pytest.hookimpl(trylast=True)  # after notebooks/conftest.py placed the geometry items
def pytest_collection_modifyitems(config, items):
    """The longest files first (``run_settings.longest_first``), each file's tests together
    and in their order: with the files spread over workers, none of the long ones is left to
    run alone at the end."""
    slow = {item.nodeid for item in items if item.get_closest_marker("slow")}
    order = {nodeid: i for i, nodeid in enumerate(
        longest_first([item.nodeid for item in items], expected_seconds(), slow))}
    items.sort(key=lambda item: order[item.nodeid])
    _skip_gpu(items)


def _skip_gpu(items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=["numpy", pytest.param("gpu", marks=pytest.mark.gpu)])
def check_case(request):
    """The emulator's differential check of a ``test_emulator_harness.Case``, once per target:
    against its NumPy reference on the CPU, and (marked gpu) the GPU's result against the
    emulator's on the same inputs."""
    from test_emulator_harness import check_gpu, check_numpy

    return check_numpy if request.param == "numpy" else check_gpu


@pytest.fixture
def ctrl_c_delivered():
    """Ctrl-C (``_thread.interrupt_main``, SIGINT) reaches this test's main thread as
    KeyboardInterrupt, as in a terminal or a notebook kernel. A run started in the background
    (``cmd &`` in a script, nohup) inherits SIGINT ignored, and ``interrupt_main`` then does
    nothing: a test of Ctrl-C would spin until its time limit."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
