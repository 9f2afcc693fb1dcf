"""The crosscheck's budget is tight: emulator bugs planted through the scripted GPU side are
mismatches in fp16, bf16 and fp32 outputs, while what a GPU legitimately does differently
(another summation order in a float32 accumulator, a fused multiply-add, approximate exp, the
output's rounding) is not.

Each planted bug edits the GPU side's copy of the output after an exact emulation (see
tests/crosscheck_fakes.py), so the emulator side plays "the GPU" and the edit plays "the
emulator's bug": which side is wrong does not matter to the comparison.
"""

from __future__ import annotations

import cuda.tile as ct
import ml_dtypes
import numpy as np
import pytest
from crosscheck_fakes import ScriptedGpu

import tile_lab

DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}
TM = TN = 32
TK = 32


@ct.kernel
def gemm_bias(A, B, bias, C, TM: ct.Constant[int], TN: ct.Constant[int],
              TK: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(i, k), shape=(TM, TK))
        b = ct.load(B, index=(k, j), shape=(TK, TN))
        acc = ct.mma(a, b, acc)
    bb = ct.load(bias, index=(0, j), shape=(1, TN)).astype(ct.float32)
    ct.store(C, index=(i, j), tile=(acc + bb).astype(C.dtype))


@ct.kernel
def softmax_rows(X, Y, TR: ct.Constant[int], W: ct.Constant[int]):
    x = ct.load(X, index=(ct.bid(0), 0), shape=(TR, W)).astype(ct.float32)
    e = ct.exp(x - ct.max(x, axis=1, keepdims=True))
    y = e / ct.sum(e, axis=1, keepdims=True)
    ct.store(Y, index=(ct.bid(0), 0), tile=y.astype(Y.dtype))


@ct.kernel
def scale_shift(X, W, Y, TR: ct.Constant[int], TC: ct.Constant[int]):
    x = ct.load(X, index=(ct.bid(0), ct.bid(1)), shape=(TR, TC)).astype(ct.float32)
    w = ct.load(W, index=(0, ct.bid(1)), shape=(1, TC)).astype(ct.float32)
    y = x * w + 0.5
    ct.store(Y, index=(ct.bid(0), ct.bid(1)), tile=y.astype(Y.dtype))


@ct.kernel
def row_sums(X, Y, TR: ct.Constant[int], TC: ct.Constant[int]):
    acc = ct.full((TR, 1), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(X, axis=1, shape=(TR, TC))):
        x = ct.load(X, index=(ct.bid(0), k), shape=(TR, TC)).astype(ct.float32)
        acc += ct.sum(x, axis=1, keepdims=True)
    ct.store(Y, index=(ct.bid(0), 0), tile=acc.astype(Y.dtype))


# ---- the launches: 16 output tiles each, one planted bug per tile ------------------------

def _gemm(dtype: str, m: int = 128, n: int = 128, k: int = 128, tiles=(TM, TN, TK)):
    rng = np.random.default_rng(7)
    dt = DTYPES[dtype]
    a = rng.standard_normal((m, k)).astype(dt)
    b = rng.standard_normal((k, n)).astype(dt)
    bias = (4 * rng.standard_normal((1, n))).astype(dt)
    c = np.zeros((m, n), dt)
    tm, tn, tk = tiles
    return gemm_bias, (m // tm, n // tn), (a, b, bias, c, tm, tn, tk)


def _softmax(dtype: str):
    x = np.random.default_rng(8).standard_normal((128, 32)).astype(DTYPES[dtype]) * 2
    return softmax_rows, (16,), (x, np.zeros_like(x), 8, 32)


def _scale_shift(dtype: str):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((64, 64)).astype(DTYPES[dtype])
    w = rng.standard_normal((1, 64)).astype(DTYPES[dtype])
    return scale_shift, (4, 4), (x, w, np.zeros_like(x), 16, 16)


def _row_sums(dtype: str):
    x = np.random.default_rng(10).standard_normal((256, 128)).astype(DTYPES[dtype])
    return row_sums, (16,), (x, np.zeros((256, 1), DTYPES[dtype]), 16, 32)


KERNELS = {"gemm": _gemm, "softmax": _softmax, "scale_shift": _scale_shift,
           "row_sums": _row_sums}
OUT = {"gemm": 3, "softmax": 1, "scale_shift": 2, "row_sums": 1}  # the output's position
TILE = {"gemm": (32, 32), "softmax": (8, 32), "scale_shift": (16, 16), "row_sums": (16, 1)}


def _boxes(kind: str, shape: tuple[int, int]) -> list[tuple[slice, slice]]:
    """The output's tiles in row-major order."""
    th, tw = TILE[kind]
    return [(slice(r, r + th), slice(c, c + tw)) for r in range(0, shape[0], th)
            for c in range(0, shape[1], tw)]


# ---- planted bugs: each rewrites one tile of the output (float64 values, rounded to the
# output dtype after), computed from the correct output ``y0`` -------------------------------

def _element(y0: np.ndarray, box) -> tuple[int, int]:
    """A fixed, typical element of the tile: the one of median magnitude (not the largest,
    where a relative error is easiest to see)."""
    t = np.abs(y0[box])
    r, c = np.unravel_index(int(np.argsort(t, axis=None)[t.size // 2]), t.shape)
    return box[0].start + int(r), box[1].start + int(c)


def scale_tile_1pct(y, y0, box, args, kind):
    y[box] = y0[box] * 1.01


def one_element_1pct_of_max(y, y0, box, args, kind):
    e = _element(y0, box)
    y[e] = y0[e] + 0.01 * np.abs(y0).max()


def swapped_rows(y, y0, box, args, kind):
    r0, r1 = box[0].start + 2, box[0].start + 5
    y[[r0, r1], box[1]] = y0[[r1, r0], box[1]]


def transposed_tile(y, y0, box, args, kind):
    rows, cols = box
    if kind == "row_sums":  # a 16x1 column tile: its 4x4 square read back transposed
        y[box] = y0[box].reshape(4, 4).T.reshape(16, 1)
        return
    n = min(rows.stop - rows.start, cols.stop - cols.start)
    sq = (slice(rows.start, rows.start + n), slice(cols.start, cols.start + n))
    y[sq] = y0[sq].T


def shifted_by_one(y, y0, box, args, kind):
    """Off by one: every element the value of its neighbour (the tile's edge wraps)."""
    y[box] = np.roll(y0[box], 1, axis=0 if kind == "row_sums" else 1)


def sign_flip(y, y0, box, args, kind):
    e = _element(y0, box)
    y[e] = -y0[e]


def stale_zeros(y, y0, box, args, kind):
    y[box] = 0.0


def duplicated_tile(y, y0, box, args, kind):
    """The previous tile's values written again here (a wrong tile index)."""
    boxes = _boxes(kind, y0.shape)
    prev = boxes[boxes.index(box) - 1]
    y[box] = y0[prev]


def nan_element(y, y0, box, args, kind):
    y[_element(y0, box)] = np.nan


def inf_element(y, y0, box, args, kind):
    y[_element(y0, box)] = np.inf


def dropped_k_step(y, y0, box, args, kind):
    """GEMM: the last K step's product missing; row sums: the last chunk; softmax: one term
    missing from the normaliser."""
    rows, cols = box
    if kind == "gemm":
        a, b = np.asarray(args[0], np.float64), np.asarray(args[1], np.float64)
        y[box] = y0[box] - a[rows, 3 * TK:4 * TK] @ b[3 * TK:4 * TK, cols]
    elif kind == "row_sums":
        y[box] = y0[box] - np.asarray(args[0], np.float64)[rows, 96:128].sum(
            axis=1, keepdims=True)
    else:  # softmax
        x = np.asarray(args[0], np.float64)[rows]
        e = np.exp(x - x.max(axis=1, keepdims=True))
        y[box] = e / (e.sum(axis=1, keepdims=True) - e[:, 3:4])


def narrow_accumulator(y, y0, box, args, kind):
    """The running sum kept in a 16-bit float between steps instead of float32 (bf16 for a
    bf16 kernel, fp16 otherwise)."""
    rows, cols = box
    narrow = ml_dtypes.bfloat16 if args[0].dtype == ml_dtypes.bfloat16 else np.float16
    if kind == "gemm":
        a, b, bias = (np.asarray(v, np.float32) for v in args[:3])
        acc = np.zeros((rows.stop - rows.start, cols.stop - cols.start), np.float32)
        for k in range(0, a.shape[1], TK):
            acc = (acc + a[rows, k:k + TK] @ b[k:k + TK, cols]).astype(narrow).astype(
                np.float32)
        y[box] = acc + bias[:, cols]
        return
    x = np.asarray(args[0], np.float32)[rows]
    if kind == "softmax":
        x = np.exp(x - x.max(axis=1, keepdims=True))
    acc = np.zeros((x.shape[0], 1), np.float32)
    for c in range(x.shape[1]):  # element by element
        acc = (acc + x[:, c:c + 1]).astype(narrow).astype(np.float32)
    y[box] = acc if kind == "row_sums" else x / acc


def missing_epilogue(y, y0, box, args, kind):
    """GEMM: the bias never added; scale_shift: the + 0.5 dropped; softmax: not normalised."""
    rows, cols = box
    if kind == "gemm":
        y[box] = y0[box] - np.asarray(args[2], np.float64)[:, cols]
    elif kind == "scale_shift":
        y[box] = y0[box] - 0.5
    else:  # softmax
        x = np.asarray(args[0], np.float64)[rows]
        y[box] = np.exp(x - x.max(axis=1, keepdims=True))


COMMON = [scale_tile_1pct, one_element_1pct_of_max, swapped_rows, transposed_tile,
          shifted_by_one, sign_flip, stale_zeros, duplicated_tile, nan_element, inf_element]
BUGS = {"gemm": [*COMMON, dropped_k_step, narrow_accumulator, missing_epilogue],
        "softmax": [*COMMON, dropped_k_step, narrow_accumulator, missing_epilogue],
        "row_sums": [*COMMON, dropped_k_step, narrow_accumulator],
        "scale_shift": [*COMMON, missing_epilogue]}


def _plant_all(kind):
    """A GPU side edit: bug i rewrites tile i + 1 (tile 0 stays correct); the planted boxes
    by bug name are kept on the function."""
    def edit(args):
        out = args[OUT[kind]]
        y0 = np.asarray(out, np.float64)
        y = y0.copy()
        boxes = _boxes(kind, y0.shape)
        for bug, box in zip(BUGS[kind], boxes[1:]):
            bug(y, y0, box, args, kind)
            edit.planted[bug.__name__] = box
        out[...] = y.astype(out.dtype)
    edit.planted = {}
    return edit


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("kind", list(KERNELS))
def test_every_planted_emulator_bug_is_a_mismatch(kind, dtype):
    kernel, grid, args = KERNELS[kind](dtype)
    assert len(BUGS[kind]) >= 10
    assert len(_boxes(kind, args[OUT[kind]].shape)) > len(BUGS[kind])  # a tile for each
    edit = _plant_all(kind)
    cc = tile_lab.crosscheck(kernel, grid, args, gpu=ScriptedGpu(edit))
    verdicts = {(t.box_start, t.box_stop): t.verdict for t in cc.tiles}
    missed = [name for name, (r, c) in edit.planted.items()
              if verdicts[((r.start, c.start), (r.stop, c.stop))] != "mismatch"]
    assert not missed, f"{kind} {dtype}: not caught: {missed}\n{cc.summary()}"
    assert len(cc.mismatches) == len(BUGS[kind])  # and nothing else: tile 0 agrees
    assert verdicts[((0, 0), TILE[kind])] in ("agree", "design")


def test_the_issues_fp16_gemm_catches_a_one_percent_error():
    """fp16 GEMM 256x256x1024, float32 accumulator: the flat budget of before called a 64x64
    tile scaled by 1 % and one element off by 1 % of the output's largest value explained."""
    kernel, grid, args = _gemm("float16", 256, 256, 1024, (64, 64, 32))
    box = (slice(64, 128), slice(64, 128))

    def scaled(a):
        a[3][box] = (a[3][box].astype(np.float32) * 1.01).astype(np.float16)

    def one_element(a):
        c = a[3]
        c[100, 90] = np.float16(c[100, 90] + 0.01 * float(np.abs(c).max()))

    for edit in (scaled, one_element):
        cc = tile_lab.crosscheck(kernel, grid, args, gpu=ScriptedGpu(edit))
        assert cc.agreement == "mismatch", cc.summary()
        (bad,) = cc.mismatches
        assert (bad.box_start, bad.box_stop) == ((64, 64), (128, 128))
        assert "budget per element: 1 ULP of float16" in bad.reason
        assert "K=1024 summed in float32" in bad.reason


# ---- what a GPU legitimately does differently -------------------------------------------

def _round(y: np.ndarray, dtype) -> np.ndarray:
    return y.astype(np.float32).astype(dtype) if dtype == ml_dtypes.bfloat16 else y.astype(dtype)


def _gemm_other_order(args):
    """A float32 accumulator summed in another order: K steps last to first, and inside each
    step pairwise in chunks of 8 (as a tensor core's dot products), bias, one rounding."""
    a, b, bias = (np.asarray(v, np.float32) for v in args[:3])
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in reversed(range(0, a.shape[1], 8)):
        acc = acc + (a[:, k:k + 8] @ b[k:k + 8]).astype(np.float32)
    args[3][...] = _round(acc + bias, args[3].dtype)


def _gemm_correctly_rounded(args):
    """The exact result (float64 products and sums: no accumulator rounding at all), then
    the output's rounding: a GPU can only be closer to this than the emulator."""
    a, b, bias = (np.asarray(v, np.float64) for v in args[:3])
    args[3][...] = _round(a @ b + bias, args[3].dtype)


def _softmax_approx(args):
    """exp off by up to 2 float32 ULPs (an approximate exp), the row sums in reverse order,
    a fused divide."""
    x = np.asarray(args[0], np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True)).astype(np.float32)
    rng = np.random.default_rng(3)
    e = e * (1 + rng.integers(-2, 3, e.shape) * np.float32(2 ** -24))
    s = np.cumsum(e[:, ::-1], axis=1, dtype=np.float32)[:, -1:]
    args[1][...] = _round(np.asarray(e, np.float64) / s, args[1].dtype)


def _fused_multiply_add(args):
    """x * w + 0.5 with one rounding (an FMA) instead of two."""
    x, w = (np.asarray(v, np.float64) for v in args[:2])
    args[2][...] = _round((x * w + 0.5).astype(np.float32), args[2].dtype)


def _row_sums_pairwise(args):
    """The row sums as a tree (pairwise) instead of chunk after chunk."""
    x = np.asarray(args[0], np.float32)
    while x.shape[1] > 1:
        x = x[:, 0::2] + x[:, 1::2]
    args[1][...] = _round(x, args[1].dtype)


LEGIT = {"gemm": [_gemm_other_order, _gemm_correctly_rounded], "softmax": [_softmax_approx],
         "scale_shift": [_fused_multiply_add], "row_sums": [_row_sums_pairwise]}


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("kind, legit", [(k, f) for k, fs in LEGIT.items() for f in fs],
                         ids=lambda v: getattr(v, "__name__", v))
def test_a_legitimate_gpu_difference_is_not_a_mismatch(kind, legit, dtype):
    kernel, grid, args = KERNELS[kind](dtype)
    cc = tile_lab.crosscheck(kernel, grid, args, gpu=ScriptedGpu(legit))
    assert cc.ok, cc.summary() + "\n" + "\n".join(t.reason for t in cc.mismatches)
    assert cc.agreement in ("explained", "identical")


def test_the_legitimate_differences_are_real_differences():
    """The legitimate GPU sides above do differ from the emulator (else the test above could
    not fail): in float32 every one of them changes some bits."""
    for kind, fs in LEGIT.items():
        for legit in fs:
            kernel, grid, args = KERNELS[kind]("float32")
            cc = tile_lab.crosscheck(kernel, grid, args, gpu=ScriptedGpu(legit))
            assert cc.agreement == "explained", (kind, legit.__name__, cc.summary())
