"""The K-loop's software pipeline drawn: how many tiles the compiler keeps in flight, beside
the loop's source lines and their ``latency`` hints. The reading itself (what the Tile IR and
SASS say, and how) is :mod:`tile_lab.analysis.pipeline`'s."""

from __future__ import annotations

import linecache
import math
import os

from ..analysis.pipeline import LoopLoad, k_loop
from ..compile.artifacts import Inspection
from .picture import Picture, key_class, make_picture
from .svg import Group, Rect, Scene, Style, Text, text_width

__all__ = ["pipeline_picture"]

LOAD_COLOR, MMA_COLOR = "#0072B2", "#E69F00"
PAD = 10
MAX_STAGES_DRAWN = 8



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
