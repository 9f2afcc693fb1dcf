// Newcomer check driver: open JupyterLab the way a newcomer does (the page the README's
// `jupyter lab notebooks/` opens), find notebook 1 in the file browser, open it, Run All,
// and report what rendered. Takes the screenshot that shows the inspect view and a diagram.
//
// Started by tests/test_newcomer.py, which owns the server and asserts on the JSON this
// prints as its last line. Environment:
//   TILE_LAB_URL         server base URL (token disabled, app exposed as window.jupyterapp)
//   TILE_LAB_NOTEBOOK    the notebook's file name in the server root (the notebooks/ folder)
//   TILE_LAB_SCREENSHOT  where to save the PNG taken after Run All
//   TILE_LAB_CHROMIUM    the Chromium executable (playwright's own browsers are not used)

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { env, launchChromium, stepLogger } from './browser.mjs';

const url = env('TILE_LAB_URL');
const notebook = env('TILE_LAB_NOTEBOOK');
const screenshot = env('TILE_LAB_SCREENSHOT');

const browser = await launchChromium();
const pageErrors = [];
const started = Date.now();
const step = stepLogger();
let page;
try {
  // Tall enough that the inspect view (cell 2) and the block diagram (cell 7) are on
  // screen together once the notebook is scrolled between them.
  page = await browser.newPage({ viewport: { width: 1400, height: 2200 } });
  page.on('pageerror', err => pageErrors.push(String(err)));

  // The landing page: what `jupyter lab notebooks/` opens in the newcomer's browser.
  step('opening JupyterLab');
  await page.goto(`${url}/lab`, { waitUntil: 'domcontentloaded' });
  const item = page.locator('.jp-DirListing-item', { hasText: notebook }).first();
  await item.waitFor({ timeout: 90_000 });
  const listing = await page
    .locator('.jp-DirListing-item .jp-DirListing-itemName')
    .allTextContents();

  step(`opening ${notebook} from the file browser`);
  await item.dblclick();
  await page.waitForFunction(
    name => {
      const w = window.jupyterapp?.shell.currentWidget;
      return w?.context?.path?.endsWith(name) && w.content?.widgets?.length > 0;
    },
    notebook,
    { timeout: 60_000, polling: 250 }
  );

  step('waiting for the kernel');
  await page.waitForFunction(
    () =>
      window.jupyterapp.shell.currentWidget.sessionContext?.session?.kernel?.status === 'idle',
    null,
    { timeout: 120_000, polling: 500 }
  );
  const kernelName = await page.evaluate(
    () => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.name
  );

  // JupyterLab's own Run All; the command resolves once every cell has run (false when a
  // cell failed and the run stopped there).
  step('Run All');
  const ranAll = await page.evaluate(() =>
    window.jupyterapp.commands.execute('notebook:run-all-cells')
  );
  step('waiting for the kernel to go idle');
  await page.waitForFunction(
    () => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle',
    null,
    { timeout: 120_000, polling: 500 }
  );

  const cells = await page.evaluate(() => {
    const model = window.jupyterapp.shell.currentWidget.content.model;
    const out = [];
    for (let i = 0; i < model.cells.length; i++) {
      const c = model.cells.get(i);
      if (c.type === 'code') {
        const errors = c.outputs
          .toJSON()
          .filter(o => o.output_type === 'error')
          .map(o => `${o.ename}: ${o.evalue}`);
        out.push({ index: i, executionCount: c.executionCount, errors });
      }
    }
    return out;
  });

  // The inspect view: the extension's MIME renderer (.jp-RenderedTileLab) or, where
  // the extension is not installed, the HTML fallback; both build a .tl-view. Missing
  // pieces are reported (the test asserts), not thrown, so a failed run still gets its
  // screenshot and its error outputs into the report.
  const present = loc =>
    loc
      .waitFor({ state: 'attached', timeout: 15_000 })
      .then(() => true)
      .catch(() => false);
  const view = page.locator('.jp-OutputArea-output .tl-view').first();
  const diagram = page.locator('.jp-OutputArea-output svg.tile-lab-diagram').first();
  const hasView = await present(view);
  const hasDiagram = await present(diagram);
  const renderer = hasView
    ? await view.evaluate(v =>
        v.closest('.jp-RenderedTileLab')
          ? 'extension'
          : v.closest('.jp-RenderedHTMLCommon')
            ? 'html'
            : 'unknown'
      )
    : 'none';
  const tileirRows = hasView
    ? await view
        .locator('section[data-pane="tileir"] .tl-row, .tl-pane-tileir .tl-ln')
        .allTextContents()
    : [];
  const diagramCount = await page.locator('.jp-OutputArea-output svg.tile-lab-diagram').count();

  // Scroll so the %%tile cell (its input, then the view) starts at the top of the
  // notebook panel; with the tall viewport the diagram further down is on screen too.
  if (hasView) {
    await view.evaluate(v => (v.closest('.jp-Cell') ?? v).scrollIntoView({ block: 'start' }));
    await page.waitForTimeout(1000); // let windowed cells lay out after the scroll
  }
  const viewport = page.viewportSize();
  const onScreen = async (loc, found) => {
    const box = found ? await loc.boundingBox() : null;
    if (!box || box.width < 50 || box.height < 20) {
      return false;
    }
    return box.y + box.height > 0 && box.y < viewport.height && box.x < viewport.width;
  };
  const visible = {
    view: await onScreen(view, hasView),
    diagram: await onScreen(diagram, hasDiagram)
  };
  mkdirSync(dirname(screenshot), { recursive: true });
  await page.screenshot({ path: screenshot });

  const outputs = await page.evaluate(() =>
    [...document.querySelectorAll('.jp-OutputArea-output')].map(o => ({
      mime: o.getAttribute('data-mime-type'),
      text: (o.textContent || '').slice(0, 300)
    }))
  );
  const result = {
    listing,
    kernelName,
    ranAll,
    cells,
    renderer,
    tileirRows: tileirRows.length,
    tileirText: tileirRows.join('\n').slice(0, 4000),
    diagramCount,
    visible,
    // from the notebook model: error outputs render with the stderr MIME type
    errorOutputs: cells.filter(c => c.errors.length > 0),
    stderrOutputs: outputs.filter(o => o.mime === 'application/vnd.jupyter.stderr'),
    outputText: outputs.map(o => o.text).join('\n').slice(0, 6000),
    pageErrors,
    seconds: (Date.now() - started) / 1000
  };
  process.stdout.write(JSON.stringify(result) + '\n');
} catch (err) {
  // Keep what the page looked like, for the test report.
  await page?.screenshot({ path: screenshot.replace(/\.png$/, '-failure.png') }).catch(() => {});
  const outputs = await page
    ?.locator('.jp-OutputArea-output')
    .allTextContents()
    .catch(() => []);
  process.stderr.write(
    `page errors: ${JSON.stringify(pageErrors)}\noutputs: ${JSON.stringify(outputs)}\n`
  );
  throw err;
} finally {
  await browser.close();
}
