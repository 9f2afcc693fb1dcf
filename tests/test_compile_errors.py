"""tile_lab.compile.errors: cuTile errors worded as the user's mistake (the bad-input corpus
in test_bad_inputs.py drives them end to end; here, the loop rule on its own)."""

from __future__ import annotations

import linecache

import pytest

from tile_lab.compile.errors import _loop_never_exits
from tile_lab.errors import SourceLocation


def _located(source: str, line: int) -> SourceLocation:
    name = f"<loop test {abs(hash(source))}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    rows = source.splitlines()
    return SourceLocation(name, line, 4, rows[line - 1] if line <= len(rows) else None)


@pytest.mark.parametrize("body, never_ends", [
    ("    while True:\n        i += 1\n", True),
    ("    while 1:\n        i += 1\n", True),
    ("    while True:\n        for j in range(3):\n            break\n", True),  # inner break
    ("    while True:\n        if i > 3:\n            break\n", False),
    ("    while i < 3:\n        i += 1\n", False),
    ("    while True:\n        while i:\n            break\n        break\n", False),
    ("    while True:\n        if i > 3:\n            return i\n", False),  # cuTile 1.7
])
def test_a_loop_never_ends_only_without_a_break_of_its_own(body, never_ends):
    source = "def k(i):\n" + body + "    return i\n"
    assert _loop_never_exits(_located(source, 2)) is never_ends


def test_a_location_outside_the_file_is_not_a_loop():
    assert _loop_never_exits(_located("x = 1\n", 5)) is False
