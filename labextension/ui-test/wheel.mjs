// UI test driver: turn the mouse wheel over each big scroll box of the tile_lab outputs of a
// stored notebook (virtual panes and tables, .tl-pane-body / .tl-vscroll taller than four
// screens) and report, after each turn, the box's scrollTop and how many rows it shows; and,
// per inspect-view pane, whether it is virtual and the height of its rows (a big pane's rows
// must be as high as a small pane's), and for the big ones whether the last row ends where the
// pane's scroll height does once scrolled to the end (rows and spacers agree).
//
// Started by tests/test_labextension_scroll.py, which owns the server and asserts on the
// JSON this prints as its last line. Environment:
//   TILE_LAB_URL, TILE_LAB_NOTEBOOK, TILE_LAB_CHROMIUM   as for hover.mjs
//   TILE_LAB_STEPS   wheel turns per box (default 20), each of TILE_LAB_DY px (default 120)
//   TILE_LAB_SCREENSHOT   optional PNG path: the first view once its panes are scrolled

import { env, launchChromium, openNotebook } from './browser.mjs';

const url = env('TILE_LAB_URL');
const notebook = env('TILE_LAB_NOTEBOOK');
const steps = Number(process.env.TILE_LAB_STEPS || 20);
const screenshot = process.env.TILE_LAB_SCREENSHOT; // optional: the first view, after scrolling
const dy = Number(process.env.TILE_LAB_DY || 120);

const browser = await launchChromium();
const pageErrors = [];
const boxes = [];
const panes = [];
try {
  const page = await openNotebook(browser, url, notebook, { width: 1400, height: 1000 },
    pageErrors);
  await page.waitForSelector('.jp-RenderedTileLab .tl-pane-body', { timeout: 90_000 });
  await page.waitForTimeout(3000); // the views draw in tasks of their own
  const all = page.locator('.jp-RenderedTileLab :is(.tl-pane-body, .tl-vscroll)');
  const n = await all.count();
  for (let k = 0; k < n; k++) {
    const box = all.nth(k);
    const big = await box.evaluate(e => e.scrollHeight > 4 * e.clientHeight && e.clientHeight > 0);
    if (!big) {
      continue;
    }
    await box.evaluate(e => e.scrollIntoView({ block: 'center' }));
    await page.waitForTimeout(300);
    const r = await box.boundingBox();
    await page.mouse.move(r.x + r.width / 2, r.y + r.height / 2);
    const record = { box: await box.evaluate(e => e.className), scrollHeight: 0, tops: [],
      shown: [] };
    for (let i = 0; i < steps; i++) {
      await page.mouse.wheel(0, dy);
      await page.waitForTimeout(200);
      const s = await box.evaluate(e => {
        const top = e.getBoundingClientRect().top;
        const rows = [...e.querySelectorAll('.tl-row, tr')].filter(row => {
          const b = row.getBoundingClientRect();
          return b.height > 0 && b.bottom > top + 1 && b.top < top + e.clientHeight - 1;
        });
        return { top: Math.round(e.scrollTop), shown: rows.length, height: e.scrollHeight };
      });
      record.tops.push(s.top);
      record.shown.push(s.shown);
      record.scrollHeight = s.height;
    }
    boxes.push(record);
  }
  if (screenshot) {
    await page.locator('.jp-RenderedTileLab').first().screenshot({ path: screenshot });
  }
  const bodies = page.locator('.jp-RenderedTileLab .tl-pane-body');
  for (let k = 0; k < (await bodies.count()); k++) {
    panes.push(await bodies.nth(k).evaluate(e => {
      const virtual = e.querySelector('.tl-virtual') !== null;
      const heights = [...e.querySelectorAll('.tl-row')].slice(0, 20)
        .map(r => r.getBoundingClientRect().height);
      e.scrollTop = e.scrollHeight;
      return new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {
        const rows = [...e.querySelectorAll('.tl-row')];
        const last = rows[rows.length - 1];
        // scrolled to the end, the last row ends at the pane's visible bottom (less its
        // bottom padding) when the spacers above it add up to the rows they stand for
        const bottom = e.getBoundingClientRect().top + e.clientTop + e.clientHeight;
        const pad = parseFloat(getComputedStyle(e).paddingBottom) || 0;
        const gap = last ? bottom - pad - last.getBoundingClientRect().bottom : null;
        done({ virtual, heights, gapAtEnd: gap });
      })));
    }));
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ pageErrors, boxes, panes }));
