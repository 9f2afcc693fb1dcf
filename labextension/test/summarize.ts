/**
 * CLI for tests/test_labextension.py: parse a payload file the way the renderer does
 * and print what links to what, as JSON.
 */
import * as fs from 'fs';

import { LineIndex, paneRows } from '../src/linking';
import { parseInspection } from '../src/model';

const data = parseInspection(JSON.parse(fs.readFileSync(process.argv[2], 'utf8')));
const index = new LineIndex(paneRows(data));
const linked: Record<string, Record<string, number[]>> = {};
for (const line of index.lines()) {
  linked[String(line)] = Object.fromEntries(index.linked(line));
}
process.stdout.write(JSON.stringify({ kernel: data.kernel_name, linked }) + '\n');
