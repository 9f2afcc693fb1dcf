"""Diagram browser redraw time on a trace of 10^5 memory operations (budget: 0.3 s).

Builds a tiled-GEMM-shaped trace by hand (2000 blocks, each loading an A and a B tile in
each of 25 k-iterations and storing one C tile: 102,000 operations), then times, in one
run and side by side:

* a browser redraw after moving the block sliders (indexed once, touches one block);
* the same diagram drawn from the raw trace (re-indexes all operations every call);
* the all-blocks views (coverage: first draw computes the heatmaps, redraws reuse them).

Run: ``.venv/bin/python bench/diagram_redraw.py``. Prints times and ratios; asserts nothing.
"""

from __future__ import annotations

import statistics
import time

from tile_lab.access_trace import ArrayInfo, MemoryAccess, Trace
from tile_lab.render.diagram import IndexedTrace, diagram
from tile_lab.widgets.diagram_browser import DiagramBrowser

BUDGET_S = 0.3
GRID = (40, 50)
K_STEPS = 25
TM, TN, TK = 64, 64, 32
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


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def report(name: str, times: list[float]) -> float:
    med = statistics.median(times)
    print(f"{name:<52} median {med * 1e3:8.1f} ms   max {max(times) * 1e3:8.1f} ms   "
          f"median/budget {med / BUDGET_S:5.2f}")
    return med


def main() -> None:
    t0 = time.perf_counter()
    trace = gemm_trace()
    print(f"trace: {len(trace):,} memory operations, grid {trace.grid}, "
          f"built in {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    browser = DiagramBrowser(IndexedTrace(trace))
    print(f"browser built (index once + first draw) in {time.perf_counter() - t0:.2f} s\n")

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

    indexed = report("browser redraw (block view, one slider moved)", timed(move_slider, 20))
    raw = report("diagram(trace, block=...) from the raw trace",
                 timed(lambda: diagram(trace, block=next(it)), 5))
    browser.iteration.value = 3
    report("browser redraw (one iteration shown)", timed(move_slider, 20))
    browser.iteration.value = -1
    report("first switch to the coverage view (computes heatmaps)",
           timed(lambda: setattr(browser.view, "value", "coverage"), 1))
    report("browser redraw (coverage view, heatmaps cached)",
           timed(lambda: browser.redraw(), 5))
    report("first switch to the order view (computes visits)",
           timed(lambda: setattr(browser.view, "value", "order"), 1))
    report("browser redraw (order view, tile cells cached)", timed(move_slider, 5))
    print(f"\n{redraws[0]} output updates seen for 45 slider moves and 3 view/iteration "
          "switches (a redraw that draws the same picture updates nothing)")
    print(f"raw-trace draw / indexed redraw: {raw / indexed:.1f}x")
    print(f"indexed block redraw uses {indexed / BUDGET_S:.0%} of the {BUDGET_S} s budget")


if __name__ == "__main__":
    main()
