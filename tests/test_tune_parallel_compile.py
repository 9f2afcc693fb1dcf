"""Parallel precompilation: signatures travel to worker processes, cubins land in cuTile's cache."""

from __future__ import annotations

import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tune_kernels import scale_copy

from tile_lab.signature import signature_from_args
from tile_lab.tuning.parallel_compile import (
    _compile_job,
    kernel_reference,
    portable_signature,
    resolve_kernel,
    signature_from_portable,
)


def _signature():
    x = np.zeros(4096, np.float32)
    return signature_from_args(scale_copy, (x, x, 256, 2)).kernel_signature


def test_signature_round_trips_through_pickle():
    sig = _signature()
    with pytest.raises(TypeError):
        pickle.dumps(sig)  # why portable_signature exists: CallingConvention does not pickle
    back = signature_from_portable(pickle.loads(pickle.dumps(portable_signature(sig))))
    assert back == sig


def test_kernel_reference_resolves_module_kernels_and_cell_sources():
    ref = kernel_reference(scale_copy)
    assert ref[0] == "module" and resolve_kernel(ref) is scale_copy
    cell = ("import cuda.tile as ct\n\n@ct.kernel\ndef k(x, T: ct.Constant[int]):\n"
            "    ct.store(x, index=(0,), tile=ct.load(x, index=(0,), shape=(T,)))\n")
    k = resolve_kernel(("source", "<cell-7>", cell, "k"))
    import linecache

    assert linecache.getlines("<cell-7>")[3].startswith("def k(")  # findsource will work
    assert type(k).__name__ == "kernel"


def test_worker_job_fills_cutiles_cubin_cache(tmp_path):
    # A fresh process, as a spawned worker is: cuTile reads its cache dir at import.
    code = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from tune_kernels import scale_copy\n"
        "from tile_lab.signature import signature_from_args\n"
        "from tile_lab.tuning.parallel_compile import _compile_job, kernel_reference, "
        "portable_signature\n"
        "x = np.zeros(4096, np.float32)\n"
        "sig = signature_from_args(scale_copy, (x, x, 256, 2)).kernel_signature\n"
        "key, err, seconds = _compile_job(('cfg', kernel_reference(scale_copy), "
        "portable_signature(sig), {'num_ctas': 1}, 'sm_90'))\n"
        "print(repr((key, err)), seconds > 0)\n")
    env = dict(os.environ, CUDA_TILE_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert "('cfg', None) True" in out.stdout, out.stderr[-2000:]
    dbs = list(tmp_path.glob("**/*.db"))
    assert dbs, "no cuTile cache database was written"
    assert sum(_count_rows(db) for db in dbs) >= 1


def test_worker_job_reports_compile_errors_as_data():
    key, err, seconds = _compile_job(("bad", kernel_reference(scale_copy),
                                      portable_signature(_signature()), {"num_ctas": 1},
                                      "sm_75"))
    assert key == "bad" and err and "sm_75" in err and seconds >= 0


def _count_rows(db):
    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        return sum(con.execute(f"select count(*) from {t}").fetchone()[0] for t in tables)
    finally:
        con.close()
