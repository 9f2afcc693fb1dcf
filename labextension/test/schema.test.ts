import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020';

import { PALETTE_SLOTS, PANE_NAME, TOKEN_CLASSES, parseInspection } from '../src/model';
import { fixtureJson, mimeSchema } from './helpers';

function validator() {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  return ajv.compile(mimeSchema());
}

test('the Python-made fixture is valid under the one schema', () => {
  const validate = validator();
  assert.equal(validate(fixtureJson()), true, JSON.stringify(validate.errors));
});

test("the parser's allowlists are the schema's", () => {
  const defs = mimeSchema().$defs;
  assert.deepEqual([...TOKEN_CLASSES].sort(), [...defs.tokenClass.enum].sort());
  assert.equal(new RegExp(defs.paneName.pattern).source, PANE_NAME.source);
  const slot = mimeSchema().properties.line_colors.additionalProperties;
  assert.equal(slot.maximum + 1, PALETTE_SLOTS);
  assert.equal(mimeSchema().properties.version.const, 1);
});

test('what the schema rejects, the parser rejects too', () => {
  const validate = validator();
  const spoilers: Record<string, (d: any) => void> = {
    'another version': d => (d.version = 2),
    'no version': d => delete d.version,
    'a stage named __proto__': d => (d.stages = JSON.parse('{"__proto__": {"text": "", "line_map": []}}')),
    'a stage name with markup': d => (d.stages['<b>x</b>'] = d.stages.sass),
    'an unknown token class': d => d.stages.tileir.tokens[0].push(['u\\72l(', 1]),
    'a zero-length run': d => d.stages.tileir.tokens[0].push(['k', 0]),
    'line 0 in a line map': d => (d.stages.sass.line_map[0] = 0),
    'a palette slot out of range': d => (d.line_colors['5'] = 7),
    'a line colour key that is not a line': d => (d.line_colors['position:fixed'] = 1),
    'a show entry that is not a pane name': d => d.show.push('x y'),
    'a remark line that is not a line': d => (d.remarks[0].line = 'five'),
    'a stage without text': d => delete d.stages.sass.text
  };
  for (const [name, spoil] of Object.entries(spoilers)) {
    const d = fixtureJson() as any;
    spoil(d);
    assert.equal(validate(d), false, `schema accepts ${name}`);
    assert.throws(() => parseInspection(d), /tile_lab view data/, `parser accepts ${name}`);
  }
});
