"""Parallel precompilation: signatures travel to worker processes, cubins land in cuTile's cache."""

from __future__ import annotations

import os
import pickle
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tune_kernels import scale_copy

from tile_lab.compile.signature import signature_from_args
from tile_lab.kernel_source import KernelNotShippable
from tile_lab.tuning.parallel_compile import (
    Precompiler,
    _compile_job,
    compile_recipe,
    portable_signature,
    signature_from_portable,
)
from tile_lab.tuning.space import Config


def _signature():
    x = np.zeros(4096, np.float32)
    return signature_from_args(scale_copy, (x, x, 256, 2)).kernel_signature


def test_signature_round_trips_through_pickle():
    sig = _signature()
    with pytest.raises(TypeError):
        pickle.dumps(sig)  # why portable_signature exists: CallingConvention does not pickle
    back = signature_from_portable(pickle.loads(pickle.dumps(portable_signature(sig))))
    assert back == sig


# A notebook cell with side effects around its kernel: a worker must run only the kernel's
# def (and what it names), never the append, the print or the other statements.
SIDE_EFFECT_CELL = """import cuda.tile as ct
print("cell ran")
with open(LOG, "a") as fh:
    fh.write("ran\\n")
SCALE = 2
DT = ct.float32

@ct.function
def twice(t):
    return ct.astype(t * SCALE, DT)

@ct.kernel
def k(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=twice(ct.load(x, index=(bid,), shape=(T,))))

unrelated = k  # another statement after the kernel
"""


def _run_cell(text: str, filename: str, log: Path) -> dict:
    import linecache

    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns: dict = {"__name__": "__main__", "LOG": str(log)}
    exec(compile(text, filename, "exec"), ns)
    return ns


def test_compile_recipe_imports_module_kernels_and_ships_cell_sources(tmp_path, capsys):
    recipe = compile_recipe(scale_copy)
    assert recipe.spec.module == "tune_kernels"
    assert pickle.loads(pickle.dumps(recipe)).build().kernel is scale_copy
    log = tmp_path / "log.txt"
    ns = _run_cell(SIDE_EFFECT_CELL, "<cell-7>", log)
    recipe = compile_recipe(ns["k"])
    source = recipe.spec.source
    assert recipe.spec.module is None and source is not None
    shipped = {g.name: g.kind for g in source.globals}
    assert shipped == {"ct": "module", "twice": "def"}  # not LOG, print, unrelated
    helper = next(g.payload for g in source.globals if g.name == "twice")
    assert {g.name: g.kind for g in helper.globals} == {"ct": "module", "SCALE": "value",
                                                        "DT": "import"}
    capsys.readouterr()
    import linecache

    linecache.cache.pop("<cell-7>")
    k = pickle.loads(pickle.dumps(recipe)).build().kernel
    assert type(k).__name__ == "kernel"
    assert linecache.getlines("<cell-7>")[12].startswith("def k(")  # findsource will work
    assert log.read_text() == "ran\n"  # the cell's append ran once, in the parent only
    assert capsys.readouterr().out == ""


def test_cell_kernel_compiles_in_a_fresh_worker_without_rerunning_its_cell(tmp_path):
    """The worker path end to end in a fresh process (as a spawned worker is): the cell's
    kernel and its helper compile there, and the cell's side effects do not happen again."""
    log = tmp_path / "log.txt"
    ns = _run_cell(SIDE_EFFECT_CELL, "<cell-8>", log)
    x = np.zeros(4096, np.float32)
    sig = signature_from_args(ns["k"], (x, x, 256)).kernel_signature
    job = ("cfg", compile_recipe(ns["k"]), portable_signature(sig), "sm_90")
    (tmp_path / "job.pkl").write_bytes(pickle.dumps(job))
    code = ("import pickle, sys\n"
            "from tile_lab.tuning.parallel_compile import _compile_job\n"
            f"job = pickle.loads(open({str(tmp_path / 'job.pkl')!r}, 'rb').read())\n"
            "print(repr(_compile_job(job)[:2]))\n")
    env = dict(os.environ, CUDA_TILE_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "('cfg', None)", out.stderr[-2000:]
    assert "cell ran" not in out.stdout
    assert log.read_text() == "ran\n"


def test_a_kernel_with_an_unshippable_global_is_left_to_the_launch(tmp_path):
    # an object of a class defined in a cell cannot be rebuilt in a worker
    cell = SIDE_EFFECT_CELL.replace("SCALE = 2", "class Scale:\n    pass\nSCALE = Scale()")
    ns = _run_cell(cell, "<cell-9>", tmp_path / "log.txt")
    with pytest.raises(KernelNotShippable, match=r"global .SCALE. \(Scale\)"):
        compile_recipe(ns["k"])
    x = np.zeros(4096, np.float32)
    pre = Precompiler(ns["k"], [Config((("T", 256),))], lambda cfg: (x, x, 256),
                      {"T": "constant"}, "sm_90", 1)
    assert pre.futures == {} and pre.error(Config((("T", 256),))) is None
    pre.close()


def test_worker_job_fills_cutiles_cubin_cache(tmp_path):
    # A fresh process, as a spawned worker is: cuTile reads its cache dir at import.
    code = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from tune_kernels import scale_copy\n"
        "from tile_lab.compile.signature import signature_from_args\n"
        "from dataclasses import replace\n"
        "from tile_lab.tuning.parallel_compile import _compile_job, compile_recipe, "
        "portable_signature\n"
        "x = np.zeros(4096, np.float32)\n"
        "sig = signature_from_args(scale_copy, (x, x, 256, 2)).kernel_signature\n"
        "recipe = replace(compile_recipe(scale_copy), hints=(('num_ctas', 1),))\n"
        "key, err, seconds = _compile_job(('cfg', recipe, portable_signature(sig), 'sm_90'))\n"
        "print(repr((key, err)), seconds > 0)\n")
    env = dict(os.environ, CUDA_TILE_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert "('cfg', None) True" in out.stdout, out.stderr[-2000:]
    dbs = list(tmp_path.glob("**/*.db"))
    assert dbs, "no cuTile cache database was written"
    assert sum(_count_rows(db) for db in dbs) >= 1


def test_worker_job_reports_compile_errors_as_data():
    recipe = replace(compile_recipe(scale_copy), hints=(("num_ctas", 1),))
    key, err, seconds = _compile_job(("bad", recipe, portable_signature(_signature()), "sm_75"))
    assert key == "bad" and err and "sm_75" in err and seconds >= 0


def _count_rows(db):
    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        return sum(con.execute(f"select count(*) from {t}").fetchone()[0] for t in tables)
    finally:
        con.close()
