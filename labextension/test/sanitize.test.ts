import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { sanitizeSvg } from '../src/sanitize';
import { newDocument } from './helpers';

const NS = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"';

function clean(svg: string) {
  const doc = newDocument();
  const out = sanitizeSvg(svg, doc);
  return { ...out, html: out.svg ? out.svg.outerHTML : '' };
}

test('keeps drawing elements, their attributes and text', () => {
  const r = clean(
    `<svg ${NS} width="20" viewBox="0 0 20 20"><g class="tile" data-line="5">` +
      '<rect x="1" y="2" width="3" height="4" fill="#123456"/><text x="1">a[0:4]</text></g></svg>'
  );
  assert.equal(r.error, null);
  assert.deepEqual(r.removed, []);
  const rect = r.svg!.querySelector('rect')!;
  assert.equal(rect.getAttribute('fill'), '#123456');
  assert.equal(r.svg!.querySelector('g')!.getAttribute('data-line'), '5');
  assert.equal(r.svg!.querySelector('text')!.textContent, 'a[0:4]');
  assert.equal(r.svg!.getAttribute('viewBox'), '0 0 20 20');
});

test('drops scripts, foreignObject, <style> and event handlers', () => {
  const r = clean(
    `<svg ${NS} onload="alert(1)"><script>alert(2)</script>` +
      '<foreignObject><div xmlns="http://www.w3.org/1999/xhtml"><img src="x" onerror="alert(3)"/></div></foreignObject>' +
      '<style>body { display: none }</style>' +
      '<rect onclick="alert(4)" ONMOUSEOVER="alert(5)" width="1" height="1"/></svg>'
  );
  assert.equal(r.error, null);
  for (const bad of ['script', 'foreignObject', 'style', 'img', 'onload', 'onclick', 'alert']) {
    assert.ok(!r.html.toLowerCase().includes(bad.toLowerCase()), `${bad} survived: ${r.html}`);
  }
  assert.ok(r.svg!.querySelector('rect'));
  assert.deepEqual(
    [...r.removed].sort(),
    ['<foreignObject>', '<script>', '<style>', 'ONMOUSEOVER', 'onclick', 'onload'].sort()
  );
});

test('drops links and url() references that leave the document', () => {
  const r = clean(
    `<svg ${NS}><defs><linearGradient id="g"><stop offset="0"/></linearGradient></defs>` +
      '<a href="javascript:alert(1)"><rect id="r1" fill="url(#g)" width="1" height="1"/></a>' +
      '<use xlink:href="http://evil.example/x.svg#a"/><use href="#r1"/>' +
      '<rect fill="url(http://evil.example/track)" style="fill: url(https://evil.example/x)"/>' +
      '<image href="http://evil.example/x.png"/>' +
      '<rect fill="java&#9;script:alert(1)"/></svg>'
  );
  assert.ok(!r.html.includes('evil.example'), r.html);
  assert.ok(!r.html.includes('javascript'), r.html);
  assert.equal(r.svg!.querySelector('#r1')!.getAttribute('fill'), 'url(#g)'); // kept, unwrapped
  assert.equal(r.svg!.querySelectorAll('use').length, 2);
  assert.equal(r.svg!.querySelectorAll('use')[1].getAttribute('href'), '#r1');
  assert.ok(r.removed.includes('<a>'));
  assert.ok(r.removed.includes('<image>'));
});

test('malformed or non-SVG text gives an error, not markup', () => {
  assert.match(clean('<svg><rect></svg>').error!, /not well-formed/);
  assert.match(clean('<html xmlns="http://www.w3.org/1999/xhtml"><body/></html>').error!, /not an <svg>/);
  assert.equal(clean('<svg><rect></svg>').svg, null);
});

test('the result belongs to the target document', () => {
  const doc = newDocument();
  const r = sanitizeSvg(`<svg ${NS}><rect/></svg>`, doc);
  assert.equal(r.svg!.ownerDocument, doc);
});
