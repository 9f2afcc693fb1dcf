"""Isolation: kernels travel to a worker process (cell kernels as source, module kernels by
reference); faults and hangs there become a LaunchError here and this process can still launch
afterwards."""

from __future__ import annotations

import io
import linecache
import pickle

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.compile.toolchain import run_tool
from tile_lab.errors import LaunchError
from tile_lab.kernel_source import kernel_spec

CELL = '''
import cuda.tile as ct
SCALE = 2.0

def helper(t):
    return t * SCALE

@ct.kernel(occupancy=2)
def cell_kernel(a, b, c, tile: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), helper(ct.load(a, (i,), (tile,))) + ct.load(b, (i,), (tile,)))
'''


@ct.kernel
def scatter_far(out, offset: int, tile: ct.Constant[int]):
    # check_bounds=False with indices ~1e9 elements past the array: an illegal address
    idx = ct.arange(tile, dtype=ct.int64) + offset
    ct.scatter(out, idx, 1.0, check_bounds=False)


@ct.kernel
def spin_forever(flag, out):
    # flag[0] is 0 and nothing changes it: the loop never ends
    v = ct.gather(flag, 0)
    n = 0
    while v == 0:
        v = ct.gather(flag, 0)
        n = n + 1
    ct.scatter(out, 0, n)


@ct.kernel
def add_one(x, tile: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(x, (i,), ct.load(x, (i,), (tile,)) + 1)


def _exec_cell(source: str, filename: str) -> dict:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns: dict = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), ns)
    return ns


def _sass(kernel) -> str:
    from cuda.tile.compilation import (
        ArrayConstraint,
        CallingConvention,
        KernelSignature,
        export_kernel,
    )

    arr = ArrayConstraint(dtype=ct.float32, ndim=1, index_dtype=ct.int32,
                          stride_lower_bound_incl=0, alias_groups=(), may_alias_internally=False)
    buf = io.BytesIO()
    export_kernel(kernel, [KernelSignature([arr, arr, arr, 128],
                                           CallingConvention.cutile_python_v1())],
                  buf, gpu_code="sm_90", output_format="cubin")
    proc = run_tool("nvdisasm", ["-c", "/dev/stdin"], input=buf.getvalue())
    return proc.stdout.decode()


# ---- CPU: the kernel survives the trip as source ---------------------------------------
def test_a_notebook_cell_kernel_rebuilds_from_its_spec_after_linecache_forgets_it():
    filename = "<tile-cell-isolate-test>"
    kernel = _exec_cell(CELL, filename)["cell_kernel"]
    spec = kernel_spec(kernel)
    assert spec.name == "cell_kernel" and spec.module is None
    assert spec.hints == (("occupancy", 2),)
    assert {(g.name, g.kind) for g in spec.source.globals} == {("ct", "module"),
                                                                ("helper", "def")}
    helper = next(g.payload for g in spec.source.globals if g.name == "helper")
    assert [(g.name, g.kind) for g in helper.globals] == [("SCALE", "value")]
    wire = pickle.dumps(spec)
    want = _sass(kernel)
    del linecache.cache[filename]  # a fresh process has never seen the cell

    rebuilt = pickle.loads(wire).build()
    assert rebuilt is not kernel
    assert _sass(rebuilt) == want  # same machine code, helper and SCALE included
    assert linecache.getlines(filename)[8].lstrip().startswith("def cell_kernel")


def test_rebuilt_kernel_keeps_the_users_line_numbers():
    filename = "<tile-cell-lines>"
    source = "\n\n\n" + CELL.replace("helper(ct.load", "undefined_name(ct.load")
    kernel = _exec_cell(source, filename)["cell_kernel"]
    spec = pickle.loads(pickle.dumps(kernel_spec(kernel)))
    del linecache.cache[filename]
    rebuilt = spec.build()
    with pytest.raises(Exception) as info:
        _sass(rebuilt)
    from tile_lab._cutile_compat import tile_error_location

    loc = tile_error_location(info.value)
    bad_line = source.splitlines().index(
        next(x for x in source.splitlines() if "undefined_name" in x)) + 1
    assert loc is not None and loc[0] == filename and loc[1] == bad_line


def test_module_level_kernels_travel_by_reference_with_the_hints_they_carry():
    spec = kernel_spec(add_one)
    assert (spec.module, spec.qualname) == (__name__, "add_one")
    # the source too, for a process that cannot import this module; it names only ct
    assert spec.source.filename.endswith("test_gpu_isolate.py")
    assert [(g.name, g.kind) for g in spec.source.globals] == [("ct", "module")]
    assert pickle.loads(pickle.dumps(spec)).build() is add_one
    hinted = pickle.loads(pickle.dumps(kernel_spec(add_one.replace_hints(occupancy=4))))
    assert hinted.hints == (("occupancy", 4),)
    from tile_lab._cutile_compat import compiler_options

    assert compiler_options(hinted.build()).occupancy == 4


# ---- GPU: faults and hangs stay in the worker -----------------------------------------
@pytest.mark.gpu
def test_isolated_launch_runs_and_copies_results_back():
    import cupy

    x = cupy.arange(1024, dtype=cupy.float32)
    tile_lab.launch(add_one, (4,), (x, 256), isolate=True, timeout=120)
    np.testing.assert_array_equal(cupy.asnumpy(x), np.arange(1024, dtype=np.float32) + 1)
    kernel = _exec_cell(CELL, "<tile-cell-gpu>")["cell_kernel"]
    a = np.ones(256, np.float32)
    b = np.full(256, 3.0, np.float32)
    c = np.zeros(256, np.float32)
    tile_lab.launch(kernel, (2,), (a, b, c, 128), isolate=True, timeout=120)
    np.testing.assert_array_equal(c, np.full(256, 5.0, np.float32))


@pytest.mark.gpu
def test_out_of_bounds_scatter_is_a_launch_error_and_the_parent_still_launches():
    import cupy

    out = cupy.zeros(128, dtype=cupy.float32)
    with pytest.raises(LaunchError, match="scatter_far"):
        tile_lab.launch(scatter_far, (64,), (out, 2**31 - 256, 128), isolate=True, timeout=120)
    x = cupy.zeros(512, dtype=cupy.float32)
    tile_lab.launch(add_one, (2,), (x, 256))
    cupy.cuda.get_current_stream().synchronize()
    assert float(x.sum()) == 512.0


@pytest.mark.gpu
def test_a_kernel_that_spins_forever_times_out_and_the_parent_still_launches():
    import cupy

    # warm the worker (compile + context) so the timeout measures the kernel, not startup
    tile_lab.launch(add_one, (1,), (cupy.zeros(256, cupy.float32), 256), isolate=True,
                    timeout=120)
    flag = cupy.zeros(1, dtype=cupy.int32)
    out = cupy.zeros(1, dtype=cupy.int32)
    with pytest.raises(LaunchError, match="did not finish within"):
        tile_lab.launch(spin_forever, (1,), (flag, out), isolate=True, timeout=20)
    x = cupy.zeros(512, dtype=cupy.float32)
    tile_lab.launch(add_one, (2,), (x, 256))
    cupy.cuda.get_current_stream().synchronize()
    assert float(x.sum()) == 512.0
    # and a fresh worker serves the next isolated call
    tile_lab.launch(add_one, (2,), (x, 256), isolate=True, timeout=120)
    assert float(x.sum()) == 1024.0
