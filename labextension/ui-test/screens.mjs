// Screenshot every rich output of notebooks open in a running JupyterLab, one PNG per output
// (element screenshots), at the given widths and themes; and each output's text/html
// rendered standalone (the HTML fallback). Environment:
//   TILE_LAB_URL, TILE_LAB_CHROMIUM   as for the other drivers
//   TILE_LAB_NOTEBOOKS   notebook paths relative to the server root, comma-separated
//   TILE_LAB_OUT         folder for <config>/<notebook>/c<cell>_o<output>.png and manifest.json
//   TILE_LAB_CONFIGS     e.g. "1400-light,1000-light,1000-dark"
//   TILE_LAB_FALLBACK    folder of <notebook>/c<cell>_o<output>.html pages to shoot at 1000 px
//                        (optional)
// Prints one JSON line: per notebook and configuration, the outputs shot and any page errors.

import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { env, launchChromium, openNotebook, stepLogger } from './browser.mjs';

const url = env('TILE_LAB_URL');
const notebooks = env('TILE_LAB_NOTEBOOKS').split(',');
const out = env('TILE_LAB_OUT');
const configs = env('TILE_LAB_CONFIGS').split(',').map(c => {
  const [w, theme] = c.split('-');
  return { name: c, width: Number(w), theme };
});
const step = stepLogger();
const HEIGHT = 1200;
const browser = await launchChromium();
const manifest = {};

const setTheme = async (page, theme) => {
  const want = theme === 'dark' ? 'JupyterLab Dark' : 'JupyterLab Light';
  const isLight = await page.evaluate(() => document.body.dataset.jpThemeLight);
  if ((isLight === 'true') === (theme !== 'dark')) {
    return;
  }
  await page.evaluate(t => window.jupyterapp.commands.execute('apputils:change-theme',
    { theme: t }), want);
  await page.waitForSelector(`body[data-jp-theme-light="${theme !== 'dark'}"]`,
    { timeout: 20_000, state: "attached" });
  await page.waitForTimeout(1500);
};

try {
  for (const nb of notebooks) {
    const pageErrors = [];
    const consoleErrors = [];
    const page = await openNotebook(browser, url, `${nb}?reset`,
      { width: configs[0].width, height: HEIGHT }, pageErrors, consoleErrors);
    await page.waitForSelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell',
      { timeout: 90_000 });
    await page.waitForLoadState('networkidle').catch(() => {});
    await page.waitForTimeout(3000);
    await page.mouse.move(0, 0);
    manifest[nb] = { pageErrors, consoleErrors, configs: {} };
    for (const cfg of configs) {
      step(`${nb} ${cfg.name}`);
      await page.setViewportSize({ width: cfg.width, height: HEIGHT });
      await setTheme(page, cfg.theme);
      await page.waitForTimeout(800);
      const dir = join(out, cfg.name, nb.replace(/\.ipynb$/, ''));
      mkdirSync(dir, { recursive: true });
      // only the notebook opened (a restored workspace may hold other tabs)
      const cells = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell');
      const n = await cells.count();
      const shots = [];
      for (let c = 0; c < n; c++) {
        const outs = cells.nth(c).locator('.jp-OutputArea-child .jp-OutputArea-output');
        const k = await outs.count();
        for (let o = 0; o < k; o++) {
          const el = outs.nth(o);
          const info = await el.evaluate(e => ({
            classes: e.className,
            mime: e.getAttribute('data-mime-type'),
            tlView: !!e.querySelector('.tl-view'),
            text: (e.textContent || '').slice(0, 80),
            box: (() => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })()
          }));
          if (info.mime === 'application/vnd.jupyter.stdout' ||
              info.mime === 'application/vnd.jupyter.stderr') {
            continue; // streams: not views
          }
          if (info.box[0] < 1 || info.box[1] < 1) {
            shots.push({ cell: c, output: o, file: null, ...info });
            continue; // nothing drawn (an empty output)
          }
          // The whole output inside the notebook's scroll area, its top at the area's top
          // (a taller output grows the window first), so no toolbar or status bar covers it.
          const h = Math.ceil(info.box[1]);
          const area = await el.evaluate(e => {
            const s = e.closest('.jp-WindowedPanel-outer') ?? e.closest('.jp-Notebook');
            return s ? s.clientHeight : 0;
          });
          const grow = Math.max(0, h + 40 - area);
          if (grow > 0) {
            await page.setViewportSize({ width: cfg.width, height: Math.min(HEIGHT + grow, 16000) });
            await page.waitForTimeout(400);
          }
          await el.evaluate(e => e.scrollIntoView({ block: 'start' }));
          await page.waitForTimeout(150);
          await page.mouse.move(0, 0);
          const file = join(dir, `c${String(c).padStart(2, '0')}_o${o}.png`);
          await el.screenshot({ path: file, animations: 'disabled', caret: 'hide' });
          if (grow > 0) {
            await page.setViewportSize({ width: cfg.width, height: HEIGHT });
            await page.waitForTimeout(300);
          }
          shots.push({ cell: c, output: o, file, ...info });
        }
      }
      manifest[nb].configs[cfg.name] = shots;
    }
    await page.close();
  }
  const fb = process.env.TILE_LAB_FALLBACK;
  if (fb && existsSync(fb)) {
    const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
    manifest._fallback = [];
    for (const nbDir of readdirSync(fb).sort()) {
      for (const f of readdirSync(join(fb, nbDir)).filter(x => x.endsWith('.html')).sort()) {
        const dir = join(out, 'fallback-1000', nbDir);
        mkdirSync(dir, { recursive: true });
        await page.goto('file://' + join(fb, nbDir, f));
        await page.waitForTimeout(200);
        const file = join(dir, f.replace(/\.html$/, '.png'));
        await page.screenshot({ path: file, fullPage: true, animations: 'disabled' });
        manifest._fallback.push(file);
      }
    }
  }
} finally {
  await browser.close();
}
writeFileSync(join(out, 'manifest.json'), JSON.stringify(manifest, null, 1));
console.log(JSON.stringify(Object.fromEntries(Object.entries(manifest).filter(([k]) => k !== '_fallback').map(
  ([k, v]) => [k, { errors: v.pageErrors.length, console: v.consoleErrors.length,
    shots: Object.fromEntries(Object.entries(v.configs).map(([c, s]) => [c, s.length])) }]))));
