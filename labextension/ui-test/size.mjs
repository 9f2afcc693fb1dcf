// Size driver: in one JupyterLab page, open each notebook of a list (a big tile_lab payload,
// and where given the same data under a MIME type nothing renders: the control), and report
// what the view drew and said it cut, and the longest main-thread task (PerformanceObserver
// 'longtask') from opening it until it is drawn and quiet; for "hover" cases, also the cost of
// hovering a row whose line links every row, and of scrolling its SASS pane.
//
// Started by tests/test_labextension_size.py (cases just over the schema's limits, no
// controls: what the views show) and bench/labextension_size.py (the worst cases, each beside
// its control: how fast), through tests/size_cases.py; they own the server. Environment:
//   TILE_LAB_URL, TILE_LAB_CHROMIUM  as for hover.mjs
//   TILE_LAB_CASES  JSON: [{name, path, control?, hover?, kind?} (a case and its control's
//                   notebook; kind "html": plain pages, the control without the view's scripts;
//                   a case without a control is opened once)]
//   TILE_LAB_OVER_CONTROL_MS, TILE_LAB_OVER_CONTROL_FRACTION  the test's bound on a case's
//                   longest task over its control's: the larger of the two
//   TILE_LAB_HOVER_BOUND_MS, TILE_LAB_SCROLL_BOUND_MS  optional: the benchmark's bounds on
//                   the longest task of hovering and of scrolling a "hover" case; while one
//                   is missed the case is opened (and hovered and scrolled) again, as below
//   TILE_LAB_OPENINGS  the most openings of each case and control (default 3)
//   TILE_LAB_CPU_PROFILES  optional: a folder; each opening's CPU profile (DevTools protocol,
//                   1 ms sampling) is written there as <n>-<name>.cpuprofile, for
//                   ui-test/cpuprofile_tasks.mjs to say what ran in the longest task
// Prints one JSON line: {results: {name: {longest, cpu, tasks, notice, rows, hover?}}, pageErrors}
// (an "html" page's `cpu` too: its opening is traced the same way).
//
// `longest` is the wall time of the longest task (PerformanceObserver); `cpu` is, from a
// trace of the same opening (DevTools protocol), the longest main-thread task in the main
// thread's own CPU time (RunTask's thread duration), which a busy machine does not stretch:
// on a 2-core machine shared with other jobs the wall time of one 4.5 s task varied from
// 4.3 to 12 s between openings of the same notebook.
//
// Each case is opened after its control, and the pair again (up to TILE_LAB_OPENINGS times)
// only while the quickest opening of the case is over the quickest of the control by more
// than the bound: the test asserts on the quickest openings, so a view within the bound at
// the first pair costs two openings, not six (a shared machine's noise, larger than one
// opening's, once put the 7.7 MB comparison 334 ms over its control at the first pair).
// The same for hovering and scrolling: measured at the first opening, and again at the next
// only while the quickest so far is over its bound (one scroll of the 200 k-row pane took a
// 109 ms task in a run where it took 24-26 ms in four others).
// Every notebook opens on one kernel, started once (nothing runs in it; a kernel started and
// shut down for each opening cost more CPU than the opening).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { env, launchChromium, stepLogger } from './browser.mjs';
import { interactionOver, mergeOpenings } from './size_results.mjs';

const url = env('TILE_LAB_URL');
const cases = JSON.parse(env('TILE_LAB_CASES'));
const overControl = Number(env('TILE_LAB_OVER_CONTROL_MS'));
const overControlFraction = Number(env('TILE_LAB_OVER_CONTROL_FRACTION'));
// what a case may take over its control: the benchmark's rule (tests/size_cases.py says why)
const allowance = controlCpu => Math.max(overControl, overControlFraction * controlCpu);
const openings = Number(process.env.TILE_LAB_OPENINGS ?? 3);
const hoverBound = Number(process.env.TILE_LAB_HOVER_BOUND_MS ?? Infinity);
const scrollBound = Number(process.env.TILE_LAB_SCROLL_BOUND_MS ?? Infinity);
const overBound = r => interactionOver(r, hoverBound, scrollBound);
const TRACE = { categories: ['toplevel'] };
const step = stepLogger();
const browser = await launchChromium();
const pageErrors = [];
const consoleErrors = [];
const results = {};
const profiles = process.env.TILE_LAB_CPU_PROFILES;
let opened = 0;

const OBSERVE = () => {
  window.__tlTasks = [];
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) {
      window.__tlTasks.push([e.startTime, e.duration]);
    }
  }).observe({ type: 'longtask', buffered: true });
};

/** The longest main-thread task of a trace: its main-thread CPU time, and (wall) the
 * longest one's wall time, in ms. A task is what the devtools timeline calls RunTask (and
 * the longtask API times): ThreadControllerImpl::RunTask and the microtask checkpoint right
 * after it (BlinkScheduler_PerformMicrotaskCheckpoint, where a promise chain's work runs),
 * both in the 'toplevel' category with their thread times. (The timeline category has
 * RunTask itself, in a trace of every function call: recording and reading it cost the test
 * more CPU than the openings it measures.) */
export const longestTraced = buffer => {
  const trace = JSON.parse(buffer.toString());
  const events = trace.traceEvents ?? trace;
  const main = new Set(
    events
      .filter(e => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain')
      .map(e => `${e.pid}:${e.tid}`)
  );
  const top = events
    .filter(e => e.ph === 'X' && main.has(`${e.pid}:${e.tid}`))
    .sort((x, y) => x.ts - y.ts || y.dur - x.dur);
  let cpu = 0;
  let wall = 0;
  let total = 0; // every task's thread time: the page's main-thread work, however it is cut
  let task = null; // the task the next checkpoint may close: {start, end, cpu}
  for (const e of top) {
    if (task && e.ts < task.end) {
      continue; // inside the task: counted in its thread time
    }
    // (tasks of a few microseconds come without a thread time)
    if (e.tdur === undefined && e.dur >= 1000) {
      throw new Error(`a ${e.dur} us ${e.name} without a thread time: this Chromium traces none`);
    }
    if (e.name === 'ThreadControllerImpl::RunTask') {
      task = { start: e.ts, end: e.ts + e.dur, cpu: e.tdur ?? e.dur };
      total += task.cpu;
    } else if (e.name === 'BlinkScheduler_PerformMicrotaskCheckpoint' && task) {
      task.end = e.ts + e.dur;
      task.cpu += e.tdur ?? e.dur;
      total += e.tdur ?? e.dur;
    } else {
      task = null; // another top-level event: the task before it is over
      continue;
    }
    cpu = Math.max(cpu, task.cpu / 1000);
    wall = Math.max(wall, (task.end - task.start) / 1000);
  }
  return {
    cpu: Math.round(cpu), tracedWall: Math.round(wall), totalCpu: Math.round(total / 1000),
  };
};

const longestSince = (page, t0) =>
  page.evaluate(t0 => {
    const mine = window.__tlTasks.filter(([s]) => s >= t0);
    return { longest: Math.max(0, ...mine.map(([, d]) => d)), tasks: mine.length };
  }, t0);

/** Wait until no long task has started for `quietMs` (or `maxMs` passed). */
const settle = async (page, quietMs = 1500, maxMs = 60_000) => {
  const start = Date.now();
  for (;;) {
    const idle = await page.evaluate(() => {
      const last = window.__tlTasks.length ? Math.max(...window.__tlTasks.map(([s, d]) => s + d)) : 0;
      return performance.now() - last;
    });
    if (idle >= quietMs || Date.now() - start > maxMs) {
      return;
    }
    await page.waitForTimeout(250);
  }
};

try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  page.on('pageerror', err => pageErrors.push(String(err)));
  page.on('console', msg => {
    if (msg.type() === 'error' && /tile|tl-|selector/i.test(msg.text())) {
      consoleErrors.push(msg.text().slice(0, 300));
    }
  });
  await page.addInitScript(OBSERVE);
  await page.goto(`${url}/lab`, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(() => window.jupyterapp?.shell, null, { timeout: 120_000 });
  await page.waitForSelector('.jp-LauncherCard, .jp-Launcher', { timeout: 120_000 }).catch(() => undefined);
  // the one kernel every notebook opens on
  const kernel = await page.evaluate(async () => {
    const k = await window.jupyterapp.serviceManager.kernels.startNew({ name: 'python3' });
    return { id: k.id };
  });
  await settle(page, 2000);
  step('JupyterLab is up');
  /** Open notebook `c.path` (a case, or a control), measure, close it. */
  const openOne = async c => {
    const cdp = profiles ? await page.context().newCDPSession(page) : null;
    if (cdp) {
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 1000 });
      await cdp.send('Profiler.start');
    }
    await browser.startTracing(page, TRACE);
    const t0 = await page.evaluate(() => performance.now());
    await page.evaluate(async ({ path, kernel }) => {
      const w = await window.jupyterapp.commands.execute('docmanager:open', { path, kernel });
      w.node.setAttribute('data-tl-size', 'open');
      window.__tlWidget = w;
    }, { path: c.path, kernel });
    const nb = '[data-tl-size="open"]';
    // (generous waits: they only end a hang; a 7.7 MB notebook's opening, 8 s of main-thread
    // CPU, took 52 s of wall time on a 2-core machine shared with several test runs)
    if (c.kind === 'case') {
      await page.waitForSelector(`${nb} .jp-OutputArea-output .tl-view`, { timeout: 600_000 });
    } else {
      await page.waitForSelector(`${nb} .jp-OutputArea-output`, { timeout: 600_000 });
    }
    await settle(page);
    const r = { ...(await longestSince(page, t0)), ...longestTraced(await browser.stopTracing()) };
    if (cdp) {
      const { profile } = await cdp.send('Profiler.stop');
      writeFileSync(join(profiles, `${++opened}-${c.name.replace(/[^A-Za-z0-9]+/g, '_')}.cpuprofile`),
        JSON.stringify(profile));
      await cdp.detach();
    }
    r.notice = await page.locator(`${nb} .jp-OutputArea-output .tl-notice`).count();
    r.rows = await page.locator(`${nb} .jp-OutputArea-output .tl-row`).count();
    if (c.hover) {
      // hover a source row of the line every SASS row maps to, then away: time each
      const view = page.locator(`${nb} .jp-OutputArea-output .tl-view`).first();
      const target = view.locator(`section[data-pane="source"] .tl-row[data-line="${c.hover}"]`).first();
      const other = view.locator('section[data-pane="source"] .tl-row[data-line]').last();
      await target.scrollIntoViewIfNeeded();
      // traced: the bounds are on main-thread CPU time (the wall times are kept beside them)
      await browser.startTracing(page, TRACE);
      const times = [];
      for (const [i, row] of [other, target, other, target].entries()) {
        const box = await row.boundingBox();
        const t1 = await page.evaluate(() => performance.now());
        await page.mouse.move(box.x + 30, box.y + box.height / 2);
        // the synchronous work of the move, then one frame (style and layout included)
        const spent = await page.evaluate(t1 => new Promise(res =>
          requestAnimationFrame(() => setTimeout(() => res(performance.now() - t1), 0))), t1);
        const lt = await longestSince(page, t1);
        times.push({ move: i, frame: spent, longest: lt.longest });
      }
      r.hover = times;
      r.hoverCpu = longestTraced(await browser.stopTracing()).cpu;
      r.linkedShown = await view.locator('section[data-pane="sass"] .tl-linked').count();
      r.status = await view.locator('.tl-status').textContent();
      // scroll the 200,000-row SASS pane: jumps across it and wheel steps
      const body = view.locator('section[data-pane="sass"] .tl-pane-body');
      await browser.startTracing(page, TRACE);
      const t2 = await page.evaluate(() => performance.now());
      for (const top of [1_000_000, 2_000_000, 3_599_000, 500]) {
        await body.evaluate((b, top) => { b.scrollTop = top; }, top);
        await page.waitForTimeout(100);
      }
      await body.hover();
      for (let i = 0; i < 10; i++) {
        await page.mouse.wheel(0, 400);
        await page.waitForTimeout(30);
      }
      await page.waitForTimeout(300);
      r.scroll = await longestSince(page, t2);
      r.scroll.cpu = longestTraced(await browser.stopTracing()).cpu;
      r.scroll.drawnAfter = await body.locator('.tl-row').count();
    }
    // a case opened more than once (noise on a shared machine): the quickest opening counts
    results[c.name] = mergeOpenings(results[c.name], r);
    step(`${c.name}: ${JSON.stringify(results[c.name])}`);
    await page.evaluate(() => {
      window.__tlWidget.dispose();
      window.__tlWidget = null;
    });
    // a "discard changes?" dialog may ask; there are none to keep
    const dialog = page.locator('.jp-Dialog button.jp-mod-warn, .jp-Dialog .jp-mod-reject');
    if (await dialog.count()) {
      await dialog.first().click();
    }
    await settle(page, 1000);
  };
  /** Open the plain page `c.path` (first: also click a row), measure, close it. */
  const openPage = async (c, first) => {
    const p = await browser.newPage({ viewport: { width: 1000, height: 900 } });
    p.on('pageerror', err => pageErrors.push(`${c.name}: ${String(err)}`));
    await p.addInitScript(OBSERVE);
    // traced as the notebook openings are: the bound is on main-thread CPU time, which
    // other jobs on the machine do not stretch (its wall time went from ~700 ms to 2.3 s
    // on a 2-core machine running one other job)
    await browser.startTracing(p, TRACE);
    await p.goto(`${url}/files/${c.path}`, { waitUntil: 'load', timeout: 120_000 });
    await settle(p);
    const r = { ...(await longestSince(p, 0)), ...longestTraced(await browser.stopTracing()) };
    r.notice = await p.locator('.tl-notice').count();
    r.rows = await p.locator('.tl-ln').count();
    // clicking a row pins its line through the view's own script
    const row = p.locator('.tl-pane-source .tl-ln[data-line]').first();
    if (first && (await row.count())) {
      await row.click();
      r.pinned = await p.locator('.tl-pin').count();
    }
    await p.close();
    return r;
  };
  for (const c of cases) {
    if (c.kind === 'html') {
      // a page of HTML-fallback views, opened on its own (no JupyterLab), after its control
      // (the same page without the view's scripts); the pair again only while over, as below.
      // Compared: the whole main-thread CPU time of the opening, not its longest task, which
      // the HTML parser cuts where its wall-clock budget runs out (the same control page's
      // longest task measured 596 and 1,488 ms in one run)
      if (!c.control) {
        results[c.name] = await openPage({ name: c.name, path: c.path }, true);
        step(`${c.name}: ${JSON.stringify(results[c.name])}`);
        continue;
      }
      for (let n = 0; n < openings; n++) {
        for (const [name, path] of [[`${c.name} (control)`, c.control], [c.name, c.path]]) {
          const r = await openPage({ name, path }, n === 0);
          const prev = results[name];
          if (prev) {
            r.cpuRuns = [...(prev.cpuRuns ?? [prev.cpu]), r.cpu];
            r.totalCpuRuns = [...(prev.totalCpuRuns ?? [prev.totalCpu]), r.totalCpu];
            r.cpu = Math.min(prev.cpu, r.cpu);
            r.totalCpu = Math.min(prev.totalCpu, r.totalCpu);
            r.longest = Math.min(prev.longest, r.longest);
            r.pinned = prev.pinned;
          }
          results[name] = r;
          step(`${name}: ${JSON.stringify(r)}`);
        }
        const control = results[`${c.name} (control)`].totalCpu;
        if (results[c.name].totalCpu - control <= allowance(control)) {
          break;
        }
      }
      continue;
    }
    if (!c.control) {
      await openOne({ name: c.name, path: c.path, kind: 'case', hover: c.hover });
      continue;
    }
    for (let n = 0; n < openings; n++) {
      await openOne({ name: `${c.name} (control)`, path: c.control, kind: 'control' });
      // (the hover and scroll checks on the first opening, and on later ones while over)
      const again = n > 0 && c.hover && overBound(results[c.name]);
      await openOne({ name: c.name, path: c.path, kind: 'case',
        hover: n === 0 || again ? c.hover : undefined });
      const control = results[`${c.name} (control)`].cpu;
      const over = results[c.name].cpu - control;
      const slowInteraction = c.hover && overBound(results[c.name]);
      if (over <= allowance(control) && !slowInteraction) {
        break;
      }
      step(`${c.name}: ${over} ms over its control` +
        (slowInteraction ? ', or hovering/scrolling over its bound' : '') + ': the pair again');
    }
  }
  process.stdout.write(JSON.stringify({ results, pageErrors, consoleErrors }) + '\n');
} finally {
  await browser.close();
}
