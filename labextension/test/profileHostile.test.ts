/**
 * Untrusted notebooks, profile payload: a hostile value in every field of
 * application/vnd.tile-lab.profile.v1+json renders as text or is refused; the rendered
 * DOM holds only the elements, attributes and classes the profile view builds, and no
 * style attribute.
 */
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';

import { InvalidViewData } from '../src/model';
import { parseProfile } from '../src/profile';
import { ProfileView } from '../src/profileView';
import { renderError } from '../src/view';
import { classesOf, elementsOf, newDocument, profileFixtureJson } from './helpers';

/** hostile.test.ts's cases (not imported: that would run its tests here too). */
const HOSTILE = [
  'u\\72l(https://evil.example/a.png)',
  '\\55 RL(https://evil.example/b.png)',
  'image-set("https://evil.example/c.png" 1x)',
  'position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:2147483647',
  '<svg xmlns="http://www.w3.org/2000/svg" style="position:fixed;inset:0;z-index:9999"' +
    ' filter="url(https://evil.example/f#x)"><image href="https://evil.example/g.png"/></svg>',
  '<style>*{background:url(https://evil.example/h.png)}</style>',
  '<img src="https://evil.example/i.png" onerror="globalThis.pwned=1">',
  'javascript:globalThis.pwned=2',
  'constructor',
  '__proto__',
  'toString'
];

const DOC = newDocument();

/**
 * The fixture, slimmed so that 418 renders stay quick: no SASS pane (1,000+ rows), and of
 * the Tile IR pane's 58 rows only the first of each run mapped to one source line (14 rows:
 * every mapped line keeps a row, the unmapped row stays). The hostile values go into the
 * profile's own fields, none into the stages. Parsed once; each placement gets a copy.
 */
const SLIM: Record<string, any> = (() => {
  const raw = profileFixtureJson();
  delete raw.inspection.stages.sass;
  raw.inspection.show = raw.inspection.show.filter((s: string) => s !== 'sass');
  const tileir = raw.inspection.stages.tileir;
  const keep = tileir.line_map.map((l: number | null, i: number) => i === 0 || l !== tileir.line_map[i - 1]);
  const lines = tileir.text.split('\n');
  assert.equal(lines.length, tileir.line_map.length);
  tileir.text = lines.filter((_: string, i: number) => keep[i]).join('\n');
  tileir.line_map = tileir.line_map.filter((_: unknown, i: number) => keep[i]);
  tileir.tokens = tileir.tokens.filter((_: unknown, i: number) => keep[i]);
  return raw;
})();

function slimFixture(): Record<string, any> {
  return structuredClone(SLIM);
}

const ELEMENTS = new Set(['DIV', 'SPAN', 'SECTION', 'BUTTON', 'CODE', 'DETAILS', 'SUMMARY', 'B', 'TABLE', 'CAPTION',
  'TR', 'TH', 'TD']);
const ATTRIBUTES = new Set([
  'class', 'role', 'aria-live', 'aria-pressed', 'type', 'title', 'hidden', 'open',
  'data-kernel', 'data-pane', 'data-row', 'data-line', 'data-kind'
]);
const CLASS_NAME = new RegExp(
  '^(tl-[a-z-]+|tl-sp[0-9]{1,2}|tl-t(k|kt|kc|kp|nf|nv|nl|na|nb|nd|no|s|m|c|cs|cp)|tl-c[0-6]|tl-h[0-5]|' +
    'tl-w([0-9]|[1-9][0-9]|100)|tl-s-(long_sb|lg|wait|warpgroup_arrive|barrier|misc|selected|' +
    'mio|short_sb|branch_resolving|sleep|math|no_inst|drain|other))$');

/** What in `elements` (a rendered view's, elementsOf) the view does not build itself. */
function problems(elements: Element[]): string[] {
  const out: string[] = [];
  for (const e of elements) {
    if (!ELEMENTS.has(e.tagName)) {
      out.push(`element <${e.tagName}>`);
    }
    const names = e.getAttributeNames();
    for (const name of names) {
      if (!ATTRIBUTES.has(name)) {
        out.push(`attribute ${name}="${e.getAttribute(name)}"`);
      }
    }
    for (const c of classesOf(e)) {
      if (!CLASS_NAME.test(c)) {
        out.push(`class ${JSON.stringify(c)}`);
      }
    }
    for (const n of ['data-line', 'data-row']) {
      const v = names.includes(n) ? e.getAttribute(n) : null;
      if (v !== null && !/^\d+$/.test(v)) {
        out.push(`${n} ${JSON.stringify(v)}`);
      }
    }
  }
  return out;
}

function render(raw: unknown): { node: HTMLElement; refused: boolean; view?: ProfileView } {
  const doc = DOC;
  doc.body.replaceChildren();
  try {
    const view = new ProfileView(parseProfile(raw), doc, { copy: async () => undefined });
    doc.body.appendChild(view.node);
    return { node: view.node, refused: false, view };
  } catch (err) {
    assert.ok(err instanceof InvalidViewData, String(err));
    return { node: renderError(doc, err.message), refused: true };
  }
}

/** Ways to put one hostile string into each field of the profile payload. */
function placements(h: string): [string, (d: any) => void][] {
  return [
    ['version', d => (d.version = h)],
    ['unknown field', d => (d[h] = 1)],
    ['inspection kernel_name', d => (d.inspection.kernel_name = h)],
    ['inspection source', d => (d.inspection.source = `${h}\n${h}\n`)],
    ['inspection', d => (d.inspection = h)],
    ['total_samples', d => (d.total_samples = h)],
    ['unattributed_samples', d => (d.unattributed_samples = h)],
    ['line_heat key', d => (d.line_heat[h] = 1)],
    ['line_heat value', d => (d.line_heat['16'] = h)],
    ['line_samples key', d => (d.line_samples[h] = 1)],
    ['line_samples value', d => (d.line_samples['16'] = h)],
    ['line_stalls key', d => (d.line_stalls[h] = { long_sb: 1 })],
    ['line_stalls reason', d => (d.line_stalls['16'][h] = 1)],
    ['line_stalls count', d => (d.line_stalls['16'].long_sb = h)],
    ['sass_row_heat key', d => (d.sass_row_heat[h] = 1)],
    ['sass_row_heat value', d => (d.sass_row_heat['0'] = h)],
    ['hot_lines', d => (d.hot_lines = h)],
    ['hot line line', d => (d.hot_lines[0].line = h)],
    ['hot line text', d => (d.hot_lines[0].text = h)],
    ['hot line samples', d => (d.hot_lines[0].samples = h)],
    ['hot line executed', d => (d.hot_lines[0].executed = h)],
    ['hot line stall reason', d => (d.hot_lines[0].stalls[h] = 5)],
    ['stall_reasons key', d => (d.stall_reasons[h] = h)],
    ['stall_reasons text', d => (d.stall_reasons.long_sb = h)],
    ['metrics key', d => (d.metrics[h] = 1)],
    ['metrics value', d => (d.metrics.spill_stores = h)],
    ['summary', d => (d.summary = h)],
    ['gpu', d => (d.gpu = h)],
    ['collection values', d => (d.collection = { tool: h, plan: h, ncu_version: h, [h]: h })],
    ['comparison', d => (d.comparison = h)],
    ['comparison label', d => (d.comparison[0].label = h)],
    ['comparison summary', d => (d.comparison[0].summary = h)],
    ['comparison gpu', d => (d.comparison[1].gpu = h)],
    ['comparison spills', d => (d.comparison[1].spills = h)],
    ['comparison line key', d => (d.comparison[1].line_samples[h] = 1)],
    ['comparison line count', d => (d.comparison[1].line_samples['16'] = h)],
    ['comparison stall reason', d => (d.comparison[1].line_stalls['16'][h] = 3)],
    ['comparison group', d => (d.comparison[1].spill_instructions = { samples: h, stalls: {} })]
  ];
}

test('hostile values in every profile field render as text or are refused, never as markup', () => {
  let rendered = 0;
  let refused = 0;
  for (const h of HOSTILE) {
    for (const [field, place] of placements(h)) {
      const raw = slimFixture() as any;
      place(raw);
      const out = render(raw);
      // hover a line so the panel is drawn with whatever the data holds (then one look at
      // the whole view: hovering and the view as drawn are the same DOM)
      const win = out.node.ownerDocument.defaultView!;
      const row = out.node.querySelector('[data-line]');
      row?.dispatchEvent(new win.MouseEvent('mouseover', { bubbles: true }));
      // one walk of the view for both checks
      const elements = elementsOf(out.node);
      assert.deepEqual(problems(elements), [], `${field} = ${h}${row ? ' (hovering)' : ''}`);
      assert.equal(elements.filter(e => e.hasAttribute('style')).length, 0, `${field} = ${h}: a style`);
      if (out.refused) {
        refused++;
      } else {
        rendered++;
      }
    }
  }
  assert.equal((globalThis as any).pwned, undefined);
  assert.ok(rendered > 80 && refused > 250, `${rendered} rendered, ${refused} refused`);
});

test('hostile text in the profile reaches the page as text, unchanged', () => {
  for (const h of HOSTILE) {
    const raw = slimFixture() as any;
    raw.summary = h;
    raw.hot_lines[0].text = h;
    raw.comparison[1].label = h;
    raw.stall_reasons.long_sb = h;
    const { node, view } = render(raw);
    assert.equal(node.querySelector('.tl-prof-summary')!.textContent, h);
    assert.equal(node.querySelector('table.tl-hot tr[data-line] code')!.textContent, h.slice(0, 60));
    assert.equal(node.querySelectorAll('.tl-compare-label')[1].textContent, h);
    view!.showStalls(Number(raw.hot_lines[0].line));
    assert.equal(node.querySelector('.tl-stall-what')!.textContent, h);
  }
});

test('prototype keys in the profile stay data', () => {
  const raw = slimFixture() as any;
  raw.stall_reasons = JSON.parse('{"constructor": "c", "tostring": "t", "long_sb": "ls"}');
  raw.line_stalls['16'] = JSON.parse('{"constructor": 5, "long_sb": 9}');
  const { node, view, refused } = render(raw);
  assert.equal(refused, false);
  view!.showStalls(16);
  const names = [...node.querySelectorAll('.tl-stall-name')].map(e => e.textContent);
  assert.deepEqual(names, ['long_sb', 'constructor']);
  const what = [...node.querySelectorAll('.tl-stall-what')].map(e => e.textContent);
  assert.deepEqual(what, ['ls', 'c']);
  assert.ok(!node.textContent!.includes('native code'));
  // a reason without a colour of its own gets the shared one, never a class from data
  assert.ok(node.querySelectorAll('.tl-stall-row .tl-s-other').length === 1);
});

test('the profile stylesheet keeps the view painting inside its box', () => {
  const css = fs.readFileSync(path.resolve(__dirname, '..', '..', 'style', 'profile.css'), 'utf8');
  const rule = css.match(/\n\.tl-prof-view \{[^}]*\}/)![0];
  assert.match(rule, /contain: paint;/);
  assert.match(rule, /overflow: hidden;/);
  assert.ok(!/url\(|@import|position:\s*fixed/.test(css));
});
