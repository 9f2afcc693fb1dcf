"""The command line's ``inspect``: a kernel of a .py file compiled through a Request and
printed pane by pane; its mistakes are one line on stderr and exit status 1 (the doctor,
version and export commands are tested in test_doctor.py and test_share_notebook.py)."""

from __future__ import annotations

import pytest

from tile_lab.__main__ import main

SCALE = """import cuda.tile as ct

@ct.kernel
def scale(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(y, index=(ct.bid(0),), tile=t * 2)
"""


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(SCALE)
    return str(path)


def test_inspect_prints_the_panes_asked_for_in_their_order(kernels, capsys):
    assert main(["inspect", kernels, "scale", "--sig", "f32[1024], f32[1024], 256",
                 "--arch", "sm_90", "--show", "tileir,source"]) == 0
    out = capsys.readouterr().out
    assert out.index("== tileir ==") < out.index("== source ==")
    assert "ct.store(y, index=(ct.bid(0),), tile=t * 2)" in out.split("== source ==")[1]
    assert "== sass ==" not in out


def test_inspect_refuses_a_name_the_file_does_not_define(kernels, capsys):
    assert main(["inspect", kernels, "nothing", "--sig", "f32[4]"]) == 1
    assert "defines no 'nothing'" in capsys.readouterr().err


def test_inspect_says_what_is_wrong_with_the_request(kernels, capsys):
    assert main(["inspect", kernels, "scale", "--sig", "f32[1024], f32[1024], 256",
                 "--arch", "sm_7"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tile-lab inspect: ") and "sm_7" in err
