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
  assert.throws(() => parseInspection(raw), /version is missing; this extension reads version 1/);
});

test('rejects other versions, naming the field', () => {
  const raw = { ...fixtureJson(), version: 2 };
  assert.throws(() => parseInspection(raw), /version is 2; this extension reads version 1/);
  assert.throws(() => parseInspection('nope'), InvalidViewData);
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
