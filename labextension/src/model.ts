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
export const STAGE_ORDER = ['cutile', 'tileir', 'ptx', 'sass'];

const STAGE_TITLES: ReadonlyMap<string, string> = new Map([
  ['source', 'Source'],
  ['cutile', 'cuTile IR'],
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

/** Number of line-colour palette slots (tile_lab.render.palette; the schema's maximum + 1). */
export const PALETTE_SLOTS = 7;

/** A run of `length` code points of one token class. */
export type TokenRun = [string, number];

export interface IStage {
  text: string;
  /** line_map[i]: 1-based source line of text line i, or null. */
  line_map: (number | null)[];
  /** tokens[i]: the token runs of text line i; null when the stage has none. */
  tokens: TokenRun[][] | null;
}

export interface IRemark {
  kind: string;
  category: string;
  message: string;
  line: number | null;
  col: number | null;
  pass_name: string;
}

export interface IInspectionData {
  version: 1;
  kernel_name: string;
  filename: string;
  first_line: number;
  source: string;
  arch: string;
  signature: string;
  /** Compiler hints as [name, JSON text] pairs, sorted by name. */
  hints: [string, string][];
  stages: Map<string, IStage>;
  remarks: IRemark[];
  show: string[];
  versions: [string, string][];
  /** Source line -> palette slot (0..PALETTE_SLOTS-1). */
  line_colors: Map<number, number>;
}

/** Raised for data that is not a version-1 tile_lab view; the message names the field. */
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

function str(d: Dict, key: string, where: string, fallback?: string): string {
  const v = own(d, key);
  if (typeof v === 'string') {
    return v;
  }
  if (v === undefined && fallback !== undefined) {
    return fallback;
  }
  throw new InvalidViewData(`${where}${key}`, 'must be a string');
}

function lineNumber(v: unknown, where: string): number | null {
  if (v === null || v === undefined) {
    return null;
  }
  if (typeof v === 'number' && Number.isInteger(v) && v > 0) {
    return v;
  }
  throw new InvalidViewData(where, 'must be a positive integer or null');
}

function paneName(v: unknown, where: string): string {
  if (typeof v !== 'string' || !PANE_NAME.test(v)) {
    throw new InvalidViewData(where, 'must be a pane name (lower-case letters, digits, _)');
  }
  return v;
}

function parseTokens(v: unknown, where: string): TokenRun[][] | null {
  if (v === undefined || v === null) {
    return null;
  }
  if (!Array.isArray(v)) {
    throw new InvalidViewData(where, 'must be a list of lines');
  }
  return v.map((line, i) => {
    if (!Array.isArray(line)) {
      throw new InvalidViewData(`${where}[${i}]`, 'must be a list of runs');
    }
    return line.map((run, j): TokenRun => {
      const ok =
        Array.isArray(run) &&
        run.length === 2 &&
        typeof run[0] === 'string' &&
        TOKEN_CLASSES.has(run[0]) &&
        Number.isInteger(run[1]) &&
        run[1] > 0;
      if (!ok) {
        throw new InvalidViewData(`${where}[${i}][${j}]`, 'must be [token class, length]');
      }
      return [run[0], run[1]];
    });
  });
}

function parseStage(name: string, v: unknown): IStage {
  const where = `stages.${name}.`;
  if (!isDict(v)) {
    throw new InvalidViewData(`stages.${name}`, 'must be an object');
  }
  const text = str(v, 'text', where);
  const map = own(v, 'line_map');
  if (!Array.isArray(map)) {
    throw new InvalidViewData(`${where}line_map`, 'must be a list');
  }
  return {
    text,
    line_map: map.map((x, i) => lineNumber(x, `${where}line_map[${i}]`)),
    tokens: parseTokens(own(v, 'tokens'), `${where}tokens`)
  };
}

function parseRemark(v: unknown, i: number): IRemark {
  const where = `remarks[${i}].`;
  if (!isDict(v)) {
    throw new InvalidViewData(`remarks[${i}]`, 'must be an object');
  }
  const col = own(v, 'col');
  return {
    kind: str(v, 'kind', where, ''),
    category: str(v, 'category', where, ''),
    message: str(v, 'message', where),
    line: lineNumber(own(v, 'line'), `${where}line`),
    col: typeof col === 'number' && Number.isInteger(col) && col >= 0 ? col : null,
    pass_name: str(v, 'pass_name', where, '')
  };
}

function parseLineColors(v: unknown): Map<number, number> {
  const out = new Map<number, number>();
  if (v === undefined || v === null) {
    return out;
  }
  if (!isDict(v)) {
    throw new InvalidViewData('line_colors', 'must be an object');
  }
  for (const [key, slot] of Object.entries(v)) {
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

/** Own entries of an object as sorted [key, text] pairs (non-strings as JSON text). */
function textEntries(v: unknown, where: string): [string, string][] {
  if (v === undefined || v === null) {
    return [];
  }
  if (!isDict(v)) {
    throw new InvalidViewData(where, 'must be an object');
  }
  return Object.entries(v)
    .map(([k, x]): [string, string] => [k, typeof x === 'string' ? x : JSON.stringify(x)])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Check untrusted output data and return it typed; throws InvalidViewData. */
export function parseInspection(data: unknown): IInspectionData {
  if (!isDict(data)) {
    throw new InvalidViewData('data', 'must be a JSON object');
  }
  const version = own(data, 'version');
  if (version !== 1) {
    throw new InvalidViewData(
      'version',
      `is ${JSON.stringify(version) ?? 'missing'}; this extension reads version 1`
    );
  }
  const stagesIn = own(data, 'stages') ?? {};
  if (!isDict(stagesIn)) {
    throw new InvalidViewData('stages', 'must be an object');
  }
  const stages = new Map<string, IStage>();
  for (const [name, v] of Object.entries(stagesIn)) {
    stages.set(paneName(name, `stages[${JSON.stringify(name)}]`), parseStage(name, v));
  }
  const remarksIn = own(data, 'remarks') ?? [];
  if (!Array.isArray(remarksIn)) {
    throw new InvalidViewData('remarks', 'must be a list');
  }
  const showIn = own(data, 'show') ?? ['source', 'tileir', 'sass', 'remarks'];
  if (!Array.isArray(showIn)) {
    throw new InvalidViewData('show', 'must be a list of pane names');
  }
  const first = own(data, 'first_line') ?? 1;
  if (typeof first !== 'number' || !Number.isInteger(first) || first < 1) {
    throw new InvalidViewData('first_line', 'must be a positive integer');
  }
  return {
    version: 1,
    kernel_name: str(data, 'kernel_name', '', 'kernel'),
    filename: str(data, 'filename', '', ''),
    first_line: first,
    source: str(data, 'source', ''),
    arch: str(data, 'arch', '', ''),
    signature: str(data, 'signature', '', ''),
    hints: textEntries(own(data, 'hints'), 'hints'),
    stages,
    remarks: remarksIn.map(parseRemark),
    show: showIn.map((s, i) => paneName(s, `show[${i}]`)),
    versions: textEntries(own(data, 'versions'), 'versions'),
    line_colors: parseLineColors(own(data, 'line_colors'))
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
