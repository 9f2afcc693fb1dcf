/**
 * The profile view: its data contract (tile_lab/render/profile_schema.json, whose
 * inspection is mime_schema.json) and what it draws from the recorded H100 profile of the
 * tutorial GEMM: heat on the mma / load lines in every pane, the hovered line's stall
 * reasons, the hottest-lines table, and the best-vs-cliff side by side.
 */
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020';

import { HEAT_MAX, LINE_KEY, REASON_NAME, ROW_KEY, parseProfile } from '../src/profile';
import { ProfileView, STALL_COLOURS } from '../src/profileView';
import { mimeSchema, newDocument, profileFixtureJson, profileSchema } from './helpers';

export function profileValidator() {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  ajv.addSchema(mimeSchema(), 'mime_schema.json');
  return ajv.compile(profileSchema());
}

function render(raw: unknown = profileFixtureJson()): ProfileView {
  const doc = newDocument();
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
  const raw = profileFixtureJson();
  delete raw.comparison;
  assert.equal(render(raw).node.querySelector('.tl-compare'), null);
});


test('every stall reason with its own colour is one the Python side names', () => {
  const reasons = Object.keys(profileFixtureJson().stall_reasons);
  for (const r of STALL_COLOURS) {
    assert.ok(reasons.includes(r), r);
  }
});
