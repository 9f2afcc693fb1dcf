import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { EditorState, Text } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { StreamLanguage, language } from '@codemirror/language';
import { JSDOM } from 'jsdom';

import {
  CELL_CLASS,
  HEADER_CLASS,
  IPythonSource,
  tileCellExtension,
  tileMagicLine
} from '../src/tileCell';

// A stand-in for JupyterLab's Python language (any Language instance will do).
const fakePython = StreamLanguage.define({
  name: 'fake-python',
  token: stream => {
    stream.skipToEnd();
    return null;
  }
});

// CodeMirror's view needs a DOM: one jsdom window for this file.
const dom = new JSDOM('<!doctype html><body></body>', { pretendToBeVisual: true });
const g = globalThis as any;
for (const k of ['window', 'document', 'navigator', 'MutationObserver']) {
  g[k] = (dom.window as any)[k];
}
g.requestAnimationFrame = (f: () => void) => setTimeout(f, 0);
g.cancelAnimationFrame = (h: any) => clearTimeout(h);

function state(doc: string, python: IPythonSource): EditorState {
  return EditorState.create({ doc, extensions: tileCellExtension(python) });
}

async function view(doc: string, python: IPythonSource): Promise<EditorView> {
  const v = new EditorView({ state: state(doc, python), parent: dom.window.document.body });
  await settle();
  return v;
}

/** Let the plugin's microtasks (language switches) run. */
function settle(): Promise<void> {
  return new Promise(r => setTimeout(r, 0));
}

function headerLines(s: EditorState): number[] {
  const lines: number[] = [];
  for (const source of s.facet(EditorView.decorations)) {
    const set = typeof source === 'function' ? null : source;
    set?.between(0, s.doc.length, (from, _to, deco) => {
      if (deco.spec.class === HEADER_CLASS) {
        lines.push(s.doc.lineAt(from).number);
      }
    });
  }
  return lines;
}

function cellClass(s: EditorState): string {
  return s
    .facet(EditorView.editorAttributes)
    .map(a => (typeof a === 'function' ? '' : (a['class'] ?? '')))
    .join(' ');
}

test('finds the %%tile magic after leading blank lines only', () => {
  assert.equal(tileMagicLine(Text.of(['%%tile', 'x = 1'])), 1);
  assert.equal(tileMagicLine(Text.of(['', '  ', '%%tile --arch sm_90', 'x'])), 3);
  assert.equal(tileMagicLine(Text.of(['x = 1', '%%tile'])), null);
  assert.equal(tileMagicLine(Text.of(['%%tiles'])), null);
  assert.equal(tileMagicLine(Text.of(['%%timeit'])), null);
  assert.equal(tileMagicLine(Text.of([''])), null);
});

test('a %%tile cell gets the header decoration, the cell class and Python', async () => {
  const python = { current: fakePython, ready: Promise.resolve() };
  const v = await view('%%tile\n@ct.kernel\ndef k(a):\n    pass\n', python);
  assert.deepEqual(headerLines(v.state), [1]);
  assert.match(cellClass(v.state), new RegExp(CELL_CLASS));
  assert.ok(v.dom.classList.contains(CELL_CLASS));
  assert.equal(v.state.facet(language), fakePython);
  v.destroy();
});

test('other cells are left alone, also editors without any language', async () => {
  const python = { current: fakePython, ready: Promise.resolve() };
  const v = await view('x = 1\n', python);
  assert.deepEqual(headerLines(v.state), []);
  assert.doesNotMatch(cellClass(v.state), new RegExp(CELL_CLASS));
  assert.equal(v.state.facet(language), null);
  v.dispatch({ changes: { from: 0, insert: 'y = 2\n' } }); // typing works, no parser errors
  assert.equal(v.state.doc.line(1).text, 'y = 2');
  v.destroy();
});

test('typing or deleting the magic switches the cell on and off', async () => {
  const python = { current: fakePython, ready: Promise.resolve() };
  const v = await view('\nx = 1\n', python);
  assert.equal(v.state.facet(language), null);
  v.dispatch({ changes: { from: 0, insert: '%%tile' } });
  await settle();
  assert.deepEqual(headerLines(v.state), [1]);
  assert.equal(v.state.facet(language), fakePython);
  v.dispatch({ changes: { from: 0, to: 2, insert: '' } }); // "tile" left: not a magic
  await settle();
  assert.deepEqual(headerLines(v.state), []);
  assert.equal(v.state.facet(language), null);
  v.destroy();
});

test('Python loaded after the editor was created is applied to it', async () => {
  let resolve!: () => void;
  const python: IPythonSource = { current: null, ready: new Promise<void>(r => (resolve = r)) };
  const v = await view('%%tile\nx = 1\n', python);
  assert.equal(v.state.facet(language), null);
  assert.ok(v.dom.querySelector(`.${HEADER_CLASS}`), 'header line decorated in the DOM');
  assert.equal(v.dom.querySelector('.tl-tile-badge')?.textContent, 'cuTile kernel');
  python.current = fakePython;
  resolve();
  await settle();
  await settle();
  assert.equal(v.state.facet(language), fakePython);
  v.destroy();
});
