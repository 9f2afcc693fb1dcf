// Headless-Chromium probe for the render screenshot tests: open each page of a job list,
// optionally hover an element, evaluate a JavaScript expression in the page, and save a
// screenshot. Driven by tests/browser_env.py (probe()), which asserts on the results.
//
// Environment: TILE_LAB_EXT (labextension/, whose node_modules hold playwright-core),
// TILE_LAB_CHROMIUM (the system Chromium), and either TILE_LAB_JOBS (a JSON file: a list of
// {page, width, height, prepare, hover, evaluate, screenshot}; the results are printed as
// one JSON line and the probe exits) or nothing: then it serves, reading one job file's
// path per line of stdin and answering each with one JSON line, {"results": [...]} or
// {"error": "..."}, until stdin closes. One probe then serves a whole test process: a
// Node start with playwright-core costs ~0.7 s of CPU, and the suite's picture checks
// made ~60 of them.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

// launchChromium('probe'): the test run's probe browser where tests/browser_env.py started
// one, else a browser launched here with the same arguments
const { launchChromium } = await import(
  pathToFileURL(join(process.env.TILE_LAB_EXT, 'ui-test', 'browser.mjs')).href);

// one context and one page for every job: each new context's page started a renderer
// process of its own (~0.4 s of CPU; 79 of them in a run of the suite)
const openPage = async browser => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const probe = { context, page, errors: [] };
  page.on('pageerror', err => probe.errors.push(String(err)));
  return probe;
};

const runJobs = async (probe, jobs) => {
  const { page } = probe;
  const results = [];
  for (const job of jobs) {
    probe.errors = [];
    // the pointer off every element first: the last job's hover must not apply here
    await page.mouse.move(0, 0);
    await page.setViewportSize({ width: job.width, height: job.height });
    await page.goto(pathToFileURL(job.page).href);
    if (job.prepare) {
      await page.evaluate(job.prepare); // e.g. mark the element to hover
    }
    let hovered = null;
    if (job.hover) {
      const target = page.locator(job.hover).first();
      await target.hover({ force: true });
      hovered = job.hover;
    }
    const value = job.evaluate ? await page.evaluate(job.evaluate) : null;
    if (job.screenshot) {
      await page.screenshot({ path: job.screenshot, fullPage: true });
    }
    results.push({ hovered, value, errors: probe.errors });
  }
  return results;
};

const readJobs = path => JSON.parse(readFileSync(path, 'utf8'));

const browser = await launchChromium('probe');
try {
  let probe = await openPage(browser);
  if (process.env.TILE_LAB_JOBS) {
    console.log(JSON.stringify(await runJobs(probe, readJobs(process.env.TILE_LAB_JOBS))));
  } else {
    for await (const line of createInterface({ input: process.stdin })) {
      if (!line.trim()) {
        continue;
      }
      let answer;
      try {
        answer = { results: await runJobs(probe, readJobs(line.trim())) };
      } catch (err) {
        answer = { error: String(err?.stack ?? err) };
        // the page may be anywhere now: the next request gets a fresh one
        await probe.context.close().catch(() => undefined);
        probe = await openPage(browser);
      }
      process.stdout.write(`${JSON.stringify(answer)}\n`);
    }
  }
  await probe.context.close().catch(() => undefined);
} finally {
  await browser.close();
}
