// Headless-Chromium probe for the render screenshot tests: open each page of a job list,
// optionally hover an element, evaluate a JavaScript expression in the page, and save a
// screenshot. Started by tests/browser_probe.py, which asserts on the JSON printed last.
//
// Environment: TILE_LAB_EXT (labextension/, whose node_modules hold playwright-core),
// TILE_LAB_CHROMIUM (the system Chromium), TILE_LAB_JOBS (a JSON file: a list of
// {page, width, height, prepare, hover, evaluate, screenshot}).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(join(process.env.TILE_LAB_EXT, 'package.json'));
const { chromium } = require('playwright-core');

const jobs = JSON.parse(readFileSync(process.env.TILE_LAB_JOBS, 'utf8'));
const browser = await chromium.launch({
  executablePath: process.env.TILE_LAB_CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--hide-scrollbars', '--force-device-scale-factor=1']
});
const results = [];
try {
  for (const job of jobs) {
    const page = await browser.newPage({ viewport: { width: job.width, height: job.height } });
    const errors = [];
    page.on('pageerror', err => errors.push(String(err)));
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
    await page.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(results));
