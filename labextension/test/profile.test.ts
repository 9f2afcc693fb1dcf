/**
 * The profile view: its data contract (tile_lab/render/profile_schema.json, whose
 * inspection is mime_schema.json) and what it draws from the recorded H100 profile of the
 * tutorial GEMM: heat on the mma / load lines in every pane, the hovered line's stall
 * reasons, the hottest-lines table, and the best-vs-cliff side by side.
 */
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020';

import { HEAT_MAX, LINE_KEY, REASON_NAME, ROW_KEY, parseProfile, parseProfileSteps } from '../src/profile';
import { ProfileView, STALL_COLOURS, TABLE_VIRTUAL_ABOVE } from '../src/profileView';
import { mimeSchema, newDocument, profileFixtureJson, profileSchema } from './helpers';

export function profileValidator() {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  ajv.addSchema(mimeSchema(), 'mime_schema.json');
  return ajv.compile(profileSchema());
}

/** One document for every render (each starts from an empty body) and the fixture read once;
 * each render gets its own copy. */
const DOC = newDocument();
const FIXTURE = profileFixtureJson();

function fixtureCopy(): Record<string, any> {
  return structuredClone(FIXTURE);
}

function render(raw: unknown = fixtureCopy()): ProfileView {
  const doc = DOC;
  doc.body.replaceChildren();
  const view = new ProfileView(parseProfile(raw), doc, { copy: async () => undefined });
  doc.body.appendChild(view.node);
  return view;
}

/** Source line of the first source row whose text contains `needle`. */
function lineOf(view: ProfileView, needle: string): number {
  const rows = [...view.node.querySelectorAll('section[data-pane="source"] .tl-row')];
  const row = rows.find(r => r.textContent!.includes(needle))!;
  return Number(row.getAttribute('data-line'));
}

function heatOf(row: Element): number {
  const cls = [...row.querySelector('.tl-heat')!.classList].find(c => /^tl-h\d$/.test(c))!;
  return Number(cls.slice(4));
}

test('the Python-made profile fixture is valid under the profile schema', () => {
  const validate = profileValidator();
  assert.equal(validate(profileFixtureJson()), true, JSON.stringify(validate.errors));
});

test("the parser's patterns and limits are the schema's", () => {
  const defs = profileSchema().$defs;
  assert.equal(new RegExp(defs.reason.pattern).source, REASON_NAME.source);
  assert.equal(new RegExp(defs.lineKey.pattern).source, LINE_KEY.source);
  assert.equal(new RegExp(defs.rowKey.pattern).source, ROW_KEY.source);
  assert.equal(defs.heat.maximum, HEAT_MAX);
  assert.equal(profileSchema().properties.version.const, 1);
});

test('the heat gutter is on the mma and load lines, in every pane', () => {
  const view = render();
  const mma = lineOf(view, 'ct.mma(');
  const loadA = lineOf(view, 'ct.load(A');
  for (const pane of ['source', 'tileir']) {
    const rows = [...view.node.querySelectorAll(`section[data-pane="${pane}"] .tl-row`)];
    assert.ok(rows.every(r => r.firstElementChild!.classList.contains('tl-heat')), pane);
    const mmaRows = rows.filter(r => r.getAttribute('data-line') === String(mma));
    assert.ok(mmaRows.length > 0 && mmaRows.every(r => heatOf(r) === HEAT_MAX), pane);
    const loadRows = rows.filter(r => r.getAttribute('data-line') === String(loadA));
    assert.ok(loadRows.length > 0 && loadRows.every(r => heatOf(r) >= 1), pane);
    // no row is hotter than the mma line's
    assert.ok(rows.every(r => heatOf(r) <= HEAT_MAX));
  }
  // SASS: per instruction; the hottest instructions belong to the mma line
  const sass = [...view.node.querySelectorAll('section[data-pane="sass"] .tl-row')];
  const hottest = sass.filter(r => heatOf(r) === HEAT_MAX);
  assert.ok(hottest.length >= 1);
  assert.ok(hottest.some(r => r.getAttribute('data-line') === String(mma)));
  assert.ok(sass.filter(r => heatOf(r) === 0).length > sass.length / 2); // most are cold
  // lines with no samples get no heat
  const sig = view.node.querySelector('section[data-pane="source"] .tl-row')!;
  assert.equal(heatOf(sig), 0);
});

test('hovering a line in any pane shows its stall reasons; leaving shows the hint', () => {
  const view = render();
  const mma = lineOf(view, 'ct.mma(');
  const win = view.node.ownerDocument.defaultView!;
  const row = view.node.querySelector(`section[data-pane="tileir"] .tl-row[data-line="${mma}"]`)!;
  row.dispatchEvent(new win.MouseEvent('mouseover', { bubbles: true }));
  assert.equal(view.panelLine, mma);
  const panel = view.node.querySelector('.tl-stalls')!;
  assert.match(panel.textContent!, new RegExp(`line ${mma}`));
  const names = [...panel.querySelectorAll('.tl-stall-name')].map(e => e.textContent);
  assert.equal(names[0], 'long_sb'); // the mma line waits on its loads
  assert.ok(names.length >= 3 && names.length <= 6, names.join());
  const seg = panel.querySelector('.tl-stall-row .tl-seg')!;
  assert.ok(seg.classList.contains('tl-s-long_sb'));
  assert.ok([...seg.classList].some(c => /^tl-w([89]\d)$/.test(c)), seg.className); // ~85%
  assert.match(panel.querySelector('.tl-stall-what')!.textContent!, /long scoreboard/);
  // the inspection view links the panes as before
  assert.ok(view.inspection.highlighted.length > 3);
  view.node.dispatchEvent(new win.MouseEvent('mouseleave'));
  assert.equal(view.panelLine, null);
  assert.match(panel.textContent!, /Hover a line/);
});

test('the hottest-lines table: mma first; hovering a row links the panes, a click pins', () => {
  const view = render();
  const mma = lineOf(view, 'ct.mma(');
  const rows = [...view.node.querySelectorAll('table.tl-hot tr[data-line]')];
  assert.equal(rows[0].getAttribute('data-line'), String(mma));
  assert.match(rows[0].textContent!, /acc = ct\.mma\(a, b, acc\).*long_sb \d+%/);
  const win = view.node.ownerDocument.defaultView!;
  rows[0].dispatchEvent(new win.MouseEvent('mouseover', { bubbles: true }));
  assert.equal(view.panelLine, mma);
  assert.ok(view.inspection.highlighted.some(e => e.closest('section[data-pane="sass"]')));
  rows[0].dispatchEvent(new win.MouseEvent('click', { bubbles: true }));
  view.node.dispatchEvent(new win.MouseEvent('mouseleave'));
  assert.equal(view.panelLine, mma); // pinned
  assert.match(view.node.querySelector('table.tl-hot')!.textContent!,
    /instructions with no source line/);
});

test('the two configs side by side: both labels, the cliff spills', () => {
  const view = render();
  const box = view.node.querySelector('.tl-compare')!;
  const labels = [...box.querySelectorAll('.tl-compare-label')].map(e => e.textContent);
  assert.deepEqual(labels, ['best 128x128x64', 'cliff 256x256x32']);
  const spills = [...box.querySelectorAll('.tl-spill')].map(e => e.textContent);
  assert.equal(spills.length, 1);
  assert.match(spills[0]!, /986 STL \+ 1,103 LDL/);
  const last = [...box.querySelectorAll('tr')].pop()!;
  assert.match(last.textContent!, /spill instructions/);
  assert.equal(last.querySelectorAll('td')[2].textContent, ''); // none in the best config
  assert.ok(last.querySelectorAll('td')[3].querySelector('.tl-seg'));
  // without a comparison, no side by side
  const raw = fixtureCopy();
  delete raw.comparison;
  assert.equal(render(raw).node.querySelector('.tl-compare'), null);
});

/** The fixture with `profiles` configs of `lines` source lines each, and `hot` hot lines. */
function big(profiles: number, lines: number, hot: number): Record<string, any> {
  const raw = fixtureCopy();
  const entry = raw.comparison[0];
  const keyed = <T>(f: (i: number) => T) =>
    Object.fromEntries(Array.from({ length: lines }, (_, i) => [String(i + 1), f(i + 1)]));
  raw.comparison = Array.from({ length: profiles }, (_, k) => ({
    ...entry, label: `config ${k}`,
    line_samples: keyed(i => 1 + (i % 97)), line_stalls: keyed(i => ({ long_sb: 1 + (i % 97) }))
  }));
  raw.hot_lines = Array.from({ length: hot }, (_, i) => ({ ...raw.hot_lines[0], line: i + 1 }));
  return raw;
}

test('big tables draw only the rows in view, and say "showing N of M" only where data was cut', () => {
  // below the limits: every line in the side by side (no longer only the 200 hottest), drawn
  // as rows in view; no notice (nothing was cut)
  const view = render(big(8, 1500, 1000));
  const compare = view.node.querySelector('.tl-compare')!;
  const hot = view.node.querySelector('.tl-hot.tl-vtable')!;
  assert.ok(compare.querySelector('.tl-vscroll .tl-compare-table.tl-vtable'));
  const drawn = compare.querySelectorAll('.tl-vtable tr');
  assert.ok(drawn.length > 0 && drawn.length <= 100, String(drawn.length));
  assert.equal(drawn[0].firstElementChild!.textContent, '1');
  assert.equal(drawn[0].querySelectorAll('td').length, 2 + 8);
  assert.ok(hot.querySelectorAll('tr[data-line]').length <= 100);
  assert.equal(view.node.querySelectorAll('.tl-notice').length, 0);
  // the spacers stand in for the rest: 1500 lines + 2 group rows, 1000 + 1 (unattributed)
  const rowsOf = (box: Element) => [...box.querySelectorAll('.tl-sp')]
    .reduce((n, e) => n + 2 ** Number(/tl-sp(\d+)/.exec(e.className)![1]), 0) + box.querySelectorAll('tr').length;
  assert.equal(rowsOf(compare.querySelector('.tl-vtable')!), 1500 + 2);
  assert.equal(rowsOf(hot), 1000 + 1);
  // a hot row drawn in view still links the panes
  const win = view.node.ownerDocument.defaultView!;
  hot.querySelector('tr[data-line="7"]')!.dispatchEvent(new win.MouseEvent('mouseover', { bubbles: true }));
  assert.equal(view.inspection.state.hovered, 7);
  // past the schema's limit (2,000 lines a config): cut, and the side by side says so
  const cut = render(big(2, 2500, 10));
  const notices = [...cut.node.querySelectorAll('.tl-compare .tl-notice')].map(e => e.textContent);
  assert.deepEqual(notices, ["showing 2,000 of 2,500 source lines of config 0; 2,000 of 2,500 source lines of config 1 (the view's limit)"]);
  // small tables stay plain tables, every row drawn (what real kernels give)
  const small = render(big(2, TABLE_VIRTUAL_ABOVE - 2, 20));
  assert.equal(small.node.querySelectorAll('.tl-vscroll').length, 0);
  assert.equal(small.node.querySelectorAll('table.tl-compare-table tr').length, 1 + TABLE_VIRTUAL_ABOVE);
  assert.equal(small.node.querySelectorAll('table.tl-hot tr[data-line]').length, 20);
});
test('the parse in steps pauses after the inspection and before each config, and gives the same data', () => {
  const raw = big(3, 50, 5);
  const steps = parseProfileSteps(raw);
  let pauses = 0;
  let step = steps.next();
  for (; !step.done; step = steps.next()) {
    pauses++;
  }
  assert.equal(pauses, 1 + 3);
  assert.deepEqual(step.value, parseProfile(raw));
  // a bad config still fails, naming it, when its step comes
  raw.comparison[2].line_samples = { x: 1 };
  const bad = parseProfileSteps(raw);
  for (let k = 0; k < 1 + 3; k++) { // to the pause before config 2
    bad.next();
  }
  assert.throws(() => bad.next(), /comparison\[2\]\.line_samples\["x"\]/);
});

test('every stall reason with its own colour is one the Python side names', () => {
  const reasons = Object.keys(profileFixtureJson().stall_reasons);
  for (const r of STALL_COLOURS) {
    assert.ok(reasons.includes(r), r);
  }
});
