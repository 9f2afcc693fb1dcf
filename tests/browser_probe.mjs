// Headless-Chromium probe for the render screenshot tests: open each page of a job list,
// optionally hover an element, evaluate a JavaScript expression in the page, and save a
// screenshot. Started by tests/browser_probe.py, which asserts on the JSON printed last.
//
// Environment: TILE_LAB_EXT (labextension/, whose node_modules hold playwright-core),
// TILE_LAB_CHROMIUM (the system Chromium), TILE_LAB_JOBS (a JSON file: a list of
// {page, width, height, prepare, hover, evaluate, screenshot}).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// launchChromium('probe'): the test run's probe browser where tests/browser_env.py started
// one, else a browser launched here with the same arguments
const { launchChromium } = await import(
  pathToFileURL(join(process.env.TILE_LAB_EXT, 'ui-test', 'browser.mjs')).href);

const jobs = JSON.parse(readFileSync(process.env.TILE_LAB_JOBS, 'utf8'));
const browser = await launchChromium('probe');
const results = [];
try {
  // one context and one page for every job: each new context's page started a renderer
  // process of its own (~0.4 s of CPU; 79 of them in a run of the suite)
  const context = await browser.newContext();
  const page = await context.newPage();
  let errors = [];
  page.on('pageerror', err => errors.push(String(err)));
  for (const job of jobs) {
    errors = [];
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
    results.push({ hovered, value, errors });
  }
  await context.close();
} finally {
  await browser.close();
}
console.log(JSON.stringify(results));
