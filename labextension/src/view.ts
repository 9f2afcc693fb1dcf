/**
 * The linked view: data -> DOM, plus hover/click highlighting across panes.
 *
 * No markup is taken from the data: text goes in through textContent (never innerHTML),
 * attributes only get validated pane names and line numbers, and class names come from
 * this file's fixed lists (token and palette classes are looked up in allowlists). No
 * `style` attribute is ever set. The stylesheet adds `contain: paint` on the view, so
 * nothing in it can be drawn outside its box. No Lumino or JupyterLab imports here, so it
 * runs under jsdom.
 */

import { HighlightState, LineIndex, paneRows } from './linking';
import {
  IInspectionData,
  IRemark,
  PALETTE_SLOTS,
  TOKEN_CLASSES,
  TokenRun,
  paneTitle,
  splitLines
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
  error: 'tl-error'
};

export interface IViewOptions {
  /** Writes text to the clipboard; defaults to navigator.clipboard. */
  copy?: (text: string) => Promise<void>;
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

export class InspectionView {
  readonly node: HTMLElement;
  readonly state = new HighlightState();
  private readonly doc: Document;
  private readonly data: IInspectionData;
  private readonly index: LineIndex;
  private readonly copy: (text: string) => Promise<void>;
  /** pane id -> its row elements, by row index. */
  private readonly rows = new Map<string, Element[]>();
  private readonly bodies = new Map<string, HTMLElement>();
  private readonly status: HTMLElement;
  private lit: Element[] = [];
  /** The pane the pointer is in; it is not scrolled under the user's hand. */
  private hoverPane: string | null = null;
  private pinnedRows: Element[] = [];

  constructor(data: IInspectionData, doc: Document, options: IViewOptions = {}) {
    this.doc = doc;
    this.data = data;
    this.copy = options.copy ?? defaultCopy(doc);
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
    this.node.append(header, paneBox, this.status);

    const shown = new Set(data.show);
    for (const { pane } of panes) {
      const section = this.pane(pane);
      const visible = shown.has(pane);
      section.hidden = !visible;
      paneBox.appendChild(section);
      toolbar.appendChild(this.toggle(pane, section, visible));
    }

    this.node.addEventListener('mouseover', this.onMouseOver);
    this.node.addEventListener('mouseleave', this.onMouseLeave);
    this.node.addEventListener('click', this.onClick);
  }

  /** Rows (in every pane) currently highlighted, for tests. */
  get highlighted(): Element[] {
    return [...this.lit];
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

  private rowsFor(line: number | null): Element[] {
    if (line === null) {
      return [];
    }
    const out: Element[] = [];
    for (const [pane, idx] of this.index.linked(line)) {
      const rows = this.rows.get(pane) ?? [];
      for (const i of idx) {
        if (rows[i]) {
          out.push(rows[i]);
        }
      }
    }
    return out;
  }

  private update(): void {
    for (const e of this.lit) {
      e.classList.remove(CLASSES.linked);
    }
    for (const e of this.pinnedRows) {
      e.classList.remove(CLASSES.pinned);
    }
    const active = this.state.active;
    this.lit = this.rowsFor(active);
    this.pinnedRows = this.rowsFor(this.state.pinned);
    for (const e of this.lit) {
      e.classList.add(CLASSES.linked);
    }
    for (const e of this.pinnedRows) {
      e.classList.add(CLASSES.pinned);
    }
    this.revealLinked(active);
    if (active === null) {
      this.status.textContent = 'Hover a line to link the panes; click to pin it.';
    } else {
      const n = this.index.linked(active);
      const parts = [...n].map(([pane, idx]) => `${paneTitle(pane)} ${idx.length}`);
      const pin = this.state.pinned === active ? ' (pinned; click again to unpin)' : '';
      this.status.textContent = `Line ${active}${pin}: ${parts.join(' · ')}`;
    }
  }

  /** Scroll each other pane so its first linked row is visible (not the page). */
  private revealLinked(line: number | null): void {
    if (line === null || this.state.hovered === null) {
      return;
    }
    for (const [pane, idx] of this.index.linked(line)) {
      const body = this.bodies.get(pane);
      const row = this.rows.get(pane)?.[idx[0]] as HTMLElement | undefined;
      if (!body || !row || pane === this.hoverPane) {
        continue;
      }
      const top = row.offsetTop;
      if (top < body.scrollTop || top > body.scrollTop + body.clientHeight - row.offsetHeight) {
        body.scrollTop = Math.max(0, top - body.clientHeight / 3);
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

  private toggle(pane: string, section: HTMLElement, visible: boolean): HTMLElement {
    const b = el(this.doc, 'button', CLASSES.toggle, paneTitle(pane));
    b.type = 'button';
    b.setAttribute('data-pane', pane);
    b.setAttribute('aria-pressed', String(visible));
    b.addEventListener('click', () => {
      section.hidden = !section.hidden;
      b.setAttribute('aria-pressed', String(!section.hidden));
    });
    return b;
  }

  private pane(pane: string): HTMLElement {
    const section = el(this.doc, 'section', CLASSES.pane);
    section.setAttribute('data-pane', pane);
    const head = el(this.doc, 'div', 'tl-pane-head');
    head.appendChild(el(this.doc, 'span', 'tl-pane-title', paneTitle(pane)));
    const body = el(this.doc, 'div', 'tl-pane-body');
    this.bodies.set(pane, body);
    let text: string | null = null;
    if (pane === 'source') {
      text = this.data.source;
      this.codeRows(pane, body, splitLines(text), i => this.data.first_line + i, null, true);
    } else if (pane === 'remarks') {
      text = this.data.remarks.map(remarkText).join('\n');
      this.remarkRows(body);
    } else {
      const stage = this.data.stages.get(pane)!;
      text = stage.text;
      const lineOf = (i: number) => stage.line_map[i] ?? null;
      this.codeRows(pane, body, splitLines(text), lineOf, stage.tokens, false);
    }
    head.appendChild(el(this.doc, 'span', 'tl-pane-meta', this.meta(pane)));
    if (text !== null) {
      head.appendChild(this.copyButton(text));
    }
    section.append(head, body);
    return section;
  }

  private meta(pane: string): string {
    const n = this.rows.get(pane)?.length ?? 0;
    if (pane === 'remarks') {
      return `${n} remark${n === 1 ? '' : 's'}`;
    }
    return `${n} line${n === 1 ? '' : 's'}`;
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

  private codeRows(
    pane: string,
    body: HTMLElement,
    lines: string[],
    lineOf: (i: number) => number | null,
    tokens: TokenRun[][] | null,
    isSource: boolean
  ): void {
    const code = el(this.doc, 'div', 'tl-code');
    const rows: Element[] = [];
    // Disassembly is indented deeply (nvdisasm: 8+ spaces); drop the indentation all
    // lines share so narrow panes show instructions. Copy still gives the exact text.
    const indent = isSource ? 0 : commonIndent(lines);
    lines.forEach((full, i) => {
      const text = isSource ? full : compactAddressGap(full.slice(indent));
      const row = el(this.doc, 'div', CLASSES.row);
      row.setAttribute('data-row', String(i));
      const line = lineOf(i);
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
      const runs = tokens?.[i];
      const body = runs ? this.tokenSpans(full, runs, indent) : null;
      row.append(gutter, body ?? el(this.doc, 'span', 'tl-text', text));
      code.appendChild(row);
      rows.push(row);
    });
    body.appendChild(code);
    this.rows.set(pane, rows);
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

  private remarkRows(body: HTMLElement): void {
    const list = el(this.doc, 'div', 'tl-remarks');
    const rows: Element[] = [];
    if (this.data.remarks.length === 0) {
      list.appendChild(el(this.doc, 'div', 'tl-empty', 'No remarks.'));
    }
    this.data.remarks.forEach((r, i) => {
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
        el(this.doc, 'span', 'tl-text', r.message)
      );
      if (r.pass_name) {
        row.appendChild(el(this.doc, 'span', 'tl-remark-pass', r.pass_name));
      }
      list.appendChild(row);
      rows.push(row);
    });
    body.appendChild(list);
    this.rows.set('remarks', rows);
  }
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
