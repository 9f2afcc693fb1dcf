"""Whole kernels: every correct corpus kernel (``corpus.correct`` and the sample-style
kernels of ``corpus.samples``) compiles with cuTile, runs in the emulator, matches its NumPy
reference, and gives no sanitizer findings. The ``gpu`` variant crosschecks each on the GPU
against the emulator, tile by tile (``tile_lab.crosscheck``): every difference must be
explained (undetermined lanes or by design), none an emulator bug."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from corpus import correct, export_tileir, samples

from tile_lab.emulator import emulate_kernel as emulate
from tile_lab.emulator import trace_kernel as trace
from tile_lab.sanitizer.checks import sanitize_kernel as sanitize

CORRECT = {c.name: c for c in (*correct.CASES, *samples.CASES)}

REQUIRED = {"vector_add", "vector_add_gather", "gemm_fp16_fp32acc", "persistent_gemm",
            "softmax", "layernorm_fwd", "layernorm_bwd", "transpose", "stencil_5point",
            "atomic_sum"}


def test_the_corpus_has_every_required_kernel():
    assert set(CORRECT) >= REQUIRED


def _check_against_reference(case, args, expected):
    actual = case.actual(args)
    assert set(actual) == set(expected)
    for name, want in expected.items():
        got = np.asarray(actual[name])
        assert got.shape == np.shape(want), name
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=case.rtol,
                                   atol=case.atol, err_msg=f"{case.name}: {name}")


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_kernel_compiles_with_cutile(name):
    case = CORRECT[name]
    _, args = case.build()
    assert len(export_tileir(case.kernel, args)) > 0


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_emulated_kernel_matches_numpy_reference(name):

    case = CORRECT[name]
    grid, args = case.build()
    expected = case.reference(copy.deepcopy(args))
    emulate(case.kernel, grid, args)
    _check_against_reference(case, args, expected)


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_kernel_has_no_sanitizer_findings(name):

    case = CORRECT[name]
    grid, args = case.build()
    expected = case.reference(copy.deepcopy(args))
    report = sanitize(case.kernel, grid, args)
    assert report.ok, str(report)
    assert report.accesses > 0
    _check_against_reference(case, args, expected)  # tracing ran the kernel for real


def test_the_persistent_gemm_really_loops_over_tiles():
    # fewer blocks than output tiles: each block must store several tiles

    case = CORRECT["persistent_gemm"]
    grid, args = case.build()
    tr = trace(case.kernel, grid, args)
    stores = tr.select(arg="C", kind="store")
    assert grid == (3,) and len(stores) > 3
    assert {a.block for a in stores} == {(0, 0, 0), (1, 0, 0), (2, 0, 0)}


def test_layernorm_bwd_takes_and_releases_the_lock_around_each_update():

    case = CORRECT["layernorm_bwd"]
    grid, args = case.build()
    tr = trace(case.kernel, grid, args)
    for block in tr.blocks:
        ops = [a.op for a in tr.select(block=block, arg="Locks")]
        assert ops[0] == "atomic_cas" and ops[-1] == "atomic_xchg", (block, ops)
    assert np.all(args[8] == 0)  # every lock released


# ---- the same kernels on a real GPU ------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CORRECT))
def test_gpu_result_matches_emulator(name):
    from tile_lab import crosscheck

    case = CORRECT[name]
    grid, args = case.build()
    result = crosscheck(case.kernel, grid, args)
    assert result.ok, str(result)
    assert result.tiles, f"{name}: no output tile compared"
