import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { parseInspection } from '../src/model';
import { CLASSES, InspectionView, commonIndent, compactAddressGap, renderError, tmaBadgeText } from '../src/view';
import { fixture, fixtureJson, newDocument } from './helpers';

function mount(data = fixture(), copied: string[] = []) {
  const doc = newDocument();
  const view = new InspectionView(data, doc, {
    copy: async text => {
      copied.push(text);
    }
  });
  doc.body.appendChild(view.node);
  return { doc, view, copied };
}

function row(view: InspectionView, pane: string, i: number): Element {
  return view.node.querySelector(`section[data-pane="${pane}"] .${CLASSES.row}[data-row="${i}"]`)!;
}

function linkedLines(view: InspectionView, pane: string): string[] {
  return [...view.node.querySelectorAll(`section[data-pane="${pane}"] .${CLASSES.linked}`)].map(
    e => e.getAttribute('data-line')!
  );
}

function fire(target: Element, type: string): void {
  const win = target.ownerDocument.defaultView!;
  target.dispatchEvent(new win.MouseEvent(type, { bubbles: type !== 'mouseleave' }));
}

test('renders one pane per stage with rows carrying text and source lines', () => {
  const { view } = mount();
  const panes = [...view.node.querySelectorAll(`section.${CLASSES.pane}`)];
  assert.deepEqual(
    panes.map(p => p.getAttribute('data-pane')),
    ['source', 'tileir', 'sass', 'remarks']
  );
  assert.equal(row(view, 'source', 0).querySelector('.tl-text')!.textContent, '@ct.kernel');
  assert.equal(row(view, 'source', 0).getAttribute('data-line'), '2');
  assert.equal(row(view, 'tileir', 2).getAttribute('data-line'), '5');
  assert.equal(row(view, 'tileir', 0).hasAttribute('data-line'), false);
  assert.equal(view.node.querySelector('.tl-kernel')!.textContent, 'vadd');
});

test('the show list decides which panes start visible; toggles flip them', () => {
  const data = fixture();
  data.show = ['source', 'sass'];
  const { view } = mount(data);
  const hidden = (p: string) =>
    (view.node.querySelector(`section[data-pane="${p}"]`) as HTMLElement).hidden;
  assert.equal(hidden('source'), false);
  assert.equal(hidden('tileir'), true);
  const toggle = view.node.querySelector(`.${CLASSES.toggle}[data-pane="tileir"]`)!;
  assert.equal(toggle.getAttribute('aria-pressed'), 'false');
  fire(toggle, 'click');
  assert.equal(hidden('tileir'), false);
  assert.equal(toggle.getAttribute('aria-pressed'), 'true');
});

test('hovering a Tile IR row highlights the linked rows of every pane', () => {
  const { view } = mount();
  fire(row(view, 'tileir', 4).querySelector('.tl-text')!, 'mouseover'); // addf, line 7
  assert.deepEqual(linkedLines(view, 'source'), ['7']);
  assert.deepEqual(linkedLines(view, 'tileir'), ['7', '7']);
  assert.deepEqual(linkedLines(view, 'sass'), ['7', '7']);
  assert.deepEqual(linkedLines(view, 'remarks'), []);
  assert.equal(view.highlighted.length, 5);
  assert.match(view.node.querySelector('.tl-status')!.textContent!, /^Line 7/);
  fire(view.node, 'mouseleave');
  assert.equal(view.node.querySelectorAll(`.${CLASSES.linked}`).length, 0);
});

test('hovering an unmapped row clears the highlight', () => {
  const { view } = mount();
  fire(row(view, 'sass', 2), 'mouseover');
  assert.equal(view.highlighted.length > 0, true);
  fire(row(view, 'sass', 6), 'mouseover'); // EXIT: no line
  assert.equal(view.highlighted.length, 0);
});

test('click pins a line until it is clicked again', () => {
  const { view } = mount();
  const r = row(view, 'source', 3); // line 5
  fire(r, 'click');
  fire(view.node, 'mouseleave');
  assert.deepEqual(linkedLines(view, 'remarks'), ['5']);
  assert.ok(r.classList.contains(CLASSES.pinned));
  fire(row(view, 'source', 5), 'mouseover'); // hovering elsewhere shows that line...
  assert.deepEqual(linkedLines(view, 'source'), ['7']);
  assert.ok(r.classList.contains(CLASSES.pinned)); // ...and keeps the pin marked
  fire(view.node, 'mouseleave');
  assert.deepEqual(linkedLines(view, 'source'), ['5']);
  fire(r, 'click');
  fire(view.node, 'mouseleave');
  assert.equal(view.node.querySelectorAll(`.${CLASSES.linked}, .${CLASSES.pinned}`).length, 0);
});

test('output text is shown as text, never parsed as markup', () => {
  const raw = fixtureJson() as any;
  raw.source = '<img src=x onerror="globalThis.pwned=1">\n<script>globalThis.pwned=2</script>\n';
  raw.kernel_name = '<b>k</b>';
  const { view } = mount(parseInspection(raw));
  assert.equal(view.node.querySelector('img'), null);
  assert.equal(view.node.querySelector('script'), null);
  assert.equal(view.node.querySelector('b'), null);
  assert.equal(row(view, 'source', 0).querySelector('.tl-text')!.textContent, raw.source.split('\n')[0]);
  assert.equal(view.node.querySelector('.tl-kernel')!.textContent, '<b>k</b>');
  // the remark's message contains markup too
  assert.equal(view.node.querySelector('.tl-remark .tl-text')!.textContent, 'vectorized load <b>128-bit</b>');
});

test('Tile IR rows are coloured with the token classes Python sent', () => {
  const { view } = mount();
  const text = row(view, 'tileir', 1).querySelector('.tl-text')!;
  assert.equal(text.textContent, '  %bid = get_tile_block_id : tile<i32>');
  const classes = [...text.querySelectorAll('span')].map(e => e.className);
  assert.ok(classes.length >= 2, classes.join(' '));
  assert.ok(classes.every(c => /^tl-t[a-z]{1,2}$/.test(c)), classes.join(' '));
  // runs that do not cover the line leave it plain rather than cut
  const data = fixture();
  data.stages.get('tileir')!.tokens![1] = [['k', 3]];
  const plain = mount(data).view;
  const r = row(plain, 'tileir', 1).querySelector('.tl-text')!;
  assert.equal(r.querySelectorAll('span').length, 0);
  assert.equal(r.textContent, '  %bid = get_tile_block_id : tile<i32>');
});

test('gutters carry the colour band of their source line', () => {
  const { view } = mount();
  const gutter = row(view, 'tileir', 2).querySelector(`.${CLASSES.band}`)!;
  assert.ok(gutter.classList.contains('tl-c1'), gutter.className); // line 5: slot 1
  const source = row(view, 'source', 0).querySelector(`.${CLASSES.band}`)!; // line 2: unmapped
  assert.ok(![...source.classList].some(c => /^tl-c\d$/.test(c)), source.className);
});

test('copy buttons copy their pane as text', async () => {
  const { view, copied } = mount();
  const btn = view.node.querySelector(`section[data-pane="tileir"] .${CLASSES.copy}`)!;
  fire(btn, 'click');
  await new Promise(r => setTimeout(r, 0));
  assert.equal(copied.length, 1);
  assert.equal(copied[0], fixture().stages.get('tileir')!.text);
  assert.equal(btn.textContent, 'Copied');
  assert.equal(view.node.querySelectorAll(`.${CLASSES.pinned}`).length, 0); // no pin from it
});

test('renderError shows the message as text', () => {
  const doc = newDocument();
  const box = renderError(doc, 'tile_lab view data: version is 2 <i>x</i>');
  assert.equal(box.textContent, 'tile_lab view data: version is 2 <i>x</i>');
  assert.equal(box.querySelector('i'), null);
  assert.equal(box.getAttribute('role'), 'alert');
});

test('stage panes drop the indentation all their lines share; copy keeps it', async () => {
  assert.equal(commonIndent(['    a', '', '      b']), 4);
  assert.equal(commonIndent(['a', '  b']), 0);
  assert.equal(commonIndent([]), 0);
  const { view, copied } = mount();
  const text = row(view, 'sass', 0).querySelector('.tl-text')!.textContent!;
  assert.ok(text.startsWith('/*0000*/'), text);
  fire(view.node.querySelector(`section[data-pane="sass"] .${CLASSES.copy}`)!, 'click');
  await new Promise(r => setTimeout(r, 0));
  assert.ok(copied[0].startsWith('        /*0000*/'));
});

test('SASS rows lose the padding between address and instruction, nothing else', () => {
  assert.equal(compactAddressGap('/*0040*/                   LDC R1, c[0x0][0x28] ;'),
    '/*0040*/ LDC R1, c[0x0][0x28] ;');
  assert.equal(compactAddressGap('  %0 = make_token : token'), '  %0 = make_token : token');
  assert.equal(compactAddressGap('/* comment */   x'), '/* comment */   x');
});

test('token runs still colour a line whose shared indentation is dropped', () => {
  const data = fixture();
  const tileir = data.stages.get('tileir')!;
  tileir.text = tileir.text.split('\n').map(l => `    ${l}`).join('\n');
  tileir.tokens = tileir.tokens!.map(runs => [['', 4] as [string, number], ...runs]);
  const { view } = mount(data);
  const text = row(view, 'tileir', 0).querySelector('.tl-text')!;
  assert.ok(text.textContent!.startsWith('entry @vadd('), text.textContent!);
  assert.equal(text.querySelector('span')!.textContent, 'entry');
  assert.equal(text.querySelector('span')!.className, 'tl-tk');
});

test('a 200,000-row pane draws only its window; hovering its line touches only drawn rows', () => {
  const raw = fixtureJson() as any;
  const n = 200_000;
  raw.stages.sass = { text: '  /*0000*/ NOP ;\n'.repeat(n), line_map: new Array(n).fill(5) };
  const { view } = mount(parseInspection(raw));
  const sass = view.node.querySelector('section[data-pane="sass"]')!;
  const drawn = sass.querySelectorAll(`.${CLASSES.row}`).length;
  assert.ok(drawn > 0 && drawn <= 200, `${drawn} rows drawn`);
  assert.ok(sass.querySelector(`.${CLASSES.virtual}`));
  // the spacers stand for the other rows: their tl-spK blocks add up to n - drawn rows
  const rows = [...sass.querySelectorAll('.tl-sp')].reduce(
    (s, e) => s + 2 ** Number(/tl-sp(\d+)/.exec(e.className)![1]), 0);
  assert.equal(rows + drawn, n);
  assert.equal(sass.querySelector('.tl-pane-meta')!.textContent, '200,000 lines');
  assert.equal(sass.querySelector(`.${CLASSES.notice}`), null); // shown whole: no notice
  fire(row(view, 'source', 3), 'mouseover'); // line 5
  assert.equal(linkedLines(view, 'sass').length, drawn);
  assert.match(view.node.querySelector('.tl-status')!.textContent!, /SASS 200,000/);
  assert.deepEqual(view.linkedRows('sass', 5).length, n);
});

test('a pane over the row limit is cut with a notice and a download of the full text', () => {
  const raw = fixtureJson() as any;
  raw.source = 'x = 1\n'.repeat(300_000);
  const { view } = mount(parseInspection(raw));
  const source = view.node.querySelector('section[data-pane="source"]')!;
  const notice = source.querySelector(`.${CLASSES.notice}`)!;
  assert.match(notice.textContent!, /^showing 250,000 of 300,000 lines/);
  assert.ok(notice.querySelector(`.${CLASSES.download}`));
  // a very long row is cut with a sign saying how much is left
  const wide = fixtureJson() as any;
  wide.source = `${'y'.repeat(5000)}\n`;
  const w = mount(parseInspection(wide)).view;
  assert.match(row(w, 'source', 0).querySelector('.tl-more')!.textContent!, /3,000 more characters/);
});

test('hostile line numbers are refused, naming the field', () => {
  for (const bad of [1e21, 1e308, 1_000_000_000, -1, 0.5]) {
    const raw = fixtureJson() as any;
    raw.stages.sass.line_map[2] = bad;
    assert.throws(() => parseInspection(raw), /stages\.sass\.line_map\[2\] must be a line number/);
    const r = fixtureJson() as any;
    r.remarks[0].line = bad;
    assert.throws(() => parseInspection(r), /remarks\[0\]\.line/);
  }
});

/** The fixture with line 6's load a TMA copy (UTMALDG in its SASS row), as a Hopper compile. */
function tmaPayload(): any {
  const raw = fixtureJson() as any;
  raw.stages.sass.text = raw.stages.sass.text.replace(
    'LDG.E.128 R8, desc[UR4][R6.64] ;', '@!UP1 UTMALDG.2D [UR8], [UR4] ;');
  raw.tma.lines[1] = { line: 6, kind: 'load', tma: true, sass_ops: ['UTMALDG'],
    reason: 'bulk tensor copy: UTMALDG' };
  raw.tma.summary = '1 of 2 tile loads/stores became TMA copies (sm_100)';
  return raw;
}

function badges(view: InspectionView, where: string): [string | null, string, string, string][] {
  return [...view.node.querySelectorAll(`${where} .${CLASSES.tma}`)].map(b => [
    b.closest('[data-line]')!.getAttribute('data-line'), b.className, b.textContent!, (b as HTMLElement).title
  ]);
}

test('TMA badges end the source rows of the lines the verdict lists, reason as tooltip', () => {
  const { view } = mount(parseInspection(tmaPayload()));
  assert.deepEqual(badges(view, 'section[data-pane="source"]'), [
    ['5', 'tl-tma tl-tma-no', 'no TMA', fixture().tma!.lines[0].reason],
    ['6', 'tl-tma tl-tma-yes', 'TMA UTMALDG', 'bulk tensor copy: UTMALDG']
  ]);
  // the badge follows the code inside the row's text, which still starts with the code
  const text = row(view, 'source', 3).querySelector('.tl-text')!;
  assert.equal(text.lastElementChild!.className, 'tl-tma tl-tma-no');
  assert.ok(text.textContent!.startsWith('    ta = ct.load(a, index=(bid,), shape=(TILE,))'));
  assert.equal(row(view, 'source', 5).querySelector(`.${CLASSES.tma}`), null); // the store: not listed
});

test('the TMA summary lists every verdict and links its rows to the source line', () => {
  const { view } = mount(parseInspection(tmaPayload()));
  const box = view.node.querySelector(`details.${CLASSES.tmaSummary}`) as HTMLDetailsElement;
  assert.equal(box.open, true);
  assert.equal(box.querySelector('summary')!.textContent, '1 of 2 tile loads/stores became TMA copies (sm_100)');
  const rows = [...box.querySelectorAll(`.${CLASSES.tmaRow}`)];
  assert.deepEqual(rows.map(r => r.textContent), [
    `line 5 (load): no TMA ${fixture().tma!.lines[0].reason}`,
    'line 6 (load): TMA UTMALDG bulk tensor copy: UTMALDG'
  ]);
  // the summary sits between the header and the panes, as in the HTML view
  assert.equal(box.previousElementSibling!.className, 'tl-header');
  assert.equal(box.nextElementSibling!.className, 'tl-panes');
  fire(rows[1], 'mouseover');
  assert.deepEqual(linkedLines(view, 'source'), ['6']);
  assert.deepEqual(linkedLines(view, 'sass'), ['6']);
  fire(row(view, 'source', 3), 'mouseover'); // line 5 lights its summary row
  assert.deepEqual(rows.map(r => r.classList.contains(CLASSES.linked)), [true, false]);
});

test('TMA opcodes are boxed in the SASS pane; the row text is unchanged', () => {
  const { view } = mount(parseInspection(tmaPayload()));
  const sass = row(view, 'sass', 3);
  const op = sass.querySelector(`.${CLASSES.tmaOp}`) as HTMLElement;
  assert.equal(op.textContent, 'UTMALDG');
  assert.equal(op.title, 'TMA: bulk tensor copy');
  assert.equal(sass.querySelector('.tl-text')!.textContent, '/*0030*/ @!UP1 UTMALDG.2D [UR8], [UR4] ;');
  assert.equal(view.node.querySelectorAll(`.${CLASSES.tmaOp}`).length, 1);
});

test('a view without a TMA verdict (version 1, or no SASS) draws no badge, summary or box', () => {
  const raw = tmaPayload();
  raw.version = 1;
  delete raw.tma;
  const { view } = mount(parseInspection(raw));
  assert.equal(view.node.querySelectorAll(`.${CLASSES.tma}, .${CLASSES.tmaSummary}, .${CLASSES.tmaOp}`).length, 0);
  assert.equal(row(view, 'sass', 3).querySelector('.tl-text')!.textContent, '/*0030*/ @!UP1 UTMALDG.2D [UR8], [UR4] ;');
});

test('badge text is the HTML view\'s: TMA and its TMA opcodes, or no TMA', () => {
  const line = { line: 3, kind: 'store' as const, tma: true, sass_ops: ['STG', 'UTMASTG', 'UBLKCP'], reason: '' };
  assert.equal(tmaBadgeText(line), 'TMA UTMASTG/UBLKCP');
  assert.equal(tmaBadgeText({ ...line, tma: false }), 'no TMA');
});

test('a virtual source pane draws the badge on its row when that row scrolls into view', () => {
  const raw = fixtureJson() as any;
  raw.source = 'x = 1\n'.repeat(3000);
  raw.first_line = 1;
  raw.tma.lines = [{ line: 2, kind: 'load', tma: false, sass_ops: ['LDG'], reason: 'r' }];
  const { view } = mount(parseInspection(raw));
  assert.ok(view.node.querySelector(`section[data-pane="source"] .${CLASSES.virtual}`));
  assert.deepEqual(badges(view, 'section[data-pane="source"]'), [['2', 'tl-tma tl-tma-no', 'no TMA', 'r']]);
});

test('TMA lines cut by the writer are said so under the summary', () => {
  const raw = fixtureJson() as any;
  raw.truncated = { 'tma.lines': 12_000 };
  const { view } = mount(parseInspection(raw));
  const notice = view.node.querySelector(`.${CLASSES.tmaSummary} .${CLASSES.notice}`)!;
  assert.equal(notice.textContent, 'showing 2 of 12,000 lines with loads/stores');
  assert.equal(mount().view.node.querySelector(`.${CLASSES.tmaSummary} .${CLASSES.notice}`), null);
});
