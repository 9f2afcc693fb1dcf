import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { InvalidViewData, parseInspection, splitLines } from '../src/model';
import { fixtureJson } from './helpers';

test('parses the Python payload', () => {
  const d = parseInspection(fixtureJson());
  assert.equal(d.kernel_name, 'vadd');
  assert.equal(d.first_line, 2);
  assert.deepEqual([...d.stages.keys()].sort(), ['sass', 'tileir']);
  assert.equal(d.stages.get('tileir')!.line_map[2], 5);
  assert.equal(d.remarks[0].line, 5);
  assert.equal(d.line_colors.get(5), 1); // the palette slot Python gave line 5
  assert.deepEqual(d.stages.get('tileir')!.tokens![1][0], ['', 2]); // indentation
  assert.equal(d.stages.get('sass')!.tokens, null);
});

test('version is the one version field; schema_version alone is not read', () => {
  const raw = fixtureJson();
  delete raw['version'];
  raw['schema_version'] = 1;
  assert.throws(() => parseInspection(raw), /version is missing; this extension reads versions 1 and 2/);
});

test('rejects other versions, naming the field', () => {
  const raw = { ...fixtureJson(), version: 3 };
  assert.throws(() => parseInspection(raw), /version is 3; this extension reads versions 1 and 2/);
  assert.throws(() => parseInspection('nope'), InvalidViewData);
});

test('parses the TMA verdict of a version-2 view', () => {
  const d = parseInspection(fixtureJson());
  assert.equal(d.version, 2);
  assert.equal(d.tma!.arch, 'sm_100');
  assert.equal(d.tma!.summary, '0 of 2 tile loads/stores became TMA copies (sm_100)');
  assert.deepEqual(d.tma!.lines.map(t => [t.line, t.kind, t.tma, t.sass_ops]), [
    [5, 'load', false, ['LDG']],
    [6, 'load', false, ['LDG']]
  ]);
  assert.match(d.tma!.lines[0].reason, /^all TMA preconditions hold; the compiler chose LDG/);
  assert.equal(d.tma!.linesTotal, 2);
});

test("an old notebook's version-1 view opens without a TMA verdict; with one it is refused", () => {
  const raw = fixtureJson() as any;
  raw.version = 1;
  assert.throws(() => parseInspection(raw), /"tma" is not a field of version 1/);
  delete raw.tma;
  const d = parseInspection(raw);
  assert.equal(d.version, 1);
  assert.equal(d.tma, null);
  assert.equal(d.kernel_name, 'vadd');
});

test('rejects bad TMA lines, naming the field', () => {
  const bad: [(t: any) => void, RegExp][] = [
    [t => (t.lines[1].kind = 'gather'), /tma\.lines\[1\]\.kind must be 'load' or 'store'/],
    [t => (t.lines[0].line = 1e308), /tma\.lines\[0\]\.line must be a line number/],
    [t => (t.lines[0].tma = 'yes'), /tma\.lines\[0\]\.tma must be true or false/],
    [t => t.lines[0].sass_ops.push('<b>'), /tma\.lines\[0\]\.sass_ops\[1\] must be a global memory opcode/],
    [t => delete t.lines[0].reason, /tma\.lines\[0\]\.reason is missing/],
    [t => (t.lines[0].style = 'x'), /tma\.lines\[0\]\."style" is not a field of version 2/],
    [t => delete t.summary, /tma\.summary is missing/],
    [t => (t.lines = {}), /tma\.lines must be a list/]
  ];
  for (const [spoil, message] of bad) {
    const raw = fixtureJson() as any;
    spoil(raw.tma);
    assert.throws(() => parseInspection(raw), message);
  }
});

test('TMA lines over the limit are cut, with the count the writer had', () => {
  const raw = fixtureJson() as any;
  raw.tma.lines = Array.from({ length: 10_001 }, () => raw.tma.lines[0]);
  const d = parseInspection(raw);
  assert.equal(d.tma!.lines.length, 10_000);
  assert.equal(d.tma!.linesTotal, 10_001);
  assert.deepEqual(d.cuts.map(c => c.field), ['tma.lines']);
  const written = fixtureJson() as any;
  written.truncated = { 'tma.lines': 12_000 };
  assert.equal(parseInspection(written).tma!.linesTotal, 12_000);
});

test('rejects a bad line map entry, naming where it is', () => {
  const raw = fixtureJson() as any;
  raw.stages.sass.line_map[3] = 'x';
  assert.throws(() => parseInspection(raw), /stages\.sass\.line_map\[3\] must be a line number/);
});

test('rejects token runs that are not [known class, positive length]', () => {
  for (const bad of [['evil', 1], ['k', 0], ['k'], 'k', ['k', 1.5]]) {
    const raw = fixtureJson() as any;
    raw.stages.tileir.tokens[1] = [bad];
    assert.throws(() => parseInspection(raw), /stages\.tileir\.tokens\[1\]\[0\] must be/);
  }
});

test('rejects line colours that are not a line number -> palette slot', () => {
  for (const bad of [{ '5': 7 }, { '5': -1 }, { x: 1 }, { '05': 1 }, { '5': '1' }]) {
    const raw = { ...fixtureJson(), line_colors: bad };
    assert.throws(() => parseInspection(raw), /line_colors/);
  }
});

test('splitLines matches str.splitlines for \\n, \\r\\n and a trailing newline', () => {
  assert.deepEqual(splitLines('a\nb\r\nc\n'), ['a', 'b', 'c']);
  assert.deepEqual(splitLines(''), []);
  assert.deepEqual(splitLines('\n'), ['']);
});
