import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { InvalidViewData, parseInspection, splitLines } from '../src/model';
import { fixtureJson } from './helpers';

test('parses the Python payload', () => {
  const d = parseInspection(fixtureJson());
  assert.equal(d.kernel_name, 'vadd');
  assert.equal(d.first_line, 2);
  assert.deepEqual(Object.keys(d.stages).sort(), ['sass', 'tileir']);
  assert.equal(d.stages.tileir.line_map[2], 5);
  assert.equal(d.remarks[0].line, 5);
  assert.equal(d.diagram?.footprints.length, 3);
  assert.deepEqual(d.diagram?.footprints[0].rects[0], [10, 10, 118, 28]);
});

test('accepts schema_version as the version key', () => {
  const raw = fixtureJson();
  delete raw['version'];
  raw['schema_version'] = 1;
  assert.equal(parseInspection(raw).kernel_name, 'vadd');
});

test('rejects other versions, naming the field', () => {
  const raw = { ...fixtureJson(), version: 2 };
  assert.throws(() => parseInspection(raw), /version is 2; this extension reads version 1/);
  assert.throws(() => parseInspection('nope'), InvalidViewData);
});

test('rejects a bad line map entry, naming where it is', () => {
  const raw = fixtureJson() as any;
  raw.stages.sass.line_map[3] = 'x';
  assert.throws(() => parseInspection(raw), /stages\.sass\.line_map\[3\] must be a positive integer/);
});

test('rejects malformed footprint rectangles', () => {
  const raw = fixtureJson() as any;
  raw.diagram.footprints[1].rects = [[1, 2, 3]];
  assert.throws(() => parseInspection(raw), /diagram\.footprints\[1\]\.rects\[0\] must be/);
});

test('a missing diagram is null', () => {
  const raw = fixtureJson();
  delete raw['diagram'];
  assert.equal(parseInspection(raw).diagram, null);
});

test('splitLines matches str.splitlines for \\n, \\r\\n and a trailing newline', () => {
  assert.deepEqual(splitLines('a\nb\r\nc\n'), ['a', 'b', 'c']);
  assert.deepEqual(splitLines(''), []);
  assert.deepEqual(splitLines('\n'), ['']);
});
