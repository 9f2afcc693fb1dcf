// UI test driver: open an *untrusted* notebook with hostile outputs in a running JupyterLab
// and report every request to a host other than this machine, anything drawn outside its
// output area, and scripts that ran. Network egress is blocked (every non-loopback request
// is recorded, then aborted).
//
// Started by tests/test_labextension.py, which writes the notebook and asserts on the JSON
// this prints as its last line. Environment: TILE_LAB_URL, TILE_LAB_NOTEBOOK,
// TILE_LAB_SCREENSHOT, TILE_LAB_CHROMIUM, TILE_LAB_VIEWS (how many tile_lab outputs).
//
// Two controls prove the detectors work: after the checks, an <img> with an outside URL and
// a position:fixed box are put into an output area by hand; both must be caught.

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { env, launchChromium, stepLogger } from './browser.mjs';

const url = env('TILE_LAB_URL');
const notebook = env('TILE_LAB_NOTEBOOK');
const screenshot = env('TILE_LAB_SCREENSHOT');
const views = Number(env('TILE_LAB_VIEWS'));

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const browser = await launchChromium();
const step = stepLogger();
const pageErrors = [];
const outside = [];
let page;

// Everything inside an output area must be drawn inside it: sample the viewport and, for
// each point whose topmost element belongs to an output, check the point is within that
// output's box. Also list elements inside outputs that are position:fixed.
const drawnOutside = () =>
  page.evaluate(() => {
    const bad = [];
    for (let y = 2; y < innerHeight; y += 16) {
      for (let x = 2; x < innerWidth; x += 16) {
        const e = document.elementFromPoint(x, y);
        const out = e?.closest('.jp-OutputArea-output');
        if (out) {
          const r = out.getBoundingClientRect();
          if (x < r.left - 1 || x > r.right + 1 || y < r.top - 1 || y > r.bottom + 1) {
            bad.push(`${x},${y}: <${e.tagName.toLowerCase()} class="${e.getAttribute('class')}">`);
          }
        }
      }
    }
    const fixed = [...document.querySelectorAll('.jp-OutputArea-output *')]
      .filter(e => getComputedStyle(e).position === 'fixed')
      .map(e => `<${e.tagName.toLowerCase()} class="${e.getAttribute('class')}">`);
    return { points: bad.slice(0, 20), nPoints: bad.length, fixed };
  });

try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.route('**/*', route => {
    const host = new URL(route.request().url()).hostname;
    if (LOOPBACK.has(host) || route.request().url().startsWith('data:')) {
      return route.continue();
    }
    outside.push(route.request().url());
    return route.abort();
  });
  page = await context.newPage();
  page.on('pageerror', err => pageErrors.push(String(err)));
  await page.goto(`${url}/lab/tree/${notebook}`, { waitUntil: 'domcontentloaded' });
  step('waiting for the outputs');
  await page.waitForFunction(
    n => document.querySelectorAll('.jp-OutputArea-output .tl-view').length >= n,
    views,
    { timeout: 90_000, polling: 250 }
  );
  await page.waitForTimeout(1500); // let images / CSS that would fetch something try
  const trusted = await page.evaluate(() =>
    window.jupyterapp.shell.currentWidget.content.model.cells.get(0).trusted
  );
  const result = {
    trusted,
    views: await page.locator('.jp-OutputArea-output .tl-view').count(),
    refused: await page.locator('.jp-OutputArea-output .tl-view.tl-error').count(),
    nativeCodeTitles: await page.locator('.tl-view :text("native code")').count(),
    // profile views (.tl-prof-view) hold one .tl-view each, plus their own tables
    profileViews: await page.locator('.jp-OutputArea-output .tl-prof-view').count(),
    svgInViews: await page.locator(':is(.tl-view, .tl-prof-view) svg').count(),
    styledInViews: await page.locator(':is(.tl-view, .tl-prof-view) [style]').count(),
    pwned: await page.evaluate(() => globalThis.pwned ?? null)
  };
  // Scroll through the notebook: check every screenful.
  const scroller = page.locator('.jp-WindowedPanel-outer').first();
  result.outsideDrawing = [];
  for (let i = 0; i < 40; i++) {
    const d = await drawnOutside();
    if (d.nPoints || d.fixed.length) {
      result.outsideDrawing.push(d);
    }
    const atEnd = await scroller.evaluate(el => {
      const before = el.scrollTop;
      el.scrollTop += el.clientHeight * 0.8;
      return el.scrollTop === before;
    });
    if (atEnd) {
      break;
    }
    await page.waitForTimeout(300);
  }
  await page.waitForTimeout(500);
  result.outsideRequests = [...outside];
  mkdirSync(dirname(screenshot), { recursive: true });
  await scroller.evaluate(el => (el.scrollTop = 0));
  await page.waitForTimeout(300);
  await page.screenshot({ path: screenshot });

  step('controls');
  await page.evaluate(() => {
    const out = document.querySelector('.jp-OutputArea-output');
    const img = document.createElement('img');
    img.src = 'https://control.example/probe.png';
    const box = document.createElement('div');
    box.className = 'tl-control-overlay';
    box.style.cssText = 'position:fixed;inset:0;z-index:99999;background:rgba(255,0,0,.2)';
    out.append(img, box);
  });
  await page.waitForTimeout(1000);
  const control = await drawnOutside();
  result.controls = {
    requestSeen: outside.some(u => u.includes('control.example')),
    overlaySeen: control.nPoints > 0 && control.fixed.length > 0
  };
  result.pageErrors = pageErrors;
  process.stdout.write(JSON.stringify(result) + '\n');
} catch (err) {
  await page?.screenshot({ path: screenshot.replace(/\.png$/, '-failure.png') }).catch(() => {});
  process.stderr.write(`page errors: ${JSON.stringify(pageErrors)}\n`);
  throw err;
} finally {
  await browser.close();
}
