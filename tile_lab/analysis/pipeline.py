"""The K-loop's software pipeline: how many tiles the compiler keeps in flight, beside the
loop's source lines and their ``latency`` hints (data, no markup: ``render/pipeline.py`` draws
it).

Read from an :class:`~tile_lab.compile.artifacts.Inspection` (nothing is compiled here):

* the Tile IR gives the loop (``for %loopIdx``), the loads in its body with their
  ``optimization_hints = <... latency = N>`` and tile types (bytes per tile), and the ``mma``;
* the SASS gives the stages: on sm_90 the barrier initialisation (``SYNCS.EXCH.64``) sets
  up, per stage, a "full" and an "empty" 8-byte mbarrier (full ones at +0, +8, ...; the
  empty ones right after them), and the TMA producer arrives with a byte count
  (``SYNCS.ARRIVE.TRANS64 RZ, [...+0xOFF], R``) on this array and on the next one; the
  distance between the two ÷ 16 is the number of stages. The lowest barrier offset is the
  shared memory below the barriers: the stages' tiles plus other buffers. An estimate read
  off the machine code, labelled as one.

What tile_lab's compiles show (cuda-tile 1.7.0, tileiras 13.4, sm_90, f16 GEMM with
128×128×64 tiles, 32 KiB per stage, f32 C tile 64 KiB): ``latency=1`` → 2 stages, 128 KiB
= 2 × 32 + 64; ``latency=4`` → 4 stages, 192 KiB = 4 × 32 + 64; ``latency=10`` → 6 stages,
216 KiB = 6 × 32 + 24. With 64×64×32 tiles (8 KiB per stage, 16 KiB C tile) and no hint:
11 stages, 104 KiB = 11 × 8 + 16. The two readings agree wherever the C tile fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..compile.artifacts import Inspection
from ..compile.stage_rows import SassRow, TileIRRow, displacement

__all__ = ["KLoop", "LoopLoad", "k_loop"]

_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "tf32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4,
          "i64": 8, "f8E4M3FN": 1, "f8E5M2": 1}
_LOADS = ("load_view_tko", "load_ptr_tko")
_MMAS = ("mma", "mmaf", "mmai")
# the producer's arrive-with-transaction-count (no .A1T0 suffix): one site per barrier array
_ARRIVE = "SYNCS.ARRIVE.TRANS64"
_BARRIER = "SYNCS.EXCH.64"

@dataclass(frozen=True)
class LoopLoad:
    line: int | None
    latency: int | None  # the hint on this load; None = the compiler's default
    tile_bytes: int


@dataclass(frozen=True)
class KLoop:
    """A kernel's first loop that loads tiles, and the pipeline the compiler built for it."""

    loop_line: int | None
    loads: tuple[LoopLoad, ...]
    mma_line: int | None
    ring_bytes: int | None  # shared memory below the pipeline's mbarriers (SASS, sm_90+)
    barrier_span: int | None  # bytes between the producers' two barrier arrays (SASS)

    @property
    def stage_bytes(self) -> int:
        return sum(ld.tile_bytes for ld in self.loads)

    @property
    def stages(self) -> int | None:
        """Iterations whose tiles are in flight at once: one full and one empty 8-byte
        mbarrier per stage, so the barrier span ÷ 16. None when the SASS shows no pair of
        TMA barrier arrays (no TMA pipeline, or loads that are not all TMA)."""
        return self.barrier_span // 16 if self.barrier_span else None

    @property
    def other_bytes(self) -> int | None:
        """Shared memory below the barriers that the stages do not fill (e.g. the epilogue's
        staging tile for a TMA store)."""
        if self.stages is None or self.ring_bytes is None:
            return None
        return self.ring_bytes - self.stages * self.stage_bytes

    def evidence(self) -> str:
        kib = lambda b: f"{b / 1024:g} KiB"  # noqa: E731
        if self.stages is None:
            below = (f" ({kib(self.ring_bytes)} of shared memory below its barriers)"
                     if self.ring_bytes else "")
            return ("no pair of TMA barrier arrays in the SASS: depth not read (sm_80, or "
                    f"loads that are not all TMA){below}")
        return (f"SASS: barrier arrays {self.barrier_span:#x} bytes apart = {self.stages} "
                f"stages × 2 mbarriers; shared memory {self.stages} × {kib(self.stage_bytes)}"
                f" + {kib(self.other_bytes or 0)} other = {kib(self.ring_bytes or 0)} "
                "(estimate)")


def k_loop(insp: Inspection) -> KLoop:
    """The innermost ``for`` loop of the Tile IR that loads tiles (a persistent kernel's
    K-loop, not its loop over output tiles), with its pipeline depth."""
    rows = [r for r in insp.stages["tileir"].rows if isinstance(r, TileIRRow)]
    best: tuple[int, int, list[LoopLoad], int | None] | None = None  # (span, row, loads, mma)
    for i, row in enumerate(rows):
        if row.op != "for" or not row.results:
            continue
        depth, loads, mma, end = 0, [], None, len(rows) - 1
        for j in range(i, len(rows)):
            r = rows[j]
            depth += r.text.count("{") - r.text.count("}")
            if r.op in _LOADS:
                t = r.result_tile
                size = math.prod(t.shape) * _BYTES.get(t.elem, 0) if t else 0
                loads.append(LoopLoad(r.line, r.latency, size))
            if r.op in _MMAS and r.results and mma is None:
                mma = r.line
            if depth <= 0 and j > i:
                end = j
                break
        if loads and (best is None or end - i < best[0]):
            best = (end - i, i, loads, mma)
    if best is None:
        raise ValueError(f"{insp.kernel_name}: no loop that loads tiles in its Tile IR")
    _, i, loads, mma = best
    ring, span = _ring(insp)
    return KLoop(rows[i].line, tuple(loads), mma, ring, span)


def _ring(insp: Inspection) -> tuple[int | None, int | None]:
    """(lowest mbarrier offset = shared memory below the barriers, distance between the two
    producer barrier arrays that ``SYNCS.ARRIVE.TRANS64`` signals), from the SASS."""
    if "sass" not in insp.stages:
        return None, None
    offsets, arrive_at = [], set()
    for row in insp.stages["sass"].rows:
        if not isinstance(row, SassRow) or row.mnemonic not in (_ARRIVE, _BARRIER):
            continue
        ops = row.operands
        at = displacement(ops[1]) if len(ops) > 1 else None
        if at is None:
            continue
        if row.mnemonic == _BARRIER and ops[0] == "URZ" and _is_uniform_register(at[0]):
            offsets.append(at[1])
        elif row.mnemonic == _ARRIVE and ops[0] == "RZ":
            arrive_at.add(at[1])
    arrive = sorted(arrive_at)
    span = arrive[1] - arrive[0] if len(arrive) == 2 else None
    return (min(offsets) if offsets else None), span


def _is_uniform_register(name: str) -> bool:
    return name.startswith("UR") and name[2:].isdecimal()
