/**
 * The MIME renderer's read of its payload: from an OutputModel, without the deep copy of
 * the whole bundle that its `data` getter makes on every read (JupyterLab 4's OutputModel:
 * data = convertBundle(toJSON()), a JSON.stringify + JSON.parse of every MIME type).
 */
import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { payloadOf } from '../src/payload';

const MIME = 'application/vnd.tile-lab.profile.v1+json';

test("an output model's payload is read through toJSON, not the copying data getter", () => {
  const payload = { version: 1 };
  const bundle = { [MIME]: payload, 'text/plain': 'x' };
  const model = {
    trusted: false,
    metadata: {},
    get data(): never {
      throw new Error('data read: a copy of the whole bundle');
    },
    setData: () => undefined,
    toJSON: () => ({ output_type: 'display_data', metadata: {}, data: bundle })
  } as unknown as IRenderMime.IMimeModel;
  assert.equal(payloadOf(model, MIME), payload);
});

test('any other model (no toJSON, or one without the MIME type) is read through data', () => {
  const payload = { version: 1 };
  const plain = { trusted: false, metadata: {}, data: { [MIME]: payload }, setData: () => undefined };
  assert.equal(payloadOf(plain as unknown as IRenderMime.IMimeModel, MIME), payload);
  const odd = { ...plain, toJSON: () => ({ data: {} }) };
  assert.equal(payloadOf(odd as unknown as IRenderMime.IMimeModel, MIME), payload);
  const weird = { ...plain, toJSON: () => null };
  assert.equal(payloadOf(weird as unknown as IRenderMime.IMimeModel, MIME), payload);
});
