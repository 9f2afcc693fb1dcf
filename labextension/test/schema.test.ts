import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020';

import {
  InvalidViewData,
  LIMITS,
  PALETTE_SLOTS,
  PANE_NAME,
  PLAIN_OPCODES,
  RESERVED_PANES,
  TMA_OPCODES,
  TOKEN_CLASSES,
  VERSIONS,
  parseInspection
} from '../src/model';
import { PROFILE_LIMITS, parseProfile } from '../src/profile';
import { applyCase, schemaCases } from './cases';
import { fixtureJson, mimeSchema, profileSchema } from './helpers';

function validator() {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
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
  assert.deepEqual(mimeSchema().properties.version.enum, VERSIONS);
  assert.deepEqual([...TMA_OPCODES], defs.tmaOpcode.enum);
  assert.deepEqual([...PLAIN_OPCODES], defs.plainOpcode.enum);
  assert.deepEqual(defs.tmaLine.properties.kind.enum, ['load', 'store']);
});

test('schema and parser agree on every case of the one list (schema_cases.json.gz)', () => {
  const inspection = validator();
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  ajv.addSchema(mimeSchema(), 'mime_schema.json');
  const profile = ajv.compile(profileSchema());
  const SIZE = new Set(['maxLength', 'maxItems', 'maxProperties']);
  const seen = { valid: 0, cut: 0, refused: 0 };
  for (const c of schemaCases()) {
    const d = applyCase(c);
    const validate = c.base === 'profile' ? profile : inspection;
    const ok = validate(d);
    // a size error inside an anyOf branch comes with the anyOf's own error
    const sizeOnly = !ok && (validate.errors ?? []).every(e => SIZE.has(e.keyword) || e.keyword === 'anyOf');
    seen[c.expect]++;
    if (c.expect === 'valid') {
      assert.equal(ok, true, `${c.name}: schema says ${JSON.stringify(validate.errors)}`);
      const parsed = c.base === 'profile' ? parseProfile(d) : parseInspection(d);
      assert.deepEqual(parsed.cuts, [], `${c.name}: parser cut something`);
    } else if (c.expect === 'cut') {
      assert.equal(sizeOnly, true, `${c.name}: schema says ${JSON.stringify(validate.errors)}`);
      const parsed = c.base === 'profile' ? parseProfile(d) : parseInspection(d);
      const fields = parsed.cuts.map(x => x.field);
      assert.ok(fields.some(f => f === c.field || f === `inspection.${c.field}`), `${c.name}: cuts ${fields}`);
    } else {
      assert.equal(ok, false, `schema accepts ${c.name}`);
      assert.equal(sizeOnly, false, `${c.name}: the schema only finds sizes: ${JSON.stringify(validate.errors)}`);
      assert.throws(
        () => (c.base === 'profile' ? parseProfile(d) : parseInspection(d)),
        (err: Error) => err instanceof InvalidViewData && err.message.includes(c.field!),
        `parser accepts ${c.name} (or names another field)`
      );
    }
  }
  assert.ok(seen.valid >= 5 && seen.cut >= 10 && seen.refused >= 50, JSON.stringify(seen));
});

test("the parser's limits are the schema's", () => {
  const s = mimeSchema();
  const d = s.$defs;
  assert.equal(LIMITS.lineMax, d.lineNo.maximum);
  assert.equal(LIMITS.textChars, d.text.maxLength);
  assert.equal(LIMITS.name, d.name.maxLength);
  assert.equal(LIMITS.message, d.message.maxLength);
  assert.equal(LIMITS.count, d.count.maximum);
  assert.equal(LIMITS.rows, d.stage.properties.line_map.maxItems);
  assert.equal(LIMITS.rows, d.stage.properties.tokens.maxItems);
  assert.equal(LIMITS.runsPerLine, d.stage.properties.tokens.items.maxItems);
  assert.equal(LIMITS.remarks, s.properties.remarks.maxItems);
  assert.equal(LIMITS.hints, s.properties.hints.maxProperties);
  assert.equal(LIMITS.key, s.properties.hints.propertyNames.maxLength);
  assert.equal(LIMITS.versions, s.properties.versions.maxProperties);
  assert.equal(LIMITS.stages, s.properties.stages.maxProperties);
  assert.equal(LIMITS.show, s.properties.show.maxItems);
  assert.equal(LIMITS.lineColors, s.properties.line_colors.maxProperties);
  assert.equal(LIMITS.truncated, s.properties.truncated.maxProperties);
  assert.equal(LIMITS.tmaLines, d.tma.properties.lines.maxItems);
  assert.equal(LIMITS.sassOps, d.tmaLine.properties.sass_ops.maxItems);
  assert.deepEqual([...RESERVED_PANES].sort(), [...d.stageName.allOf[1].not.enum].sort());
  const p = profileSchema();
  assert.equal(PROFILE_LIMITS.hotLines, p.properties.hot_lines.maxItems);
  assert.equal(PROFILE_LIMITS.compared, p.properties.comparison.maxItems);
  for (const k of ['line_heat', 'line_samples', 'line_stalls']) {
    assert.equal(PROFILE_LIMITS.lines, p.properties[k].maxProperties, k);
  }
  assert.equal(PROFILE_LIMITS.rows, p.properties.sass_row_heat.maxProperties);
  assert.equal(PROFILE_LIMITS.names, p.$defs.stalls.maxProperties);
  assert.equal(LIMITS.count, p.$defs.count.maximum);
});
