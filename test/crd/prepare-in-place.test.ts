// prepareDecodedForUpdate (the decision's path: decode made the new object, so it is prepared in
// place and shares the old status) gives what prepareForUpdate gives on a copy, and leaves the old
// object as it was.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { trainJobCrd, projectRoot } from './fixtures.ts';

const reviews = readdirSync(path.join(projectRoot, 'examples'))
  .filter((f) => f.endsWith('.json'))
  .map((f) => [f, JSON.parse(readFileSync(path.join(projectRoot, 'examples', f), 'utf8')).request] as const)
  .filter(([, r]) => r.operation === 'UPDATE');

describe('preparing a decoded update in place', () => {
  const crd = trainJobCrd();
  it('there are example updates', () => assert.ok(reviews.length >= 3));
  for (const [name, req] of reviews) {
    for (const variant of ['as sent', 'status and metadata differ'] as const) {
      it(`${name}, ${variant}`, () => {
        const oldObj = crd.decode(req.oldObject).object as Record<string, any>;
        const sent = structuredClone(req.object);
        if (variant !== 'as sent') {
          sent.status = { conditions: [] };
          sent.metadata = { ...sent.metadata, uid: '', generation: 7, creationTimestamp: null };
          delete oldObj.status;
        }
        const oldBefore = structuredClone(oldObj);
        const copy = crd.prepareForUpdate(crd.decode(sent).object, oldObj);
        const decoded = crd.decode(sent).object;
        const inPlace = crd.prepareDecodedForUpdate(decoded, oldObj);
        assert.equal(inPlace, decoded);
        assert.deepEqual(inPlace, copy);
        assert.deepEqual(oldObj, oldBefore);
        assert.deepEqual(crd.validateUpdatePrepared(inPlace, oldObj), crd.validateUpdatePrepared(copy, oldObj));
      });
    }
  }
});
