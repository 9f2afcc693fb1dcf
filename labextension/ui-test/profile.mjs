// UI test driver for the profile view: open a notebook whose stored output is a recorded
// GPU profile (application/vnd.tile-lab.profile.v1+json), report the heat gutter per pane
// and line, hover the given line in the Tile IR pane and report the stall panel, in the
// light and the dark theme, with screenshots of each.
//
// Started by tests/test_labextension.py, which owns the server and asserts on the JSON
// this prints as its last line. Environment:
//   TILE_LAB_URL, TILE_LAB_NOTEBOOK, TILE_LAB_CHROMIUM   as for hover.mjs
//   TILE_LAB_SCREENSHOT  the light screenshot's path (-dark.png beside it)
//   TILE_LAB_HOVER_LINE  the source line to hover

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { env, launchChromium, openNotebook, stepLogger } from './browser.mjs';

const url = env('TILE_LAB_URL');
const notebook = env('TILE_LAB_NOTEBOOK');
const screenshot = env('TILE_LAB_SCREENSHOT');
const hoverLine = env('TILE_LAB_HOVER_LINE');

const browser = await launchChromium();
const pageErrors = [];
const step = stepLogger();
let page;
try {
  page = await openNotebook(browser, url, notebook, { width: 1400, height: 1700 }, pageErrors);
  step('waiting for the profile view');
  const view = page.locator('.jp-OutputArea-output .tl-prof-view').first();
  await view.waitFor({ timeout: 90_000 });

  // Heat per pane and source line: the highest level among the line's rows, and the
  // painted colour of the mma line's heat cell.
  const gutter = () =>
    view.evaluate((node, line) => {
      const heat = {};
      for (const section of node.querySelectorAll('section[data-pane]')) {
        const pane = section.getAttribute('data-pane');
        heat[pane] = {};
        for (const row of section.querySelectorAll('.tl-row')) {
          const cell = row.querySelector(':scope > .tl-heat');
          const m = cell && [...cell.classList].join(' ').match(/tl-h(\d)/);
          const l = row.getAttribute('data-line');
          if (m && l && Number(m[1]) > 0) {
            heat[pane][l] = Math.max(heat[pane][l] ?? 0, Number(m[1]));
          }
        }
      }
      const cell = node.querySelector(
        `section[data-pane="source"] .tl-row[data-line="${line}"] > .tl-heat`);
      const box = cell?.getBoundingClientRect();
      return {
        heat,
        colour: cell ? getComputedStyle(cell).backgroundColor : null,
        width: box ? box.width : 0,
        rowsWithGutter: node.querySelectorAll('.tl-row > .tl-heat:first-child').length,
        rows: node.querySelectorAll('section[data-pane] .tl-row').length,
        htmlFallback: document.querySelectorAll('.jp-OutputArea-output .tl-prof').length
      };
    }, hoverLine);

  const hover = async () => {
    const row = view
      .locator(`section[data-pane="tileir"] .tl-row[data-line="${hoverLine}"]`)
      .first();
    await row.scrollIntoViewIfNeeded();
    await row.hover();
    await view.locator('.tl-stalls .tl-stall-row').first().waitFor({ timeout: 5000 });
    return view.evaluate(node => {
      const panel = node.querySelector('.tl-stalls');
      const seg = panel.querySelector('.tl-stall-row .tl-seg');
      return {
        head: panel.querySelector('.tl-stall-head')?.textContent ?? '',
        reasons: [...panel.querySelectorAll('.tl-stall-name')].map(e => e.textContent),
        firstBarWidth: seg ? seg.getBoundingClientRect().width : 0,
        firstBarColour: seg ? getComputedStyle(seg).backgroundColor : null,
        sourceLinked: [...node.querySelectorAll('section[data-pane="source"] .tl-linked')]
          .map(e => e.getAttribute('data-line'))
      };
    });
  };

  mkdirSync(dirname(screenshot), { recursive: true });
  const result = { light: { ...(await gutter()), hover: await hover() } };
  result.hotTable = await view.locator('table.tl-hot tr[data-line]').evaluateAll(rows =>
    rows.map(r => r.getAttribute('data-line')));
  result.compareLabels = await view.locator('.tl-compare-label').allTextContents();
  // the whole view fits the viewport, so the element screenshot does not scroll the
  // page under the pointer: the hovered line is the one in the picture
  await hover();
  await view.screenshot({ path: screenshot });
  await page.screenshot({ path: screenshot.replace(/\.png$/, '-page.png') });

  step('switching to the dark theme');
  await page.evaluate(() =>
    window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Dark' })
  );
  await page.waitForSelector('body[data-jp-theme-light="false"]', {
    state: 'attached',
    timeout: 30_000
  });
  await page.waitForTimeout(500); // let the theme's stylesheet apply
  result.dark = { ...(await gutter()), hover: await hover() };
  await hover();
  await view.screenshot({ path: screenshot.replace(/\.png$/, '-dark.png') });
  result.pageErrors = pageErrors;
  process.stdout.write(JSON.stringify(result) + '\n');
} catch (err) {
  await page?.screenshot({ path: screenshot.replace(/\.png$/, '-failure.png') }).catch(() => {});
  process.stderr.write(`page errors: ${JSON.stringify(pageErrors)}\n`);
  throw err;
} finally {
  await browser.close();
}
