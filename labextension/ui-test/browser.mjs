// Shared by the UI drivers: required environment variables, and the system Chromium
// launched the way this machine allows (playwright's own browsers are never downloaded).

import { createRequire } from 'node:module';

// Loaded as CommonJS (playwright-core is one): through its ES-module wrapper the same load
// cost ~0.25 s more CPU, in each of the ~90 drivers a run of the test suite starts.
export const { chromium } = createRequire(import.meta.url)('playwright-core');

export const env = name => {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set`);
  }
  return v;
};

// Chromium's arguments, per kind of driver: the UI drivers here, and the render probes of
// tests/browser_probe.mjs (no scrollbars, device pixels = CSS pixels, for screenshots).
export const BROWSER_ARGS = {
  ui: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  probe: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--hide-scrollbars', '--force-device-scale-factor=1']
};

/** A Chromium for a driver of `kind`: the test run's browser of that kind when the test
 * harness started one (TILE_LAB_BROWSER_WS_<KIND>: a playwright browser server, see
 * browser_server.mjs; each driver then works in browser contexts of its own, and close()
 * only disconnects), else one launched for this driver alone. */
export const launchChromium = (kind = 'ui') => {
  const ws = process.env[`TILE_LAB_BROWSER_WS_${kind.toUpperCase()}`];
  if (ws) {
    return chromium.connect(ws);
  }
  // playwright gives the browser a fresh temporary profile
  return chromium.launch({ executablePath: env('TILE_LAB_CHROMIUM'), headless: true,
    args: BROWSER_ARGS[kind] });
};

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
