"""Progress while long tests run (registered by ``tests/conftest.py``).

pytest prints a dot per finished test, so a test that runs for minutes (a notebook cell, the
size test, a Ray test) leaves the terminal silent. Every ``TILE_LAB_PROGRESS_S`` seconds
(default 60; 0 turns it off) a thread prints one line naming each test that has been running
longer than that, for how long, and how far its file (its group: a test module, a notebook)
has got, with the run's overall count::

    [progress 4:00] 812/1804 done; running: notebooks/15_flash_attention.ipynb::Cell 12
    (1:40, 13/31 of its file), tests/test_tuning_cluster.py::test_ray_compiles... (3:10, 1/10)

It runs where the reports arrive: in the one pytest process, or in xdist's controller (which
hears every worker's test start and finish). The line goes to the terminal pytest started
on (a duplicate of its stdout taken before any test runs), never into a test's captured
output.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

import pytest


def _clock(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


class Progress:
    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.started = time.monotonic()
        self.running: dict[str, float] = {}  # nodeid -> when it started
        self.per_file: Counter[str] = Counter()  # tests collected per file
        self.done_per_file: Counter[str] = Counter()
        self.total = 0
        self.done = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._out = os.dup(1)  # the terminal, while no test's output is being captured
        self._thread = threading.Thread(target=self._beat, name="tile_lab-progress",
                                        daemon=True)
        self._thread.start()

    def _collected(self, nodeids: list[str]) -> None:
        with self._lock:
            if self.total:  # xdist: every worker collects the same tests
                return
            self.total = len(nodeids)
            self.per_file = Counter(n.split("::")[0] for n in nodeids)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._collected([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        self._collected(list(ids))

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        with self._lock:
            self.running[nodeid] = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        with self._lock:
            if self.running.pop(report.nodeid, None) is not None:
                self.done += 1
                self.done_per_file[report.nodeid.split("::")[0]] += 1

    def line(self, now: float) -> str | None:
        """The progress line, or None when no test has run longer than the interval."""
        with self._lock:
            slow = [(n, now - t) for n, t in self.running.items() if now - t >= self.interval_s]
            if not slow:
                return None
            parts = []
            for nodeid, spent in sorted(slow, key=lambda p: -p[1]):
                file = nodeid.split("::")[0]
                parts.append(f"{nodeid} ({_clock(spent)}, {self.done_per_file[file] + 1}/"
                             f"{self.per_file.get(file, 1)} of its file)")
            return (f"[progress {_clock(now - self.started)}] {self.done}/{self.total or '?'} "
                    f"done; running: " + ", ".join(parts))

    def _beat(self) -> None:
        while not self._stop.wait(self.interval_s):
            text = self.line(time.monotonic())
            if text:
                os.write(self._out, ("\n" + text + "\n").encode(errors="replace"))

    def pytest_unconfigure(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        os.close(self._out)


def register(config: pytest.Config) -> None:
    """Start the progress lines (not in xdist workers, whose controller prints them)."""
    interval = float(os.environ.get("TILE_LAB_PROGRESS_S", "60"))
    if interval <= 0 or hasattr(config, "workerinput"):
        return
    config.pluginmanager.register(Progress(interval), "tile_lab_progress")
