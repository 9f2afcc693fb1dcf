"""``TILE_LAB_EMULATE=1 python prog.py`` for a program that never imports tile_lab, in a fresh
venv where tile_lab is installed the README's way (``pip install -e .``).

The venv: ``python -m venv --without-pip``, then this environment's pip installs the checkout
into it (``--prefix VENV --ignore-installed --no-deps --no-build-isolation -e``: the same
editable wheel the README's command builds, from the same pyproject, installed into the venv's
site-packages, without downloading anything; SKIP_JUPYTER_BUILDER skips building the
JupyterLab extension, which an editable install without Node skips too).
tile_lab's dependencies (cuda.tile, NumPy, ...) come from this environment: a one-line
``.pth`` of paths (no code) puts its site-packages behind the venv's own. What is under test
is what ``pip install -e .`` put into the venv: the start-up hook ``tile_lab_emulate.pth``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from tile_lab import _startup

REPO = Path(__file__).resolve().parents[1]

PROGRAM = textwrap.dedent('''\
    import sys
    import numpy as np
    import cuda.tile as ct


    @ct.kernel
    def vector_add(a, b, c, tile: ct.Constant[int]):
        pid = ct.bid(0)
        ta = ct.load(a, index=(pid,), shape=(tile,))
        tb = ct.load(b, index=(pid,), shape=(tile,))
        ct.store(c, index=(pid,), tile=ta + tb)


    a = np.arange(5000, dtype=np.float32)
    b = np.full(5000, 2.0, np.float32)
    c = np.zeros_like(a)
    ct.launch(None, (ct.cdiv(5000, 256),), vector_add, (a, b, c, 256))
    np.testing.assert_array_equal(c, a + b)
    print("vector_add OK", "tile_lab" in sys.modules, type(ct.launch).__name__)
    ''')


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=120)
    python = root / "bin" / "python"
    env = {**_clean_env(), "SKIP_JUPYTER_BUILDER": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--prefix", str(root),
         "--ignore-installed", "--no-warn-script-location", "--no-deps",
         "--no-build-isolation", "--no-index", "-e", str(REPO)],
        capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True,
                               env=_clean_env()).stdout.strip())
    assert (site / "tile_lab_emulate.pth").is_file(), sorted(p.name for p in site.iterdir())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


def _clean_env() -> dict[str, str]:
    """This environment without PYTHONPATH (so only what is installed counts) and without
    tile_lab's variables."""
    return {k: v for k, v in os.environ.items()
            if k != "PYTHONPATH" and not k.startswith("TILE_LAB_")}


def _run(python: Path, cwd: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    path = cwd / "prog.py"
    path.write_text(code)
    return subprocess.run([str(python), str(path)], capture_output=True, text=True, cwd=cwd,
                          env={**_clean_env(), **env}, timeout=180)


def test_an_unmodified_program_runs_on_the_emulator(venv, tmp_path):
    done = _run(venv, tmp_path, PROGRAM, TILE_LAB_EMULATE="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["vector_add", "OK", "True", "_EmulatedLaunch"]
    # the installed copy is the checkout under test, found without PYTHONPATH
    where = subprocess.run([str(venv), "-c", "import tile_lab; print(tile_lab.__file__)"],
                           capture_output=True, text=True, env=_clean_env(), check=True)
    assert Path(where.stdout.strip()).parent == REPO / "tile_lab"


def test_without_the_variable_nothing_is_imported_and_launch_is_cuTiles(venv, tmp_path):
    done = _run(venv, tmp_path, "import sys\nprint('tile_lab' in sys.modules)\n")
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr
    done = _run(venv, tmp_path, PROGRAM)  # cuTile's own launch: needs a GPU (or fails)
    assert "vector_add OK" not in done.stdout or "_EmulatedLaunch" not in done.stdout
    done = _run(venv, tmp_path, "import sys, cuda.tile\nprint('tile_lab' in sys.modules)\n",
                TILE_LAB_EMULATE="0")
    assert done.stdout.strip() == "False", done.stderr


def test_sanitize_mode_and_errors_with_the_kernel_line(venv, tmp_path):
    done = _run(venv, tmp_path, PROGRAM, TILE_LAB_EMULATE="sanitize")
    assert done.returncode == 0, done.stderr
    assert "[tile_lab] prog.py:17: ct.launch of vector_add" in done.stdout
    assert "no problems found" in done.stdout
    typo = PROGRAM.replace("ta = ct.load(", "ta = ct.lod(")
    done = _run(venv, tmp_path, typo, TILE_LAB_EMULATE="1")
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == "CompileError: cuTile type error: Module 'cuda.tile' has no attribute 'lod'"
    assert lines[1] == f"  at {tmp_path / 'prog.py'}:9"
    assert lines[2] == "     9 |     ta = ct.lod(a, index=(pid,), shape=(tile,))"
    assert lines[3] == "       |          ^"
    assert lines[-1].startswith("  launched at prog.py:17: ct.launch(None,")
    assert "Traceback" not in done.stderr


def test_an_unknown_mode_is_a_one_line_error(venv, tmp_path):
    done = _run(venv, tmp_path, PROGRAM, TILE_LAB_EMULATE="maybe")
    assert done.returncode == 1 and "vector_add OK" not in done.stdout
    assert done.stderr.strip().splitlines() == [
        f"tile_lab: TILE_LAB_EMULATE='maybe' is not a mode: {_startup.MODES_HELP}"]
    # other Python programs in the environment are not affected by the bad value
    done = _run(venv, tmp_path, "print('fine')\n", TILE_LAB_EMULATE="maybe")
    assert done.returncode == 0 and done.stdout.strip() == "fine" and not done.stderr


def test_mode_values():
    assert _startup.mode_from_env("1") == "emulate" and _startup.mode_from_env(" 0 ") is None
    assert _startup.mode_from_env("Sanitize") == "sanitize"
    assert _startup.mode_from_env("") is None and _startup.mode_from_env("off") is None
    with pytest.raises(ValueError, match=r"TILE_LAB_EMULATE='2' is not a mode"):
        _startup.mode_from_env("2")
