// UI test driver: open a notebook whose tile_lab views carry a TMA verdict (the MIME JSON's
// `tma` field), (run it,) and report what the extension drew: the badge on each source row
// (verdict, tooltip, colours, where it sits), the summary rows, the boxed SASS opcodes, what
// hovering a badge links, and every page or console error.
//
// Started by tests/test_labextension_tma.py, which owns the server and asserts on the JSON
// this prints as its last line. Environment:
//   TILE_LAB_URL         server base URL (token disabled, app exposed as window.jupyterapp)
//   TILE_LAB_NOTEBOOK    notebook path relative to the server root
//   TILE_LAB_VIEWS       how many tile_lab views with a TMA verdict the notebook shows
//   TILE_LAB_RUN         "1": run every cell but the first (the kernel compiles %%tile cells)
//   TILE_LAB_SCREENSHOT  where to save the page PNG (views: -view<i>.png, dark: -dark.png)
//   TILE_LAB_CHROMIUM    the Chromium executable (playwright's own browsers are not used)

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { env, launchChromium, openNotebook, stepLogger } from './browser.mjs';

const url = env('TILE_LAB_URL');
const notebook = env('TILE_LAB_NOTEBOOK');
const views = Number(env('TILE_LAB_VIEWS'));
const run = process.env.TILE_LAB_RUN === '1';
const screenshot = env('TILE_LAB_SCREENSHOT');

const browser = await launchChromium();
const pageErrors = [];
const consoleErrors = [];
const step = stepLogger();
let page;
try {
  page = await openNotebook(browser, url, notebook, { width: 1400, height: 1000 }, pageErrors, consoleErrors);
  await page.waitForSelector('.jp-Notebook .jp-Cell', { timeout: 90_000 });
  if (run) {
    step('waiting for the kernel');
    await page.waitForFunction(
      () => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle',
      null,
      { timeout: 120_000, polling: 500 }
    );
    // Run the cells after the first (which holds the stored output: running it would clear it).
    step('running the cells below the stored output');
    await page.evaluate(() => {
      window.jupyterapp.shell.currentWidget.content.activeCellIndex = 1;
      return window.jupyterapp.commands.execute('notebook:run-all-below');
    });
  }
  step(`waiting for ${views} views with a TMA summary`);
  await page.waitForFunction(
    n => document.querySelectorAll('.jp-OutputArea-output .tl-view .tl-tma-summary').length >= n,
    views,
    { timeout: run ? 300_000 : 60_000, polling: 250 }
  );
  await page.waitForTimeout(300); // let layout settle before measuring

  const result = { views: [] };
  const all = page.locator('.jp-OutputArea-output .tl-view');
  for (let i = 0; i < (await all.count()); i++) {
    const view = all.nth(i);
    await view.scrollIntoViewIfNeeded();
    const drawn = await view.evaluate(v => {
      const rect = e => {
        const r = e.getBoundingClientRect();
        return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height };
      };
      const textOf = row => {
        // the row's code, without the badge
        const t = row.querySelector('.tl-text');
        return [...t.childNodes].filter(n => !(n.classList && n.classList.contains('tl-tma')))
          .map(n => n.textContent).join('');
      };
      const badges = [...v.querySelectorAll('section[data-pane="source"] .tl-row .tl-tma')].map(b => {
        const row = b.closest('.tl-row');
        const text = row.querySelector('.tl-text');
        // the code's right edge: a range over the row's text before the badge
        const range = document.createRange();
        range.setStart(text, 0);
        range.setEndBefore(b);
        const style = getComputedStyle(b);
        return {
          line: row.getAttribute('data-line'),
          code: textOf(row),
          className: b.className,
          text: b.textContent,
          title: b.title,
          background: style.backgroundColor,
          border: style.borderTopColor,
          badge: rect(b),
          row: rect(row),
          pane: rect(row.closest('.tl-pane-body')),
          codeRight: range.getBoundingClientRect().right
        };
      });
      const summary = v.querySelector('.tl-tma-summary');
      return {
        extension: !!v.closest('.jp-RenderedTileLab'),
        kernel: v.getAttribute('data-kernel'),
        summary: summary.querySelector('summary').textContent,
        summaryOpen: summary.open,
        rows: [...summary.querySelectorAll('.tl-tma-row')].map(r => [r.getAttribute('data-line'), r.textContent]),
        badges,
        badgesElsewhere: v.querySelectorAll('.tl-tma').length -
          v.querySelectorAll('section[data-pane="source"] .tl-tma, .tl-tma-summary .tl-tma').length,
        sassOps: [...v.querySelectorAll('section[data-pane="sass"] .tl-tma-op')].map(e => ({
          text: e.textContent,
          outline: getComputedStyle(e).outlineColor,
          row: e.closest('.tl-row').getAttribute('data-line')
        }))
      };
    });
    // Hover the first "no TMA" badge: its line lights up in the other panes, and the
    // summary row of that line too.
    const no = view.locator('section[data-pane="source"] .tl-tma-no').first();
    if (await no.count()) {
      await no.hover();
      await page.waitForTimeout(200);
      drawn.hover = await view.evaluate(v => ({
        source: [...v.querySelectorAll('section[data-pane="source"] .tl-linked')].map(e => e.getAttribute('data-line')),
        tileirRows: v.querySelectorAll('section[data-pane="tileir"] .tl-linked').length,
        sassRows: v.querySelectorAll('section[data-pane="sass"] .tl-linked').length,
        summary: [...v.querySelectorAll('.tl-tma-row.tl-linked')].map(e => e.getAttribute('data-line')),
        status: v.querySelector('.tl-status').textContent
      }));
    }
    // The screenshot: hovering the TMA badge scrolls SASS to the line's boxed opcodes.
    const yes = view.locator('section[data-pane="source"] .tl-tma-yes').first();
    if (await yes.count()) {
      await yes.hover();
      await page.waitForTimeout(200);
      // and the first boxed opcode into the middle of its pane
      await view.evaluate(v => {
        const op = v.querySelector('section[data-pane="sass"] .tl-tma-op');
        const body = op?.closest('.tl-pane-body');
        if (op && body) {
          body.scrollTop += op.getBoundingClientRect().top - body.getBoundingClientRect().top - body.clientHeight / 2;
        }
      });
    }
    mkdirSync(dirname(screenshot), { recursive: true });
    await view.screenshot({ path: screenshot.replace(/\.png$/, `-view${i}.png`) });
    result.views.push(drawn);
  }
  await page.mouse.move(2, 2);
  await page.screenshot({ path: screenshot });
  step('switching to the dark theme');
  await page.evaluate(() =>
    window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Dark' })
  );
  await page.waitForSelector('body[data-jp-theme-light="false"]', { state: 'attached', timeout: 30_000 });
  await page.waitForTimeout(500);
  await all.first().screenshot({ path: screenshot.replace(/\.png$/, '-dark.png') });
  result.pageErrors = pageErrors;
  result.consoleErrors = consoleErrors;
  process.stdout.write(JSON.stringify(result) + '\n');
} catch (err) {
  await page?.screenshot({ path: screenshot.replace(/\.png$/, '-failure.png') }).catch(() => {});
  const outputs = await page?.locator('.jp-OutputArea-output').allTextContents().catch(() => []);
  process.stderr.write(`page errors: ${JSON.stringify(pageErrors)}\nconsole errors: ` +
    `${JSON.stringify(consoleErrors)}\noutputs: ${JSON.stringify(outputs).slice(0, 4000)}\n`);
  throw err;
} finally {
  await browser.close();
}
