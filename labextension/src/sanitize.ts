/**
 * SVG sanitiser for diagrams embedded in (possibly untrusted) output data.
 *
 * The SVG text is parsed with DOMParser as XML and copied node by node into the
 * page's document, keeping only an allow-list of drawing elements and attributes.
 * Scripts, foreignObject, <style> (its rules would apply to the whole JupyterLab
 * page), event-handler attributes and links to anything but in-document fragments
 * never reach the page. Copying (instead of importing and pruning) means nothing
 * from the parsed document is ever attached as-is.
 */

export const SVG_NS = 'http://www.w3.org/2000/svg';
const XLINK_NS = 'http://www.w3.org/1999/xlink';
const XMLNS_NS = 'http://www.w3.org/2000/xmlns/';

const ALLOWED_ELEMENTS = new Set([
  'svg', 'g', 'defs', 'title', 'desc', 'symbol', 'use',
  'rect', 'circle', 'ellipse', 'line', 'polyline', 'polygon', 'path',
  'text', 'tspan', 'marker', 'clipPath', 'mask', 'pattern',
  'linearGradient', 'radialGradient', 'stop'
]);

/** Elements whose children are kept (moved up) although the element itself is not. */
const UNWRAPPED_ELEMENTS = new Set(['a', 'switch']);

export interface ISanitizedSvg {
  /** The clean SVG element, owned by the target document; null if unusable. */
  svg: SVGSVGElement | null;
  /** What was dropped, e.g. "<script>", "onclick" — for tests and diagnostics. */
  removed: string[];
  /** Why `svg` is null. */
  error: string | null;
}

function cleanValue(value: string): string {
  // Browsers ignore control characters and whitespace inside URL schemes ("java\tscript:").
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u0020]/g, '').toLowerCase();
}

function attributeAllowed(attr: Attr): boolean {
  const name = attr.localName.toLowerCase();
  const value = cleanValue(attr.value);
  if (name.startsWith('on')) {
    return false;
  }
  if (attr.namespaceURI !== null && attr.namespaceURI !== XLINK_NS) {
    return name === 'space' || name === 'lang'; // xml:space, xml:lang
  }
  if (name === 'href') {
    return value.startsWith('#');
  }
  if (value.includes('javascript:') || value.includes('vbscript:')) {
    return false;
  }
  if (value.includes('url(')) {
    // Only references to elements of this SVG (gradients, markers, clip paths).
    return !/url\((?!['"]?#)/.test(value);
  }
  if (name === 'style') {
    return !value.includes('@import') && !value.includes('expression(');
  }
  return true;
}

function copyChildren(src: Node, dest: Node, doc: Document, removed: string[]): void {
  for (const child of Array.from(src.childNodes)) {
    if (child.nodeType === 3 /* TEXT_NODE */ || child.nodeType === 4 /* CDATA */) {
      dest.appendChild(doc.createTextNode(child.textContent ?? ''));
    } else if (child.nodeType === 1 /* ELEMENT_NODE */) {
      const el = child as Element;
      const name = el.localName;
      if (el.namespaceURI === SVG_NS && ALLOWED_ELEMENTS.has(name)) {
        const copy = doc.createElementNS(SVG_NS, name);
        copyAttributes(el, copy, removed);
        copyChildren(el, copy, doc, removed);
        dest.appendChild(copy);
      } else if (el.namespaceURI === SVG_NS && UNWRAPPED_ELEMENTS.has(name)) {
        removed.push(`<${name}>`);
        copyChildren(el, dest, doc, removed);
      } else {
        removed.push(`<${name}>`);
      }
    }
    // Comments and processing instructions are dropped silently.
  }
}

function copyAttributes(src: Element, dest: Element, removed: string[]): void {
  for (const attr of Array.from(src.attributes)) {
    if (attr.namespaceURI === XMLNS_NS) {
      continue; // namespace declarations: createElementNS already sets the namespace
    }
    if (attributeAllowed(attr)) {
      if (attr.namespaceURI === XLINK_NS) {
        dest.setAttributeNS(XLINK_NS, `xlink:${attr.localName}`, attr.value);
      } else if (attr.namespaceURI === null) {
        dest.setAttribute(attr.name, attr.value);
      } else {
        dest.setAttributeNS(attr.namespaceURI, attr.name, attr.value);
      }
    } else {
      removed.push(attr.name);
    }
  }
}

/**
 * Parse `svgText` and return a sanitised copy owned by `doc`.
 * `parser` defaults to a DOMParser from `doc`'s window.
 */
export function sanitizeSvg(
  svgText: string,
  doc: Document,
  parser?: DOMParser
): ISanitizedSvg {
  const removed: string[] = [];
  const p =
    parser ?? new (doc.defaultView as unknown as { DOMParser: typeof DOMParser }).DOMParser();
  const parsed = p.parseFromString(svgText, 'image/svg+xml');
  if (parsed.getElementsByTagName('parsererror').length > 0) {
    return { svg: null, removed, error: 'the diagram is not well-formed SVG' };
  }
  const root = parsed.documentElement;
  if (!root || root.localName !== 'svg' || root.namespaceURI !== SVG_NS) {
    return { svg: null, removed, error: 'the diagram is not an <svg> document' };
  }
  const svg = doc.createElementNS(SVG_NS, 'svg') as SVGSVGElement;
  copyAttributes(root, svg, removed);
  copyChildren(root, svg, doc, removed);
  return { svg, removed, error: null };
}
