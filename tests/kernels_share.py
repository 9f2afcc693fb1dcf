"""Kernels for the share tests (reproducers, export): one that tileiras 13.4 rejects, one
that cuTile's front end rejects, and one that reads helpers and module constants."""

import cuda.tile as ct

ROWS = 1  # a module constant the reproducer must write out
Const = ct.Constant[int]


@ct.kernel
def tileiras_rejects(source):
    # An aliased advanced-index load/store around a reduction: cuTile accepts it, and
    # tileiras 13.4.92 fails with "failed to compile Tile IR program" (exit status 5) for
    # sm_90/sm_100/sm_120 (cutile-python issue #94; it compiles for sm_80).
    row = ct.arange(ROWS, dtype=ct.int32)
    matrix = ct.load_advanced_indexing(
        source, (ct.Slice(0, 1), row, ct.Slice(0, 32))).reshape((1, 32))
    result = ct.sum(matrix, axis=1)
    ct.store_advanced_indexing(source, (ct.Slice(0, 1), row, ct.Slice(0, 1)),
                               result.reshape((1, 1, 1)))


@ct.kernel
def fp8_mma(A, B, C):
    # fp8 tensor-core products need sm_89 or newer: the front end refuses sm_80
    a = ct.load(A, index=(0, 0), shape=(64, 32))
    b = ct.load(B, index=(0, 0), shape=(32, 64))
    acc = ct.mma(a, b, ct.zeros((64, 64), dtype=ct.float32))
    ct.store(C, index=(0, 0), tile=acc)


def _scaled(tile, factor):
    return tile * factor


@ct.kernel
def scale_rows(x, y, factor: float, TILE: Const):
    t = ct.load(x, index=(ct.bid(0), 0), shape=(TILE, 32))
    ct.store(y, index=(ct.bid(0), 0), tile=_scaled(t, factor))


SCALE = 2.0
LIMITS = {"T": 128}  # not a literal the reproducer can write out


@ct.function
def twice(t):
    return t * SCALE


@ct.kernel
def uses_a_ct_function(x, y, T: Const):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,))
    ct.store(y, index=(ct.bid(0),), tile=twice(t))


@ct.kernel
def reads_a_dict(x, y):
    t = ct.load(x, index=(ct.bid(0),), shape=(LIMITS["T"],))
    ct.store(y, index=(ct.bid(0),), tile=t)
