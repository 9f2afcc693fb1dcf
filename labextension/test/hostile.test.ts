/**
 * Untrusted notebooks: hostile values in every field of the bundle must never become
 * markup, styles, URLs or prototype lookups. After rendering, the view's DOM is checked
 * against an allowlist of elements, attributes and class names: nothing the data says
 * can add a style, a URL-bearing attribute or an element the view does not build itself.
 */
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';

import { InvalidViewData, parseInspection } from '../src/model';
import { InspectionView, renderError } from '../src/view';
import { classesOf, elementsOf, fixtureJson, newDocument } from './helpers';

/** CSS escapes and functions that sanitizers miss, positioning, markup, prototype keys. */
export const HOSTILE = [
  'u\\72l(https://evil.example/a.png)',
  '\\55 RL(https://evil.example/b.png)',
  'image-set("https://evil.example/c.png" 1x)',
  'url(https://evil.example/d.png)',
  'position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:2147483647',
  '<svg xmlns="http://www.w3.org/2000/svg" style="position:fixed;inset:0;z-index:9999"' +
    ' filter="url(https://evil.example/f#x)"><image href="https://evil.example/g.png"/></svg>',
  '<style>*{background:url(https://evil.example/h.png)}</style>',
  '<img src="https://evil.example/i.png" onerror="globalThis.pwned=1">',
  'javascript:globalThis.pwned=2',
  'constructor',
  '__proto__',
  'toString',
  'hasOwnProperty'
];

const ELEMENTS = new Set(['DIV', 'SPAN', 'SECTION', 'BUTTON', 'CODE', 'DETAILS', 'SUMMARY']);
const ATTRIBUTES = new Set([
  'class', 'role', 'aria-live', 'aria-pressed', 'type', 'title', 'hidden', 'open',
  'data-kernel', 'data-pane', 'data-row', 'data-line', 'data-kind'
]);
const CLASS_NAME = /^(tl-[a-z-]+|tl-sp[0-9]{1,2}|tl-t(k|kt|kc|kp|nf|nv|nl|na|nb|nd|no|s|m|c|cs|cp)|tl-c[0-6])$/;
const CSS_CLASSES = fs.readFileSync(
  path.resolve(__dirname, '..', '..', 'style', 'base.css'), 'utf8') +
  fs.readFileSync(path.resolve(__dirname, '..', '..', 'style', 'colors.css'), 'utf8');

/** Every element in `elements` (a rendered view's, elementsOf) is one the view builds;
 * returns the problems. */
function allowlistProblems(elements: Element[]): string[] {
  const problems: string[] = [];
  for (const e of elements) {
    if (!ELEMENTS.has(e.tagName)) {
      problems.push(`element <${e.tagName}>`);
    }
    const names = e.getAttributeNames();
    for (const name of names) {
      if (!ATTRIBUTES.has(name)) {
        problems.push(`attribute ${name}="${e.getAttribute(name)}" on <${e.tagName}>`);
      }
    }
    for (const c of classesOf(e)) {
      if (!CLASS_NAME.test(c)) {
        problems.push(`class ${JSON.stringify(c)}`);
      }
    }
    const pane = names.includes('data-pane') ? e.getAttribute('data-pane') : null;
    if (pane !== null && !/^[a-z][a-z0-9_]{0,31}$/.test(pane)) {
      problems.push(`data-pane ${JSON.stringify(pane)}`);
    }
    for (const n of ['data-line', 'data-row']) {
      const v = names.includes(n) ? e.getAttribute(n) : null;
      if (v !== null && !/^\d+$/.test(v)) {
        problems.push(`${n} ${JSON.stringify(v)}`);
      }
    }
  }
  return problems;
}

/** One document for every render (a new jsdom per render was most of this file's time);
 * each render starts from an empty body. */
const DOC = newDocument();

/** The fixture, read once; each test and placement gets its own copy. */
const FIXTURE = fixtureJson();

function fixtureCopy(): Record<string, any> {
  return structuredClone(FIXTURE);
}

/** Render like the MIME renderer does: the view, or the error box for refused data. */
function render(raw: unknown): { node: HTMLElement; refused: boolean } {
  const doc = DOC;
  doc.body.replaceChildren();
  try {
    const view = new InspectionView(parseInspection(raw), doc, { copy: async () => undefined });
    doc.body.appendChild(view.node);
    return { node: view.node, refused: false };
  } catch (err) {
    assert.ok(err instanceof InvalidViewData, String(err));
    return { node: renderError(doc, err.message), refused: true };
  }
}

/** Ways to put one hostile string into each field of the bundle. */
function placements(h: string): [string, (d: any) => void][] {
  return [
    ['kernel_name', d => (d.kernel_name = h)],
    ['filename', d => (d.filename = h)],
    ['source', d => (d.source = `${h}\n${h}\n`)],
    ['arch', d => (d.arch = h)],
    ['signature', d => (d.signature = h)],
    ['hints key', d => (d.hints = { [h]: 1 })],
    ['hints value', d => (d.hints = { occupancy: h, nested: { style: h } })],
    ['stage text', d => (d.stages.tileir.text = `${h}\n${h}`)],
    ['stage name', d => (d.stages[h] = d.stages.sass)],
    ['line_map entry', d => (d.stages.sass.line_map[1] = h)],
    ['token class', d => (d.stages.tileir.tokens[0][0] = [h, 5])],
    ['remark kind', d => (d.remarks[0].kind = h)],
    ['remark category', d => (d.remarks[0].category = h)],
    ['remark message', d => (d.remarks[0].message = h)],
    ['remark pass', d => (d.remarks[0].pass_name = h)],
    ['remark col', d => (d.remarks[0].col = h)],
    ['show entry', d => d.show.push(h)],
    ['versions key', d => (d.versions = { [h]: h })],
    ['line_colors key', d => (d.line_colors = { [h]: 1 })],
    ['line_colors value', d => (d.line_colors = { '5': h })],
    ['version', d => (d.version = h)],
    ['tma arch', d => (d.tma.arch = h)],
    ['tma summary', d => (d.tma.summary = h)],
    ['tma reason', d => (d.tma.lines[0].reason = h)],
    ['tma kind', d => (d.tma.lines[0].kind = h)],
    ['tma opcode', d => (d.tma.lines[0].sass_ops = [h])],
    ['tma line', d => (d.tma.lines[0].line = h)],
    ['tma field', d => (d.tma[h] = h)],
    ['unknown field', d => (d[h] = h)],
    ['old diagram pane', d => (d.diagram = { svg: h, footprints: [] })]
  ];
}

test('hostile values in every field render as text or are refused, never as markup', () => {
  let rendered = 0;
  let refused = 0;
  for (const h of HOSTILE) {
    for (const [field, place] of placements(h)) {
      const raw = fixtureCopy() as any;
      place(raw);
      const out = render(raw);
      // one walk of the view for both checks
      const elements = elementsOf(out.node);
      assert.deepEqual(allowlistProblems(elements), [], `${field} = ${h}`);
      assert.equal(elements.filter(e => e.hasAttribute('style')).length, 0, `${field} = ${h}: a style`);
      if (out.refused) {
        refused++;
      } else {
        rendered++;
      }
    }
  }
  assert.equal((globalThis as any).pwned, undefined);
  assert.ok(rendered > 100 && refused > 20, `${rendered} rendered, ${refused} refused`);
});

test('the hostile text reaches the page as text, unchanged', () => {
  for (const h of HOSTILE) {
    const raw = fixtureCopy() as any;
    raw.kernel_name = h;
    raw.remarks[0].message = h;
    const { node } = render(raw);
    assert.equal(node.querySelector('.tl-kernel')!.textContent, h);
    assert.equal(node.querySelector('.tl-remark .tl-text')!.textContent, h);
  }
});

test('a stage named constructor is titled "constructor", not by Object.prototype', () => {
  const raw = fixtureCopy() as any;
  raw.stages.constructor = { text: 'x', line_map: [5] };
  raw.stages.toString = { text: 'y', line_map: [null] };
  raw.show.push('constructor', 'hasownproperty');
  const { node, refused } = render(raw);
  assert.equal(refused, true); // 'toString' is not a pane name (upper case)
  delete raw.stages.toString;
  const ok = render(raw);
  assert.equal(ok.refused, false);
  const view = ok.node;
  const titles = [...view.querySelectorAll('.tl-pane-title')].map(e => e.textContent);
  assert.ok(titles.includes('constructor'), titles.join(','));
  assert.ok(!view.textContent!.includes('native code'), view.textContent!);
  const toggle = view.querySelector('.tl-toggle[data-pane="constructor"]')!;
  assert.equal(toggle.textContent, 'constructor');
  // hovering its row links line 5 and the status names the pane by its own name
  const row = view.querySelector('section[data-pane="constructor"] .tl-row')!;
  row.dispatchEvent(new (view.ownerDocument.defaultView!.MouseEvent)('mouseover', { bubbles: true }));
  assert.match(view.querySelector('.tl-status')!.textContent!, /constructor 1/);
  assert.ok(!node.textContent!.includes('native code'));
});

test('a show list naming a prototype key shows no pane for it', () => {
  const raw = fixtureCopy() as any;
  raw.show = ['source', 'constructor', 'valueof'];
  const { node, refused } = render(raw);
  assert.equal(refused, false);
  assert.equal(node.querySelector('section[data-pane="constructor"]'), null);
  assert.ok(!node.textContent!.includes('native code'));
});

test('the stylesheet keeps the view painting inside its box', () => {
  const rule = CSS_CLASSES.match(/\n\.tl-view \{[^}]*\}/)![0];
  assert.match(rule, /contain: paint;/);
  assert.match(rule, /overflow: hidden;/);
  assert.ok(!/url\(|@import|position:\s*fixed/.test(
    fs.readFileSync(path.resolve(__dirname, '..', '..', 'style', 'colors.css'), 'utf8')));
});
