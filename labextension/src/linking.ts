/**
 * Line linking: which rows of which panes belong to one source line.
 *
 * Every pane is a list of rows; a row may carry a source line number. Hovering a row
 * highlights all rows (in every pane) with the same source line. The index is built once
 * per view (line -> rows, per pane), so a hover looks rows up instead of scanning them.
 * This module is pure data so it can be tested without a DOM.
 */

import { IInspectionData, LIMITS, STAGE_ORDER, TextRows } from './model';

export interface IPaneRows {
  /** Pane id: 'source', a stage name or 'remarks'. */
  pane: string;
  /** Rows shown (at most LIMITS.rows). */
  count: number;
  /** The source line of row i, or null. */
  lineOf(i: number): number | null;
  /** The pane's text as rows (null for remarks). */
  text: TextRows | null;
  /** Rows when the source line of row i is first_line + i (the source pane). */
  identity: number | null;
}

/** Rows of every pane as a list (tests, small data). */
export function rowLines(p: IPaneRows): (number | null)[] {
  return Array.from({ length: p.count }, (_, i) => p.lineOf(i));
}

/** Stage names in display order: the known stages, then the others by name. */
export function stageNames(data: IInspectionData): string[] {
  return [
    ...STAGE_ORDER.filter(n => data.stages.has(n)),
    ...[...data.stages.keys()].filter(n => !STAGE_ORDER.includes(n)).sort()
  ];
}

/** Rows per pane, in display order, for the panes this data has. */
export function paneRows(data: IInspectionData): IPaneRows[] {
  const panes: IPaneRows[] = [];
  const source = new TextRows(data.source, LIMITS.rows);
  const first = data.first_line;
  panes.push({ pane: 'source', count: source.count, lineOf: i => first + i, text: source, identity: first });
  for (const name of stageNames(data)) {
    const stage = data.stages.get(name)!;
    const rows = new TextRows(stage.text, LIMITS.rows);
    const map = stage.line_map;
    // A line map shorter than the text leaves the extra rows unlinked.
    panes.push({ pane: name, count: rows.count, lineOf: i => map[i] ?? null, text: rows, identity: null });
  }
  const remarks = data.remarks;
  panes.push({ pane: 'remarks', count: remarks.length, lineOf: i => remarks[i].line, text: null, identity: null });
  return panes;
}

const NONE: readonly number[] = Object.freeze([]);

/** Lookup from a source line to the rows that share it, per pane: built once. */
export class LineIndex {
  private readonly byPane = new Map<string, Map<number, number[]>>();
  private readonly identity = new Map<string, [number, number]>();
  private readonly panes: string[] = [];

  constructor(panes: IPaneRows[]) {
    for (const p of panes) {
      this.panes.push(p.pane);
      if (p.identity !== null) {
        // the source pane: row = line - first_line, nothing to store
        this.identity.set(p.pane, [p.identity, p.count]);
        continue;
      }
      const map = new Map<number, number[]>();
      for (let row = 0; row < p.count; row++) {
        const line = p.lineOf(row);
        if (line === null) {
          continue;
        }
        const rows = map.get(line);
        if (rows) {
          rows.push(row);
        } else {
          map.set(line, [row]);
        }
      }
      this.byPane.set(p.pane, map);
    }
  }

  /** Rows of `pane` linked to `line`, ascending (do not modify). */
  rows(pane: string, line: number): readonly number[] {
    const id = this.identity.get(pane);
    if (id) {
      const row = line - id[0];
      return row >= 0 && row < id[1] ? [row] : NONE;
    }
    return this.byPane.get(pane)?.get(line) ?? NONE;
  }

  /** Rows linked to `line`: pane id -> row indices (ascending). Empty if none. */
  linked(line: number): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const pane of this.panes) {
      const rows = this.rows(pane, line);
      if (rows.length) {
        out.set(pane, rows as number[]);
      }
    }
    return out;
  }

  /** Source lines that appear in at least one pane, ascending (tests, small data). */
  lines(): number[] {
    const all = new Set<number>();
    for (const [first, n] of this.identity.values()) {
      for (let i = 0; i < n; i++) {
        all.add(first + i);
      }
    }
    for (const map of this.byPane.values()) {
      for (const line of map.keys()) {
        all.add(line);
      }
    }
    return [...all].sort((a, b) => a - b);
  }
}

/**
 * Hover/pin state: the highlighted line is the hovered one, else the pinned one.
 * Clicking a row pins its line; clicking the pinned line again unpins.
 */
export class HighlightState {
  hovered: number | null = null;
  pinned: number | null = null;

  get active(): number | null {
    return this.hovered ?? this.pinned;
  }

  hover(line: number | null): void {
    this.hovered = line;
  }

  click(line: number | null): void {
    this.pinned = line === null || line === this.pinned ? null : line;
  }
}
