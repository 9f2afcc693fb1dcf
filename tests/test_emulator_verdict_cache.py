"""The front-end gate's verdicts on disk: an accepted (kernel, signature) is not type-checked
again in a later process, and anything the verdict depends on changes the key."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.emulator import gate, verdict_cache
from tile_lab.errors import CompileError, EmulationError

ROOT = Path(__file__).resolve().parents[1]

SCALE = 2.0
OFFSET = 1


@ct.function
def twice(t):
    return t * SCALE


@ct.kernel
def uses_helper(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, (bid,), twice(ct.load(x, (bid,), (TILE,))) + OFFSET)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TILE_LAB_FRONTEND_CACHE", str(tmp_path / "verdicts"))
    gate.clear_cache()
    yield tmp_path / "verdicts"
    gate.clear_cache()


def _key(kernel, sig="S") -> str | None:
    return verdict_cache.key(kernel._annotated_function.pyfunc, sig)


def test_the_key_is_stable_and_changes_with_what_the_verdict_depends_on(monkeypatch):
    first = _key(uses_helper)
    assert first is not None and first == _key(uses_helper)
    assert _key(uses_helper, "other signature") != first
    monkeypatch.setitem(globals(), "OFFSET", 2)  # a global constant the kernel names
    assert _key(uses_helper) != first
    monkeypatch.setitem(globals(), "OFFSET", 1)
    monkeypatch.setitem(globals(), "SCALE", 3.0)  # a global the helper names
    assert _key(uses_helper) != first
    monkeypatch.setitem(globals(), "SCALE", 2.0)
    assert _key(uses_helper) == first

    namespace: dict = {"ct": ct}
    code = textwrap.dedent("""\
        @ct.kernel
        def k(x, TILE: ct.Constant[int]):
            ct.store(x, (ct.bid(0),), ct.load(x, (ct.bid(0),), (TILE,)){extra})
        """)
    keys = []
    for extra in ("", " + 1"):  # the kernel's own code
        exec(compile(code.format(extra=extra), "<cell>", "exec"), namespace)
        keys.append(_key(namespace["k"]))
    exec(compile(code.format(extra="").replace("TILE: ct.Constant[int]", "TILE: int"),
                 "<cell>", "exec"), namespace)  # only the annotation differs
    keys.append(_key(namespace["k"]))
    assert None not in keys and len(set(keys)) == 3
    # the same cell in another kernel process: only the file name differs
    exec(compile(code.format(extra=""), "/tmp/ipykernel_4242/123.py", "exec"), namespace)
    assert _key(namespace["k"]) == keys[0]


class Settings:
    tile = 16


SETTINGS = Settings()


@ct.kernel
def names_an_object(x):
    ct.store(x, (ct.bid(0),), ct.load(x, (ct.bid(0),), (SETTINGS.tile,)))


def test_a_kernel_naming_an_object_or_user_module_gets_no_key():
    assert _key(names_an_object) is None
    namespace: dict = {"ct": ct, "helpers": textwrap}  # a module outside the library roots
    exec("@ct.kernel\ndef k(x):\n    helpers.dedent\n", namespace)
    assert _key(namespace["k"]) is None


def test_an_acceptance_is_remembered_on_disk_and_reused(cache_dir, monkeypatch):
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    tile_lab.emulate(uses_helper, (4,), (x, y, 16))
    assert len(list(cache_dir.iterdir())) == 1
    np.testing.assert_array_equal(y, 2 * x + 1)
    gate.clear_cache()  # a new process, as far as memory goes

    checked = []
    real = gate.compat.check_frontend
    monkeypatch.setattr(gate.compat, "check_frontend",
                        lambda *a: checked.append(a) or real(*a))
    tile_lab.emulate(uses_helper, (4,), (x, y, 16))  # the disk verdict: no check
    assert checked == []
    tile_lab.emulate(uses_helper, (2,), (x, y, 32))  # a new signature is checked
    assert len(checked) == 1 and len(list(cache_dir.iterdir())) == 2


@ct.kernel
def rejected(x, TILE: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (TILE,))
    ct.store(x, (ct.bid(0),), t.reshape((3,)))


def test_a_rejection_is_not_stored_and_off_stores_nothing(cache_dir, monkeypatch):
    x = np.zeros(64, np.float32)
    with pytest.raises(CompileError):
        tile_lab.emulate(rejected, (4,), (x, 16))
    assert not cache_dir.exists() or not any(cache_dir.iterdir())
    monkeypatch.setenv("TILE_LAB_FRONTEND_CACHE", "off")
    gate.clear_cache()
    tile_lab.emulate(uses_helper, (4,), (x, np.zeros(64, np.float32), 16))
    assert not cache_dir.exists() or not any(cache_dir.iterdir())


def test_a_bad_setting_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("TILE_LAB_FRONTEND_CACHE", "relative/dir")
    gate.clear_cache()
    with pytest.raises(EmulationError, match=r"TILE_LAB_FRONTEND_CACHE='relative/dir': use off"):
        tile_lab.emulate(uses_helper, (4,), (np.zeros(64, np.float32),
                                             np.zeros(64, np.float32), 16))


def test_a_later_process_skips_cutiles_compiler(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""\
        import sys
        import numpy as np
        import cuda.tile as ct
        import tile_lab

        @ct.kernel
        def vadd(a, b, c, TILE: ct.Constant[int]):
            bid = ct.bid(0)
            ct.store(c, (bid,), ct.load(a, (bid,), (TILE,)) + ct.load(b, (bid,), (TILE,)))

        a = np.arange(1024, dtype=np.float32)
        c = np.zeros_like(a)
        tile_lab.emulate(vadd, (4,), (a, a, c, 256))
        assert (c == 2 * a).all()
        print("compiler imported:", "cuda.tile._compile" in sys.modules)
        """))
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "TILE_LAB_FRONTEND_CACHE": str(tmp_path / "verdicts")}
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=120) for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["compiler imported: True",
                                               "compiler imported: False"], runs[0].stderr
    script.write_text(script.read_text().replace("+ ct.load(b", "- ct.load(b").replace(
        "2 * a", "0 * a"))  # edited kernel: checked again
    again = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=120)
    assert again.stdout.strip() == "compiler imported: True", again.stderr


def test_off_by_default_turns_the_default_cache_off_but_not_a_named_one(tmp_path, monkeypatch):
    monkeypatch.delenv("TILE_LAB_FRONTEND_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert verdict_cache.directory() == tmp_path / "tile_lab" / "frontend"
    with verdict_cache.off_by_default():
        assert verdict_cache.directory() is None
        monkeypatch.setenv("TILE_LAB_FRONTEND_CACHE", str(tmp_path / "named"))
        assert verdict_cache.directory() == tmp_path / "named"
    monkeypatch.delenv("TILE_LAB_FRONTEND_CACHE")
    assert verdict_cache.directory() == tmp_path / "tile_lab" / "frontend"
