import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { HighlightState, LineIndex, paneRows, rowLines, stageNames } from '../src/linking';
import { paneTitle } from '../src/model';
import { fixture } from './helpers';

test('pane rows carry source lines from first_line and the line maps', () => {
  const panes = paneRows(fixture());
  assert.deepEqual(panes.map(p => p.pane), ['source', 'tileir', 'sass', 'remarks']);
  assert.deepEqual(rowLines(panes[0]), [2, 3, 4, 5, 6, 7]);
  assert.deepEqual(rowLines(panes[1]), [null, 4, 5, 6, 7, 7, null, null]);
  assert.deepEqual(rowLines(panes[3]), [5]);
});

test('a line links its rows in every pane', () => {
  const index = new LineIndex(paneRows(fixture()));
  assert.deepEqual(Object.fromEntries(index.linked(7)), {
    source: [5],
    tileir: [4, 5],
    sass: [4, 5]
  });
  assert.equal(index.linked(99).size, 0);
  assert.deepEqual(index.lines(), [2, 3, 4, 5, 6, 7]);
});

test('a line map shorter than its text leaves the extra rows unlinked', () => {
  const d = fixture();
  d.stages.get('tileir')!.line_map = [null, 4];
  const tileir = paneRows(d).find(p => p.pane === 'tileir')!;
  assert.equal(tileir.count, 8);
  assert.deepEqual(rowLines(tileir).slice(0, 3), [null, 4, null]);
});

test('hover wins over the pinned line; clicking the pinned line unpins', () => {
  const s = new HighlightState();
  s.click(5);
  assert.equal(s.active, 5);
  s.hover(7);
  assert.equal(s.active, 7);
  s.hover(null);
  assert.equal(s.active, 5);
  s.click(5);
  assert.equal(s.active, null);
});

test('a Triton view orders its panes Triton IR, TritonGPU IR, PTX, SASS, titled as such', () => {
  const d = fixture();
  const sass = d.stages.get('sass')!;
  d.stages.delete('tileir');
  d.stages.set('ttgir', { ...sass });
  d.stages.set('ttir', { ...sass });
  d.stages.set('ptx', { ...sass });
  assert.deepEqual(stageNames(d), ['ttir', 'ttgir', 'ptx', 'sass']);
  assert.equal(paneTitle('ttir'), 'Triton IR');
  assert.equal(paneTitle('ttgir'), 'TritonGPU IR');
});
