/**
 * The data behind one tile_lab view, as tile_lab/render/mime_schema.json describes it
 * (written by tile_lab.render.html.inspection_json).
 *
 * Output data comes from notebooks we may not trust, so everything is checked here
 * once and the rest of the extension works with these typed, validated values. Keys
 * that come from the data are only ever looked up in Maps or with Object.hasOwn, never
 * through plain objects (a stage named `constructor` must stay a stage name).
 */

export const MIME_TYPE = 'application/vnd.tile-lab.v1+json';

/** Stage panes in display order (keys of `stages`), after `source`. */
export const STAGE_ORDER = ['cutile', 'ttir', 'ttgir', 'tileir', 'ptx', 'sass'];

const STAGE_TITLES: ReadonlyMap<string, string> = new Map([
  ['source', 'Source'],
  ['cutile', 'cuTile IR'],
  ['ttir', 'Triton IR'],
  ['ttgir', 'TritonGPU IR'],
  ['tileir', 'Tile IR'],
  ['ptx', 'PTX'],
  ['sass', 'SASS'],
  ['remarks', 'Remarks']
]);

/** The title of a pane: its known title, else its (validated) name. */
export function paneTitle(pane: string): string {
  return STAGE_TITLES.get(pane) ?? pane;
}

/** Pane and stage names: the schema's `paneName` pattern. */
export const PANE_NAME = /^[a-z][a-z0-9_]{0,31}$/;

/** Suffixes of the tl-t* token classes (the schema's `tokenClass`, '' = no colour). */
export const TOKEN_CLASSES: ReadonlySet<string> = new Set([
  '', 'k', 'kt', 'kc', 'kp', 'nf', 'nv', 'nl', 'na', 'nb', 'nd', 'no', 's', 'm', 'c', 'cs', 'cp'
]);

/** SASS opcodes of TMA bulk copies (the schema's `tmaOpcode`; tile_lab.render.tma.TMA_OPCODES). */
export const TMA_OPCODES: ReadonlySet<string> = new Set([
  'UTMALDG', 'UTMASTG', 'UTMAREDG', 'UTMAPF', 'UBLKCP', 'UBLKRED', 'UBLKPF'
]);

/** Per-thread global memory opcodes (the schema's `plainOpcode`). */
export const PLAIN_OPCODES: ReadonlySet<string> = new Set(['LDG', 'STG', 'LDGSTS', 'LDGDEPBAR']);

/** The view versions this extension reads: 1 (saved before the TMA field) and 2. */
export const VERSIONS: readonly number[] = [1, 2];

/** Number of line-colour palette slots (tile_lab.render.palette; the schema's maximum + 1). */
export const PALETTE_SLOTS = 7;

/** A run of `length` code points of one token class. */
export type TokenRun = [string, number];

/**
 * The schema's size limits (its maxLength / maxItems / maxProperties / maximum);
 * test/schema.test.ts checks each against tile_lab/render/mime_schema.json. Data over a
 * size limit is shown cut to it, with a notice; a number over `lineMax` is refused.
 */
export const LIMITS = {
  /** Line numbers (first_line, line maps, remark lines and columns). */
  lineMax: 999_999_999,
  /** Characters of a pane's text (source, a stage's text). */
  textChars: 16_000_000,
  /** Entries of a line map or token list: the most lines a pane shows. */
  rows: 250_000,
  /** Token runs on one line. */
  runsPerLine: 4096,
  remarks: 10_000,
  /** kernel_name, filename, arch, remark kind/category/pass, hint and version values. */
  name: 1000,
  /** signature, remark messages. */
  message: 10_000,
  hints: 64,
  versions: 32,
  /** hint and version keys */
  key: 100,
  stages: 16,
  show: 16,
  lineColors: 250_000,
  truncated: 64,
  /** Entries of tma.lines (source lines holding a tile-space load/store). */
  tmaLines: 10_000,
  /** Opcodes of one tma line. */
  sassOps: 16,
  /** Counts: what a browser holds exactly (2**53 - 1). */
  count: Number.MAX_SAFE_INTEGER
};

/** Panes of their own: never a stage's key. */
export const RESERVED_PANES: ReadonlySet<string> = new Set(['source', 'remarks']);

/** Something shown cut to a limit: `shown` of `total` `unit` of `field`. */
export interface ICut {
  field: string;
  shown: number;
  total: number;
  unit: string;
}

/** Records cuts while parsing (one per field; the same field cut again counts up). */
export class Cuts {
  readonly list: ICut[] = [];

  add(field: string, shown: number, total: number, unit: string): void {
    this.list.push({ field, shown, total, unit });
  }

  /** `s` cut to `max` characters (recorded), else `s`. */
  text(s: string, max: number, field: string): string {
    if (s.length <= max) {
      return s;
    }
    this.add(field, max, s.length, 'characters');
    return s.slice(0, max);
  }
}

/** A pane's text as rows: where each row starts, without splitting the string. */
export class TextRows {
  /** starts[i]: offset of row i; starts[count]: end of the last shown row's text. */
  private readonly starts: Uint32Array;
  private readonly ends: Uint32Array;
  /** Rows shown (at most LIMITS.rows). */
  readonly count: number;
  /** Rows the text has (as Python's str.splitlines counts \n, \r\n, \r). */
  readonly total: number;
  /** Longest shown row, in UTF-16 units. */
  readonly widest: number;

  constructor(readonly text: string, maxRows: number = LIMITS.rows) {
    const n = text.length;
    const starts = new Uint32Array(Math.max(0, Math.min(maxRows, n + 1)) + 1);
    const ends = new Uint32Array(starts.length);
    let nextCr = text.indexOf('\r');
    let at = 0;
    let widest = 0;
    let total = 0;
    while (at < n) {
      if (nextCr !== -1 && nextCr < at) {
        nextCr = text.indexOf('\r', at);
      }
      const nl = text.indexOf('\n', at);
      let stop: number;
      let next: number;
      if (nextCr !== -1 && (nl === -1 || nextCr < nl)) {
        stop = nextCr;
        next = text.charCodeAt(nextCr + 1) === 10 ? nextCr + 2 : nextCr + 1;
      } else if (nl !== -1) {
        stop = nl;
        next = nl + 1;
      } else {
        stop = n;
        next = n;
      }
      if (total < maxRows) {
        starts[total] = at;
        ends[total] = stop;
        widest = Math.max(widest, stop - at);
      }
      total++;
      at = next;
    }
    this.count = Math.min(total, maxRows);
    this.starts = starts;
    this.ends = ends;
    this.total = total;
    this.widest = widest;
  }

  /** The text of row i (no line break). */
  row(i: number): string {
    return this.text.slice(this.starts[i], this.ends[i]);
  }

  /** Length of row i. */
  width(i: number): number {
    return this.ends[i] - this.starts[i];
  }

  /** Leading spaces/tabs all non-blank shown rows share (one pass, no copies). */
  commonIndent(): number {
    let best = Infinity;
    const t = this.text;
    for (let i = 0; i < this.count; i++) {
      const a = this.starts[i];
      const b = this.ends[i];
      let j = a;
      while (j < b && j - a < best) {
        const c = t.charCodeAt(j);
        if (c !== 32 && c !== 9) {
          break;
        }
        j++;
      }
      if (j - a >= best) {
        continue; // at least as indented as the best so far (or blank up to it)
      }
      if (j < b) {
        best = j - a; // a non-blank row indented less
      }
    }
    return best === Infinity ? 0 : best;
  }
}

export interface IStage {
  /** The text as shown (cut to LIMITS.textChars). */
  text: string;
  /** The text as the data holds it (for downloading it whole). */
  fullText: string;
  /** line_map[i]: 1-based source line of text line i, or null. */
  line_map: (number | null)[];
  /** tokens[i]: the token runs of text line i; null when the stage has none. */
  tokens: TokenRun[][] | null;
  /** Lines of the whole text before the Python writer cut it (its `truncated` entry). */
  writtenTotal: number | null;
}

export interface IRemark {
  kind: string;
  category: string;
  message: string;
  line: number | null;
  col: number | null;
  pass_name: string;
}

/** One source line holding a tile-space load or store: did it become a TMA copy, and why. */
export interface ITmaLine {
  line: number;
  kind: 'load' | 'store';
  /** Its SASS holds a TMA instruction. */
  tma: boolean;
  /** The memory opcodes its SASS holds (TMA_OPCODES or PLAIN_OPCODES members). */
  sass_ops: string[];
  reason: string;
}

/** The TMA verdict of a view (the schema's `tma`; version 2). */
export interface ITma {
  arch: string;
  summary: string;
  lines: ITmaLine[];
  /** Lines the writer had (more than `lines` where it or this parser cut them). */
  linesTotal: number;
}

export interface IInspectionData {
  version: 1 | 2;
  kernel_name: string;
  filename: string;
  first_line: number;
  source: string;
  /** The source as the data holds it (for downloading it whole). */
  fullSource: string;
  arch: string;
  signature: string;
  /** Compiler hints as [name, JSON text] pairs, sorted by name. */
  hints: [string, string][];
  stages: Map<string, IStage>;
  remarks: IRemark[];
  /** Remarks the data holds (more than `remarks` when cut). */
  remarksTotal: number;
  show: string[];
  versions: [string, string][];
  /** Source line -> palette slot (0..PALETTE_SLOTS-1). */
  line_colors: Map<number, number>;
  /** The TMA verdict per source line; null where the view has none (version 1, or a view
   * without Tile IR and SASS). */
  tma: ITma | null;
  /** What the Python writer cut when it wrote the view: field -> size before. */
  truncated: Map<string, number>;
  /** What this parser cut to the schema's size limits. */
  cuts: ICut[];
}

/** Raised for data that is not a tile_lab view this extension reads; the message names the field. */
export class InvalidViewData extends Error {
  constructor(field: string, problem: string) {
    super(`tile_lab view data: ${field} ${problem}`);
    this.name = 'InvalidViewData';
  }
}

type Dict = Record<string, unknown>;

function isDict(v: unknown): v is Dict {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** d[key] if d has it as an own property (never something from Object.prototype). */
function own(d: Dict, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(d, key) ? d[key] : undefined;
}

/** Refuse fields the schema does not have, and missing required ones. */
export function checkFields(
  d: Dict,
  where: string,
  required: readonly string[],
  optional: readonly string[] = [],
  version = 1
): void {
  for (const k of required) {
    if (!Object.prototype.hasOwnProperty.call(d, k)) {
      throw new InvalidViewData(`${where}${k}`, 'is missing');
    }
  }
  const known = new Set([...required, ...optional]);
  for (const k in d) {
    if (Object.prototype.hasOwnProperty.call(d, k) && !known.has(k)) {
      throw new InvalidViewData(`${where}${JSON.stringify(k)}`, `is not a field of version ${version}`);
    }
  }
}

function str(d: Dict, key: string, where: string, max: number, cuts: Cuts): string {
  const v = own(d, key);
  if (typeof v !== 'string') {
    throw new InvalidViewData(`${where}${key}`, 'must be a string');
  }
  return cuts.text(v, max, `${where}${key}`);
}

/** A line number 1..LIMITS.lineMax (null allowed where `nullable`). */
export function lineNumber(v: unknown, where: string, nullable = true): number | null {
  if (v === null && nullable) {
    return null;
  }
  if (typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= LIMITS.lineMax) {
    return v;
  }
  throw new InvalidViewData(
    where,
    `must be a line number 1..${LIMITS.lineMax}${nullable ? ' or null' : ''}`
  );
}

function paneName(v: unknown, where: string): string {
  if (typeof v !== 'string' || !PANE_NAME.test(v)) {
    throw new InvalidViewData(where, 'must be a pane name (lower-case letters, digits, _)');
  }
  return v;
}

/** At most `max` entries of a list (the cut recorded). */
function capped(v: unknown[], max: number, field: string, unit: string, cuts: Cuts): unknown[] {
  if (v.length <= max) {
    return v;
  }
  cuts.add(field, max, v.length, unit);
  return v.slice(0, max);
}

/** Own [key, value] entries, at most `max` of them (the cut recorded). */
export function entries(
  v: Dict,
  max: number,
  field: string,
  unit: string,
  cuts: Cuts
): [string, unknown][] {
  // Object.keys: own enumerable keys, the order JSON gave them (integer keys ascending)
  const keys = Object.keys(v);
  const n = keys.length;
  const out: [string, unknown][] = new Array(Math.min(n, max));
  for (let i = 0; i < out.length; i++) {
    out[i] = [keys[i], v[keys[i]]];
  }
  if (n > max) {
    cuts.add(field, max, n, unit);
  }
  return out;
}

function parseTokens(v: unknown, where: string, cuts: Cuts): TokenRun[][] | null {
  if (v === undefined) {
    return null;
  }
  if (!Array.isArray(v)) {
    throw new InvalidViewData(where, 'must be a list of lines');
  }
  return capped(v, LIMITS.rows, where, 'lines', cuts).map((line, i) => {
    if (!Array.isArray(line)) {
      throw new InvalidViewData(`${where}[${i}]`, 'must be a list of runs');
    }
    const runs = line.map((run, j): TokenRun => {
      const ok =
        Array.isArray(run) &&
        run.length === 2 &&
        typeof run[0] === 'string' &&
        TOKEN_CLASSES.has(run[0]) &&
        Number.isInteger(run[1]) &&
        run[1] > 0 &&
        run[1] <= LIMITS.textChars;
      if (!ok) {
        throw new InvalidViewData(`${where}[${i}][${j}]`, 'must be [token class, length]');
      }
      return [run[0], run[1]];
    });
    // more runs than a line may have: the line is shown uncoloured (runs must cover it)
    return capped(runs, LIMITS.runsPerLine, `${where}[${i}]`, 'runs', cuts) as TokenRun[];
  });
}

function parseStage(name: string, v: unknown, cuts: Cuts, version: number): IStage {
  const where = `stages.${name}.`;
  if (!isDict(v)) {
    throw new InvalidViewData(`stages.${name}`, 'must be an object');
  }
  checkFields(v, where, ['text', 'line_map'], ['tokens'], version);
  const full = own(v, 'text');
  const text = str(v, 'text', where, LIMITS.textChars, cuts);
  const map = own(v, 'line_map');
  if (!Array.isArray(map)) {
    throw new InvalidViewData(`${where}line_map`, 'must be a list');
  }
  const lines = capped(map, LIMITS.rows, `${where}line_map`, 'lines', cuts);
  const lineMap: (number | null)[] = new Array(lines.length);
  for (let i = 0; i < lines.length; i++) {
    const x = lines[i];
    lineMap[i] = x === null ? null : lineNumber(x, `${where}line_map[${i}]`);
  }
  return {
    text,
    fullText: full as string,
    line_map: lineMap,
    tokens: parseTokens(own(v, 'tokens'), `${where}tokens`, cuts),
    writtenTotal: null
  };
}

const REMARK_FIELDS = ['kind', 'category', 'message', 'line', 'col', 'pass_name'];

function parseRemark(v: unknown, i: number, cuts: Cuts, version: number): IRemark {
  const where = `remarks[${i}].`;
  if (!isDict(v)) {
    throw new InvalidViewData(`remarks[${i}]`, 'must be an object');
  }
  checkFields(v, where, REMARK_FIELDS, [], version);
  const col = own(v, 'col');
  if (col !== null && !(typeof col === 'number' && Number.isInteger(col) && col >= 0 && col <= LIMITS.lineMax)) {
    throw new InvalidViewData(`${where}col`, `must be a column 0..${LIMITS.lineMax} or null`);
  }
  return {
    kind: str(v, 'kind', where, LIMITS.name, cuts),
    category: str(v, 'category', where, LIMITS.name, cuts),
    message: str(v, 'message', where, LIMITS.message, cuts),
    line: lineNumber(own(v, 'line'), `${where}line`),
    col: col as number | null,
    pass_name: str(v, 'pass_name', where, LIMITS.name, cuts)
  };
}

function parseLineColors(v: unknown, cuts: Cuts): Map<number, number> {
  const out = new Map<number, number>();
  if (!isDict(v)) {
    throw new InvalidViewData('line_colors', 'must be an object');
  }
  for (const [key, slot] of entries(v, LIMITS.lineColors, 'line_colors', 'lines', cuts)) {
    if (!/^[1-9][0-9]{0,8}$/.test(key)) {
      throw new InvalidViewData(`line_colors[${JSON.stringify(key)}]`, 'is not a line number');
    }
    if (typeof slot !== 'number' || !Number.isInteger(slot) || slot < 0 || slot >= PALETTE_SLOTS) {
      throw new InvalidViewData(`line_colors.${key}`, `must be a palette slot 0..${PALETTE_SLOTS - 1}`);
    }
    out.set(Number(key), slot);
  }
  return out;
}

/** Own entries of an object as sorted [key, text] pairs (hint values as JSON text). */
function textEntries(v: unknown, where: string, max: number, scalars: boolean, cuts: Cuts): [string, string][] {
  if (!isDict(v)) {
    throw new InvalidViewData(where, 'must be an object');
  }
  return entries(v, max, where, 'entries', cuts)
    .map(([k, x]): [string, string] => {
      const key = cuts.text(k, LIMITS.key, `${where} key`);
      const ok = typeof x === 'string' || (scalars && (x === null || typeof x === 'number' || typeof x === 'boolean'));
      if (!ok) {
        throw new InvalidViewData(`${where}.${JSON.stringify(key)}`, scalars ? 'must be a string, number, boolean or null' : 'must be a string');
      }
      const text = typeof x === 'string' ? x : JSON.stringify(x);
      return [key, cuts.text(text, LIMITS.name, `${where}.${key}`)];
    })
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

const TRUNCATED_KEY = /^(source|remarks|tma\.lines|stages\.[a-z][a-z0-9_]{0,31}\.text)$/;

function parseTruncated(v: unknown, cuts: Cuts): Map<string, number> {
  const out = new Map<string, number>();
  if (v === undefined) {
    return out;
  }
  if (!isDict(v)) {
    throw new InvalidViewData('truncated', 'must be an object');
  }
  for (const [k, n] of entries(v, LIMITS.truncated, 'truncated', 'entries', cuts)) {
    if (!TRUNCATED_KEY.test(k)) {
      throw new InvalidViewData(`truncated[${JSON.stringify(k)}]`, 'is not a field that can be cut');
    }
    out.set(k, count(n, `truncated.${k}`));
  }
  return out;
}

const TMA_LINE_FIELDS = ['line', 'kind', 'tma', 'sass_ops', 'reason'];

function parseTmaLine(v: unknown, where: string, cuts: Cuts): ITmaLine {
  if (!isDict(v)) {
    throw new InvalidViewData(where, 'must be an object');
  }
  checkFields(v, `${where}.`, TMA_LINE_FIELDS, [], 2);
  const kind = own(v, 'kind');
  if (kind !== 'load' && kind !== 'store') {
    throw new InvalidViewData(`${where}.kind`, "must be 'load' or 'store'");
  }
  const tma = own(v, 'tma');
  if (typeof tma !== 'boolean') {
    throw new InvalidViewData(`${where}.tma`, 'must be true or false');
  }
  const ops = own(v, 'sass_ops');
  if (!Array.isArray(ops)) {
    throw new InvalidViewData(`${where}.sass_ops`, 'must be a list of opcodes');
  }
  const sassOps = capped(ops, LIMITS.sassOps, `${where}.sass_ops`, 'opcodes', cuts).map((op, i) => {
    if (typeof op !== 'string' || !(TMA_OPCODES.has(op) || PLAIN_OPCODES.has(op))) {
      throw new InvalidViewData(`${where}.sass_ops[${i}]`, 'must be a global memory opcode (LDG, UTMALDG, ...)');
    }
    return op;
  });
  return {
    line: lineNumber(own(v, 'line'), `${where}.line`, false) as number,
    kind,
    tma,
    sass_ops: sassOps,
    reason: str(v, 'reason', `${where}.`, LIMITS.message, cuts)
  };
}

/** The `tma` field (version 2 only; checked by the caller); null where absent. */
function parseTma(v: unknown, cuts: Cuts, written: number | undefined): ITma | null {
  if (v === undefined) {
    return null;
  }
  if (!isDict(v)) {
    throw new InvalidViewData('tma', 'must be an object');
  }
  checkFields(v, 'tma.', ['arch', 'summary', 'lines'], [], 2);
  const lines = own(v, 'lines');
  if (!Array.isArray(lines)) {
    throw new InvalidViewData('tma.lines', 'must be a list');
  }
  return {
    arch: str(v, 'arch', 'tma.', LIMITS.name, cuts),
    summary: str(v, 'summary', 'tma.', LIMITS.message, cuts),
    lines: capped(lines, LIMITS.tmaLines, 'tma.lines', 'lines', cuts).map((x, i) =>
      parseTmaLine(x, `tma.lines[${i}]`, cuts)
    ),
    linesTotal: Math.max(written ?? 0, lines.length)
  };
}

/** A count 0..2**53-1 (the schema's `count`). */
export function count(v: unknown, where: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new InvalidViewData(where, 'must be a non-negative integer (at most 2**53 - 1)');
  }
  return v;
}

const FIELDS = ['version', 'kernel_name', 'filename', 'first_line', 'source', 'arch',
  'signature', 'hints', 'stages', 'remarks', 'show', 'versions', 'line_colors'];

/** Check untrusted output data and return it typed; throws InvalidViewData. */
export function parseInspection(data: unknown): IInspectionData {
  if (!isDict(data)) {
    throw new InvalidViewData('data', 'must be a JSON object');
  }
  const version = own(data, 'version');
  if (version !== 1 && version !== 2) {
    throw new InvalidViewData(
      'version',
      `is ${JSON.stringify(version) ?? 'missing'}; this extension reads versions ${VERSIONS.join(' and ')}`
    );
  }
  // version 1: views saved before the TMA verdict was a field; they open without badges
  checkFields(data, '', FIELDS, version === 2 ? ['truncated', 'tma'] : ['truncated'], version);
  const cuts = new Cuts();
  const stagesIn = own(data, 'stages');
  if (!isDict(stagesIn)) {
    throw new InvalidViewData('stages', 'must be an object');
  }
  const stages = new Map<string, IStage>();
  for (const [name, v] of entries(stagesIn, LIMITS.stages, 'stages', 'stages', cuts)) {
    const key = paneName(name, `stages[${JSON.stringify(name)}]`);
    if (RESERVED_PANES.has(key)) {
      throw new InvalidViewData(`stages.${key}`, 'is a reserved pane name (a pane of its own)');
    }
    stages.set(key, parseStage(name, v, cuts, version));
  }
  const remarksIn = own(data, 'remarks');
  if (!Array.isArray(remarksIn)) {
    throw new InvalidViewData('remarks', 'must be a list');
  }
  const showIn = own(data, 'show');
  if (!Array.isArray(showIn)) {
    throw new InvalidViewData('show', 'must be a list of pane names');
  }
  const first = lineNumber(own(data, 'first_line'), 'first_line', false) as number;
  const hints = own(data, 'hints');
  const truncated = parseTruncated(own(data, 'truncated'), cuts);
  for (const [name, stage] of stages) {
    stage.writtenTotal = truncated.get(`stages.${name}.text`) ?? null;
  }
  const sourceIn = own(data, 'source');
  const tma = parseTma(own(data, 'tma'), cuts, truncated.get('tma.lines'));
  return {
    version,
    kernel_name: str(data, 'kernel_name', '', LIMITS.name, cuts),
    filename: str(data, 'filename', '', LIMITS.name, cuts),
    first_line: first,
    source: str(data, 'source', '', LIMITS.textChars, cuts),
    fullSource: sourceIn as string,
    arch: str(data, 'arch', '', LIMITS.name, cuts),
    signature: str(data, 'signature', '', LIMITS.message, cuts),
    hints: textEntries(hints, 'hints', LIMITS.hints, true, cuts),
    stages,
    remarks: capped(remarksIn, LIMITS.remarks, 'remarks', 'remarks', cuts).map((r, i) =>
      parseRemark(r, i, cuts, version)
    ),
    remarksTotal: truncated.get('remarks') ?? remarksIn.length,
    show: capped(showIn, LIMITS.show, 'show', 'panes', cuts).map((s, i) => paneName(s, `show[${i}]`)),
    versions: textEntries(own(data, 'versions'), 'versions', LIMITS.versions, false, cuts),
    line_colors: parseLineColors(own(data, 'line_colors'), cuts),
    tma,
    truncated,
    cuts: cuts.list
  };
}

/** Split text into display lines the same way Python's str.splitlines does for \n / \r\n. */
export function splitLines(text: string): string[] {
  if (text === '') {
    return [];
  }
  const lines = text.split(/\r\n|\r|\n/);
  if (lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines;
}
