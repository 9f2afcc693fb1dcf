"""tile_lab.triton.resources: registers / shared memory from the cubin, the instruction mix."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from triton_cases import needs_triton

from tile_lab.compile.stage_rows import SassRow

pytestmark = needs_triton


@pytest.fixture(scope="module")
def gemm():
    from tile_lab.examples.triton_ports import matmul_kernel
    from tile_lab.triton import compile_triton

    return compile_triton(matmul_kernel, "*fp16, *fp16, *fp32, i32, i32, i32, 64, 64, 32")


def _cuobjdump() -> Path | None:
    import triton

    p = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    return p if p.exists() else None


def test_registers_and_shared_match_cuobjdump(gemm, tmp_path):
    from tile_lab.triton import cubin_resources

    tool = _cuobjdump()
    if tool is None:
        pytest.skip("Triton's wheel ships no cuobjdump here to check against")
    path = tmp_path / "k.cubin"
    path.write_bytes(gemm.inspection.cubin)
    out = subprocess.run([str(tool), "--dump-resource-usage", str(path)], capture_output=True,
                         text=True, check=True).stdout
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+)", out)
    res = cubin_resources(gemm.inspection.cubin, "matmul_kernel",
                          dynamic_shared=gemm.shared_bytes)
    assert res.registers == int(m.group(1)) and res.frame_bytes == int(m.group(2))
    assert res.shared_bytes == int(m.group(3)) + gemm.shared_bytes
    assert gemm.shared_bytes > 0  # the GEMM stages its tiles through shared memory


def test_mix_counts_every_instruction_once(gemm):
    from tile_lab.triton import instruction_mix

    rows = gemm.inspection.stages["sass"].rows
    mix = instruction_mix(rows)
    assert sum(mix.values()) == sum(1 for r in rows if isinstance(r, SassRow) and r.opcode)
    assert mix["tensor core"] > 0 and mix["global memory"] > 0  # tl.dot, tl.load


@pytest.mark.parametrize("op, cls", [("HGMMA.64x64x16.F32", "tensor core"),
                                     ("LDG.E.128", "global memory"), ("FFMA", "float math"),
                                     ("IMAD.WIDE", "integer / address"), ("BRA", "control / sync"),
                                     ("UTMALDG.2D", "TMA / bulk copy"), ("LDSM.16.M88.4",
                                                                         "shared memory"),
                                     ("S2R", "moves / constants"), ("WEIRDOP", "other")])
def test_mix_classes(op, cls):
    from tile_lab.triton.resources import mix_class

    assert mix_class(op) == cls


def test_not_an_elf_gives_unknowns():
    from tile_lab.triton import cubin_resources

    res = cubin_resources(b"not a cubin", "k")
    assert res.registers is None and res.shared_bytes == 0
