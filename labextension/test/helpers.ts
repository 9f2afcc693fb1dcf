import * as fs from 'fs';
import * as path from 'path';
import * as zlib from 'zlib';
import { JSDOM } from 'jsdom';

import { IInspectionData, parseInspection } from '../src/model';

/** The fixture tests/test_labextension.py checks against the Python side, gzipped
 * (`gzip -9n`) to keep the repository small. */
export function fixtureJson(): Record<string, unknown> {
  // Compiled to lib-test/test/, the fixture stays in test/fixtures/.
  const file = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'inspection.json.gz');
  return JSON.parse(zlib.gunzipSync(fs.readFileSync(file)).toString('utf8'));
}

export function fixture(): IInspectionData {
  return parseInspection(fixtureJson());
}

export function newDocument(): Document {
  return new JSDOM('<!doctype html><html><body></body></html>').window.document;
}

/** The one schema of the MIME bundle (tile_lab/render/mime_schema.json). */
export function mimeSchema(): Record<string, any> {
  const file = path.resolve(__dirname, '..', '..', '..', 'tile_lab', 'render', 'mime_schema.json');
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** The profile view's fixture (tests/test_labextension.py checks it against Python), gzipped
 * (`gzip -9n`) to keep the repository small. */
export function profileFixtureJson(): Record<string, any> {
  const file = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'profile.json.gz');
  return JSON.parse(zlib.gunzipSync(fs.readFileSync(file)).toString('utf8'));
}

/** The profile payload's schema (tile_lab/render/profile_schema.json). */
export function profileSchema(): Record<string, any> {
  const file = path.resolve(__dirname, '..', '..', '..', 'tile_lab', 'render', 'profile_schema.json');
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** `root` and every element under it, in document order: the allowlist checks' walk
 * (jsdom's querySelectorAll('*') and `attributes`/`classList` wrappers made those checks
 * most of the hostile tests' time). */
export function elementsOf(root: Element): Element[] {
  const out: Element[] = [];
  const walk = (e: Element): void => {
    out.push(e);
    for (let c = e.firstElementChild; c; c = c.nextElementSibling) {
      walk(c);
    }
  };
  walk(root);
  return out;
}

/** The class names of `e` (its class attribute split as classList splits it). */
export function classesOf(e: Element): string[] {
  return (e.getAttribute('class') ?? '').split(/[\t\n\f\r ]+/).filter(c => c !== '');
}
