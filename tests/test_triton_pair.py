"""tile_lab.compare of a Triton kernel and its cuTile port: the three tutorial pairs agree on a
CPU; a wrong port is caught; mismatched pairs and bad arguments are clear errors."""

from __future__ import annotations

import json
import sys

import cuda.tile as ct
import numpy as np
import pytest
from triton_cases import compared, needs_triton

from tile_lab.errors import ArgumentTypeError, SignatureError

pytestmark = needs_triton


@ct.kernel
def vector_sub(x, y, out, TILE: ct.Constant[int]):  # a wrong "port" of add_kernel
    bid = ct.bid(0)
    ct.store(out, index=(bid,), tile=ct.load(x, index=(bid,), shape=(TILE,))
             - ct.load(y, index=(bid,), shape=(TILE,)))


@pytest.mark.parametrize("name", ["vector_add", "softmax", "gemm"])
def test_the_three_ports_agree_on_a_cpu(name):
    cmp = compared(name)
    assert cmp.outputs is not None and cmp.outputs.ok, str(cmp.outputs)
    assert cmp.outputs.agreement in ("identical", "explained")
    assert cmp.outputs.elements_by_class["mismatch"] == 0
    assert "interpreter, CPU" in cmp.outputs.device
    # both compiled for the same arch, both with SASS and resources read from the cubins
    assert cmp.triton.inspection.arch == cmp.cutile.inspection.arch == "sm_90"
    for side in (cmp.triton, cmp.cutile):
        assert side.resources.registers and side.instructions > 0
        assert side.mix.get("global memory", 0) + side.mix.get("TMA / bulk copy", 0) > 0


def test_a_pair_compiles_runs_and_compares_without_tileirdisasm(monkeypatch):
    # what time_pair does before timing, on a machine without tileirdisasm: the pair's
    # resources and instruction mix come from the cubin and SASS, never from the Tile IR
    import tile_lab
    import tile_lab.compile.tileir as tileir
    from tile_lab.errors import ToolchainError
    from tile_lab.examples.triton_ports import pair_inputs

    def missing(bytecode):
        raise ToolchainError("tileirdisasm not found")

    monkeypatch.setattr(tileir, "_tileirdisasm", missing)
    p = pair_inputs("vector_add", 1000)
    cmp = tile_lab.compare(p["triton"], p["cutile"], args=p["args"],
                           cutile_args=p["cutile_args"], grid=p["grid"])
    assert cmp.outputs.ok and cmp.cutile.instructions > 0 and cmp.cutile.resources.registers
    with pytest.raises(ToolchainError, match="tileirdisasm not found"):
        cmp.cutile.inspection.tileir  # noqa: B018 -- only reading it needs the tool


def test_gemm_sides_use_tensor_cores():
    cmp = compared("gemm")
    assert cmp.triton.mix["tensor core"] > 0 and cmp.cutile.mix["tensor core"] > 0


def test_the_comparison_is_plain_json():
    cmp = compared("softmax")
    d = json.loads(json.dumps(cmp.to_json(), allow_nan=False))
    assert d["triton"]["kernel"] == "softmax_kernel" and d["cutile"]["kernel"] == "softmax_rows"
    assert d["outputs"]["agreement"] == cmp.outputs.agreement
    assert d["triton"]["resources"]["registers"] == cmp.triton.resources.registers


def test_a_wrong_port_is_a_mismatch():
    import tile_lab
    from tile_lab.examples.triton_ports import pair_inputs

    p = pair_inputs("vector_add", 1000)
    cmp = tile_lab.compare(p["triton"], vector_sub, args=p["args"],
                           cutile_args=p["cutile_args"], grid=p["grid"])
    assert not cmp.outputs.ok and cmp.outputs.agreement == "mismatch"
    assert cmp.outputs.elements_by_class["mismatch"] > 900
    assert "outputs: mismatch" in cmp.summary()


def test_without_a_grid_nothing_runs():
    import tile_lab
    from tile_lab.examples.triton_ports import pair_inputs

    p = pair_inputs("vector_add", 1000)
    cmp = tile_lab.compare(p["triton"], p["cutile"], args=p["args"],
                           cutile_args=p["cutile_args"])
    assert cmp.outputs is None and "not run" in cmp.summary()
    assert np.all(p["args"][2] == 0)  # the caller's output array is never written


def test_mismatched_signatures_between_the_pair():
    import tile_lab
    from tile_lab.examples.triton_ports import pair_inputs

    p = pair_inputs("vector_add", 1000)
    x, y, out, n, block = p["args"]
    with pytest.raises(SignatureError, match=r"array 3 is float16\[1000\] for Triton "
                                             r"\(out_ptr\) but float32\[1000\] for cuTile"):
        tile_lab.compare(p["triton"], p["cutile"], args=(x, y, out.astype(np.float16), n,
                                                         block),
                         cutile_args=p["cutile_args"], grid=p["grid"])
    with pytest.raises(SignatureError, match=r"Triton kernel gets 3 arrays .* cuTile kernel 2"):
        tile_lab.compare(p["triton"], p["cutile"], args=p["args"],
                         cutile_args=(x, out, block), grid=p["grid"])
    with pytest.raises(SignatureError, match=r"array 1 is float32\[1000\] for Triton .* "
                                             r"float32\[999\]"):
        tile_lab.compare(p["triton"], p["cutile"], args=p["args"],
                         cutile_args=(x[:999], y, out, block), grid=p["grid"])


def test_kernels_in_the_wrong_places():
    import tile_lab
    from tile_lab.examples.triton_ports import pair_inputs

    p = pair_inputs("vector_add", 100)
    with pytest.raises(ArgumentTypeError, match=r"argument 1 \(the Triton kernel\) must be a "
                                                r"@triton.jit kernel, got a cuTile kernel"):
        tile_lab.compare(p["cutile"], p["triton"], args=p["args"],
                         cutile_args=p["cutile_args"])
    with pytest.raises(ArgumentTypeError, match=r"argument 2 \(the cuTile kernel\) must be a "
                                                r"cuTile kernel \(@ct.kernel\), got a function"):
        tile_lab.compare(p["triton"], lambda: None, args=p["args"], cutile_args=())


def test_missing_triton_is_named(monkeypatch):
    import tile_lab
    from tile_lab.examples.triton_ports import pair_inputs
    from tile_lab.triton import TritonMissing

    p = pair_inputs("vector_add", 100)
    monkeypatch.setitem(sys.modules, "triton", None)
    with pytest.raises(TritonMissing, match=r"tile_lab.compare of a Triton kernel and a cuTile "
                                            "kernel needs Triton"):
        tile_lab.compare(p["triton"], p["cutile"], args=p["args"],
                         cutile_args=p["cutile_args"])


def test_python_and_cpp_pairs_still_go_to_the_cpp_compare(monkeypatch):
    import tile_lab
    import tile_lab.cpp

    calls = []
    monkeypatch.setattr(tile_lab.cpp, "compare", lambda a, b, **kw: calls.append((a, b, kw)))
    tile_lab.compare("py", "cpp", py_args="f32[4]")
    assert calls == [("py", "cpp", {"py_args": "f32[4]"})]
