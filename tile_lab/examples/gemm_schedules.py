"""GEMM schedules for the shapes where a 2-D grid of output tiles cannot fill the GPU.

At M = 128, N = 8192 a 128x128 tile grid has 64 output tiles for 132 SMs: half the GPU idles,
and each busy SM streams its slice of B (all that matters: A is 2 MB, B 128 MB) with only one
tile's loads in flight. Both schedules here cut the K loop as well, so every SM streams B:

* :func:`gemm_splitk_ws`: each output tile's K loop in SPLIT equal slices; a slice writes its
  fp32 partial with a plain tile store into its own plane of a workspace ``W[SPLIT, M, N]``,
  counts itself in ``ARRIVED[tile]``, and the slice that arrives last adds the other planes
  with tile loads and writes C. No element-wise atomics, one atomic counter per tile, reset by
  the last slice, so the next launch finds it clean (the workspace needs no zeroing: every
  plane read was written in the same launch).
* :func:`gemm_streamk`: persistent blocks each take an equal contiguous range of the flattened
  (output tile, K step) iteration space, so the work divides evenly whatever the tile count; a
  tile cut between blocks is fixed up the same way (each contributor stores its partial in
  its own workspace slot, the last to arrive sums).

Wide tiles (TN 128-256 at TM = 128: A, re-read once per column of tiles, is then 2-4x fewer
bytes through L2) need the fix-up out of the accumulator's registers:
:func:`gemm_streamk_wide` and :func:`gemm_splitk_wide` always store the partial (the last
arriver too) and the last arriver sums the workspace in row pieces of at most 8192 elements,
writing C piece by piece, so ``acc`` is dead while it reduces. The split-K variant takes SPLIT
as a constant (a power of two) and loads a piece of all SPLIT planes in one 3-D tile, so its
reduction is one load per piece, not one per plane.

:func:`gemm_dp_streamk` + :func:`streamk_fixup` are the data-parallel + stream-K hybrid for
large outputs whose tiles end in a partial wave (256 tiles of 256x256 on 66 2-CTA slots: 3.88
waves): the full waves run whole tiles, the partial wave's (tile, K step) iterations are
spread over all blocks, and a last launch sums the cut tiles' partials. Three launches, no
arrival counter: with tileiras 1.7.0 two MMA loops in one kernel lose the MMA pipelining, and
a release atomic after a K loop spills the 256x256 accumulator (see the kernel).

``TMA`` = 0 asks for B's loads and C's stores without TMA (``allow_tma=False``): what a row
stride that is not a multiple of 16 bytes needs anyway, made explicit so the compiler's other
choices for such rows can be screened (``bench/gpu_gemm_sweep.py --screen``).
"""

import cuda.tile as ct

from tile_lab.examples.gemm import grouped_tile

ZERO = ct.PaddingMode.ZERO


def load_ab(A, B, bm, bn, k, TM, TN, TK, LAT, TMA):
    # One K step's A and B tiles (zero padding for ragged edges; B without TMA when TMA = 0).
    a = ct.load(A, index=(bm, k), shape=(TM, TK), latency=LAT, padding_mode=ZERO)
    if TMA > 0:
        b = ct.load(B, index=(k, bn), shape=(TK, TN), latency=LAT, padding_mode=ZERO)
    else:
        b = ct.load(B, index=(k, bn), shape=(TK, TN), latency=LAT, padding_mode=ZERO,
                    allow_tma=False)
    return a, b


def _k_range(A, B, bm, bn, first, last, TM, TN, TK, LAT, TMA):
    # The fp32 sum over K steps first..last-1 of one output tile (zero when the range is empty).
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(first, last):
        a, b = load_ab(A, B, bm, bn, k, TM, TN, TK, LAT, TMA)
        acc = ct.mma(a, b, acc)
    return acc


def store_c(C, bm, bn, acc, TMA):
    if TMA > 0:
        ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))
    else:
        ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype), allow_tma=False)


def partial(W, slot, TM, TN):
    # A workspace slot is read with plain loads: it was written by another block with plain
    # stores before that block's release on the counter (no async-proxy TMA on either side).
    return ct.load(W, index=(slot, 0, 0), shape=(1, TM, TN), allow_tma=False).reshape((TM, TN))


@ct.kernel
def gemm_splitk_ws(A, B, C, W, ARRIVED, TM: ct.Constant[int], TN: ct.Constant[int],
                   TK: ct.Constant[int], LAT: ct.Constant[int], TMA: ct.Constant[int]):
    # The workspace's planes are the slices: W is float32 (SPLIT, M, N). Work unit u: slice
    # u % SPLIT of output tile u // SPLIT; tiles walk M fastest, so the tiles that share a
    # panel of B run together. ARRIVED: int32, one per output tile, zero between launches.
    SPLIT = W.shape[0]
    num_m = ct.cdiv(A.shape[0], TM)
    num_n = ct.cdiv(B.shape[1], TN)
    k_tiles = ct.num_tiles(A, axis=1, shape=(TM, TK))
    per_slice = ct.cdiv(k_tiles, SPLIT)
    for unit in range(ct.bid(0), num_m * num_n * SPLIT, ct.num_blocks(0)):
        tile = unit // SPLIT
        s = unit % SPLIT
        bm, bn = tile % num_m, tile // num_m
        first = ct.minimum(s * per_slice, k_tiles)
        acc = _k_range(A, B, bm, bn, first, ct.minimum(first + per_slice, k_tiles),
                      TM, TN, TK, LAT, TMA)
        if SPLIT == 1:
            store_c(C, bm, bn, acc, TMA)
        else:
            ct.store(W, index=(s, bm, bn), tile=acc.reshape((1, TM, TN)), allow_tma=False)
            # acq_rel (the default): this slice's plane is visible before its arrival counts,
            # and the last slice sees every plane after reading the count
            if ct.atomic_add(ARRIVED, tile, 1) == SPLIT - 1:
                for j in range(SPLIT):
                    if j != s:
                        acc += ct.load(W, index=(j, bm, bn), shape=(1, TM, TN),
                                       allow_tma=False).reshape((TM, TN))
                store_c(C, bm, bn, acc, TMA)
                ct.atomic_xchg(ARRIVED, tile, 0)


def first_block(i, blocks, total):
    # The block whose range [b*total//blocks, (b+1)*total//blocks) holds iteration i.
    return ((i + 1) * blocks - 1) // total


def slot_of(b, tile, blocks, total, k_tiles):
    # Block b keeps a cut tile's partial in slot 2b when the tile is the first of its range,
    # else in slot 2b+1 (only a range's first and last tiles can be cut).
    return 2 * b + ct.where((b * total // blocks) // k_tiles == tile, 0, 1)


@ct.kernel
def gemm_streamk(A, B, C, W, ARRIVED, TM: ct.Constant[int], TN: ct.Constant[int],
                 TK: ct.Constant[int], LAT: ct.Constant[int], TMA: ct.Constant[int]):
    # Persistent blocks (grid <= tiles * k_tiles) over the flattened (tile, K step) space.
    # W: float32 (2 * blocks, TM, TN); ARRIVED: int32, one per output tile, zero between
    # launches.
    num_m = ct.cdiv(A.shape[0], TM)
    num_n = ct.cdiv(B.shape[1], TN)
    k_tiles = ct.num_tiles(A, axis=1, shape=(TM, TK))
    blocks = ct.num_blocks(0)
    b = ct.bid(0)
    total = num_m * num_n * k_tiles
    start = b * total // blocks
    end = (b + 1) * total // blocks
    for tile in range(start // k_tiles, ct.cdiv(end, k_tiles)):
        bm, bn = tile % num_m, tile // num_m
        base = tile * k_tiles
        acc = _k_range(A, B, bm, bn, ct.maximum(start, base) - base,
                      ct.minimum(end, base + k_tiles) - base, TM, TN, TK, LAT, TMA)
        lo = first_block(base, blocks, total)
        hi = first_block(base + k_tiles - 1, blocks, total)
        if lo == hi:  # the whole K loop was this block's
            store_c(C, bm, bn, acc, TMA)
        else:
            ct.store(W, index=(slot_of(b, tile, blocks, total, k_tiles), 0, 0),
                     tile=acc.reshape((1, TM, TN)), allow_tma=False)
            if ct.atomic_add(ARRIVED, tile, 1) == hi - lo:
                for other in range(lo, hi + 1):
                    if other != b:
                        acc += partial(W, slot_of(other, tile, blocks, total, k_tiles),
                                       TM, TN)
                store_c(C, bm, bn, acc, TMA)
                ct.atomic_xchg(ARRIVED, tile, 0)


def _pieces(TM, TN, budget):
    # Row pieces the last arriver reduces in: TM rows cut so a piece holds <= budget elements.
    return (TM * TN + budget - 1) // budget


def _pieces_inside(M, bm, TM, R):
    # The pieces of row block bm that hold rows of M: a piece wholly below the last row would
    # load and store tiles outside the arrays (undefined in cuTile), so the loop stops there.
    return ct.minimum(R, ct.cdiv(M - bm * TM, TM // R))


def _store_piece(C, bm, bn, p, R, part, TMA):
    # Rows p*TM/R .. (p+1)*TM/R of output tile (bm, bn): tile index bm*R + p at shape TM/R.
    if TMA > 0:
        ct.store(C, index=(bm * R + p, bn), tile=part.astype(C.dtype))
    else:
        ct.store(C, index=(bm * R + p, bn), tile=part.astype(C.dtype), allow_tma=False)


@ct.kernel
def gemm_splitk_wide(A, B, C, W, ARRIVED, TM: ct.Constant[int], TN: ct.Constant[int],
                     TK: ct.Constant[int], LAT: ct.Constant[int], SPLIT: ct.Constant[int]):
    # gemm_splitk_ws (TMA on: for aligned rows only) with SPLIT a power-of-two constant
    # (W: float32 (SPLIT, M, N)): every
    # slice stores its plane, the last sums piece p of all planes from one (SPLIT, TM/R, TN)
    # load. ARRIVED: int32, one per output tile, zero between launches.
    num_m = ct.cdiv(A.shape[0], TM)
    num_n = ct.cdiv(B.shape[1], TN)
    k_tiles = ct.num_tiles(A, axis=1, shape=(TM, TK))
    per_slice = ct.cdiv(k_tiles, SPLIT)
    R = _pieces(TM, TN * SPLIT, 16384)
    for unit in range(ct.bid(0), num_m * num_n * SPLIT, ct.num_blocks(0)):
        tile = unit // SPLIT
        s = unit % SPLIT
        bm, bn = tile % num_m, tile // num_m
        first = ct.minimum(s * per_slice, k_tiles)
        acc = _k_range(A, B, bm, bn, first, ct.minimum(first + per_slice, k_tiles),
                      TM, TN, TK, LAT, 1)
        if SPLIT == 1:
            store_c(C, bm, bn, acc, 1)
        else:
            ct.store(W, index=(s, bm, bn), tile=acc.reshape((1, TM, TN)), allow_tma=False)
            if ct.atomic_add(ARRIVED, tile, 1) == SPLIT - 1:
                for p in range(_pieces_inside(A.shape[0], bm, TM, R)):
                    parts = ct.load(W, index=(0, bm * R + p, bn), shape=(SPLIT, TM // R, TN),
                                    allow_tma=False)
                    _store_piece(C, bm, bn, p, R, ct.sum(parts, axis=0), 1)
                ct.atomic_xchg(ARRIVED, tile, 0)


@ct.kernel
def gemm_streamk_wide(A, B, C, W, ARRIVED, TM: ct.Constant[int], TN: ct.Constant[int],
                      TK: ct.Constant[int], LAT: ct.Constant[int], TMA: ct.Constant[int]):
    # gemm_streamk whose contributors all store their partial; the last arriver sums the
    # slots piece by piece (a (TM/R, TN) sum and one loaded piece live, never acc).
    # W: float32 (2 * blocks, TM, TN); ARRIVED: int32, one per output tile, zero between
    # launches.
    num_m = ct.cdiv(A.shape[0], TM)
    num_n = ct.cdiv(B.shape[1], TN)
    k_tiles = ct.num_tiles(A, axis=1, shape=(TM, TK))
    blocks = ct.num_blocks(0)
    b = ct.bid(0)
    total = num_m * num_n * k_tiles
    start = b * total // blocks
    end = (b + 1) * total // blocks
    R = _pieces(TM, TN, 8192)
    for tile in range(start // k_tiles, ct.cdiv(end, k_tiles)):
        bm, bn = tile % num_m, tile // num_m
        base = tile * k_tiles
        acc = _k_range(A, B, bm, bn, ct.maximum(start, base) - base,
                      ct.minimum(end, base + k_tiles) - base, TM, TN, TK, LAT, TMA)
        lo = first_block(base, blocks, total)
        hi = first_block(base + k_tiles - 1, blocks, total)
        # no branch on acc (a tile whole in one block goes through its slot too): with two
        # uses of acc under a branch the compiler spilled 128x128 tiles in the K loop
        ct.store(W, index=(slot_of(b, tile, blocks, total, k_tiles), 0, 0),
                 tile=acc.reshape((1, TM, TN)), allow_tma=False)
        if ct.atomic_add(ARRIVED, tile, 1) == hi - lo:
            for p in range(_pieces_inside(A.shape[0], bm, TM, R)):
                part = ct.full((TM // R, TN), 0, dtype=ct.float32)
                for other in range(lo, hi + 1):
                    part += ct.load(W, index=(slot_of(other, tile, blocks, total, k_tiles),
                                              p, 0), shape=(1, TM // R, TN),
                                    allow_tma=False).reshape((TM // R, TN))
                _store_piece(C, bm, bn, p, R, part, TMA)
            ct.atomic_xchg(ARRIVED, tile, 0)


def _stream_k_tiles(tiles, blocks, SK_WAVES):
    # The hybrid's stream-K tiles (dp_streamk_split is the host's copy of this arithmetic).
    tail = tiles % blocks
    waves = ct.maximum(0, ct.minimum(SK_WAVES - 1, tiles // blocks - 1))
    return ct.where(tail > 0, tail + waves * blocks, 0)


def dp_streamk_split(tiles: int, blocks: int, sk_waves: int) -> tuple[int, int]:
    """(data-parallel tiles, stream-K tiles) of :func:`gemm_dp_streamk`: the partial last
    wave (``tiles % blocks``) plus up to ``sk_waves - 1`` full waves before it go to stream-K,
    while at least one full wave stays data-parallel; whole waves are all data-parallel."""
    tail = tiles % blocks
    sk = tail + max(0, min(sk_waves - 1, tiles // blocks - 1)) * blocks if tail else 0
    return tiles - sk, sk


def _sk_range(b, blocks, total):
    # Block b's stream-K iterations [start, end): `total` split evenly over min(blocks, total)
    # blocks (a block beyond those, or any block when total is 0, gets an empty range).
    workers = ct.maximum(1, ct.minimum(blocks, total))
    return (ct.minimum(b, workers) * total // workers,
            ct.minimum(b + 1, workers) * total // workers, workers)


@ct.kernel
def gemm_dp_streamk(A, B, OUT, TM: ct.Constant[int], TN: ct.Constant[int],
                    TK: ct.Constant[int], GROUP: ct.Constant[int], LAT: ct.Constant[int],
                    SK_WAVES: ct.Constant[int], PHASE: ct.Constant[int]):
    # Data-parallel + stream-K (TMA on: aligned rows), three launches on one grid of
    # persistent blocks (<= tiles), then streamk_fixup. PHASE 0 (OUT is C): whole output
    # tiles 0 .. tiles-sk-1 in the grouped order into C, as gemm_splitk SPLIT=1 does. PHASE 1
    # (OUT is the workspace W, float32 ((SK_WAVES + 1) * blocks, TM, TN)): the last sk tiles
    # (dp_streamk_split) flattened into (tile, K step) iterations divided evenly over the
    # blocks; each block stores the partial of the j-th tile its range touches (at most
    # SK_WAVES + 1) in slot b * (SK_WAVES + 1) + j of W. (C and W share one parameter: a
    # phase writes one of them, and the kernel stays within ten parameters.) Why three
    # launches, with tileiras 1.7.0 at 256x256 on a 2-CTA cluster: a kernel with two MMA
    # loops (both phases in one launch, or one loop with a C-or-W epilogue) waits for every
    # HGMMA before the next (no MMA pipelining), and a release atomic reachable after a K
    # loop (an arrival counter) also spills the accumulator (1245 LDL/STL); one phase per
    # launch compiles to the pipelined loop.
    num_m = ct.cdiv(A.shape[0], TM)
    num_n = ct.cdiv(B.shape[1], TN)
    k_tiles = ct.num_tiles(A, axis=1, shape=(TM, TK))
    blocks = ct.num_blocks(0)
    b = ct.bid(0)
    sk = _stream_k_tiles(num_m * num_n, blocks, SK_WAVES)
    dp = num_m * num_n - sk
    if PHASE == 0:
        for tile in range(b, dp, blocks):
            bm, bn = grouped_tile(tile, num_m, num_n, GROUP)
            acc = _k_range(A, B, bm, bn, 0, k_tiles, TM, TN, TK, LAT, 1)
            store_c(OUT, bm, bn, acc, 1)
    else:
        start, end, _ = _sk_range(b, blocks, sk * k_tiles)
        for t in range(start // k_tiles, ct.cdiv(end, k_tiles)):
            bm, bn = grouped_tile(dp + t, num_m, num_n, GROUP)
            base = t * k_tiles
            acc = _k_range(A, B, bm, bn, ct.maximum(start, base) - base,
                          ct.minimum(end, base + k_tiles) - base, TM, TN, TK, LAT, 1)
            ct.store(OUT, index=(b * (SK_WAVES + 1) + t - start // k_tiles, 0, 0),
                     tile=acc.reshape((1, TM, TN)))


@ct.kernel
def streamk_fixup(A, C, W, BLOCKS, TM: ct.Constant[int], TN: ct.Constant[int],
                  TK: ct.Constant[int], GROUP: ct.Constant[int], SK_WAVES: ct.Constant[int]):
    # The hybrid's last launch: one block per (stream-K tile, row piece) (grid: sk * R, from
    # dp_streamk_split and R = TM*TN/8192 pieces); it sums the piece over the slots of the
    # tile's contributors and writes C. BLOCKS: gemm_dp_streamk's grid. The stream order of
    # the launches makes PHASE 1's partials visible here: no counter, nothing to reset.
    num_m = ct.cdiv(C.shape[0], TM)
    num_n = ct.cdiv(C.shape[1], TN)
    k_tiles = ct.num_tiles(A, axis=1, shape=(TM, TK))
    sk = _stream_k_tiles(num_m * num_n, BLOCKS, SK_WAVES)
    R = _pieces(TM, TN, 8192)
    t = ct.bid(0) // R
    p = ct.bid(0) % R
    bm, bn = grouped_tile(num_m * num_n - sk + t, num_m, num_n, GROUP)
    total = sk * k_tiles
    _, _, workers = _sk_range(0, BLOCKS, total)
    base = t * k_tiles
    if p < _pieces_inside(C.shape[0], bm, TM, R):
        part = ct.full((TM // R, TN), 0, dtype=ct.float32)
        for x in range(first_block(base, workers, total),
                       first_block(base + k_tiles - 1, workers, total) + 1):
            j = t - x * total // workers // k_tiles  # the tile's place in x's range
            part += ct.load(W, index=(x * (SK_WAVES + 1) + j, p, 0), shape=(1, TM // R, TN),
                            allow_tma=False).reshape((TM // R, TN))
        _store_piece(C, bm, bn, p, R, part, 1)


def dp_streamk_grids(m: int, n: int, tm: int, tn: int, sk_waves: int,
                     slots: int) -> tuple[tuple[int], tuple[int]]:
    """The hybrid's grids: gemm_dp_streamk's (both phases) one block per slot, never more than
    tiles; streamk_fixup's one block per (stream-K tile, row piece), (0,) when the tiles fill
    whole waves (then PHASE 1 and the fix-up are not launched)."""
    tiles = -(-m // tm) * -(-n // tn)
    blocks = max(1, min(slots, tiles))
    pieces = (tm * tn + 8191) // 8192
    return (blocks,), (dp_streamk_split(tiles, blocks, sk_waves)[1] * pieces,)


def streamk_grid(m: int, n: int, k: int, tm: int, tn: int, tk: int, slots: int) -> tuple[int]:
    """Stream-K's grid: one block per slot, never more blocks than (tile, K step) iterations."""
    total = -(-m // tm) * -(-n // tn) * -(-k // tk)
    return (max(1, min(slots, total)),)


def splitk_grid(m: int, n: int, tm: int, tn: int, split: int, slots: int) -> tuple[int]:
    """Split-K's persistent grid: one block per slot, never more blocks than work units."""
    return (max(1, min(slots, -(-m // tm) * -(-n // tn) * split)),)
