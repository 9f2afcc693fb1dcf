// Geometry of every picture on the page, measured by the browser that draws it.
// tests/geometry_probe.py puts each picture in a <div class="tl-geo-pic" data-pic="N"> of
// notebook width, appends this script, and reads back the JSON it writes into
// #tl-geo-result: for each picture, a list of problems, each naming the element.
(() => {
  const EPS = 1.0; // px of slack for anti-aliasing and rounding
  const out = {};
  const short = s => {
    s = (s || '').replace(/\s+/g, ' ').trim();
    return s.length > 60 ? s.slice(0, 57) + '...' : s;
  };
  const titleOf = el => {
    for (let g = el; g && g.tagName && g.tagName.toLowerCase() !== 'svg'; g = g.parentNode) {
      const t = g.querySelector && g.querySelector(':scope > title');
      if (t) return short(t.textContent);
    }
    return '';
  };
  const describe = el => {
    const tag = el.tagName.toLowerCase();
    if (tag === 'text' || !(el instanceof SVGElement)) {
      return `${tag} "${short(el.textContent)}"`;
    }
    const t = titleOf(el);
    const attrs = ['x', 'y', 'width', 'height'].filter(a => el.hasAttribute(a))
      .map(a => `${a}=${el.getAttribute(a)}`).join(' ');
    return `<${tag} ${attrs}>` + (t ? ` in "${t}"` : '');
  };
  const shown = el => {
    for (let e = el; e && e.nodeType === 1; e = e.parentNode) {
      const cs = getComputedStyle(e);
      if (cs.display === 'none' || cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0) {
        return false;
      }
    }
    return true;
  };
  const inter = (a, b) => {
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    return [w, h];
  };
  // the ink of a text line: its box less the line gap above the capitals and below descenders
  const ink = r => {
    const pad = r.height * 0.08;
    return { left: r.left, right: r.right, top: r.top + pad, bottom: r.bottom - pad,
      width: r.width, height: r.height - 2 * pad };
  };

  function checkSvg(svg, problems) {
    const box = svg.getBoundingClientRect();
    if (!(box.width > 0 && box.height > 0)) {
      problems.push(`svg "${short(svg.getAttribute('aria-label'))}" renders ` +
        `${box.width}x${box.height} px`);
      return;
    }
    // sizes written in the drawing: negative, zero or NaN
    for (const el of svg.querySelectorAll('rect, image, foreignObject, svg, circle, ellipse')) {
      const names = el.tagName === 'circle' ? ['r'] : el.tagName === 'ellipse' ? ['rx', 'ry']
        : ['width', 'height'];
      for (const a of names) {
        if (!el.hasAttribute(a)) continue;
        const raw = el.getAttribute(a);
        const v = parseFloat(raw);
        if (!(v > 0) && !raw.endsWith('%')) {
          problems.push(`${describe(el)}: ${a}="${raw}" (${Number.isNaN(v) ? 'NaN'
            : v < 0 ? 'negative' : 'zero'} size)`);
        }
      }
    }
    // collapsed: many cells of one size whose union is a strip a few px thin
    const sizes = new Map();
    for (const r of svg.querySelectorAll('rect')) {
      const b = r.getBoundingClientRect();
      if (!(b.width > 0 && b.height > 0)) continue;
      const key = `${b.width.toFixed(1)}x${b.height.toFixed(1)}`;
      if (!sizes.has(key)) sizes.set(key, []);
      sizes.get(key).push(b);
    }
    for (const [key, rs] of sizes) {
      if (rs.length < 16) continue;
      const top = Math.min(...rs.map(b => b.top)), bottom = Math.max(...rs.map(b => b.bottom));
      const left = Math.min(...rs.map(b => b.left)), right = Math.max(...rs.map(b => b.right));
      if (bottom - top < 8 || right - left < 8) {
        problems.push(`collapsed: ${rs.length} shapes of ${key} px span only ` +
          `${(right - left).toFixed(0)}x${(bottom - top).toFixed(0)} px`);
      }
    }
    // text: inside the picture, not overlapping other text, not crossed by an outline
    const texts = [];
    const seen = new Set();
    for (const t of svg.querySelectorAll('text')) {
      if (!short(t.textContent) || !shown(t)) continue;
      const r = t.getBoundingClientRect();
      const key = `${short(t.textContent)}@${r.left.toFixed(1)},${r.top.toFixed(1)}`;
      if (seen.has(key)) continue; // a halo drawn under the same text
      seen.add(key);
      // a rotated label's box is not its ink: matplotlib's own extents check those
      const m = t.getCTM();
      if (m && (Math.abs(m.b) > 1e-3 || Math.abs(m.c) > 1e-3)) continue;
      texts.push({ el: t, r, ink: ink(r) });
      if (r.left < box.left - EPS || r.right > box.right + EPS || r.top < box.top - EPS ||
          r.bottom > box.bottom + EPS) {
        problems.push(`${describe(t)} lies outside its picture (text ` +
          `${r.left.toFixed(0)}..${r.right.toFixed(0)} x ${r.top.toFixed(0)}..` +
          `${r.bottom.toFixed(0)}, picture ${box.left.toFixed(0)}..${box.right.toFixed(0)} x ` +
          `${box.top.toFixed(0)}..${box.bottom.toFixed(0)})`);
      }
    }
    texts.sort((a, b) => a.r.left - b.r.left);
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length && texts[j].r.left < texts[i].r.right; j++) {
        const [w, h] = inter(texts[i].ink, texts[j].ink);
        if (w > 1.5 && h > 0.5) {
          problems.push(`${describe(texts[i].el)} overlaps ${describe(texts[j].el)} ` +
            `(${w.toFixed(0)}x${h.toFixed(0)} px)`);
        }
      }
    }
    // an emphasised outline (stroke >= 1.5 px) running through a label
    const outlines = [];
    for (const el of svg.querySelectorAll('rect')) {
      const cs = getComputedStyle(el);
      if (cs.stroke === 'none' || parseFloat(cs.strokeWidth) < 1.5 ||
          parseFloat(cs.strokeOpacity) < 0.3 || !shown(el)) continue;
      outlines.push({ el, r: el.getBoundingClientRect(), sw: parseFloat(cs.strokeWidth) });
    }
    // a drawn line (a tile boundary, an arrow) of >= 1 px running through a label
    const segs = [];
    for (const el of svg.querySelectorAll('path, line, polyline')) {
      if (el.closest('defs, pattern, marker')) continue;
      const cs = getComputedStyle(el);
      if (cs.stroke === 'none' || parseFloat(cs.strokeWidth) < 1 ||
          parseFloat(cs.strokeOpacity) < 0.3 || !shown(el)) continue;
      const m = el.getScreenCTM();
      if (!m) continue;
      const pt = (x, y) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f];
      let pts = [];
      if (el.tagName === 'line') {
        pts = [['M', ...pt(+el.getAttribute('x1'), +el.getAttribute('y1'))],
          ['L', ...pt(+el.getAttribute('x2'), +el.getAttribute('y2'))]];
      } else if (el.tagName === 'path') {
        const d = el.getAttribute('d') || '';
        if (/[^MLml0-9.,\s-]/.test(d)) continue; // curves: not checked
        for (const [, cmd, x, y] of d.matchAll(/([ML])\s*(-?[\d.]+)[ ,]+(-?[\d.]+)/g)) {
          pts.push([cmd, ...pt(+x, +y)]);
        }
      }
      for (let i = 1; i < pts.length; i++) {
        if (pts[i][0] === 'L') segs.push({ el, a: pts[i - 1].slice(1), b: pts[i].slice(1) });
      }
    }
    // Liang-Barsky: does the segment enter the box?
    const hits = (s, k) => {
      let t0 = 0, t1 = 1;
      const dx = s.b[0] - s.a[0], dy = s.b[1] - s.a[1];
      for (const [p, q] of [[-dx, s.a[0] - k.left], [dx, k.right - s.a[0]],
        [-dy, s.a[1] - k.top], [dy, k.bottom - s.a[1]]]) {
        if (p === 0) { if (q < 0) return false; continue; }
        const t = q / p;
        if (p < 0) { if (t > t1) return false; if (t > t0) t0 = t; }
        else { if (t < t0) return false; if (t < t1) t1 = t; }
      }
      return true;
    };
    if (segs.length * texts.length <= 4e6) {
      for (const t of texts) {
        // the glyphs' box: less the line gap above and the side bearings
        const r = t.r, k = { left: r.left + 1, right: r.right - 1, top: r.top + r.height * 0.2,
          bottom: r.bottom - r.height * 0.2 };
        const s = segs.find(sg => hits(sg, k));
        if (s) problems.push(`${describe(t.el)} is crossed by the line ${describe(s.el)}`);
      }
    }
    if (outlines.length * texts.length <= 4e6) {
      for (const t of texts) {
        const k = t.r; // the whole box: a line along the baseline touches the glyphs
        for (const o of outlines) {
          const r = o.r, half = o.sw / 2;
          const crossesV = x => x > k.left + 1 && x < k.right - 1 &&
            r.top - half < k.bottom - 1 && r.bottom + half > k.top + 1;
          const crossesH = y => y > k.top + 1 && y < k.bottom - 1 &&
            r.left - half < k.right - 1 && r.right + half > k.left + 1;
          // getBoundingClientRect of a rect excludes its stroke: the edges are at r's sides
          if (crossesV(r.left) || crossesV(r.right) || crossesH(r.top) || crossesH(r.bottom)) {
            problems.push(`${describe(t.el)} is crossed by the outline ${describe(o.el)}`);
            break;
          }
        }
      }
    }
  }

  const TUPLE = /\(\d+(?:, ?\d+)*,?\)/g;
  function checkHtml(root, problems) {
    const rootBox = root.getBoundingClientRect();
    for (const el of root.querySelectorAll('*')) {
      if (el instanceof SVGElement) continue;
      const own = [...el.childNodes].filter(n => n.nodeType === 3 && n.textContent.trim());
      if (!own.length || !shown(el)) continue;
      // the nearest box that clips its content is the text's pane
      let pane = null;
      for (let p = el; p && p !== root.parentNode; p = p.parentNode) {
        const cs = getComputedStyle(p);
        if (['hidden', 'clip'].includes(cs.overflowX) || ['hidden', 'clip'].includes(cs.overflow)) {
          pane = p;
          break;
        }
      }
      const r = el.getBoundingClientRect();
      if (pane) {
        const pb = pane.getBoundingClientRect();
        const cut = getComputedStyle(el).textOverflow === 'ellipsis' ||
          getComputedStyle(pane).textOverflow === 'ellipsis';
        if (!cut && r.width > 0 && (r.right > pb.right + EPS || r.left < pb.left - EPS)) {
          problems.push(`${describe(el)} is cut by its pane <${pane.tagName.toLowerCase()} ` +
            `class="${short(pane.className)}"> (text ${r.left.toFixed(0)}..` +
            `${r.right.toFixed(0)}, pane ${pb.left.toFixed(0)}..${pb.right.toFixed(0)})`);
        }
      }
      for (const n of own) {
        for (const m of n.textContent.matchAll(TUPLE)) {
          const range = document.createRange();
          range.setStart(n, m.index);
          range.setEnd(n, m.index + m[0].length);
          const tops = new Set([...range.getClientRects()].map(q => Math.round(q.top)));
          if (tops.size > 1) problems.push(`${describe(el)}: "${m[0]}" wraps across lines`);
        }
      }
    }
    if (!(rootBox.height > 0)) problems.push('renders 0 px tall');
  }

  for (const pic of document.querySelectorAll('.tl-geo-pic')) {
    const problems = [];
    try {
      for (const svg of pic.querySelectorAll('svg')) {
        if (!svg.parentNode.closest('svg')) checkSvg(svg, problems);
      }
      checkHtml(pic, problems);
    } catch (err) {
      problems.push(`the check itself failed: ${err}`);
    }
    out[pic.dataset.pic] = problems;
  }
  document.getElementById('tl-geo-result').textContent = JSON.stringify(out);
})();
