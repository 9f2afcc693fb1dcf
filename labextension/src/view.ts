/**
 * The linked view: data -> DOM, plus hover/click highlighting across panes.
 *
 * No markup is taken from the data: text goes in through textContent (never innerHTML),
 * attributes only get validated pane names and line numbers, and class names come from
 * this file's fixed lists (token and palette classes are looked up in allowlists). No
 * `style` attribute is ever set: sizes are classes too (see `spacer`). The stylesheet adds
 * `contain: paint` on the view, so nothing in it can be drawn outside its box. No Lumino
 * or JupyterLab imports here, so it runs under jsdom.
 *
 * Size: a pane of more than VIRTUAL_ABOVE rows draws only the rows in (and near) its
 * scrolled window, so a 200,000-line SASS pane costs what a 100-line one does; hovering
 * looks rows up in an index built once (linking.ts) and touches only drawn rows.
 */

import { HighlightState, IPaneRows, LineIndex, paneRows } from './linking';
import {
  ICut,
  IInspectionData,
  IRemark,
  ITma,
  ITmaLine,
  PALETTE_SLOTS,
  TMA_OPCODES,
  TOKEN_CLASSES,
  TextRows,
  TokenRun,
  paneTitle
} from './model';

/** CSS classes the tests and the stylesheet rely on. */
export const CLASSES = {
  view: 'tl-view',
  pane: 'tl-pane',
  row: 'tl-row',
  linked: 'tl-linked',
  pinned: 'tl-pinned',
  band: 'tl-band',
  toggle: 'tl-toggle',
  copy: 'tl-copy',
  download: 'tl-download',
  notice: 'tl-notice',
  virtual: 'tl-virtual',
  error: 'tl-error',
  tma: 'tl-tma',
  tmaYes: 'tl-tma-yes',
  tmaNo: 'tl-tma-no',
  tmaOp: 'tl-tma-op',
  tmaSummary: 'tl-tma-summary',
  tmaRow: 'tl-tma-row'
};

/** What a TMA badge says (as tile_lab.render.tma.tma_badge_text): "TMA" and the line's TMA
 * opcodes, or "no TMA". */
export function tmaBadgeText(t: ITmaLine): string {
  return t.tma ? `TMA ${t.sass_ops.filter(o => TMA_OPCODES.has(o)).join('/')}` : 'no TMA';
}

/** A TMA opcode as a whole word in a SASS row (UTMALDG in `UTMALDG.2D [UR8], [UR4] ;`). */
const TMA_OP = new RegExp(`\\b(?:${[...TMA_OPCODES].join('|')})\\b`, 'g');

/** Panes with more rows than this draw only what is visible. */
export const VIRTUAL_ABOVE = 2000;
/** Row height of a virtual pane until one is measured, px (where nothing is laid out: jsdom).
 * In a browser a row is as high as a plain pane's row (base.css: `--tl-row-h`, the code line
 * height), and the pane measures it once drawn. */
export const ROW_PX = 18;
/** Rows drawn above and below the visible ones. */
const OVERSCAN = 40;
/** Rows drawn before the pane has a size (jsdom, or not yet laid out). */
const FIRST_WINDOW = 40;
/** Characters of one row drawn; the rest is replaced by a sign saying how many. */
export const ROW_CHARS = 2000;
/** Spacer blocks: tl-sp0..tl-sp20 are 2**k rows high (base.css). */
const SPACER_BITS = 21;

export interface IViewOptions {
  /** Writes text to the clipboard; defaults to navigator.clipboard. */
  copy?: (text: string) => Promise<void>;
  /** Called for every row element the view draws (the profile view's heat gutter). */
  decorate?: (pane: string, row: number, line: number | null, el: HTMLElement) => void;
}

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

function defaultCopy(doc: Document): (text: string) => Promise<void> {
  return async (text: string) => {
    const nav = doc.defaultView?.navigator;
    if (nav?.clipboard?.writeText) {
      await nav.clipboard.writeText(text);
      return;
    }
    throw new Error('the clipboard is not available here');
  };
}

function remarkText(r: IRemark): string {
  const where = r.line === null ? '' : `line ${r.line}: `;
  const pass = r.pass_name ? ` [${r.pass_name}]` : '';
  return `${where}${r.kind} ${r.category}: ${r.message}${pass}`;
}

// made once: toLocaleString with options builds a formatter on every call (a third of the
// profile view's drawing time in the unit tests)
const COUNT_FORMAT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** Numbers as 1,234 independent of the browser's locale. */
export function fmtCount(n: number): string {
  return COUNT_FORMAT.format(n);
}

/** Save `text` as a file, built in the page (a Blob URL; no request leaves the page). */
export function downloadText(doc: Document, name: string, text: string): boolean {
  const win = doc.defaultView as (Window & typeof globalThis) | null;
  const url = win?.URL?.createObjectURL?.(new win.Blob([text], { type: 'text/plain' }));
  if (!win || !url) {
    return false;
  }
  const a = doc.createElement('a');
  a.href = url;
  a.download = name;
  doc.body.appendChild(a);
  a.click();
  a.remove();
  win.setTimeout(() => win.URL.revokeObjectURL(url), 60_000);
  return true;
}

/**
 * The rows of one pane: all of them, or (above VIRTUAL_ABOVE, or `virtualAbove` where given)
 * the scrolled window between two spacers whose heights are sums of tl-spK classes. `drawn`
 * maps row index -> element. (Also the profile view's tables.)
 */
export class PaneRows {
  readonly drawn = new Map<number, HTMLElement>();
  readonly virtual: boolean;
  private from = -1;
  private to = -1;
  /** Row pitch, px: ROW_PX until a drawn row is measured. */
  private pitch = ROW_PX;
  private readonly before: HTMLElement;
  private readonly after: HTMLElement;
  private readonly rowsBox: HTMLElement;

  constructor(
    private readonly doc: Document,
    readonly rows: IPaneRows,
    readonly body: HTMLElement,
    readonly box: HTMLElement,
    private readonly make: (i: number) => HTMLElement,
    ghost: HTMLElement | null,
    virtualAbove: number = VIRTUAL_ABOVE
  ) {
    this.virtual = rows.count > virtualAbove;
    this.before = el(doc, 'div', 'tl-spacer');
    this.after = el(doc, 'div', 'tl-spacer');
    this.rowsBox = el(doc, 'div', 'tl-rows');
    if (this.virtual) {
      box.classList.add(CLASSES.virtual);
      if (ghost) {
        box.appendChild(ghost);
      }
      box.append(this.before, this.rowsBox, this.after);
    } else {
      for (let i = 0; i < rows.count; i++) {
        const row = make(i);
        this.drawn.set(i, row);
        box.appendChild(row);
      }
    }
  }

  /** Draw the rows the pane's scroll position shows (virtual panes only). */
  update(): void {
    if (!this.virtual) {
      return;
    }
    const n = this.rows.count;
    const height = this.body.clientHeight;
    const visible = height > 0 ? Math.ceil(height / this.pitch) : FIRST_WINDOW;
    const top = Math.floor(this.body.scrollTop / this.pitch);
    const from = Math.max(0, Math.min(n, top - OVERSCAN));
    const to = Math.min(n, top + visible + OVERSCAN);
    if (from === this.from && to === this.to) {
      return;
    }
    // keep the rows still in the window, draw the new ones
    const keep = new Map<number, HTMLElement>();
    for (const [i, row] of this.drawn) {
      if (i >= from && i < to) {
        keep.set(i, row);
      }
    }
    const rows: HTMLElement[] = [];
    for (let i = from; i < to; i++) {
      rows.push(keep.get(i) ?? this.make(i));
    }
    this.drawn.clear();
    rows.forEach((row, k) => this.drawn.set(from + k, row));
    this.rowsBox.replaceChildren(...rows);
    this.spacer(this.before, from);
    this.spacer(this.after, n - to);
    this.from = from;
    this.to = to;
    // the rows' height comes from the theme's code line height (base.css): measure it once,
    // then place the window again with it
    const measured = rows.length ? rows[0].getBoundingClientRect().height : 0;
    if (measured > 0 && Math.abs(measured - this.pitch) > 0.01) {
      this.pitch = measured;
      this.update();
    }
  }

  /** A spacer `rows` rows high: one block per set bit (no style attribute). */
  private spacer(box: HTMLElement, rows: number): void {
    const blocks: HTMLElement[] = [];
    for (let k = 0; k < SPACER_BITS && rows > 0; k++, rows = Math.floor(rows / 2)) {
      if (rows % 2) {
        blocks.push(el(this.doc, 'div', `tl-sp tl-sp${k}`));
      }
    }
    box.replaceChildren(...blocks);
  }

  /** Scroll so row i is in view (a third from the top) unless it already is. */
  reveal(i: number): void {
    const body = this.body;
    const drawn = this.drawn.get(i);
    const top = this.virtual || !drawn ? i * this.pitch : drawn.offsetTop;
    const h = this.virtual || !drawn ? this.pitch : drawn.offsetHeight;
    if (top < body.scrollTop || top > body.scrollTop + body.clientHeight - h) {
      body.scrollTop = Math.max(0, top - body.clientHeight / 3);
      this.update();
    }
  }
}

export class InspectionView {
  readonly node: HTMLElement;
  readonly state = new HighlightState();
  private readonly doc: Document;
  private readonly data: IInspectionData;
  private readonly index: LineIndex;
  private readonly copy: (text: string) => Promise<void>;
  private readonly decorate: IViewOptions['decorate'];
  /** pane id -> its rows (drawn or to be drawn). */
  private readonly panes = new Map<string, PaneRows>();
  private readonly status: HTMLElement;
  /** The pane the pointer is in; it is not scrolled under the user's hand. */
  private hoverPane: string | null = null;
  private readonly tmaLines: Map<number, ITmaLine>;
  /** The TMA summary's rows (linked to their line like pane rows). */
  private readonly tmaRows: HTMLElement[] = [];

  constructor(data: IInspectionData, doc: Document, options: IViewOptions = {}) {
    this.doc = doc;
    this.data = data;
    this.copy = options.copy ?? defaultCopy(doc);
    this.decorate = options.decorate;
    const panes = paneRows(data);
    this.index = new LineIndex(panes);

    this.node = el(doc, 'div', CLASSES.view);
    this.node.setAttribute('data-kernel', data.kernel_name);
    const header = el(doc, 'div', 'tl-header');
    const toolbar = el(doc, 'div', 'tl-toolbar');
    toolbar.setAttribute('role', 'toolbar');
    header.append(this.title(), toolbar);
    const paneBox = el(doc, 'div', 'tl-panes');
    this.status = el(doc, 'div', 'tl-status', 'Hover a line to link the panes; click to pin it.');
    this.status.setAttribute('aria-live', 'polite');
    this.node.append(header);
    const cuts = this.viewCuts();
    if (cuts) {
      this.node.appendChild(cuts);
    }
    /** source line -> its TMA verdict (the badge drawn at the end of that source row) */
    this.tmaLines = new Map((data.tma?.lines ?? []).map(t => [t.line, t]));
    if (data.tma) {
      this.node.appendChild(this.tmaSummary(data.tma));
    }
    this.node.append(paneBox, this.status);

    const shown = new Set(data.show);
    for (const rows of panes) {
      const section = this.pane(rows);
      const visible = shown.has(rows.pane);
      section.hidden = !visible;
      paneBox.appendChild(section);
      toolbar.appendChild(this.toggle(rows.pane, section, visible));
    }

    this.node.addEventListener('mouseover', this.onMouseOver);
    this.node.addEventListener('mouseleave', this.onMouseLeave);
    this.node.addEventListener('click', this.onClick);
  }

  /** Rows (in every pane) currently highlighted and drawn, for tests. */
  get highlighted(): Element[] {
    const out: Element[] = [];
    for (const p of this.panes.values()) {
      for (const row of p.drawn.values()) {
        if (row.classList.contains(CLASSES.linked)) {
          out.push(row);
        }
      }
    }
    return out;
  }

  /** Highlight everything linked to `line` as if it were hovered (null clears hover). */
  hover(line: number | null): void {
    this.state.hover(line);
    this.update();
  }

  /** Pin or unpin `line` as a click would. */
  pin(line: number | null): void {
    this.state.click(line);
    this.update();
  }

  /** Rows of `pane` linked to `line` (from the index; nothing is scanned). */
  linkedRows(pane: string, line: number): readonly number[] {
    return this.index.rows(pane, line);
  }

  dispose(): void {
    this.node.removeEventListener('mouseover', this.onMouseOver);
    this.node.removeEventListener('mouseleave', this.onMouseLeave);
    this.node.removeEventListener('click', this.onClick);
  }

  // -- events ---------------------------------------------------------------------

  private lineOf(target: EventTarget | null): number | null | undefined {
    const e = target as Element | null;
    const row = e && typeof e.closest === 'function' ? e.closest('[data-line]') : null;
    if (!row || !this.node.contains(row)) {
      return undefined;
    }
    const line = Number(row.getAttribute('data-line'));
    return Number.isInteger(line) && line > 0 ? line : null;
  }

  private readonly onMouseOver = (ev: Event): void => {
    const line = this.lineOf(ev.target);
    const section = (ev.target as Element | null)?.closest?.(`.${CLASSES.pane}`);
    this.hoverPane = section?.getAttribute('data-pane') ?? null;
    const next = line ?? null;
    if (next !== this.state.hovered) {
      this.hover(next);
    }
  };

  private readonly onMouseLeave = (): void => {
    this.hover(null);
  };

  private readonly onClick = (ev: Event): void => {
    const line = this.lineOf(ev.target);
    if (line !== undefined) {
      this.pin(line);
    }
  };

  // -- highlighting ---------------------------------------------------------------

  /** Mark one drawn row as linked / pinned for the current state. */
  private mark(p: PaneRows, i: number, row: HTMLElement): void {
    const line = p.rows.lineOf(i);
    const active = this.state.active;
    row.classList.toggle(CLASSES.linked, line !== null && line === active);
    row.classList.toggle(CLASSES.pinned, line !== null && line === this.state.pinned);
  }

  private update(): void {
    // only drawn rows are touched: O(rows shown), whatever the line links
    for (const p of this.panes.values()) {
      for (const [i, row] of p.drawn) {
        this.mark(p, i, row);
      }
    }
    const active = this.state.active;
    for (const row of this.tmaRows) {
      row.classList.toggle(CLASSES.linked, row.getAttribute('data-line') === String(active));
    }
    this.revealLinked(active);
    if (active === null) {
      this.status.textContent = 'Hover a line to link the panes; click to pin it.';
    } else {
      const parts: string[] = [];
      for (const pane of this.panes.keys()) {
        const n = this.index.rows(pane, active).length;
        if (n) {
          parts.push(`${paneTitle(pane)} ${fmtCount(n)}`);
        }
      }
      const pin = this.state.pinned === active ? ' (pinned; click again to unpin)' : '';
      this.status.textContent = `Line ${active}${pin}: ${parts.join(' · ')}`;
    }
  }

  /** Scroll each other pane so its first linked row is visible (not the page). */
  private revealLinked(line: number | null): void {
    if (line === null || this.state.hovered === null) {
      return;
    }
    for (const [pane, p] of this.panes) {
      const rows = this.index.rows(pane, line);
      if (rows.length && pane !== this.hoverPane) {
        p.reveal(rows[0]);
      }
    }
  }

  // -- building -------------------------------------------------------------------

  private title(): HTMLElement {
    const d = this.data;
    const box = el(this.doc, 'div', 'tl-title');
    box.append(
      el(this.doc, 'span', 'tl-kernel', d.kernel_name),
      el(this.doc, 'span', 'tl-arch', d.arch),
      el(this.doc, 'code', 'tl-signature', d.signature)
    );
    if (d.hints.length) {
      const hints = d.hints.map(([k, v]) => `${k}=${v}`).join(' ');
      box.appendChild(el(this.doc, 'span', 'tl-hints', hints));
    }
    const about = [d.filename, ...d.versions.map(([k, v]) => `${k} ${v}`)].filter(Boolean);
    if (about.length) {
      box.title = about.join(', ');
    }
    return box;
  }

  /** A line's TMA badge: its verdict as text, the reason as its tooltip. */
  private tmaBadge(t: ITmaLine): HTMLElement {
    const badge = el(this.doc, 'span', `${CLASSES.tma} ${t.tma ? CLASSES.tmaYes : CLASSES.tmaNo}`, tmaBadgeText(t));
    badge.title = t.reason;
    return badge;
  }

  /**
   * Under the header, as the HTML view draws it: the summary, then one row per source line
   * holding a tile-space load/store (its badge and the reason in words), linked to the line.
   */
  private tmaSummary(tma: ITma): HTMLElement {
    const box = el(this.doc, 'details', CLASSES.tmaSummary);
    box.open = true;
    box.appendChild(el(this.doc, 'summary', '', tma.summary));
    for (const t of tma.lines) {
      const row = el(this.doc, 'div', CLASSES.tmaRow);
      row.setAttribute('data-line', String(t.line));
      row.append(
        this.doc.createTextNode(`line ${t.line} (${t.kind}): `),
        this.tmaBadge(t),
        el(this.doc, 'span', 'tl-tma-reason', ` ${t.reason}`)
      );
      box.appendChild(row);
      this.tmaRows.push(row);
    }
    if (tma.linesTotal > tma.lines.length) {
      box.appendChild(el(this.doc, 'div', CLASSES.notice,
        `showing ${fmtCount(tma.lines.length)} of ${fmtCount(tma.linesTotal)} lines with loads/stores`));
    }
    return box;
  }

  /** A SASS row's text with its TMA opcodes boxed (when the view has a TMA verdict). */
  private sassText(text: string): HTMLElement {
    if (!this.data.tma || text.length > ROW_CHARS) {
      return this.plainText(text);
    }
    const box = el(this.doc, 'span', 'tl-text');
    let at = 0;
    for (const m of text.matchAll(TMA_OP)) {
      const i = m.index ?? 0;
      if (i > at) {
        box.appendChild(this.doc.createTextNode(text.slice(at, i)));
      }
      const op = el(this.doc, 'span', CLASSES.tmaOp, m[0]);
      op.title = 'TMA: bulk tensor copy';
      box.appendChild(op);
      at = i + m[0].length;
    }
    if (at < text.length || at === 0) {
      box.appendChild(this.doc.createTextNode(text.slice(at)));
    }
    return box;
  }

  /** One line naming what was cut to the limits outside the panes (null: nothing). */
  private viewCuts(): HTMLElement | null {
    const own = this.data.cuts.filter(c => !paneField(c.field));
    if (!own.length) {
      return null;
    }
    const words = own.slice(0, 4).map(cutWords);
    const more = own.length > 4 ? `, and ${own.length - 4} more` : '';
    return el(this.doc, 'div', CLASSES.notice, `Cut to the view's limits: ${words.join('; ')}${more}.`);
  }

  private toggle(pane: string, section: HTMLElement, visible: boolean): HTMLElement {
    const b = el(this.doc, 'button', CLASSES.toggle, paneTitle(pane));
    b.type = 'button';
    b.setAttribute('data-pane', pane);
    b.setAttribute('aria-pressed', String(visible));
    b.addEventListener('click', () => {
      section.hidden = !section.hidden;
      b.setAttribute('aria-pressed', String(!section.hidden));
      this.panes.get(pane)?.update();
    });
    return b;
  }

  private pane(rows: IPaneRows): HTMLElement {
    const pane = rows.pane;
    const section = el(this.doc, 'section', CLASSES.pane);
    section.setAttribute('data-pane', pane);
    const head = el(this.doc, 'div', 'tl-pane-head');
    head.appendChild(el(this.doc, 'span', 'tl-pane-title', paneTitle(pane)));
    const body = el(this.doc, 'div', 'tl-pane-body');
    let full: string;
    let p: PaneRows;
    if (pane === 'remarks') {
      full = this.data.remarks.map(remarkText).join('\n');
      p = this.remarkRows(rows, body);
    } else {
      const stage = pane === 'source' ? null : this.data.stages.get(pane)!;
      full = stage ? stage.fullText : this.data.fullSource;
      p = this.codeRows(rows, body, stage?.tokens ?? null, pane === 'source');
    }
    this.panes.set(pane, p);
    head.appendChild(el(this.doc, 'span', 'tl-pane-meta', this.meta(rows)));
    head.appendChild(this.copyButton(full));
    section.appendChild(head);
    const notice = this.paneNotice(rows, full);
    if (notice) {
      section.appendChild(notice);
    }
    section.appendChild(body);
    if (p.virtual) {
      body.addEventListener('scroll', () => p.update(), { passive: true });
      p.update();
    }
    return section;
  }

  private meta(rows: IPaneRows): string {
    const n = rows.count;
    if (rows.pane === 'remarks') {
      return `${fmtCount(n)} remark${n === 1 ? '' : 's'}`;
    }
    return `${fmtCount(n)} line${n === 1 ? '' : 's'}`;
  }

  /** "showing N of M lines (download the full text)" where a pane is cut, else null. */
  private paneNotice(rows: IPaneRows, full: string): HTMLElement | null {
    const pane = rows.pane;
    const field = pane === 'source' ? 'source' : pane === 'remarks' ? 'remarks' : `stages.${pane}.text`;
    const written = this.data.truncated.get(field) ??
      (pane === 'remarks' ? null : this.data.stages.get(pane)?.writtenTotal ?? null);
    const shown = rows.count;
    let total = rows.text ? rows.text.total : this.data.remarksTotal;
    const unit = pane === 'remarks' ? 'remarks' : 'lines';
    const charCut = this.data.cuts.find(c => c.field === field && c.unit === 'characters');
    if (written !== null) {
      total = Math.max(total, written);
    }
    if (shown >= total && !charCut) {
      return null;
    }
    const box = el(this.doc, 'div', CLASSES.notice);
    let words = `showing ${fmtCount(shown)} of ${fmtCount(total)} ${unit}`;
    if (charCut) {
      words += ` (the text is cut at ${fmtCount(charCut.shown)} characters)`;
    }
    box.appendChild(el(this.doc, 'span', '', words));
    if (written !== null && written > (rows.text?.total ?? shown)) {
      box.appendChild(el(this.doc, 'span', '', ' · cut by tile_lab when the view was written; ' +
        'the full text is in the Inspection (Python)'));
      return box;
    }
    const b = el(this.doc, 'button', CLASSES.download, 'Download the full text');
    b.type = 'button';
    b.title = 'Save this pane as a text file (made in the page from the data)';
    b.addEventListener('click', ev => {
      ev.stopPropagation();
      const ok = downloadText(this.doc, `${this.data.kernel_name.slice(0, 60) || 'kernel'}.${pane}.txt`, full);
      b.textContent = ok ? 'Downloaded' : 'Download failed';
    });
    box.append(el(this.doc, 'span', '', ' · '), b);
    return box;
  }

  private copyButton(text: string): HTMLElement {
    const b = el(this.doc, 'button', CLASSES.copy, 'Copy');
    b.type = 'button';
    b.title = 'Copy this pane as text';
    b.addEventListener('click', ev => {
      ev.stopPropagation();
      this.copy(text).then(
        () => this.flash(b, 'Copied'),
        () => this.flash(b, 'Copy failed')
      );
    });
    return b;
  }

  private flash(b: HTMLElement, text: string): void {
    b.textContent = text;
    this.doc.defaultView?.setTimeout(() => (b.textContent = 'Copy'), 1500);
  }

  private codeRows(rows: IPaneRows, body: HTMLElement, tokens: TokenRun[][] | null, isSource: boolean): PaneRows {
    const code = el(this.doc, 'div', 'tl-code');
    const text = rows.text as TextRows;
    // Disassembly is indented deeply (nvdisasm: 8+ spaces); drop the indentation all
    // lines share so narrow panes show instructions. Copy still gives the exact text.
    const indent = isSource ? 0 : text.commonIndent();
    const pane = rows.pane;
    const make = (i: number): HTMLElement => {
      const full = text.row(i);
      const row = el(this.doc, 'div', CLASSES.row);
      row.setAttribute('data-row', String(i));
      const line = rows.lineOf(i);
      if (line !== null) {
        row.setAttribute('data-line', String(line));
      }
      // Source rows show their own line number; stage rows the source line they map to.
      // The gutter carries the line's colour band (the HTML view's palette slot).
      const gutter = el(
        this.doc,
        'span',
        `${isSource ? 'tl-lineno' : 'tl-srcline'} ${CLASSES.band}`,
        line === null ? '' : String(line)
      );
      const slot = line === null ? undefined : this.data.line_colors.get(line);
      if (slot !== undefined && Number.isInteger(slot) && slot >= 0 && slot < PALETTE_SLOTS) {
        gutter.classList.add(`tl-c${slot}`);
      }
      const runs = full.length <= ROW_CHARS ? tokens?.[i] : undefined;
      const spans = runs ? this.tokenSpans(full, runs, indent) : null;
      const shown = isSource ? full : compactAddressGap(full.slice(indent));
      const body = spans ?? (pane === 'sass' ? this.sassText(shown) : this.plainText(shown));
      const verdict = isSource && line !== null ? this.tmaLines.get(line) : undefined;
      if (verdict) {
        body.appendChild(this.tmaBadge(verdict)); // at the end of the line, as in the HTML view
      }
      row.append(gutter, body);
      this.markNew(pane, i, row);
      return row;
    };
    const ghost = this.ghostRow(text.widest - indent, isSource);
    const p = new PaneRows(this.doc, rows, body, code, make, ghost);
    body.appendChild(code);
    return p;
  }

  /** A new row gets the current highlight and the profile's decoration. */
  private markNew(pane: string, i: number, row: HTMLElement): void {
    const p = this.panes.get(pane);
    const line = row.hasAttribute('data-line') ? Number(row.getAttribute('data-line')) : null;
    if (p) {
      this.mark(p, i, row);
    }
    this.decorate?.(pane, i, line, row);
  }

  /** Text of a row, a very long one cut with a sign saying how much is left out. */
  private plainText(text: string): HTMLElement {
    const box = el(this.doc, 'span', 'tl-text', text.length > ROW_CHARS ? text.slice(0, ROW_CHARS) : text);
    if (text.length > ROW_CHARS) {
      box.appendChild(el(this.doc, 'span', 'tl-more', ` … ${fmtCount(text.length - ROW_CHARS)} more characters (Copy has them)`));
    }
    return box;
  }

  /** An invisible row as wide as the widest one: a virtual pane scrolls sideways as far. */
  private ghostRow(width: number, isSource: boolean): HTMLElement {
    const row = el(this.doc, 'div', 'tl-ghost');
    const cut = width > ROW_CHARS ? ` … ${fmtCount(width - ROW_CHARS)} more characters (Copy has them)` : '';
    row.append(
      el(this.doc, 'span', isSource ? 'tl-lineno' : 'tl-srcline', ''),
      el(this.doc, 'span', 'tl-text', ' '.repeat(Math.max(0, Math.min(width, ROW_CHARS))) + cut)
    );
    return row;
  }

  /**
   * The line's text as coloured spans, from runs of [token class, code points], after
   * dropping `indent` leading code points (the pane's shared indentation). Null when the
   * runs do not cover the line exactly (then it is shown plain). Class names come only
   * from TOKEN_CLASSES.
   */
  private tokenSpans(line: string, runs: TokenRun[], indent: number): HTMLElement | null {
    const chars = Array.from(line);
    if (runs.reduce((n, [, len]) => n + len, 0) !== chars.length) {
      return null;
    }
    const box = el(this.doc, 'span', 'tl-text');
    let at = 0;
    for (const [cls, len] of runs) {
      const from = Math.max(at, indent);
      const to = at + len;
      at = to;
      if (from >= to) {
        continue;
      }
      const piece = chars.slice(from, to).join('');
      const known = cls !== '' && TOKEN_CLASSES.has(cls);
      box.appendChild(known ? el(this.doc, 'span', `tl-t${cls}`, piece) : this.doc.createTextNode(piece));
    }
    return box;
  }

  private remarkRows(rows: IPaneRows, body: HTMLElement): PaneRows {
    const list = el(this.doc, 'div', 'tl-remarks');
    if (this.data.remarks.length === 0) {
      list.appendChild(el(this.doc, 'div', 'tl-empty', 'No remarks.'));
    }
    const make = (i: number): HTMLElement => {
      const r = this.data.remarks[i];
      const row = el(this.doc, 'div', `${CLASSES.row} tl-remark`);
      if (r.line !== null) {
        row.title = r.col === null ? `line ${r.line}` : `line ${r.line}, column ${r.col}`;
      }
      row.setAttribute('data-row', String(i));
      row.setAttribute('data-kind', r.kind);
      if (r.line !== null) {
        row.setAttribute('data-line', String(r.line));
      }
      row.append(
        el(this.doc, 'span', 'tl-srcline', r.line === null ? '' : String(r.line)),
        el(this.doc, 'span', 'tl-remark-kind', r.kind),
        el(this.doc, 'span', 'tl-remark-category', r.category),
        this.plainText(r.message)
      );
      if (r.pass_name) {
        row.appendChild(el(this.doc, 'span', 'tl-remark-pass', r.pass_name));
      }
      this.markNew('remarks', i, row);
      return row;
    };
    const p = new PaneRows(this.doc, rows, body, list, make, null);
    body.appendChild(list);
    return p;
  }
}

/** Fields whose cut a pane's own notice reports. */
function paneField(field: string): boolean {
  return field === 'source' || field === 'remarks' || /^stages\.[a-z0-9_]+\.(text|line_map|tokens)$/.test(field);
}

function cutWords(c: ICut): string {
  return `${c.field}: ${fmtCount(c.shown)} of ${fmtCount(c.total)} ${c.unit}`;
}

// nvdisasm pads each instruction address comment with ~19 spaces before the instruction:
// one is enough in a narrow pane (Copy still gives the exact text). Other lines unchanged.
export function compactAddressGap(line: string): string {
  return line.replace(/^(\s*\/\*[0-9a-f]{4,}\*\/) {2,}/, '$1 ');
}

/** Number of leading spaces/tabs shared by all non-blank lines. */
export function commonIndent(lines: string[]): number {
  let n = Infinity;
  for (const line of lines) {
    if (line.trim() !== '') {
      n = Math.min(n, line.length - line.trimStart().length);
    }
  }
  return n === Infinity ? 0 : n;
}

/** A plain-text error box for data this extension cannot show. */
export function renderError(doc: Document, message: string): HTMLElement {
  const box = el(doc, 'div', `${CLASSES.view} ${CLASSES.error}`, message);
  box.setAttribute('role', 'alert');
  return box;
}
