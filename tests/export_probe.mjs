// Headless-Chromium probe for exported pages (tests/test_share_export_browser.py): each page
// is opened from disk with the network unreachable (every host name resolves to nothing and
// every connection goes to a closed local proxy port), and everything the page asks for is
// logged: requests other than the page itself, console messages (CSP refusals land there),
// page errors. Then, per job: click, hover, evaluate, screenshot.
//
// Environment: TILE_LAB_EXT (labextension/, whose node_modules hold playwright-core),
// TILE_LAB_CHROMIUM, TILE_LAB_JOBS (a JSON list of {page, width, height, click, hover,
// evaluate, screenshot}).

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
    '--hide-scrollbars', '--force-device-scale-factor=1',
    '--host-resolver-rules=MAP * ~NOTFOUND', '--proxy-server=http://127.0.0.1:9',
    '--proxy-bypass-list=<-loopback>']
});
const results = [];
try {
  for (const job of jobs) {
    const context = await browser.newContext({ viewport: { width: job.width, height: job.height } });
    const page = await context.newPage();
    const url = pathToFileURL(job.page).href;
    const requests = [];
    const consoleMessages = [];
    const errors = [];
    context.on('request', r => { if (r.url() !== url) requests.push(r.url()); });
    page.on('console', m => consoleMessages.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', err => errors.push(String(err)));
    page.on('dialog', d => { errors.push(`dialog: ${d.message()}`); d.dismiss(); });
    await page.goto(url, { waitUntil: 'load' });
    if (job.click) {
      await page.locator(job.click).first().click({ force: true });
    }
    if (job.hover) {
      await page.locator(job.hover).first().hover({ force: true });
    }
    const value = job.evaluate ? await page.evaluate(job.evaluate) : null;
    if (job.screenshot) {
      await page.screenshot({ path: job.screenshot, fullPage: job.fullPage ?? false });
    }
    await page.waitForTimeout(100); // late requests (none expected) still get logged
    results.push({ value, requests, console: consoleMessages, errors });
    await context.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(results));
