/**
 * The one list of schema/parser cases (test/fixtures/schema_cases.json.gz: gzipped to keep the
 * repository small; edit with `gunzip -k`, then `gzip -9n`), applied to the
 * fixtures. tests/test_render_mime.py applies the same file the same way in Python.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as zlib from 'zlib';

import { fixtureJson, profileFixtureJson } from './helpers';

export interface ICase {
  name: string;
  base: 'inspection' | 'profile';
  ops: any[][];
  expect: 'valid' | 'cut' | 'refused';
  field?: string;
}

export function schemaCases(): ICase[] {
  const file = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'schema_cases.json.gz');
  return JSON.parse(zlib.gunzipSync(fs.readFileSync(file)).toString('utf8')).cases;
}

function generate(g: any): unknown {
  if ('lines' in g) {
    return `${g.lines}\n`.repeat(g.n);
  }
  if ('chars' in g) {
    return 'x'.repeat(g.chars);
  }
  if ('repeat' in g) {
    return Array.from({ length: g.n }, () => JSON.parse(JSON.stringify(g.repeat)));
  }
  const out: Record<string, unknown> = {};
  for (let i = 0; i < g.keys; i++) {
    out[g.prefix !== undefined ? `${g.prefix}${i}` : String(g.from + i)] = g.value;
  }
  return out;
}

/** The case's payload: its base fixture with the ops applied. */
export function applyCase(c: ICase): any {
  const d: any = c.base === 'profile' ? profileFixtureJson() : fixtureJson();
  for (const [op, where, ...args] of c.ops) {
    const parent = where.slice(0, -1).reduce((o: any, k: string | number) => o[k], d);
    const last = where[where.length - 1];
    if (op === 'set') {
      parent[last] = args[0];
    } else if (op === 'delete') {
      delete parent[last];
    } else if (op === 'append') {
      parent[last].push(args[0]);
    } else if (op === 'raw') {
      parent[last] = JSON.parse(args[0]);
    } else if (op === 'repeat_item') {
      parent[last] = Array.from({ length: args[1] }, () => parent[last][args[0]]);
    } else if (op === 'generate') {
      parent[last] = generate(args[0]);
    } else {
      throw new Error(`unknown op ${op}`);
    }
  }
  return d;
}
