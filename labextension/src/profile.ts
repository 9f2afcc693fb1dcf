/**
 * A GPU profile over one tile_lab view, as tile_lab/render/profile_schema.json describes it
 * (written by tile_lab.render.profile_view.profile_overlay_json).
 *
 * Same rules as model.ts: the data may come from an untrusted notebook, so every field is
 * checked here once; counts are non-negative safe integers, heat levels 0..5, line keys
 * line numbers, stall reasons names of the schema's pattern; data-derived keys end up in
 * Maps, never as plain-object keys.
 */

import {
  Cuts,
  ICut,
  IInspectionData,
  InvalidViewData,
  LIMITS,
  checkFields,
  count,
  entries,
  parseInspection
} from './model';

export const PROFILE_MIME_TYPE = 'application/vnd.tile-lab.profile.v1+json';

/** Heat levels 0..HEAT_MAX (the schema's `heat`). */
export const HEAT_MAX = 5;

/** Stall reason and metric names: the schema's `reason` pattern. */
export const REASON_NAME = /^[a-z][a-z0-9_]{0,31}$/;

/** Source line keys (the schema's `lineKey`) and SASS row keys (`rowKey`). */
export const LINE_KEY = /^[1-9][0-9]{0,8}$/;
export const ROW_KEY = /^(0|[1-9][0-9]{0,8})$/;

/** The schema's size limits (test/profile.test.ts checks them against profile_schema.json). */
export const PROFILE_LIMITS = {
  hotLines: 1000,
  compared: 8,
  /** Source lines with samples in one per-line map. */
  lines: 2000,
  /** SASS rows with heat. */
  rows: 250_000,
  /** Stall reasons, metrics, collection entries. */
  names: 64
};
export const MAX_HOT_LINES = PROFILE_LIMITS.hotLines;
export const MAX_COMPARED = PROFILE_LIMITS.compared;

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
  /** What the parser cut to the schema's size limits (the inspection's own included). */
  cuts: ICut[];
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

function key(k: string, pattern: RegExp, where: string, what: string): string {
  if (!pattern.test(k)) {
    throw new InvalidViewData(`${where}[${JSON.stringify(k)}]`, `is not ${what}`);
  }
  return k;
}

function heat(v: unknown, where: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > HEAT_MAX) {
    throw new InvalidViewData(where, `must be a heat level 0..${HEAT_MAX}`);
  }
  return v;
}

/** The parse of one payload: its cuts, and readers that record them. */
class Reader {
  readonly cuts = new Cuts();

  text(v: unknown, where: string, max: number = LIMITS.name): string {
    if (typeof v !== 'string') {
      throw new InvalidViewData(where, 'must be a string');
    }
    return this.cuts.text(v, max, where);
  }

  textOrNull(v: unknown, where: string, max: number = LIMITS.name): string | null {
    return v === null ? null : this.text(v, where, max);
  }

  /** An object keyed by source line (or SASS row) as a Map of numbers to parsed values. */
  numberKeyed<T>(
    v: unknown,
    where: string,
    pattern: RegExp,
    max: number,
    value: (x: unknown, where: string) => T
  ): Map<number, T> {
    const out = new Map<number, T>();
    const unit = pattern === LINE_KEY ? 'lines' : 'rows';
    for (const [k, x] of entries(dict(v, where), max, where, unit, this.cuts)) {
      key(k, pattern, where, pattern === LINE_KEY ? 'a line number' : 'a row index');
      out.set(Number(k), value(x, `${where}.${k}`));
    }
    return out;
  }

  readonly stalls = (v: unknown, where: string): Stalls => {
    const out: Stalls = [];
    for (const [k, x] of entries(dict(v, where), PROFILE_LIMITS.names, where, 'reasons', this.cuts)) {
      out.push([key(k, REASON_NAME, where, 'a stall reason name'), count(x, `${where}.${k}`)]);
    }
    return out.sort(([a, n], [b, m]) => m - n || (a < b ? -1 : a > b ? 1 : 0));
  };

  group(v: unknown, where: string): IGroup {
    const d = dict(v, where);
    checkFields(d, `${where}.`, ['samples', 'stalls']);
    return {
      samples: count(own(d, 'samples'), `${where}.samples`),
      stalls: this.stalls(own(d, 'stalls'), `${where}.stalls`)
    };
  }

  list(v: unknown, where: string, max: number, min = 0): unknown[] {
    if (!Array.isArray(v) || v.length < min) {
      throw new InvalidViewData(where, `must be a list of at least ${min} entries`);
    }
    if (v.length > max) {
      this.cuts.add(where, max, v.length, 'entries');
      return v.slice(0, max);
    }
    return v;
  }

  hotLine(v: unknown, i: number): IHotLine {
    const where = `hot_lines[${i}]`;
    const d = dict(v, where);
    checkFields(d, `${where}.`, ['line', 'text', 'samples', 'executed', 'stalls']);
    const line = own(d, 'line');
    if (typeof line !== 'number' || !Number.isInteger(line) || line < 1 || line > LIMITS.lineMax) {
      throw new InvalidViewData(`${where}.line`, `must be a line number 1..${LIMITS.lineMax}`);
    }
    const executed = own(d, 'executed');
    return {
      line,
      text: this.text(own(d, 'text'), `${where}.text`),
      samples: count(own(d, 'samples'), `${where}.samples`),
      executed: executed === null ? null : count(executed, `${where}.executed`),
      stalls: this.stalls(own(d, 'stalls'), `${where}.stalls`)
    };
  }

  compared(v: unknown, i: number): IComparedProfile {
    const where = `comparison[${i}]`;
    const d = dict(v, where);
    checkFields(d, `${where}.`, ['label', 'summary', 'gpu', 'spills', 'total_samples',
      'line_samples', 'line_stalls', 'unattributed', 'spill_instructions']);
    const lines = PROFILE_LIMITS.lines;
    return {
      label: this.text(own(d, 'label'), `${where}.label`),
      summary: this.text(own(d, 'summary'), `${where}.summary`, LIMITS.message),
      gpu: this.textOrNull(own(d, 'gpu'), `${where}.gpu`),
      spills: this.text(own(d, 'spills'), `${where}.spills`, LIMITS.message),
      total_samples: count(own(d, 'total_samples'), `${where}.total_samples`),
      line_samples: this.numberKeyed(own(d, 'line_samples'), `${where}.line_samples`, LINE_KEY, lines, count),
      line_stalls: this.numberKeyed(own(d, 'line_stalls'), `${where}.line_stalls`, LINE_KEY, lines, this.stalls),
      unattributed: this.group(own(d, 'unattributed'), `${where}.unattributed`),
      spill_instructions: this.group(own(d, 'spill_instructions'), `${where}.spill_instructions`)
    };
  }

  metrics(v: unknown): Map<string, number | null> {
    const out = new Map<string, number | null>();
    for (const [k, x] of entries(dict(v, 'metrics'), PROFILE_LIMITS.names, 'metrics', 'metrics', this.cuts)) {
      key(k, REASON_NAME, 'metrics', 'a metric name');
      if (x !== null && (typeof x !== 'number' || !Number.isFinite(x))) {
        throw new InvalidViewData(`metrics.${k}`, 'must be a number or null');
      }
      out.set(k, x);
    }
    return out;
  }
}

/** The payload's fields (the schema has additionalProperties: false). */
const REQUIRED = [
  'version', 'inspection', 'total_samples', 'unattributed_samples', 'line_heat',
  'line_samples', 'line_stalls', 'sass_row_heat', 'hot_lines', 'stall_reasons', 'metrics',
  'summary', 'gpu', 'collection'
];

/** Check untrusted profile data and return it typed; throws InvalidViewData. */
export function parseProfile(data: unknown): IProfileData {
  const steps = parseProfileSteps(data);
  for (;;) {
    const step = steps.next();
    if (step.done) {
      return step.value;
    }
  }
}

/**
 * parseProfile in steps: it pauses (yields) after the inspection and before each compared
 * profile, the parts whose cost grows with the data, so that a caller can let the page run
 * between them (mime.ts does); its return value is parseProfile's.
 */
export function* parseProfileSteps(data: unknown): Generator<void, IProfileData, void> {
  const d = dict(data, 'data');
  const version = own(d, 'version');
  if (version !== 1) {
    throw new InvalidViewData(
      'version',
      `is ${JSON.stringify(version) ?? 'missing'}; this extension reads profile version 1`
    );
  }
  checkFields(d, '', REQUIRED, ['comparison']);
  let inspection: IInspectionData;
  try {
    inspection = parseInspection(own(d, 'inspection'));
  } catch (err) {
    const msg = err instanceof Error ? err.message.replace(/^tile_lab view data: /, '') : '?';
    throw new InvalidViewData('inspection:', msg);
  }
  yield;
  const r = new Reader();
  const reasons = new Map<string, string>();
  const reasonsIn = dict(own(d, 'stall_reasons'), 'stall_reasons');
  for (const [k, x] of entries(reasonsIn, PROFILE_LIMITS.names, 'stall_reasons', 'reasons', r.cuts)) {
    reasons.set(key(k, REASON_NAME, 'stall_reasons', 'a stall reason name'), r.text(x, `stall_reasons.${k}`));
  }
  const collection = dict(own(d, 'collection'), 'collection');
  const comparison = own(d, 'comparison');
  const lines = PROFILE_LIMITS.lines;
  const out: IProfileData = {
    version: 1,
    inspection,
    total_samples: count(own(d, 'total_samples'), 'total_samples'),
    unattributed_samples: count(own(d, 'unattributed_samples'), 'unattributed_samples'),
    line_heat: r.numberKeyed(own(d, 'line_heat'), 'line_heat', LINE_KEY, lines, heat),
    line_samples: r.numberKeyed(own(d, 'line_samples'), 'line_samples', LINE_KEY, lines, count),
    line_stalls: r.numberKeyed(own(d, 'line_stalls'), 'line_stalls', LINE_KEY, lines, r.stalls),
    sass_row_heat: r.numberKeyed(own(d, 'sass_row_heat'), 'sass_row_heat', ROW_KEY, PROFILE_LIMITS.rows, heat),
    hot_lines: r.list(own(d, 'hot_lines'), 'hot_lines', PROFILE_LIMITS.hotLines).map((h, i) => r.hotLine(h, i)),
    stall_reasons: reasons,
    metrics: r.metrics(own(d, 'metrics')),
    summary: r.text(own(d, 'summary'), 'summary', LIMITS.message),
    gpu: r.textOrNull(own(d, 'gpu'), 'gpu'),
    collection: ['tool', 'ncu_version', 'plan'].flatMap((k): [string, string][] => {
      const x = own(collection, k);
      return typeof x === 'string' ? [[k, r.text(x, `collection.${k}`)]] : [];
    }),
    comparison: [],
    cuts: []
  };
  if (comparison !== undefined) {
    const list = r.list(comparison, 'comparison', PROFILE_LIMITS.compared, 1);
    for (let i = 0; i < list.length; i++) {
      yield;
      out.comparison.push(r.compared(list[i], i));
    }
  }
  entries(collection, PROFILE_LIMITS.names, 'collection', 'entries', r.cuts);
  out.cuts = [...inspection.cuts.map(c => ({ ...c, field: `inspection.${c.field}` })), ...r.cuts.list];
  return out;
}
