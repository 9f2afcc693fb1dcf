"""How the whole suite runs (used by ``tests/conftest.py``; apart from it so that tests can
import it: every test folder has a module named ``conftest``)."""

from __future__ import annotations

import os
import sys
import tempfile


def worker_count() -> int:
    """Workers for the whole suite: two per core (``TILE_LAB_TEST_WORKERS`` overrides). A
    worker spends about half its time waiting (a browser drawing, a JupyterLab server or a
    notebook kernel answering, Ray starting), which a second worker per core fills."""
    given = os.environ.get("TILE_LAB_TEST_WORKERS")
    if given:
        return max(1, int(given))
    return min(8, 2 * (os.cpu_count() or 1))


def share_bytecode(env: dict[str, str] = os.environ) -> str | None:
    """Where the environment forbids writing bytecode (``PYTHONDONTWRITEBYTECODE``, as on this
    project's 2-core box, to keep source trees clean), every process of the run (the xdist
    workers, each notebook's kernel, every subprocess test) would compile each module it
    imports again, and pytest would rewrite every test module's asserts again per worker
    (~8 s of CPU each). Instead the run keeps bytecode in one folder outside the tree
    (``PYTHONPYCACHEPREFIX``, under the system temp dir), shared by those processes and by
    later runs; the source tree stays clean. Returns the folder, or None when the
    environment allows bytecode next to the sources (nothing to change)."""
    if not env.get("PYTHONDONTWRITEBYTECODE") or env.get("PYTHONPYCACHEPREFIX"):
        return None
    user = getattr(os, "getuid", lambda: "")()
    prefix = os.path.join(tempfile.gettempdir(), f"tile_lab-pycache-{user}")
    os.makedirs(prefix, exist_ok=True)
    env.pop("PYTHONDONTWRITEBYTECODE")
    env["PYTHONPYCACHEPREFIX"] = prefix
    if env is os.environ:  # this process too, for the test modules it imports from here on
        sys.pycache_prefix = prefix
        sys.dont_write_bytecode = False
    return prefix
