"""A corpus of bad inputs, run the way a notebook runs them (``shell.run_cell``, history on).

Every case asserts: the error class; the place it names (``Cell In[N], line L`` of the cell
IPython numbered N, the line's text, or, for option errors, the option); the words of the
message; no "InternalError" label and no Python traceback for tile_lab errors; that the
shell still runs a cell afterwards; and that no user array changed.

The cases live in tests/bad_inputs_cases.py (data only); this file runs them.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from bad_inputs_cases import CASES, SETUP, SETUP_CELL, Case
from IPython.core.interactiveshell import InteractiveShell

from tile_lab.errors import TileLabError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "tile_lab")
    result = sh.run_cell(SETUP, store_history=True)
    assert result.success, result.error_in_exec
    sh.user_ns["_setup_cell_number"] = result.execution_count
    return sh


def _arrays(shell) -> dict[str, np.ndarray]:
    return {k: v.copy() for k, v in shell.user_ns.items()
            if isinstance(v, np.ndarray) and not k.startswith("_")}


def _run(shell, capsys, cell: str):
    capsys.readouterr()
    result = shell.run_cell(cell, store_history=True)
    out = capsys.readouterr()
    return result, _ANSI.sub("", out.out + out.err)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(shell, capsys, case: Case):
    if "no-gpu" in case.needs:  # the answer of a machine without a GPU
        from tile_lab.crosschecking import gpu_requirements

        if not gpu_requirements():
            pytest.skip("this machine has a usable GPU")
    modules = [m for m in case.needs if m != "no-gpu"]
    if modules and not all(_importable(m) for m in modules):
        pytest.skip(f"needs {', '.join(modules)}")
    defining = {SETUP_CELL: shell.user_ns["_setup_cell_number"]}
    for i, setup in enumerate(case.before):
        result, text = _run(shell, capsys, setup)
        assert result.success, text
        defining[i] = result.execution_count
    before = _arrays(shell)

    result, text = _run(shell, capsys, case.cell)

    assert not result.success, f"the cell did not fail:\n{text}"
    err = result.error_in_exec or result.error_before_exec
    assert re.fullmatch(case.error, type(err).__name__), text
    ours = isinstance(err, TileLabError)
    # where: the cell IPython numbered, the line, and the line's text or the option
    if case.line is not None and not ours:  # a Python error in the cell: IPython's traceback
        assert f"Cell In[{result.execution_count}], line {case.line}" in text, text
    elif case.line is not None:
        number = result.execution_count if case.in_cell is None else defining[case.in_cell]
        assert f"at Cell In[{number}], line {case.line}" in text, text
        source = (case.cell if case.in_cell is None else SETUP if case.in_cell == SETUP_CELL
                  else case.before[case.in_cell])
        line_text = source.splitlines()[case.line - 1].rstrip()
        assert f"{case.line:>4} | {line_text}" in text, text
        if case.caret_under is not None:
            row = text.splitlines()
            i = next(i for i, t in enumerate(row) if t.startswith(f"{case.line:>6} | "))
            caret = row[i + 1].index("^") - len("       | ")
            assert line_text[caret:].startswith(case.caret_under), (line_text, caret)
            assert caret > len(line_text) or case.caret_under, (line_text, caret)
    for words in case.words:
        assert re.search(words, text), f"{words!r} not in:\n{text}"
    assert "InternalError" not in text and not re.search(r":\s*$", str(err)), text
    if ours:
        assert "Traceback" not in text and str(err).strip(), text
    # the shell survives and nothing is lost
    after_result, after_text = _run(shell, capsys, "print(6 * 7)")
    assert after_result.success and "42" in after_text
    after = _arrays(shell)
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_corpus_is_large_and_covers_every_entry_point():
    assert len(CASES) >= 60
    kinds = {c.entry for c in CASES}
    assert kinds >= {"compile", "--sig", "--args", "--grid", "--hints", "options", "emulate",
                     "api", "c++"}
    assert len({c.name for c in CASES}) == len(CASES)
