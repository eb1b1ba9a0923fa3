// Long lists: one field error or unknown-field warning per item, 150,000 of them. Appending them
// with push(...list) would throw RangeError past ~100,000 arguments (an in-band internal error).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { review, trainJob } from '../webhook/fixtures.ts';
import { assertWellFormedAnswer, crdServer } from './support.ts';

const N = 150_000;

describe('one error per item of a 150,000-item list', () => {
  let server: Awaited<ReturnType<typeof crdServer>>;
  before(async () => {
    server = await crdServer();
  });

  const trainer = (extra: Record<string, unknown>) =>
    trainJob({ trainer: { image: 'ghcr.io/acme/train:1.0', numNodes: 1, ...extra } });
  const cases: Record<string, { object: Record<string, unknown>; op: string; code?: number }> = {
    'command items of the wrong type': { object: trainer({ command: Array(N).fill(1) }), op: 'CREATE', code: 422 },
    'env items that are not objects': { object: trainer({ env: Array(N).fill(1) }), op: 'UPDATE', code: 422 },
    'env items with an unknown field (one warning each)': {
      object: trainer({ env: Array.from({ length: N / 10 }, (_, i) => ({ name: `V${i}`, x: 1 })) }),
      op: 'UPDATE',
    },
  };

  for (const [what, { object, op, code }] of Object.entries(cases)) {
    it(`${what}: ${op} is answered in-band`, async () => {
      {
        const answer = await server.validate(
          JSON.stringify(review(op, { object, oldObject: op === 'UPDATE' ? trainJob() : null })),
        );
        assertWellFormedAnswer(answer, `${what} ${op}`);
        if (code !== undefined) assert.equal(answer.json!.response.status?.code, code, answer.body.slice(0, 300));
      }
    });
  }
});
