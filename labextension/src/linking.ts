/**
 * Line linking: which rows of which panes belong to one source line.
 *
 * Every pane is a list of rows; a row may carry a source line number. Hovering a row
 * highlights all rows (in every pane) with the same source line. This module is pure
 * data so it can be tested without a DOM.
 */

import { IInspectionData, STAGE_ORDER, splitLines } from './model';

export interface IPaneRows {
  /** Pane id: 'source', a stage name or 'remarks'. */
  pane: string;
  /** lines[i]: the source line of row i, or null. */
  lines: (number | null)[];
}

/** Rows per pane, in display order, for the panes this data has. */
export function paneRows(data: IInspectionData): IPaneRows[] {
  const panes: IPaneRows[] = [];
  const sourceRows = splitLines(data.source).map((_, i) => data.first_line + i);
  panes.push({ pane: 'source', lines: sourceRows });
  const stageNames = [
    ...STAGE_ORDER.filter(n => data.stages.has(n)),
    ...[...data.stages.keys()].filter(n => !STAGE_ORDER.includes(n)).sort()
  ];
  for (const name of stageNames) {
    const stage = data.stages.get(name)!;
    const n = splitLines(stage.text).length;
    // A line map shorter than the text leaves the extra rows unlinked.
    const lines = Array.from({ length: n }, (_, i) => stage.line_map[i] ?? null);
    panes.push({ pane: name, lines });
  }
  panes.push({ pane: 'remarks', lines: data.remarks.map(r => r.line) });
  return panes;
}

/** Lookup from a source line to the rows that share it, per pane. */
export class LineIndex {
  private readonly byLine = new Map<number, Map<string, number[]>>();

  constructor(panes: IPaneRows[]) {
    for (const { pane, lines } of panes) {
      lines.forEach((line, row) => {
        if (line === null) {
          return;
        }
        let perPane = this.byLine.get(line);
        if (!perPane) {
          perPane = new Map();
          this.byLine.set(line, perPane);
        }
        const rows = perPane.get(pane) ?? [];
        rows.push(row);
        perPane.set(pane, rows);
      });
    }
  }

  /** Rows linked to `line`: pane id -> row indices (ascending). Empty if none. */
  linked(line: number): Map<string, number[]> {
    return this.byLine.get(line) ?? new Map();
  }

  /** Source lines that appear in at least one pane, ascending. */
  lines(): number[] {
    return [...this.byLine.keys()].sort((a, b) => a - b);
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
