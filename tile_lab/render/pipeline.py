"""The K-loop's software pipeline: how many tiles the compiler keeps in flight, beside the
loop's source lines and their ``latency`` hints.

Read from an :class:`~tile_lab.artifacts.Inspection` (nothing is compiled here):

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

import linecache
import math
import os
from dataclasses import dataclass

from ..artifacts import Inspection
from ..stage_rows import SassRow, TileIRRow, displacement
from .picture import Picture, key_class, make_picture
from .svg import Group, Rect, Scene, Style, Text, text_width

__all__ = ["KLoop", "LoopLoad", "k_loop", "pipeline_picture"]

_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "tf32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4,
          "i64": 8, "f8E4M3FN": 1, "f8E5M2": 1}
_LOADS = ("load_view_tko", "load_ptr_tko")
_MMAS = ("mma", "mmaf", "mmai")
# the producer's arrive-with-transaction-count (no .A1T0 suffix): one site per barrier array
_ARRIVE = "SYNCS.ARRIVE.TRANS64"
_BARRIER = "SYNCS.EXCH.64"
LOAD_COLOR, MMA_COLOR = "#0072B2", "#E69F00"
PAD = 10
MAX_STAGES_DRAWN = 8


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


def pipeline_picture(insp: Inspection, *, iterations: int = 8) -> Picture:
    """The K-loop's source lines (with their ``latency`` hints) beside the pipeline the
    compiler built: one column per step, one row per shared-memory stage; at step t the
    ``mma`` consumes iteration t's tiles while the loads of the next ``stages - 1``
    iterations are in flight. Hovering a load line or a load cell outlines all loads;
    likewise for the mma. ``.data`` is the :class:`KLoop`."""
    loop = k_loop(insp)
    src = dict(insp.source_lines)
    depth = f"{loop.stages} stages" if loop.stages else "depth not read from the SASS"
    items: list = [Text(PAD, PAD + 13, f"{insp.kernel_name} · {insp.arch} · K-loop pipeline: "
                        f"{depth}", size=12, bold=True),
                   Text(PAD, PAD + 29, loop.evidence(), size=10, opacity=0.8)]
    y = PAD + 52
    code_w = 0.0
    lines = [(loop.loop_line, None)] + [(ld.line, ld) for ld in loop.loads] + \
        [(loop.mma_line, "mma")]
    for line, what in lines:
        if line is None:
            continue
        # a helper's lines (a K-loop in a @ct.function) are not in the kernel's source:
        # the file's (or notebook cell's) text from linecache, as tracebacks show it. Only
        # for an absolute path: linecache looks a bare name up along sys.path, which can
        # find another file of that name (a stored inspection keeps only the base name).
        own = os.path.isabs(insp.filename)
        code = (src.get(line, "") or (own and linecache.getline(insp.filename, line).strip())
                or "(in a helper function)").rstrip()
        text = f"{line:>3}  {code}"
        if isinstance(what, LoopLoad):
            text += f"   ← latency={what.latency if what.latency is not None else 'default'}"
            key, color = "load", LOAD_COLOR
        elif what == "mma":
            key, color = "mma", MMA_COLOR
        else:
            key, color = None, None
        parts: list = [Text(PAD + 8, y, text, size=11)]
        if key:  # first rect: the whole line as hover target, outlined when hovered
            parts[:0] = [Rect(PAD - 2, y - 13, text_width(text, 11) + 14, 17,
                              Style(fill=color, fill_opacity=0, stroke="none")),
                         Rect(PAD, y - 11, 4, 14, Style(fill=color))]
        items.append(Group(tuple(parts), css_class=f"tl-hk {key_class(key)}" if key else None))
        code_w = max(code_w, PAD + 8 + text_width(text, 11))
        y += 17
    right = 0.0
    if loop.stages:
        ring, y, right = _ring_items(loop.stages, iterations, y)
        items.extend(ring)
    bottom = y + 4
    width = max(code_w, right, *(t.x + text_width(t.text, t.size)
                                                    for t in items if isinstance(t, Text)))
    scene = Scene(math.ceil(width + PAD), math.ceil(bottom + PAD), tuple(items),
                  label=items[0].text)
    return make_picture(loop, scene, ("load", "mma"))


def _ring_items(stages: int, iterations: int, y: float) -> tuple[list, float, float]:
    """The stage ring below ``y``: items, the new bottom and the right edge."""
    items: list = []
    # the ring: one row per stage, one column per step
    cell_w, cell_h = 54.0, 22.0
    gx, gy = PAD + 60, y + 28
    items.append(Text(PAD, gy - 10, "step →", size=10, opacity=0.7))
    for t in range(iterations):
        items.append(Text(gx + t * cell_w + cell_w / 2, gy - 10, f"t{t}", size=9,
                          anchor="middle", opacity=0.7))
    shown = min(stages, MAX_STAGES_DRAWN)
    for s in range(shown):
        items.append(Text(gx - 6, gy + s * cell_h + 15, f"stage {s}", size=9, anchor="end",
                          opacity=0.8))
        for t in range(iterations):
            # slot s holds iteration k = the latest k ≡ s (mod stages) issued by step t
            k = t + stages - 1 - ((t + stages - 1 - s) % stages)
            x, yy = gx + t * cell_w, gy + s * cell_h
            if k == t:
                style, key, label = Style(fill=MMA_COLOR, fill_opacity=0.7, stroke=MMA_COLOR), \
                    "mma", f"mma k{k}"
                tip = f"step {t}: mma consumes iteration {k}'s tiles from stage {s}"
            elif k == t + stages - 1:  # issued at this step
                style = Style(fill=LOAD_COLOR, fill_opacity=0.15, stroke=LOAD_COLOR,
                              stroke_width=1.5, dash="3 2")
                key, label = "load", f"ld k{k}"
                tip = (f"step {t}: the loads of iteration {k} are issued into stage {s} "
                       f"({k - t} steps ahead of the mma)")
            else:  # arrived or arriving, waiting for its mma
                style = Style(fill=LOAD_COLOR, fill_opacity=0.35, stroke=LOAD_COLOR)
                key, label = "load", f"k{k}"
                tip = (f"step {t}: stage {s} holds iteration {k}'s tiles (in flight or "
                       f"landed), used {k - t} step{'s' if k - t > 1 else ''} later")
            items.append(Group((Rect(x + 1, yy + 1, cell_w - 2, cell_h - 2, style),
                                Text(x + cell_w / 2, yy + 15, label, size=9, anchor="middle")),
                               title=tip, css_class=f"tl-hk {key_class(key)}"))
    if shown < stages:
        items.append(Text(gx, gy + shown * cell_h + 14, f"… stages {shown}–{stages - 1} not "
                          "drawn (same pattern)", size=10, opacity=0.75))
        gy += 16
    bottom = gy + shown * cell_h + 18
    items.append(Text(PAD, bottom, "dashed: loads issued this step · blue: tiles in flight or "
                      "landed, waiting · orange: the mma using them", size=10, opacity=0.75))
    items.append(Text(PAD, bottom + 14, "a higher latency hint asks for more loads in flight "
                      "(more stages, more shared memory per block)", size=10, opacity=0.75))
    return items, bottom + 14, gx + iterations * cell_w
