"""Diagram browser redraw time on a trace of 10^5 memory operations (budget: 0.3 s).

Builds a tiled-GEMM-shaped trace by hand (2000 blocks, each loading an A and a B tile in
each of 25 k-iterations and storing one C tile: 102,000 operations), then times, in one
run and side by side:

* building the browser: indexing the trace once, then the first (block view) draw;
* the FIRST switch to each all-blocks view (coverage computes the heatmaps, order the tile
  visits, on first use), on fresh browsers, in both orders (coverage then order, order
  then coverage: whichever comes first pays for the per-array columns they share);
* steady redraws: block sliders moved (indexed once, touches one block), one iteration
  shown, the coverage and order views redrawn with their data cached;
* the same block diagram drawn from the raw trace (re-indexes all operations every call),
  and ``Trace.coverage`` (per access) beside the indexed heatmaps (vectorised).

Each time is printed as wall-clock and as CPU time of this process (on a shared machine
the wall time also counts time spent waiting for a core, the CPU time does not), with the
number of full garbage collections that ran during the timed calls, if any.
Run: ``.venv/bin/python bench/diagram_redraw.py``. Prints times and ratios; asserts nothing.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from tile_lab.render.diagram import diagram
from tile_lab.tracing.index import IndexedTrace
from tile_lab.tracing.trace import ArrayInfo, MemoryAccess, Trace
from tile_lab.widgets.diagram_browser import DiagramBrowser

BUDGET_S = 0.3
GRID = (40, 50)
K_STEPS = 25
TM, TN, TK = 64, 64, 32
FRESH = 3  # fresh browsers per first-switch measurement
SOURCE = """@ct.kernel
def gemm(a, b, c):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((64, 64), 0, dtype=ct.float32)
    for k in range(25):
        ta = ct.load(a, index=(bx, k), shape=(64, 32))
        tb = ct.load(b, index=(k, by), shape=(32, 64))
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bx, by), tile=acc)
"""


def gemm_trace() -> Trace:
    accesses: list[MemoryAccess] = []

    def add(block, kind, arg, line, it, tidx, tshape):
        start = tuple(i * t for i, t in zip(tidx, tshape))
        accesses.append(MemoryAccess(
            seq=len(accesses), block=block, kind=kind, op=kind, arg=arg, line=line,
            iteration=it, tile_index=tidx, tile_shape=tshape, box_start=start,
            box_stop=tuple(s + t for s, t in zip(start, tshape))))

    for by in range(GRID[1]):
        for bx in range(GRID[0]):
            block = (bx, by, 0)
            for k in range(K_STEPS):
                add(block, "load", "a", 6, k, (bx, k), (TM, TK))
                add(block, "load", "b", 7, k, (k, by), (TK, TN))
            add(block, "store", "c", 9, 0, (bx, by), (TM, TN))
    m, n, k = GRID[0] * TM, GRID[1] * TN, K_STEPS * TK
    arrays = (ArrayInfo("a", (m, k), "float16"), ArrayInfo("b", (k, n), "float16"),
              ArrayInfo("c", (m, n), "float32"))
    return Trace(kernel="gemm", grid=(*GRID, 1), arrays=arrays, accesses=tuple(accesses),
                 source=SOURCE, first_line=1)


Times = list[tuple[float, float, int]]  # (wall, cpu) seconds and full GCs, per call
_full_gcs = [0]
gc.callbacks.append(lambda phase, info: _full_gcs.__setitem__(0, _full_gcs[0] + 1)
                    if phase == "start" and info["generation"] == 2 else None)


def clock(fn: Callable[[], Any]) -> tuple[Any, tuple[float, float, int]]:
    """``fn()``'s result, its (wall, cpu) seconds, and how many full (generation-2) garbage
    collections ran meanwhile: with ~10^6 live objects one costs 0.1-0.4 s, and Python
    starts it whenever allocations pile up, so it explains most outliers."""
    gcs, w0, c0 = _full_gcs[0], time.perf_counter(), time.process_time()
    result = fn()
    return result, (time.perf_counter() - w0, time.process_time() - c0, _full_gcs[0] - gcs)


def timed(fn: Callable[[], object], repeat: int) -> Times:
    return [clock(fn)[1] for _ in range(repeat)]


def report(name: str, times: Times) -> float:
    wall = statistics.median(t[0] for t in times)
    cpu = statistics.median(t[1] for t in times)
    gcs = sum(t[2] for t in times)
    print(f"{name:<50} wall {wall * 1e3:7.1f} ms (max {max(t[0] for t in times) * 1e3:7.1f})"
          f"   cpu {cpu * 1e3:7.1f} ms   wall/budget {wall / BUDGET_S:5.2f}"
          + (f"   [{gcs} full GC]" if gcs else ""))
    return wall


def first_switches(trace: Trace) -> dict[str, Times]:
    """Fresh browsers: build, then switch block → coverage → order, or block → order →
    coverage; every switch here is the first of its view on that browser."""
    out: dict[str, Times] = {}
    for n in range(2 * FRESH):
        index, took = clock(lambda: IndexedTrace(trace))
        out.setdefault("index", []).append(took)
        browser, took = clock(lambda: DiagramBrowser(index))  # noqa: B023 - called at once
        out.setdefault("first draw", []).append(took)
        views = ("coverage", "order") if n % 2 == 0 else ("order", "coverage")
        for rank, view in enumerate(views):
            key = f"{view} ({'first' if rank == 0 else 'second'} all-blocks view)"
            _, took = clock(lambda v=view, b=browser: setattr(b.view, "value", v))
            out.setdefault(key, []).append(took)
            assert browser.error is None and browser.diagram.geometry.view == view
    return out


def main() -> None:
    t0 = time.perf_counter()
    trace = gemm_trace()
    print(f"trace: {len(trace):,} memory operations, grid {trace.grid}, "
          f"built in {time.perf_counter() - t0:.2f} s; budget {BUDGET_S} s per redraw\n")
    tiny = Trace(kernel="warm", grid=(1, 1, 1), arrays=trace.arrays[:1],
                 accesses=trace.accesses[:1])
    diagram(tiny, view="coverage")  # one-off imports (numpy.ma, ...) are not redraw time

    print(f"-- first use, on {2 * FRESH} fresh browsers (medians) --")
    firsts = first_switches(trace)
    report("index the trace (once per browser)", firsts["index"])
    report("first draw (block view) when the browser is built", firsts["first draw"])
    worst_first = 0.0
    for view in ("coverage", "order"):
        for rank in ("first", "second"):
            key = f"{view} ({rank} all-blocks view)"
            worst_first = max(worst_first, report(f"first switch to {key}", firsts[key]))

    print("\n-- steady redraws (one browser) --")
    browser = DiagramBrowser(IndexedTrace(trace))
    blocks = [(i * 7 % GRID[0], i * 11 % GRID[1]) for i in range(20)]
    it = iter(blocks * 10)
    steps = iter(range(10**6))
    redraws = [0]
    browser.output.observe(lambda change: redraws.__setitem__(0, redraws[0] + 1), "value")

    def move_slider():  # one slider move = one redraw (always to a different block)
        axis = "xy"[next(steps) % 2]
        slider = browser.block_sliders[axis]
        value = next(it)[0 if axis == "x" else 1]
        slider.value = value if value != slider.value else (value + 1) % (slider.max + 1)

    steady = [report("block view, one slider moved", timed(move_slider, 20))]
    raw = report("diagram(trace, block=...) from the raw trace",
                 timed(lambda: diagram(trace, block=next(it)), 5))
    browser.iteration.value = 3
    steady.append(report("block view, one iteration shown", timed(move_slider, 20)))
    browser.iteration.value = -1
    browser.view.value = "coverage"
    steady.append(report("coverage view redrawn (heatmaps cached)",
                         timed(lambda: browser.redraw(), 5)))
    browser.view.value = "order"
    steady.append(report("order view, one slider moved (visits cached)",
                         timed(move_slider, 5)))
    print(f"{redraws[0]} output updates seen for 45 slider moves and 4 view/iteration "
          "switches (a redraw that draws the same picture updates nothing)")

    print("\n-- side by side --")
    per_access = report("Trace.coverage of a, b, c (per access)", timed(
        lambda: [trace.coverage(a.name, k) for a in trace.arrays for k in ("read", "write")],
        1))

    def indexed_heatmaps():  # indexing included: Trace.coverage needs none
        index = IndexedTrace(trace)
        return [index.heatmap(a.name, k) for a in trace.arrays for k in ("read", "write")]

    vectorised = report("index + IndexedTrace heatmaps of a, b, c", timed(indexed_heatmaps, 3))
    print(f"Trace.coverage / indexed heatmaps:          {per_access / vectorised:6.1f}x")
    print(f"raw-trace draw / indexed block redraw:      {raw / steady[0]:6.1f}x")
    print(f"slowest first switch / budget:              {worst_first / BUDGET_S:6.2f}")
    print(f"slowest steady redraw / budget:             {max(steady) / BUDGET_S:6.2f}")


if __name__ == "__main__":
    main()
