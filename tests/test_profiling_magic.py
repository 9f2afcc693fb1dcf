"""``%%tile --profile``: the option reaches tile_lab.profile and its errors fail the cell."""

from __future__ import annotations

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from shared_kernels import vadd_cell

from tile_lab.errors import ProfilerUnavailable
from tile_lab.profiling import ncu

VADD = vadd_cell("vadd")


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "tile_lab")
    x = np.ones(1024, np.float32)
    sh.user_ns.update(pa=x, pb=x, pc=np.zeros_like(x))
    return sh


def test_profile_without_ncu_fails_the_cell_with_the_hint(shell, monkeypatch, tmp_path):
    monkeypatch.delenv(ncu.NCU_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ncu, "_NCU_PLACES", ())
    with pytest.raises(ProfilerUnavailable) as info:
        shell.run_cell_magic("tile", '--profile --grid "(8,)" --args "pa, pb, pc, 128"', VADD)
    assert "Nsight Compute" in info.value.message and "PATH" in info.value.hint


def test_profile_needs_grid_and_args(shell):
    with pytest.raises(UsageError, match="--grid and --args"):
        shell.run_cell_magic("tile", "--profile", VADD)


def test_profile_is_one_execution_flag_at_a_time(shell):
    with pytest.raises(UsageError, match="at a time"):
        shell.run_cell_magic("tile", '--profile --launch --grid "(8,)" --args "pa, pb, pc, 128"',
                             VADD)
