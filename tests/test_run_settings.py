"""tests/run_settings.py, what tests/conftest.py sets for the run: how many workers the whole
suite gets, and bytecode allowed where the environment forbids it; and tests/cpu_account.py's
per-file sums."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import cpu_account
import pytest
import run_settings


def test_one_worker_per_core_and_one_more_unless_told(monkeypatch):
    monkeypatch.delenv("TILE_LAB_TEST_WORKERS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert run_settings.worker_count() == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert run_settings.worker_count() == 2
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert run_settings.worker_count() == 8
    monkeypatch.setenv("TILE_LAB_TEST_WORKERS", "5")
    assert run_settings.worker_count() == 5


def test_bytecode_is_allowed_only_where_it_was_forbidden():
    env = {"PATH": "/bin"}
    assert run_settings.allow_bytecode(env) is False and env == {"PATH": "/bin"}
    env = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/bin"}
    assert run_settings.allow_bytecode(env) is True
    assert env == {"PATH": "/bin"}
    told = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/elsewhere"}
    assert run_settings.allow_bytecode(dict(told)) is False  # a prefix given is the user's


@pytest.mark.timeout(120)
def test_a_child_reads_the_bytecode_beside_the_source(tmp_path):
    """What the run gains: a second process reads the bytecode the first wrote (as it reads
    what pip wrote for the installed packages) instead of compiling the module again."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    assert run_settings.allow_bytecode(env)
    (tmp_path / "some_module_for_bytecode.py").write_text("X = 1\n")
    probe = ("import importlib.util as u, some_module_for_bytecode as m; "
             "print(u.cache_from_source(m.__file__))")
    run = [sys.executable, "-c", probe]
    first = subprocess.run(run, cwd=tmp_path, env=env, check=True, timeout=100,
                           capture_output=True, text=True).stdout.strip()
    assert os.path.dirname(first) == str(tmp_path / "__pycache__") and os.path.isfile(first)
    stamp = os.stat(first).st_mtime_ns
    subprocess.run(run, cwd=tmp_path, env=env, check=True, timeout=100)
    assert os.stat(first).st_mtime_ns == stamp  # read, not written again


def test_cpu_account_sums_per_file_most_cpu_first(tmp_path):
    lines = [dict(nodeid="tests/test_a.py::t1", self=1.0, children=2.0, wall=5.0),
             dict(nodeid="tests/test_a.py::t2", self=0.5, children=0.0, wall=1.0),
             dict(nodeid="notebooks/n.ipynb::Cell 0", self=0.1, children=9.0, wall=9.5)]
    (tmp_path / "gw0-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines[:2]))
    (tmp_path / "gw1-2.jsonl").write_text(json.dumps(lines[2]) + "\n")
    rows = cpu_account.summarize(tmp_path)
    assert rows[0] == ("notebooks/n.ipynb", 0.1, 9.0, 9.5, 1)
    assert rows[1] == ("tests/test_a.py", 1.5, 2.0, 6.0, 2)


def test_longest_files_first_each_files_tests_together_in_order():
    ids = ["tests/test_a.py::t1", "tests/test_b.py::t1", "tests/test_a.py::t2",
           "tests/test_new.py::t1", "tests/test_new.py::t2", "tests/test_slow_new.py::t1",
           "notebooks/n.ipynb::Cell 0", "notebooks/n.ipynb::Cell 1"]
    known = {"tests/test_a.py": 5.0, "tests/test_b.py": 50.0, "notebooks/n.ipynb": 100.0}
    order = run_settings.longest_first(ids, known, slow={"tests/test_slow_new.py::t1"})
    assert order == ["notebooks/n.ipynb::Cell 0", "notebooks/n.ipynb::Cell 1",
                     "tests/test_b.py::t1", "tests/test_slow_new.py::t1",
                     "tests/test_a.py::t1", "tests/test_a.py::t2",
                     "tests/test_new.py::t1", "tests/test_new.py::t2"]


def test_the_recorded_scope_times_name_units_of_this_suite():
    known = run_settings.expected_seconds()
    assert len(known) > 50 and all(v >= 0 for v in known.values())
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    units = set(run_settings.SHARED_UNITS.values())
    missing = [s for s in known
               if s not in units and not os.path.exists(os.path.join(here, s.split("::")[0]))]
    assert missing == []
    shared = [f for f in run_settings.SHARED_UNITS if not os.path.exists(os.path.join(here, f))]
    assert shared == []


def test_the_jupyterlab_ui_files_are_one_unit_of_work(monkeypatch):
    monkeypatch.setattr(run_settings, "SHARED_UNITS", {"tests/test_ui_a.py": "ui",
                                                      "tests/test_ui_b.py": "ui"})
    assert run_settings.scope_of("tests/test_ui_b.py::t") == "ui"
    assert run_settings.scope_of("tests/test_other.py::t") == "tests/test_other.py"
    ids = ["tests/test_ui_a.py::t1", "tests/test_other.py::t1", "tests/test_ui_b.py::t1",
           "tests/test_ui_a.py::t2"]
    order = run_settings.longest_first(ids, {"ui": 30.0, "tests/test_other.py": 20.0})
    assert order == ["tests/test_ui_a.py::t1", "tests/test_ui_b.py::t1",
                     "tests/test_ui_a.py::t2", "tests/test_other.py::t1"]


def test_cpu_account_gives_each_units_wall_time(tmp_path):
    lines = [dict(nodeid="tests/test_a.py::t1", self=1.0, children=2.0, wall=5.0),
             dict(nodeid="tests/test_a.py::t2", self=0.5, children=0.0, wall=1.0),
             dict(nodeid="notebooks/n.ipynb::Cell 0", self=0.1, children=9.0, wall=9.5)]
    (tmp_path / "gw0-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert cpu_account.scope_seconds(tmp_path) == {"notebooks/n.ipynb": 9.5,
                                                   "tests/test_a.py": 6.0}


def test_the_controller_compiles_the_sources_once_unless_bytecode_is_forbidden(tmp_path,
                                                                            monkeypatch):
    for folder in ("tile_lab", "tests"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "mod.py").write_text("X = 1\n")
    (tmp_path / "tests" / "broken.py").write_text("def (:\n")  # its import reports it
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert run_settings.compile_sources(str(tmp_path), env={"PYTHONDONTWRITEBYTECODE": "1"}) \
        is False
    assert not list(tmp_path.rglob("*.pyc"))
    assert run_settings.compile_sources(str(tmp_path), env={}) is True
    made = sorted(p.parent.parent.name + "/" + p.name.split(".")[0]
                  for p in tmp_path.rglob("*.pyc"))
    assert made == ["tests/mod", "tile_lab/mod"]
