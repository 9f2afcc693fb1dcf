/**
 * A profile over the linked view: a heat gutter on every row of every pane, the hovered
 * (or pinned) line's stall reasons as bars, a table of the hottest lines, and the
 * two-config side by side when the data carries a comparison.
 *
 * Same safety rules as view.ts: text goes in through textContent only, no `style`
 * attribute is ever set (bar widths and colours are classes: tl-w0..tl-w100 from numbers
 * computed here, tl-s-<reason> only for reasons in STALL_COLOURS), data-derived keys are
 * looked up in Maps. The stylesheet gives the view `contain: paint`.
 */

import { IPaneRows } from './linking';
import { ICut, IInspectionData, LIMITS, TextRows } from './model';
import { IComparedProfile, IProfileData, Stalls } from './profile';
import { CLASSES, IViewOptions, InspectionView, PaneRows, fmtCount } from './view';

/** Stall reasons with a colour of their own in profile.css; the rest share tl-s-other. */
export const STALL_COLOURS: ReadonlySet<string> = new Set([
  'long_sb', 'lg', 'wait', 'warpgroup_arrive', 'barrier', 'misc', 'selected', 'mio',
  'short_sb', 'branch_resolving', 'sleep', 'math', 'no_inst', 'drain'
]);

/** Reasons listed in the hover panel, and named after a hot line's bar. */
const PANEL_REASONS = 6;
const TABLE_REASONS = 2;
/** Tables with more rows than this draw only the rows in view, as big panes do (view.ts's
 * PaneRows): fixed row height and column widths, the header kept above the rows. */
export const TABLE_VIRTUAL_ABOVE = 200;

export const PROFILE_CLASSES = {
  view: 'tl-prof-view',
  heat: 'tl-heat',
  panel: 'tl-stalls',
  hot: 'tl-hot',
  compare: 'tl-compare'
};

function el<K extends keyof HTMLElementTagNameMap>(
  doc: Document,
  tag: K,
  cls: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const e = doc.createElement(tag);
  if (cls) {
    e.className = cls;
  }
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

/** Numbers as the HTML view prints them (1,234), independent of the browser's locale. */
export function fmt(n: number): string {
  return fmtCount(n);
}

function pct(n: number, total: number, digits = 0): string {
  return total > 0 ? `${((100 * n) / total).toFixed(digits)}%` : '–';
}

/** A width class tl-w0..tl-w100 for `part` of `whole` (a fraction of its box). */
export function widthClass(part: number, whole: number): string {
  const w = whole > 0 ? Math.round((100 * part) / whole) : 0;
  return `tl-w${Math.max(0, Math.min(100, Number.isFinite(w) ? w : 0))}`;
}

export function stallClass(reason: string): string {
  return STALL_COLOURS.has(reason) ? `tl-s-${reason}` : 'tl-s-other';
}

export class ProfileView {
  readonly node: HTMLElement;
  readonly inspection: InspectionView;
  private readonly doc: Document;
  private readonly data: IProfileData;
  private readonly panel: HTMLElement;
  /** The line whose stalls the panel shows (null: the hint). */
  private shown: number | null = null;

  constructor(data: IProfileData, doc: Document, options: IViewOptions = {}) {
    this.doc = doc;
    this.data = data;
    this.inspection = new InspectionView(data.inspection, doc, {
      ...options,
      decorate: (pane, row, line, e) => {
        this.heatCell(pane, row, line, e);
        options.decorate?.(pane, row, line, e);
      }
    });
    this.node = el(doc, 'div', PROFILE_CLASSES.view);
    this.panel = el(doc, 'div', PROFILE_CLASSES.panel);
    this.panel.setAttribute('aria-live', 'polite');
    const hot = this.hotTable();
    this.node.appendChild(this.header());
    const own = data.cuts.filter(c => !c.field.startsWith('inspection.'));
    if (own.length) {
      const words = own.slice(0, 4).map(c => `${c.field}: ${fmtCount(c.shown)} of ${fmtCount(c.total)} ${c.unit}`);
      const more = own.length > 4 ? `, and ${own.length - 4} more` : '';
      this.node.appendChild(el(doc, 'div', CLASSES.notice, `Cut to the view's limits: ${words.join('; ')}${more}.`));
    }
    const hotCut = this.cutNotice(data.cuts.filter(c => c.field === 'hot_lines'), () => 'hot lines');
    this.node.append(...(hotCut ? [hotCut] : []), hot, this.panel, this.inspection.node);
    if (data.comparison.length) {
      this.node.appendChild(this.comparison(data.comparison));
    }
    this.showStalls(null);
    this.node.addEventListener('mouseover', this.onMouseOver);
    this.node.addEventListener('mouseleave', this.onMouseLeave);
    this.node.addEventListener('click', this.onClick);
  }

  /** The line the hover panel describes, for tests. */
  get panelLine(): number | null {
    return this.shown;
  }

  dispose(): void {
    this.inspection.dispose();
    this.node.removeEventListener('mouseover', this.onMouseOver);
    this.node.removeEventListener('mouseleave', this.onMouseLeave);
    this.node.removeEventListener('click', this.onClick);
  }

  // -- events: the inspection view links the panes; this follows its active line ---------

  /** The line of a hot-table row under `target` (those are outside the inspection view). */
  private hotLineOf(target: EventTarget | null): number | null | undefined {
    const e = target as Element | null;
    const row = e && typeof e.closest === 'function' ? e.closest(`.${PROFILE_CLASSES.hot} tr`) : null;
    if (!row || !this.node.contains(row)) {
      return undefined;
    }
    const line = Number(row.getAttribute('data-line'));
    return Number.isInteger(line) && line > 0 ? line : null;
  }

  private readonly onMouseOver = (ev: Event): void => {
    const hot = this.hotLineOf(ev.target);
    if (hot !== undefined && hot !== this.inspection.state.hovered) {
      this.inspection.hover(hot);
    }
    this.showStalls(this.inspection.state.active);
  };

  private readonly onMouseLeave = (): void => {
    this.inspection.hover(null);
    this.showStalls(this.inspection.state.active);
  };

  private readonly onClick = (ev: Event): void => {
    const hot = this.hotLineOf(ev.target);
    if (hot !== undefined) {
      this.inspection.pin(hot);
    }
    this.showStalls(this.inspection.state.active);
  };

  // -- the hover panel ---------------------------------------------------------------

  /** Show `line`'s stall reasons (as the inspection view hovers or pins it). */
  showStalls(line: number | null): void {
    const samples = line === null ? 0 : this.data.line_samples.get(line) ?? 0;
    const next = samples > 0 ? line : null;
    if (next === this.shown && this.panel.childNodes.length) {
      return;
    }
    this.shown = next;
    if (next === null) {
      const why = line === null ? 'Hover a line in any pane to see its stall reasons.'
        : `Line ${line}: no stall samples.`;
      this.panel.replaceChildren(el(this.doc, 'div', 'tl-stall-hint', why));
      return;
    }
    const head = el(this.doc, 'div', 'tl-stall-head');
    head.append(
      el(this.doc, 'b', '', `line ${next}`),
      el(this.doc, 'code', '', lineText(this.data.inspection, next).slice(0, 70)),
      el(this.doc, 'span', '', `${fmt(samples)} samples (${pct(samples, this.data.total_samples, 1)} of the kernel's)`)
    );
    const rows = (this.data.line_stalls.get(next) ?? []).filter(([, n]) => n > 0).slice(0, PANEL_REASONS);
    this.panel.replaceChildren(head, ...rows.map(([reason, n]) => {
      const row = el(this.doc, 'div', 'tl-stall-row');
      const bar = el(this.doc, 'span', 'tl-stall-box');
      bar.appendChild(el(this.doc, 'span', `tl-seg ${stallClass(reason)} ${widthClass(n, samples)}`));
      row.append(
        el(this.doc, 'span', 'tl-stall-name', reason),
        bar,
        el(this.doc, 'span', 'tl-stall-count', `${fmt(n)} (${pct(n, samples)})`),
        el(this.doc, 'span', 'tl-stall-what', this.data.stall_reasons.get(reason) ?? '')
      );
      return row;
    }));
  }

  // -- building ----------------------------------------------------------------------

  private header(): HTMLElement {
    const d = this.data;
    const box = el(this.doc, 'div', 'tl-prof-head');
    box.appendChild(el(this.doc, 'div', 'tl-prof-summary', d.summary));
    const stores = d.metrics.get('spill_stores') ?? 0;
    const loads = d.metrics.get('spill_loads') ?? 0;
    if (stores || loads) {
      box.appendChild(el(this.doc, 'div', 'tl-spill', `spills: ${fmt(stores)} STL + ${fmt(loads)} LDL`));
    }
    const where = [d.gpu ?? '', ...d.collection.map(([, v]) => v)].filter(Boolean);
    if (where.length) {
      box.appendChild(el(this.doc, 'div', 'tl-prof-where', where.join(' · ')));
    }
    return box;
  }

  /** A heat cell at the start of a row as the view draws it: per instruction in SASS
   * (when the data has it), else per source line. */
  private heatCell(pane: string, index: number, line: number | null, row: HTMLElement): void {
    const d = this.data;
    const bySassRow = pane === 'sass' && d.sass_row_heat.size > 0;
    const level = bySassRow ? d.sass_row_heat.get(index) ?? 0 : line === null ? 0 : d.line_heat.get(line) ?? 0;
    const cell = el(this.doc, 'span', `${PROFILE_CLASSES.heat} tl-h${level}`);
    const samples = line === null ? undefined : d.line_samples.get(line);
    if (samples) {
      cell.title = `line ${line}: ${fmt(samples)} stall samples`;
    }
    row.insertBefore(cell, row.firstChild);
  }

  private stallBar(stalls: Stalls, samples: number, fill: number, legend: number): HTMLElement {
    const box = el(this.doc, 'span', 'tl-bar');
    const outer = el(this.doc, 'span', 'tl-stall-box');
    const inner = el(this.doc, 'span', `tl-fill ${widthClass(fill, 1)}`);
    for (const [reason, n] of stalls) {
      if (n > 0 && samples > 0) {
        const seg = el(this.doc, 'span', `tl-seg ${stallClass(reason)} ${widthClass(n, samples)}`);
        seg.title = `${reason}: ${fmt(n)}`;
        inner.appendChild(seg);
      }
    }
    outer.appendChild(inner);
    const words = stalls.filter(([, n]) => n > 0).slice(0, legend)
      .map(([reason, n]) => `${reason} ${pct(n, samples)}`).join(', ');
    box.append(outer, el(this.doc, 'span', 'tl-bar-words', words));
    return box;
  }

  private hotTable(): HTMLElement {
    const d = this.data;
    if (!d.hot_lines.length) {
      const box = el(this.doc, 'div', 'tl-table-scroll');
      box.appendChild(el(this.doc, 'div', 'tl-prof-empty', '(no stall samples in this profile)'));
      return box;
    }
    const executed = d.hot_lines.some(h => h.executed !== null);
    const cols = ['tl-c-line', 'tl-c-src', 'tl-c-n', 'tl-c-n', ...(executed ? ['tl-c-n'] : []), 'tl-c-bar'];
    const head = el(this.doc, 'tr', '');
    ['line', 'source', 'samples', 'share', ...(executed ? ['executed'] : []), 'stall reasons']
      .forEach((t, k) => head.appendChild(el(this.doc, 'th', cols[k], t)));
    const extra = d.unattributed_samples > 0 ? 1 : 0;
    const row = (i: number): HTMLElement => {
      const tr = el(this.doc, 'tr', '');
      if (i === d.hot_lines.length) {
        tr.append(
          el(this.doc, 'td', 'tl-num tl-c-line', '–'),
          el(this.doc, 'td', 'tl-c-src', '(instructions with no source line)'),
          el(this.doc, 'td', 'tl-num tl-c-n', fmt(d.unattributed_samples)),
          el(this.doc, 'td', 'tl-num tl-c-n', pct(d.unattributed_samples, d.total_samples, 1))
        );
        return tr;
      }
      const h = d.hot_lines[i];
      tr.setAttribute('data-line', String(h.line));
      tr.append(
        el(this.doc, 'td', 'tl-num tl-c-line', String(h.line)),
        this.codeCell(h.text),
        el(this.doc, 'td', 'tl-num tl-c-n', fmt(h.samples)),
        el(this.doc, 'td', 'tl-num tl-c-n', pct(h.samples, d.total_samples, 1))
      );
      if (executed) {
        tr.appendChild(el(this.doc, 'td', 'tl-num tl-c-n', h.executed ? fmt(h.executed) : ''));
      }
      const bar = el(this.doc, 'td', 'tl-c-bar');
      bar.appendChild(this.stallBar(h.stalls, h.samples, 1, TABLE_REASONS));
      tr.appendChild(bar);
      return tr;
    };
    return this.rowsTable(PROFILE_CLASSES.hot, 'Hottest source lines (warp-stall samples)', head,
      d.hot_lines.length + extra, row);
  }

  /**
   * A table of `count` rows made by `row(i)` in a scroll box: a plain table up to
   * TABLE_VIRTUAL_ABOVE rows, above that the rows in view only (PaneRows).
   */
  private rowsTable(
    cls: string,
    caption: string | null,
    head: HTMLElement,
    count: number,
    row: (i: number) => HTMLElement
  ): HTMLElement {
    const rows: IPaneRows = { pane: cls, count, lineOf: () => null, text: null, identity: null };
    const scroll = el(this.doc, 'div', 'tl-table-scroll');
    const table = el(this.doc, 'table', cls);
    if (caption) {
      table.appendChild(el(this.doc, 'caption', '', caption));
    }
    table.appendChild(head);
    scroll.appendChild(table);
    if (count <= TABLE_VIRTUAL_ABOVE) {
      new PaneRows(this.doc, rows, scroll, table, row, null, TABLE_VIRTUAL_ABOVE);
      return scroll;
    }
    // the caption and header stay in view above the drawn rows (base.css: tl-vscroll)
    scroll.classList.add('tl-vscroll');
    table.classList.add('tl-vhead');
    const box = el(this.doc, 'div', `${cls} tl-vtable`);
    scroll.appendChild(box);
    const p = new PaneRows(this.doc, rows, scroll, box, row, null, TABLE_VIRTUAL_ABOVE);
    scroll.addEventListener('scroll', () => p.update(), { passive: true });
    p.update();
    return scroll;
  }

  /** A notice for the cuts of `fields` (the schema's limits), or null when nothing was cut. */
  private cutNotice(cuts: ICut[], what: (c: ICut) => string): HTMLElement | null {
    if (!cuts.length) {
      return null;
    }
    const words = cuts.slice(0, 3).map(c => `${fmtCount(c.shown)} of ${fmtCount(c.total)} ${what(c)}`);
    const more = cuts.length > 3 ? `, and ${cuts.length - 3} more` : '';
    return el(this.doc, 'div', CLASSES.notice, `showing ${words.join('; ')}${more} (the view's limit)`);
  }

  private codeCell(text: string): HTMLElement {
    const td = el(this.doc, 'td', 'tl-c-src');
    td.appendChild(el(this.doc, 'code', '', text.slice(0, 60)));
    return td;
  }

  /** Each config's summary, then per source line each one's share of its samples. */
  private comparison(profiles: IComparedProfile[]): HTMLElement {
    const box = el(this.doc, 'div', PROFILE_CLASSES.compare);
    const cards = el(this.doc, 'div', 'tl-compare-cards');
    for (const p of profiles) {
      const card = el(this.doc, 'div', 'tl-compare-card');
      card.append(el(this.doc, 'div', 'tl-compare-label', p.label),
        el(this.doc, 'div', 'tl-prof-summary', p.summary));
      if (p.spills) {
        card.appendChild(el(this.doc, 'div', 'tl-spill', p.spills));
      }
      if (p.gpu) {
        card.appendChild(el(this.doc, 'div', 'tl-prof-where', p.gpu));
      }
      cards.appendChild(card);
    }
    const head = el(this.doc, 'tr', '');
    head.append(el(this.doc, 'th', 'tl-c-line', 'line'), el(this.doc, 'th', 'tl-c-src', 'source'),
      ...profiles.map(p => el(this.doc, 'th', 'tl-c-cfg', p.label)));
    const lines = [...new Set(profiles.flatMap(p => [...p.line_samples.keys()]))].sort((a, b) => a - b);
    const extra = [
      ['(no source line)', (p: IComparedProfile) => p.unattributed],
      ['spill instructions (LDL/STL, any line)', (p: IComparedProfile) => p.spill_instructions]
    ] as const;
    const row = (i: number): HTMLElement => {
      const tr = el(this.doc, 'tr', '');
      if (i < lines.length) {
        const line = lines[i];
        tr.append(el(this.doc, 'td', 'tl-num tl-c-line', String(line)),
          this.codeCell(lineText(this.data.inspection, line)));
        for (const p of profiles) {
          tr.appendChild(this.shareCell(p.line_samples.get(line) ?? 0, p.line_stalls.get(line) ?? [], p.total_samples));
        }
        return tr;
      }
      const [label, pick] = extra[i - lines.length];
      tr.append(el(this.doc, 'td', 'tl-num tl-c-line', '–'), el(this.doc, 'td', 'tl-c-src', label));
      for (const p of profiles) {
        const g = pick(p);
        tr.appendChild(this.shareCell(g.samples, g.stalls, p.total_samples));
      }
      return tr;
    };
    box.append(cards);
    // per-line data past the schema's limit was cut by the parser: say so here too
    const cut = this.data.cuts.filter(c => /^comparison\[\d+\]\.line_samples$/.test(c.field));
    const notice = this.cutNotice(cut, c => `source lines of ${profiles[Number(/\d+/.exec(c.field)![0])]?.label ?? '?'}`);
    if (notice) {
      box.appendChild(notice);
    }
    box.append(this.rowsTable('tl-compare-table', null, head, lines.length + extra.length, row));
    return box;
  }

  private shareCell(samples: number, stalls: Stalls, total: number): HTMLElement {
    const td = el(this.doc, 'td', 'tl-c-cfg');
    if (samples > 0 && total > 0) {
      td.append(el(this.doc, 'span', 'tl-share', pct(samples, total, 1)),
        this.stallBar(stalls, samples, samples / total, TABLE_REASONS));
    }
    return td;
  }
}

const SOURCE_ROWS = new WeakMap<IInspectionData, TextRows>();

/** The text of source line `line` of the inspection ('' outside the kernel). */
export function lineText(insp: IInspectionData, line: number): string {
  let rows = SOURCE_ROWS.get(insp);
  if (!rows) {
    rows = new TextRows(insp.source, LIMITS.rows);
    SOURCE_ROWS.set(insp, rows);
  }
  const i = line - insp.first_line;
  return i >= 0 && i < rows.count ? rows.row(i).slice(0, 200).trim() : '';
}
