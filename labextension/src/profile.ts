/**
 * A GPU profile over one tile_lab view, as tile_lab/render/profile_schema.json describes it
 * (written by tile_lab.render.profile_view.profile_overlay_json).
 *
 * Same rules as model.ts: the data may come from an untrusted notebook, so every field is
 * checked here once; counts are non-negative safe integers, heat levels 0..5, line keys
 * line numbers, stall reasons names of the schema's pattern; data-derived keys end up in
 * Maps, never as plain-object keys.
 */

import { IInspectionData, InvalidViewData, parseInspection } from './model';

export const PROFILE_MIME_TYPE = 'application/vnd.tile-lab.profile.v1+json';

/** Heat levels 0..HEAT_MAX (the schema's `heat`). */
export const HEAT_MAX = 5;

/** Stall reason and metric names: the schema's `reason` pattern. */
export const REASON_NAME = /^[a-z][a-z0-9_]{0,31}$/;

/** Source line keys (the schema's `lineKey`) and SASS row keys (`rowKey`). */
export const LINE_KEY = /^[1-9][0-9]{0,8}$/;
export const ROW_KEY = /^(0|[1-9][0-9]{0,8})$/;

/** The schema's caps on list lengths. */
export const MAX_HOT_LINES = 1000;
export const MAX_COMPARED = 8;

/** Stall reason -> samples, largest first (ties by name). */
export type Stalls = [string, number][];

export interface IHotLine {
  line: number;
  text: string;
  samples: number;
  executed: number | null;
  stalls: Stalls;
}

export interface IGroup {
  samples: number;
  stalls: Stalls;
}

export interface IComparedProfile {
  label: string;
  summary: string;
  gpu: string | null;
  spills: string;
  total_samples: number;
  line_samples: Map<number, number>;
  line_stalls: Map<number, Stalls>;
  unattributed: IGroup;
  spill_instructions: IGroup;
}

export interface IProfileData {
  version: 1;
  inspection: IInspectionData;
  total_samples: number;
  unattributed_samples: number;
  line_heat: Map<number, number>;
  line_samples: Map<number, number>;
  line_stalls: Map<number, Stalls>;
  sass_row_heat: Map<number, number>;
  hot_lines: IHotLine[];
  stall_reasons: Map<string, string>;
  metrics: Map<string, number | null>;
  summary: string;
  gpu: string | null;
  /** tool, ncu_version and plan of `collection`, those that are strings. */
  collection: [string, string][];
  comparison: IComparedProfile[];
}

type Dict = Record<string, unknown>;

function isDict(v: unknown): v is Dict {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function own(d: Dict, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(d, key) ? d[key] : undefined;
}

function dict(v: unknown, where: string): Dict {
  if (!isDict(v)) {
    throw new InvalidViewData(where, 'must be an object');
  }
  return v;
}

function count(v: unknown, where: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new InvalidViewData(where, 'must be a non-negative integer');
  }
  return v;
}

function heat(v: unknown, where: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > HEAT_MAX) {
    throw new InvalidViewData(where, `must be a heat level 0..${HEAT_MAX}`);
  }
  return v;
}

function text(v: unknown, where: string): string {
  if (typeof v !== 'string') {
    throw new InvalidViewData(where, 'must be a string');
  }
  return v;
}

function textOrNull(v: unknown, where: string): string | null {
  return v === null || v === undefined ? null : text(v, where);
}

function key(k: string, pattern: RegExp, where: string, what: string): string {
  if (!pattern.test(k)) {
    throw new InvalidViewData(`${where}[${JSON.stringify(k)}]`, `is not ${what}`);
  }
  return k;
}

/** An object keyed by source line (or SASS row) as a Map of numbers to parsed values. */
function numberKeyed<T>(
  v: unknown,
  where: string,
  pattern: RegExp,
  value: (x: unknown, where: string) => T
): Map<number, T> {
  const out = new Map<number, T>();
  for (const [k, x] of Object.entries(dict(v, where))) {
    key(k, pattern, where, pattern === LINE_KEY ? 'a line number' : 'a row index');
    out.set(Number(k), value(x, `${where}.${k}`));
  }
  return out;
}

function stalls(v: unknown, where: string): Stalls {
  const out: Stalls = [];
  for (const [k, x] of Object.entries(dict(v, where))) {
    out.push([key(k, REASON_NAME, where, 'a stall reason name'), count(x, `${where}.${k}`)]);
  }
  return out.sort(([a, n], [b, m]) => m - n || (a < b ? -1 : a > b ? 1 : 0));
}

function group(v: unknown, where: string): IGroup {
  const d = dict(v, where);
  return {
    samples: count(own(d, 'samples'), `${where}.samples`),
    stalls: stalls(own(d, 'stalls'), `${where}.stalls`)
  };
}

function list(v: unknown, where: string, max: number, min = 0): unknown[] {
  if (!Array.isArray(v) || v.length > max || v.length < min) {
    throw new InvalidViewData(where, `must be a list of ${min} to ${max} entries`);
  }
  return v;
}

function hotLine(v: unknown, i: number): IHotLine {
  const where = `hot_lines[${i}]`;
  const d = dict(v, where);
  const line = own(d, 'line');
  if (typeof line !== 'number' || !Number.isSafeInteger(line) || line < 1) {
    throw new InvalidViewData(`${where}.line`, 'must be a positive integer');
  }
  const executed = own(d, 'executed');
  return {
    line,
    text: text(own(d, 'text'), `${where}.text`),
    samples: count(own(d, 'samples'), `${where}.samples`),
    executed: executed === null || executed === undefined ? null : count(executed, `${where}.executed`),
    stalls: stalls(own(d, 'stalls'), `${where}.stalls`)
  };
}

function compared(v: unknown, i: number): IComparedProfile {
  const where = `comparison[${i}]`;
  const d = dict(v, where);
  return {
    label: text(own(d, 'label'), `${where}.label`),
    summary: text(own(d, 'summary'), `${where}.summary`),
    gpu: textOrNull(own(d, 'gpu'), `${where}.gpu`),
    spills: text(own(d, 'spills') ?? '', `${where}.spills`),
    total_samples: count(own(d, 'total_samples'), `${where}.total_samples`),
    line_samples: numberKeyed(own(d, 'line_samples'), `${where}.line_samples`, LINE_KEY, count),
    line_stalls: numberKeyed(own(d, 'line_stalls'), `${where}.line_stalls`, LINE_KEY, stalls),
    unattributed: group(own(d, 'unattributed'), `${where}.unattributed`),
    spill_instructions: group(own(d, 'spill_instructions'), `${where}.spill_instructions`)
  };
}

function metrics(v: unknown): Map<string, number | null> {
  const out = new Map<string, number | null>();
  for (const [k, x] of Object.entries(dict(v ?? {}, 'metrics'))) {
    key(k, REASON_NAME, 'metrics', 'a metric name');
    if (x !== null && (typeof x !== 'number' || !Number.isFinite(x))) {
      throw new InvalidViewData(`metrics.${k}`, 'must be a number or null');
    }
    out.set(k, x);
  }
  return out;
}

/** The payload's fields (the schema has additionalProperties: false). */
const FIELDS: ReadonlySet<string> = new Set([
  'version', 'inspection', 'total_samples', 'unattributed_samples', 'line_heat',
  'line_samples', 'line_stalls', 'sass_row_heat', 'hot_lines', 'stall_reasons', 'metrics',
  'summary', 'gpu', 'collection', 'comparison'
]);

/** Check untrusted profile data and return it typed; throws InvalidViewData. */
export function parseProfile(data: unknown): IProfileData {
  const d = dict(data, 'data');
  for (const k of Object.keys(d)) {
    if (!FIELDS.has(k)) {
      throw new InvalidViewData(JSON.stringify(k), 'is not a field of profile version 1');
    }
  }
  const version = own(d, 'version');
  if (version !== 1) {
    throw new InvalidViewData(
      'version',
      `is ${JSON.stringify(version) ?? 'missing'}; this extension reads profile version 1`
    );
  }
  let inspection: IInspectionData;
  try {
    inspection = parseInspection(own(d, 'inspection'));
  } catch (err) {
    const msg = err instanceof Error ? err.message.replace(/^tile_lab view data: /, '') : '?';
    throw new InvalidViewData('inspection:', msg);
  }
  const reasons = new Map<string, string>();
  for (const [k, x] of Object.entries(dict(own(d, 'stall_reasons') ?? {}, 'stall_reasons'))) {
    reasons.set(key(k, REASON_NAME, 'stall_reasons', 'a stall reason name'), text(x, `stall_reasons.${k}`));
  }
  const collection = dict(own(d, 'collection') ?? {}, 'collection');
  const comparison = own(d, 'comparison');
  return {
    version: 1,
    inspection,
    total_samples: count(own(d, 'total_samples'), 'total_samples'),
    unattributed_samples: count(own(d, 'unattributed_samples') ?? 0, 'unattributed_samples'),
    line_heat: numberKeyed(own(d, 'line_heat'), 'line_heat', LINE_KEY, heat),
    line_samples: numberKeyed(own(d, 'line_samples'), 'line_samples', LINE_KEY, count),
    line_stalls: numberKeyed(own(d, 'line_stalls'), 'line_stalls', LINE_KEY, stalls),
    sass_row_heat: numberKeyed(own(d, 'sass_row_heat') ?? {}, 'sass_row_heat', ROW_KEY, heat),
    hot_lines: list(own(d, 'hot_lines'), 'hot_lines', MAX_HOT_LINES).map(hotLine),
    stall_reasons: reasons,
    metrics: metrics(own(d, 'metrics')),
    summary: text(own(d, 'summary'), 'summary'),
    gpu: textOrNull(own(d, 'gpu'), 'gpu'),
    collection: ['tool', 'ncu_version', 'plan'].flatMap((k): [string, string][] => {
      const x = own(collection, k);
      return typeof x === 'string' ? [[k, x]] : [];
    }),
    comparison:
      comparison === undefined ? [] : list(comparison, 'comparison', MAX_COMPARED, 1).map(compared)
  };
}
