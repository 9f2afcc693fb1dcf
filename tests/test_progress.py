"""The progress lines of long test runs (tests/progress.py)."""

from __future__ import annotations

import os
from types import SimpleNamespace

from progress import Progress


def _report(nodeid: str, when: str = "teardown"):
    return SimpleNamespace(nodeid=nodeid, when=when)


def test_a_line_names_each_test_running_past_the_interval_and_how_far_its_file_is():
    p = Progress(interval_s=3600)  # the thread never prints here
    try:
        p.started = 0.0
        p.pytest_xdist_node_collection_finished(None, [
            "notebooks/15.ipynb::Cell 0", "notebooks/15.ipynb::Cell 1",
            "notebooks/15.ipynb::Cell 2", "tests/test_a.py::test_x"])
        p.pytest_xdist_node_collection_finished(None, ["other worker: same tests"])
        for nodeid in ("notebooks/15.ipynb::Cell 0", "notebooks/15.ipynb::Cell 1"):
            p.pytest_runtest_logstart(nodeid)
        p.running["notebooks/15.ipynb::Cell 0"] = 0.0
        p.pytest_runtest_logreport(_report("notebooks/15.ipynb::Cell 0", "call"))
        assert p.done == 0  # counted once torn down
        p.pytest_runtest_logreport(_report("notebooks/15.ipynb::Cell 0"))
        p.running["notebooks/15.ipynb::Cell 1"] = 100.0
        assert p.line(100.0 + 5) is None  # nothing has run past the interval
        p.pytest_runtest_logstart("tests/test_a.py::test_x")
        p.running["tests/test_a.py::test_x"] = 3000.0  # not past it: not named
        assert p.line(100.0 + 3700) == (
            "[progress 63:20] 1/4 done; running: notebooks/15.ipynb::Cell 1 "
            "(61:40, 2/3 of its file)")
    finally:
        p.pytest_unconfigure()


def test_progress_is_off_with_a_zero_interval_and_in_xdist_workers(monkeypatch):
    registered = []
    config = SimpleNamespace(pluginmanager=SimpleNamespace(
        register=lambda plugin, name: registered.append((name, plugin))))
    import progress

    monkeypatch.setenv("TILE_LAB_PROGRESS_S", "0")
    progress.register(config)
    monkeypatch.setenv("TILE_LAB_PROGRESS_S", "60")
    worker = SimpleNamespace(workerinput={}, pluginmanager=config.pluginmanager)
    progress.register(worker)
    assert registered == []
    fds = len(os.listdir("/proc/self/fd"))
    progress.register(config)
    assert [name for name, _ in registered] == ["tile_lab_progress"]
    assert len(os.listdir("/proc/self/fd")) == fds + 1  # its copy of the terminal
    registered[0][1].pytest_unconfigure()
    assert len(os.listdir("/proc/self/fd")) == fds
