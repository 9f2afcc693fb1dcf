// How size.mjs keeps a case's measurements across openings (apart from the driver, so that
// tests/test_labextension_size.py can check it without a browser): a case opened again
// because the machine's noise put it over a bound counts its quickest measurements, and
// keeps every one beside them.

/** Whether a "hover" case's quickest hover or scroll so far misses its bound (CPU ms). */
export const interactionOver = (r, hoverBound, scrollBound) =>
  r.hoverCpu >= hoverBound || r.scroll.cpu > scrollBound;

/** `r`, this opening's measurements, merged with `prev`, the earlier openings' (or
 * undefined): the quickest of each measurement, and the runs of each. An opening without
 * hovering and scrolling keeps the earlier ones. */
export const mergeOpenings = (prev, r) => {
  if (!prev) {
    return r;
  }
  const out = { ...r };
  out.runs = [...(prev.runs ?? [prev.longest]), r.longest];
  out.longest = Math.min(prev.longest, r.longest);
  out.cpuRuns = [...(prev.cpuRuns ?? [prev.cpu]), r.cpu];
  out.cpu = Math.min(prev.cpu, r.cpu);
  out.tracedWall = Math.min(prev.tracedWall, r.tracedWall);
  const hovered = r.hoverCpu !== undefined;
  if (hovered && prev.hoverCpu !== undefined) {
    out.hoverCpuRuns = [...(prev.hoverCpuRuns ?? [prev.hoverCpu]), r.hoverCpu];
    out.scrollCpuRuns = [...(prev.scrollCpuRuns ?? [prev.scroll.cpu]), r.scroll.cpu];
  } else {
    out.hoverCpuRuns = prev.hoverCpuRuns;
    out.scrollCpuRuns = prev.scrollCpuRuns;
  }
  if (!hovered || prev.hoverCpu <= r.hoverCpu) {
    out.hover = prev.hover;
    out.hoverCpu = prev.hoverCpu;
  }
  if (r.scroll === undefined || (prev.scroll !== undefined && prev.scroll.cpu <= r.scroll.cpu)) {
    out.scroll = prev.scroll;
  }
  // what the view showed: the first opening's (every opening draws the same data)
  out.linkedShown = prev.linkedShown ?? r.linkedShown;
  out.status = prev.status ?? r.status;
  return out;
};
