// UI test driver: open a notebook in a running JupyterLab with the system Chromium,
// (run it,) hover a Tile IR row of the tile_lab view and report what got highlighted.
//
// Started by tests/test_labextension.py, which owns the server and asserts on the JSON
// this prints as its last line. Environment:
//   TILE_LAB_URL         server base URL (token disabled)
//   TILE_LAB_NOTEBOOK    notebook path relative to the server root
//   TILE_LAB_MODE        "stored" (outputs already in the notebook) or "run" (run all cells)
//   TILE_LAB_SCREENSHOT  where to save the PNG taken while hovering
//   TILE_LAB_CHROMIUM    the Chromium executable (playwright's own browsers are not used)

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { env, launchChromium, openNotebook, stepLogger } from './browser.mjs';

const url = env('TILE_LAB_URL');
const notebook = env('TILE_LAB_NOTEBOOK');
const mode = env('TILE_LAB_MODE');
const screenshot = env('TILE_LAB_SCREENSHOT');

const browser = await launchChromium();
const pageErrors = [];
const step = stepLogger();
let page;
try {
  page = await openNotebook(browser, url, notebook, { width: 1400, height: 900 }, pageErrors);
  await page.waitForSelector('.jp-Notebook .jp-Cell', { timeout: 90_000 });

  if (mode === 'run') {
    // Wait for the kernel, then run every cell through JupyterLab's own command
    // (window.jupyterapp: the server runs with expose_app_in_browser).
    step('waiting for the kernel');
    await page.waitForFunction(
      () => {
        const w = window.jupyterapp?.shell.currentWidget;
        return w?.sessionContext?.session?.kernel?.status === 'idle';
      },
      null,
      { timeout: 120_000, polling: 500 }
    );
    step('running all cells');
    await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
  }
  const view = page.locator('.jp-OutputArea-output .tl-view').first();
  step('waiting for the tile_lab view');
  await view.waitFor({ timeout: mode === 'run' ? 240_000 : 60_000 });
  step('hovering');

  // Hover a Tile IR row that is linked to a source line (line 5 in the stored fixture).
  const rows = view.locator('section[data-pane="tileir"] .tl-row[data-line]');
  const target = mode === 'stored' ? view.locator(
    'section[data-pane="tileir"] .tl-row[data-line="5"]').first() : rows.first();
  await target.scrollIntoViewIfNeeded();
  await target.hover();
  const line = Number(await target.getAttribute('data-line'));
  await page.waitForSelector(`.tl-view section[data-pane="source"] .tl-linked`, { timeout: 5000 });

  const linkedIn = async selector =>
    view.locator(selector).evaluateAll(els => els.map(e => e.getAttribute('data-line')));
  const result = {
    hovered: { pane: 'tileir', line },
    sourceLinked: await linkedIn('section[data-pane="source"] .tl-linked'),
    tileir: await view.locator('section[data-pane="tileir"]').evaluate(pane => {
      // Tile IR syntax colours: keyword spans are coloured, and differently from plain text
      const kw = pane.querySelector('.tl-tk');
      const text = pane.querySelector('.tl-text');
      const band = pane.querySelector('.tl-band[class*="tl-c"]');
      return {
        keywordSpans: pane.querySelectorAll('.tl-tk').length,
        tokenSpans: pane.querySelectorAll('.tl-text span').length,
        keywordColour: kw ? getComputedStyle(kw).color : null,
        textColour: text ? getComputedStyle(text).color : null,
        bandColour: band ? getComputedStyle(band).borderLeftColor : null
      };
    }),
    otherLinked: (await linkedIn('.tl-linked')).filter(l => Number(l) !== line),
    status: await view.locator('.tl-status').textContent()
  };
  mkdirSync(dirname(screenshot), { recursive: true });
  await page.screenshot({ path: screenshot });
  await view.screenshot({ path: screenshot.replace(/\.png$/, '-view.png') });

  // Leave the view: the highlight goes away.
  await page.mouse.move(5, 5);
  await page.mouse.move(2, 2);
  result.afterLeave = await view.locator('.tl-linked').count();

  // The %%tile cell's editor: header line decoration and badge.
  const header = page.locator('.jp-Cell .cm-editor.tl-tile-cell .cm-line.tl-tile-header').first();
  result.headerDecorated = (await header.count()) === 1;
  result.badge = result.headerDecorated
    ? await header.locator('.tl-tile-badge').textContent()
    : null;
  if (mode === 'stored') {
    // Theme: highlighted rows stay readable in light and dark themes (WCAG contrast of
    // the row's text against its background, composited over the opaque ancestors).
    const linkedContrast = async () => {
      await target.hover();
      return view
        .locator('section[data-pane="source"] .tl-linked')
        .first()
        .evaluate(row => {
          const parse = c => {
            const m = c.match(/rgba?\(([^)]+)\)/);
            if (!m) {
              return null;
            }
            const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
            return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
          };
          const layers = [];
          for (let n = row; n; n = n.parentElement) {
            const c = parse(getComputedStyle(n).backgroundColor);
            if (c && c[3] > 0) {
              layers.push(c);
              if (c[3] >= 1) {
                break;
              }
            }
          }
          let bg = [255, 255, 255];
          for (const [r, g, b, a] of layers.reverse()) {
            bg = [r * a + bg[0] * (1 - a), g * a + bg[1] * (1 - a), b * a + bg[2] * (1 - a)];
          }
          const fg = parse(getComputedStyle(row.querySelector('.tl-text')).color);
          const lum = rgb => {
            const f = v => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
            return 0.2126 * f(rgb[0]) + 0.7152 * f(rgb[1]) + 0.0722 * f(rgb[2]);
          };
          const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x);
          return (hi + 0.05) / (lo + 0.05);
        });
    };
    result.lightContrast = await linkedContrast();
    step('switching to the dark theme');
    await page.evaluate(() =>
      window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Dark' })
    );
    await page.waitForSelector('body[data-jp-theme-light="false"]', {
      state: 'attached',
      timeout: 30_000
    });
    await page.waitForTimeout(500); // let the theme's stylesheet apply
    result.darkContrast = await linkedContrast();
    await page.screenshot({ path: screenshot.replace(/\.png$/, '-dark.png') });
  }
  // Python highlighting of the %%tile body: `def` has the theme's keyword colour.
  const keywordColoured = () =>
    page.evaluate(() => {
      const cell = document.querySelector('.cm-editor.tl-tile-cell');
      const def = [...(cell?.querySelectorAll('.cm-line span') ?? [])].find(
        s => s.textContent === 'def'
      );
      if (!def) {
        return false;
      }
      const probe = document.createElement('span');
      probe.style.color = 'var(--jp-mirror-editor-keyword-color)';
      cell.appendChild(probe);
      const want = getComputedStyle(probe).color;
      probe.remove();
      return getComputedStyle(def).color === want;
    });
  result.keywordHighlighted = await keywordColoured();
  if (mode === 'run') {
    // Restart the kernel: the notebook resets cells' mime types; decoration and
    // highlighting must stay.
    step('restarting the kernel');
    await page.evaluate(() =>
      window.jupyterapp.shell.currentWidget.sessionContext.restartKernel()
    );
    await page.waitForFunction(
      () =>
        window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle',
      null,
      { timeout: 120_000, polling: 500 }
    );
    await page.waitForTimeout(1000);
    result.afterRestart = {
      headerDecorated: (await header.count()) === 1,
      keywordHighlighted: await keywordColoured()
    };
  }
  result.pageErrors = pageErrors;
  process.stdout.write(JSON.stringify(result) + '\n');
} catch (err) {
  // Keep what the page looked like, for the test report.
  await page?.screenshot({ path: screenshot.replace(/\.png$/, '-failure.png') }).catch(() => {});
  const outputs = await page
    ?.locator('.jp-OutputArea-output')
    .allTextContents()
    .catch(() => []);
  process.stderr.write(`page errors: ${JSON.stringify(pageErrors)}\noutputs: ${JSON.stringify(outputs)}\n`);
  throw err;
} finally {
  await browser.close();
}
