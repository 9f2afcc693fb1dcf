"""tile_lab.errors: every error renders message, place, source line, caret and hint; none is
empty; option errors are IPython UsageErrors too; tile_lab's warnings at a notebook cell's
line say ``Cell In[N], line L``."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from tile_lab.emulator.blocks import OutOfArrayTileWarning
from tile_lab.errors import (
    ArgumentTypeError,
    CompileError,
    OptionError,
    SourceLocation,
    TileLabError,
    format_cell_warning,
)

ROOT = Path(__file__).resolve().parent.parent


def test_render_has_place_line_caret_and_hint():
    err = CompileError("cuTile type error: bad", SourceLocation("k.py", 7, 4, "    t = x"),
                       hint="do y")
    assert err.render().splitlines() == [
        "CompileError: cuTile type error: bad", "  at k.py, line 7", "     7 |     t = x",
        "       |     ^", "hint: do y"]


def test_an_empty_message_becomes_the_kind_of_error():
    assert str(CompileError("")) == "The kernel failed to compile (syntax, cuTile typing, or " \
                                    "tileiras)."
    assert str(TileLabError("  ")).startswith("Base class.")


def test_errors_survive_pickling_with_their_place():
    err = ArgumentTypeError("argument 1 (trace) must be a Trace, got int",
                            SourceLocation("f.py", 2, 0, "x"), hint="h")
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), back.message, back.location, back.hint) == (
        ArgumentTypeError, err.message, err.location, "h")
    assert isinstance(back, TypeError)


def test_option_errors_are_usage_errors_rendered_like_the_rest():
    err = OptionError("%%tile: unknown pane", SourceLocation("Cell In[3]", 1, 7, "%%tile x"))
    assert isinstance(err, UsageError) and isinstance(err, TileLabError)
    assert err._render_traceback_()[:2] == ["OptionError: %%tile: unknown pane",
                                            "  at Cell In[3], line 1"]


# ---- warnings at a cell's line ---------------------------------------------------------------

ARRAYS = """import numpy as np
import cuda.tile as ct
x = np.arange(64, dtype=np.float32)
y = np.zeros(64, dtype=np.float32)
"""
# the load (cell line 4) reads tile 1 of a one-tile array: entirely outside it
OUTSIDE = """%%tile --emulate --grid (1,) --args "x, y"
@ct.kernel
def beyond(a, b):
    t = ct.load(a, index=(1,), shape=(64,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(b, index=(0,), tile=t)
"""


@pytest.mark.timeout(300)
def test_an_emulator_warning_in_a_terminal_ipython_cell_names_the_cell_and_its_line():
    # a terminal IPython of its own (pytest records warnings instead of showing them)
    script = f"""
from IPython.terminal.interactiveshell import TerminalInteractiveShell
shell = TerminalInteractiveShell.instance(colors="nocolor")
for cell in ["%load_ext tile_lab", {ARRAYS!r}, {OUTSIDE!r}]:
    assert shell.run_cell(cell, store_history=True).success
"""
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": path})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith(
        "Cell In[3], line 4: OutOfArrayTileWarning: load of tile (1,) of 'a' (block (0,)) "
        "lies entirely outside the array"), proc.stderr
    assert "\n  t = ct.load(a, index=(1,), shape=(64,), padding_mode=" in proc.stderr
    assert "ipython-input" not in proc.stderr


@pytest.mark.timeout(300)
def test_an_emulator_warning_in_a_jupyter_kernel_cell_names_the_cell_and_its_line():
    # the same cells in a Jupyter kernel (ipykernel), where a warning reaches the notebook as
    # a stderr stream message
    manager = pytest.importorskip("jupyter_client.manager")
    start_new_kernel = manager.start_new_kernel

    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    km, kc = start_new_kernel(kernel_name="python3", env={**os.environ, "PYTHONPATH": path})
    stderr: list[str] = []

    def collect(msg: dict) -> None:
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stderr":
            stderr.append(msg["content"]["text"])
    try:
        for cell in ["%load_ext tile_lab", ARRAYS, OUTSIDE]:
            reply = kc.execute_interactive(cell, timeout=240, output_hook=collect)
            assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    text = "".join(stderr)
    assert text.startswith(
        "Cell In[3], line 4: OutOfArrayTileWarning: load of tile (1,) of 'a' (block (0,)) "
        "lies entirely outside the array"), text
    assert "\n  t = ct.load(a, index=(1,), shape=(64,), padding_mode=" in text
    assert "ipykernel" not in text and "/tmp/" not in text


def test_other_warnings_and_other_files_are_left_as_they_were():
    shell = InteractiveShell.instance()
    filename = shell.compile.cache("\nx = 1\n", 7)  # a cell's file, as the magic registers it
    assert format_cell_warning("m", OutOfArrayTileWarning, filename, 2) == \
        "Cell In[7], line 2: OutOfArrayTileWarning: m\n  x = 1\n"
    assert format_cell_warning("m", UserWarning, filename, 2) is None  # not tile_lab's
    assert format_cell_warning("m", OutOfArrayTileWarning, __file__, 2) is None  # a file
