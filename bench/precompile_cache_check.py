"""Does a config compiled in a worker (tile_lab.tune's precompile) hit cuTile's cubin cache when
``ct.launch`` later runs it? Counts cache entries around the launch, per calling convention.

    python bench/precompile_cache_check.py      # needs a GPU
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rows(cache: str) -> int:
    n = 0
    for db in Path(cache).glob("**/*.db"):
        con = sqlite3.connect(db)
        for (t,) in con.execute("select name from sqlite_master where type='table'"):
            n += con.execute(f"select count(*) from {t}").fetchone()[0]
        con.close()
    return n


def child(convention: str) -> None:
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    import cuda.tile as ct
    import cupy as cp
    from cuda.tile.compilation import CallingConvention, KernelSignature
    from gemm_kernels import gemm_naive

    from tile_lab.tuning.parallel_compile import _compile_job, compile_recipe, portable_signature

    n = 4096
    a = cp.ones((n, n), cp.float16)
    c = cp.empty((n, n), cp.float16)
    args = (a, a, c, 128, 128, 64)
    sig = KernelSignature.from_kernel_args(gemm_naive, args,
                                           getattr(CallingConvention, convention)())
    t0 = time.perf_counter()
    _key, err, _ = _compile_job(("k", compile_recipe(gemm_naive), portable_signature(sig),
                                "sm_90"))
    t1 = time.perf_counter()
    before = rows(os.environ["CUDA_TILE_CACHE_DIR"])
    ct.launch(cp.cuda.get_current_stream(), (n // 128, n // 128), gemm_naive, args)
    cp.cuda.get_current_stream().synchronize()
    t2 = time.perf_counter()
    after = rows(os.environ["CUDA_TILE_CACHE_DIR"])
    print(f"{convention}: precompile {t1 - t0:.2f} s (error={err}); cache rows {before} -> "
          f"{after} after ct.launch ({t2 - t1:.2f} s): "
          f"{'HIT' if after == before else 'MISS (launch compiled again)'}")


def main() -> None:
    if len(sys.argv) > 1:
        child(sys.argv[1])
        return
    for convention in ("cutile_python_v1", "cutile_python_v2"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, CUDA_TILE_CACHE_DIR=cache)
            p = subprocess.run([sys.executable, __file__, convention], env=env,
                               capture_output=True, text=True)
            print(p.stdout.strip() or p.stderr[-1500:])


if __name__ == "__main__":
    main()
