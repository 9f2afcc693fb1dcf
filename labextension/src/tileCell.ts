/**
 * `%%tile` cells in the editor: a header decoration on the magic line and Python
 * highlighting of the body.
 *
 * Everything is derived from the cell's text inside CodeMirror, not from the cell's
 * mime type: the notebook resets code cells' mime type from the kernel's
 * language_info on every (re)start, which would undo any change made there.
 */

import { Compartment, Extension, Prec, StateEffect, StateField, Text } from '@codemirror/state';
import { Decoration, EditorView, ViewPlugin, ViewUpdate, WidgetType } from '@codemirror/view';
import { Language, language } from '@codemirror/language';

export const HEADER_CLASS = 'tl-tile-header';
export const CELL_CLASS = 'tl-tile-cell';
export const BADGE_CLASS = 'tl-tile-badge';

const MAGIC = /^%%tile(\s|$)/;

/**
 * The 1-based line of a leading `%%tile` magic, or null. IPython ignores leading blank
 * lines before a cell magic, so we do too.
 */
export function tileMagicLine(doc: Text): number | null {
  for (let i = 1; i <= doc.lines; i++) {
    const text = doc.line(i).text;
    if (text.trim() !== '') {
      return MAGIC.test(text) ? i : null;
    }
  }
  return null;
}

/** Where the Python language comes from: loaded lazily by JupyterLab's registry. */
export interface IPythonSource {
  current: Language | null;
  ready: Promise<unknown>;
}

/** Re-evaluate the language once Python has been loaded. */
const refresh = StateEffect.define<null>();

interface ITileState {
  /** 1-based line of the `%%tile` magic, or null for other cells. */
  line: number | null;
  /** The language to force on the cell (Python, once loaded), or null. */
  lang: Language | null;
}

function tileState(python: IPythonSource): StateField<ITileState> {
  const compute = (doc: Text): ITileState => {
    const line = tileMagicLine(doc);
    return { line, lang: line === null ? null : python.current };
  };
  return StateField.define<ITileState>({
    create: state => compute(state.doc),
    update: (value, tr) => {
      if (!tr.docChanged && !tr.effects.some(e => e.is(refresh))) {
        return value;
      }
      const next = compute(tr.state.doc);
      // Same object when nothing changed, so the facets below are not recomputed.
      return next.line === value.line && next.lang === value.lang ? value : next;
    }
  });
}

class TileBadge extends WidgetType {
  toDOM(view: EditorView): HTMLElement {
    const span = view.dom.ownerDocument.createElement('span');
    span.className = BADGE_CLASS;
    span.textContent = 'cuTile kernel';
    span.setAttribute('aria-hidden', 'true');
    return span;
  }

  eq(): boolean {
    return true;
  }
}

/** The CodeMirror extension for `%%tile` cells. */
export function tileCellExtension(python: IPythonSource): Extension {
  const field = tileState(python);
  const decorations = EditorView.decorations.compute([field], state => {
    const line = state.field(field).line;
    if (line === null) {
      return Decoration.none;
    }
    const l = state.doc.line(line);
    return Decoration.set([
      Decoration.line({ class: HEADER_CLASS }).range(l.from),
      Decoration.widget({ widget: new TileBadge(), side: 1 }).range(l.to)
    ]);
  });
  const cellClass = EditorView.editorAttributes.compute(
    [field],
    (state): Record<string, string> =>
      state.field(field).line === null ? {} : { class: CELL_CLASS }
  );
  // The language goes in through a compartment, switched by the view plugin below: a
  // computed `language` facet would register the facet even when empty, and CodeMirror's
  // parser state then fails in editors that have no language at all (raw cells, text).
  // Highest precedence: the facet uses its first value, so Python wins over whatever the
  // cell's mime type gave (text/plain while no kernel is known, say).
  const slot = new Compartment();
  const switcher = ViewPlugin.define(view => {
    let alive = true;
    let applied: Language | null = null;
    const configure = (): void => {
      const lang = view.state.field(field).lang;
      if (lang !== applied) {
        applied = lang;
        view.dispatch({ effects: slot.reconfigure(lang ? Prec.highest(language.of(lang)) : []) });
      }
    };
    // Dispatching is not allowed while the view is updating, hence the microtasks.
    const later = () =>
      queueMicrotask(() => {
        if (alive) {
          configure();
        }
      });
    if (view.state.field(field).lang) {
      later();
    }
    if (!python.current) {
      python.ready.then(() => {
        if (alive && python.current) {
          view.dispatch({ effects: refresh.of(null) });
        }
      });
    }
    return {
      update: (u: ViewUpdate) => {
        if (u.startState.field(field).lang !== u.state.field(field).lang) {
          later();
        }
      },
      destroy: () => {
        alive = false;
      }
    };
  });
  return [field, decorations, cellClass, slot.of([]), switcher];
}
