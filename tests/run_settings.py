"""How the whole suite runs (used by ``tests/conftest.py``; apart from it so that tests can
import it: every test folder has a module named ``conftest``)."""

from __future__ import annotations

import os
import sys


def worker_count() -> int:
    """Workers for the whole suite: one per core and one more (``TILE_LAB_TEST_WORKERS``
    overrides), at most 8. A worker spends part of its time waiting (a browser drawing, a
    JupyterLab server or a notebook kernel answering, Ray starting), which the extra worker
    fills; more workers than that only add their own start, imports, browsers and servers,
    and contend for the cores. Measured on the 2-core box (whole suite, a checkout, an empty
    cache home): 2 workers 6:31 (the machine busy 734 s of CPU, idle 7 % of the run),
    3 workers 6:03 (721 s, idle 1 %), 4 workers 6:41 (800 s)."""
    given = os.environ.get("TILE_LAB_TEST_WORKERS")
    if given:
        return max(1, int(given))
    return min(8, (os.cpu_count() or 1) + 1)


def allow_bytecode(env: dict[str, str] = os.environ) -> bool:
    """Where the environment forbids writing bytecode (``PYTHONDONTWRITEBYTECODE``, as on this
    project's 2-core box), every process of the run (the xdist workers, each notebook's
    kernel, every subprocess test) would compile each module it imports again, and pytest
    would rewrite every test module's asserts again per worker (~8 s of CPU each). The run
    allows it instead, for itself and the processes it starts: Python's default, bytecode in
    ``__pycache__`` beside the sources (git ignores it), where pip already wrote the
    installed packages' when it installed them. (A shared ``PYTHONPYCACHEPREFIX`` folder, used
    before, makes Python ignore those: a new clone's four workers then compiled the same
    ~70 MB of the venv's bytecode at once, 51 s of CPU for an import of the suite's heavy
    packages in four processes against 21 s with pip's.) A prefix the user set is kept.
    Returns whether it changed anything."""
    if not env.get("PYTHONDONTWRITEBYTECODE") or env.get("PYTHONPYCACHEPREFIX"):
        return False
    env.pop("PYTHONDONTWRITEBYTECODE")
    if env is os.environ:  # this process too, for the test modules it imports from here on
        sys.dont_write_bytecode = False
    return True


def compile_sources(root: str, env: dict[str, str] = os.environ) -> bool:
    """Bytecode for the package's and the tests' modules, made once by the controller before
    the workers start (where bytecode may be written): in a new clone the workers would each
    compile the same modules at once while collecting (~3 s of CPU apiece on the 2-core box).
    Up-to-date files are only stat'ed. Returns whether it ran."""
    import compileall

    if env.get("PYTHONDONTWRITEBYTECODE") or sys.dont_write_bytecode:
        return False
    for folder in ("tile_lab", "tests"):
        # quiet=2: a file that does not compile is the import's error to report, not this
        compileall.compile_dir(os.path.join(root, folder), quiet=2)
    return True


# The order of the whole suite's files (xdist's units of work: a file's module fixtures, such
# as the Ray instance, start once): each file's wall time in a whole run (``python
# tests/cpu_account.py DIR --scopes``, from a run with ``TILE_LAB_TEST_CPU=DIR``), the longest
# first, so that none is left to run alone at the end (longest-processing-time-first). Only
# the order depends on it. (Splitting what was the longest, the size test, into four tests
# spread over workers was measured and dropped: on 2 cores each group paid its own JupyterLab
# page and server, 204 s of CPU against 149 s as one test, and the run took longer. Its speed
# bounds are now bench/labextension_size.py's.)
SCOPE_SECONDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scope_seconds.json.gz")


# Files that use what a test process starts once for all of them run as one unit of work, on
# one worker: the JupyterLab UI tests share a JupyterLab server (tests/lab_server.py) and a
# browser (tests/browser_env.py). Spread over the workers, each worker that drew one of them
# started its own server and browser (three of each a run on 3 workers).
SHARED_UNITS = {
    "tests/test_labextension.py": "jupyterlab-ui",
    "tests/test_labextension_scroll.py": "jupyterlab-ui",
    "tests/test_labextension_size.py": "jupyterlab-ui",
    "tests/test_labextension_tma.py": "jupyterlab-ui",
    "tests/test_newcomer.py": "jupyterlab-ui",
}


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the shared unit its file is in
    (``SHARED_UNITS``)."""
    file = nodeid.split("::", 1)[0]
    return SHARED_UNITS.get(file, file)


def expected_seconds(path: str = SCOPE_SECONDS) -> dict[str, float]:
    import gzip
    import json

    try:  # kept gzipped (``gzip -9n``); a plain .json is read as it is
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            return {k: float(v) for k, v in json.load(f).items()}
    except (OSError, ValueError):
        return {}


def longest_first(nodeids: list[str], known: dict[str, float],
                  slow: set[str] = frozenset()) -> list[str]:
    """``nodeids`` regrouped by unit of work (:func:`scope_of`), the units in order of expected
    wall time, longest first (each unit's tests in their order). A unit not in ``known`` (a
    new file) counts 0.5 s a test, 30 s more where a test of it is in ``slow``."""
    scopes: dict[str, list[str]] = {}
    for nodeid in nodeids:
        scopes.setdefault(scope_of(nodeid), []).append(nodeid)

    def weight(scope: str) -> float:
        if scope in known:
            return known[scope]
        tests = scopes[scope]
        return 0.5 * len(tests) + (30.0 if slow.intersection(tests) else 0.0)

    order = sorted(scopes, key=lambda s: -weight(s))  # stable: equal weights keep their order
    return [nodeid for scope in order for nodeid in scopes[scope]]
