"""Where the test run's CPU goes (registered by ``tests/conftest.py``; off unless asked).

``TILE_LAB_TEST_CPU=DIR pytest`` writes one JSON-lines file per process (each xdist worker)
into DIR: a line per test with the CPU seconds its setup, call and teardown used in the
worker itself and in the children the worker reaped meanwhile (a notebook's kernel, nvcc,
tileiras, a subprocess test's Python), and its wall time. Children still alive when the
test ends (a server a module fixture keeps) are charged to the test that reaps them.
``python tests/cpu_account.py DIR`` sums it per file, largest first: what to make cheaper
to shorten the suite on a machine with few cores, where CPU, not waiting, sets the time.
``python tests/cpu_account.py DIR --scopes`` prints the wall time of each unit of work, the
scheduler's ``tests/scope_seconds.json.gz`` (kept gzipped: ``... --scopes | gzip -9n >
tests/scope_seconds.json.gz``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest


class CpuAccount:
    def __init__(self, directory: Path, name: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._out = (directory / f"{name}-{os.getpid()}.jsonl").open("a")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        before, wall = os.times(), time.monotonic()
        yield
        after = os.times()
        record = {"nodeid": item.nodeid,
                  "self": round(after.user + after.system - before.user - before.system, 3),
                  "children": round(after.children_user + after.children_system
                                    - before.children_user - before.children_system, 3),
                  "wall": round(time.monotonic() - wall, 3)}
        self._out.write(json.dumps(record) + "\n")
        self._out.flush()

    def pytest_unconfigure(self) -> None:
        self._out.close()


def register(config: pytest.Config) -> None:
    directory = os.environ.get("TILE_LAB_TEST_CPU")
    if not directory:
        return
    name = getattr(config, "workerinput", {}).get("workerid", "main")
    config.pluginmanager.register(CpuAccount(Path(directory), name), "tile_lab_cpu_account")


def summarize(directory: Path) -> list[tuple[str, float, float, float, int]]:
    """(file, self CPU, children CPU, wall, tests) per file, most CPU first."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            row = sums[record["nodeid"].split("::")[0]]
            row[0] += record["self"]
            row[1] += record["children"]
            row[2] += record["wall"]
            row[3] += 1
    rows = [(f, s, c, w, int(n)) for f, (s, c, w, n) in sums.items()]
    return sorted(rows, key=lambda r: -(r[1] + r[2]))


def scope_seconds(directory: Path) -> dict[str, float]:
    """Wall seconds per unit of work (``run_settings.scope_of``), longest first: what
    ``tests/scope_seconds.json.gz`` holds for the scheduler's order."""
    from run_settings import scope_of

    sums: dict[str, float] = defaultdict(float)
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            sums[scope_of(record["nodeid"])] += record["wall"]
    return {k: round(v, 1) for k, v in sorted(sums.items(), key=lambda kv: -kv[1])}


if __name__ == "__main__":
    if sys.argv[2:] == ["--scopes"]:  # DIR --scopes | gzip -9n > tests/scope_seconds.json.gz
        print(json.dumps(scope_seconds(Path(sys.argv[1])), indent=0))
        raise SystemExit
    rows = summarize(Path(sys.argv[1]))
    print(f"{'file':60} {'self':>7} {'child':>7} {'wall':>7} {'tests':>5}")
    for file, own, child, wall, count in rows:
        print(f"{file:60} {own:7.1f} {child:7.1f} {wall:7.1f} {count:5d}")
    print(f"{'total':60} {sum(r[1] for r in rows):7.1f} {sum(r[2] for r in rows):7.1f} "
          f"{sum(r[3] for r in rows):7.1f} {sum(r[4] for r in rows):5d}")
