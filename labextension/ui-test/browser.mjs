// Shared by the UI drivers: required environment variables, and the system Chromium
// launched the way this machine allows (playwright's own browsers are never downloaded).

import { chromium } from 'playwright-core';

export const env = name => {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set`);
  }
  return v;
};

export const launchChromium = () =>
  chromium.launch({
    executablePath: env('TILE_LAB_CHROMIUM'),
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'
    ] // playwright gives the browser a fresh temporary profile
  });

export const stepLogger = () => {
  const started = Date.now();
  return what =>
    process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${what}\n`);
};

/** A new page of `browser` (`viewport`) opened on `notebook` in JupyterLab at `url`,
 * recording from the start every uncaught page error into `pageErrors` and every console
 * error into `consoleErrors` (either may be omitted). */
export const openNotebook = async (browser, url, notebook, viewport, pageErrors = [],
  consoleErrors = []) => {
  const page = await browser.newPage({ viewport });
  page.on('pageerror', err => pageErrors.push(String(err)));
  page.on('console', msg => {
    if (msg.type() === 'error') {
      consoleErrors.push(msg.text());
    }
  });
  await page.goto(`${url}/lab/tree/${notebook}`, { waitUntil: 'domcontentloaded' });
  return page;
};
