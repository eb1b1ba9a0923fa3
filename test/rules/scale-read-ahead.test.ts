// The scale check's reads started before the rules decide (src/rules/validator.ts readAheadFor),
// for an authenticated caller only: a check with `readAhead` decides every update exactly as the
// same check without it, its reads start while validate() has not yet awaited the decision, a
// change the rules refuse never awaits them (nor fails on them), and an update that does not
// change numNodes as sent starts none. A caller not known to be the API server starts none either.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildPolicy } from '../../src/rules/policy.ts';
import { createValidator } from '../../src/rules/validator.ts';
import type { ScaleChange, ScaleCheck, ScaleCheckResult, ScaleTarget } from '../../src/rules/contract.ts';
import { OMIT_VALUE } from '../../src/field/errors.ts';
import { finished, trainJob, update as unauthenticated, variant } from './fixtures.ts';

const update = (object: unknown, oldObject: unknown) => ({
  ...unauthenticated(object, oldObject),
  callerAuthenticated: true as const,
});

const policy = buildPolicy();
const old = trainJob();
const running = variant(old, (o) => (o.spec.suspend = false));

/** The judgment, a function of its target and the trainer line: as a real check's is of its reads. */
function judge(target: ScaleTarget, trainer: ScaleChange['trainer']): ScaleCheckResult {
  const n = (target.object as { spec: { trainer: { numNodes: unknown } } }).spec.trainer.numNodes;
  if (n === 3)
    return {
      causes: [
        {
          type: 'FieldValueForbidden',
          field: 'spec.trainer.numNodes',
          value: OMIT_VALUE,
          detail: 'no',
          origin: 'scale-check',
        },
      ],
      warnings: [],
      transient: true,
    };
  return { causes: [], warnings: [`${target.namespace}/${target.name} to ${String(n)} on ${trainer.id}`] };
}

function checks() {
  const log: string[] = [];
  const plain: ScaleCheck = async (change) => {
    log.push('check');
    return judge(change, change.trainer);
  };
  const ahead: ScaleCheck = Object.assign(async (change: ScaleChange) => judge(change, change.trainer), {
    readAhead: (target: ScaleTarget) => {
      log.push('read-ahead');
      return async (trainer: ScaleChange['trainer']) => {
        log.push('judged');
        return judge(target, trainer);
      };
    },
  });
  return { log, plain, ahead };
}

const cases: [string, unknown, unknown][] = [
  ['suspended, 1 -> 2', variant(old, (o) => (o.spec.trainer.numNodes = 2)), old],
  ['suspended, 1 -> 3 (refused for now by the judgment)', variant(old, (o) => (o.spec.trainer.numNodes = 3)), old],
  ['running, 1 -> 2 (the rules refuse)', variant(running, (o) => (o.spec.trainer.numNodes = 2)), running],
  [
    'suspended and scaled in one update',
    variant(running, (o) => ((o.spec.suspend = true), (o.spec.trainer.numNodes = 2))),
    running,
  ],
  [
    'finished, 1 -> 2',
    variant(finished(old, 'Complete'), (o) => (o.spec.trainer.numNodes = 2)),
    finished(old, 'Complete'),
  ],
  [
    'numNodes as 2n against 2 (the same count)',
    variant(old, (o) => (o.spec.trainer.numNodes = 2n)),
    variant(old, (o) => (o.spec.trainer.numNodes = 2)),
  ],
  ['numNodes removed', variant(old, (o) => delete o.spec.trainer.numNodes), old],
  ['a label only', variant(old, (o) => (o.metadata.labels = { a: 'b' })), old],
  ['an image change', variant(old, (o) => (o.spec.trainer.image = 'other:2')), old],
];

const withoutTiming = ({ readWaitMs: _, ...d }: { readWaitMs?: number }) => d;

describe('scale reads started before the decision', () => {
  for (const [name, object, oldObject] of cases)
    it(`decides as the check without read-ahead: ${name}`, async () => {
      const c = checks();
      const expected = await createValidator({ policy, scaleCheck: c.plain }).validate(update(object, oldObject));
      const got = await createValidator({ policy, scaleCheck: c.ahead }).validate(update(object, oldObject));
      assert.deepEqual(withoutTiming(got), withoutTiming(expected));
    });

  it('starts the reads before validate() awaits the decision, and judges with them alone', async () => {
    const c = checks();
    const pending = createValidator({ policy, scaleCheck: c.ahead }).validate(
      update(
        variant(old, (o) => (o.spec.trainer.numNodes = 2)),
        old,
      ),
    );
    assert.deepEqual(c.log, ['read-ahead'], 'started synchronously, before the first await');
    const d = await pending;
    assert.deepEqual(c.log, ['read-ahead', 'judged']);
    assert.equal(typeof d.readWaitMs, 'number');
  });

  it('a change the rules refuse leaves its reads unawaited, and reads that fail do not matter', async () => {
    const log: string[] = [];
    const failing: ScaleCheck = Object.assign(async () => ({ causes: [], warnings: [] }), {
      readAhead: () => {
        log.push('read-ahead');
        const reads = Promise.reject(new Error('connection refused'));
        reads.catch(() => {});
        return () => reads;
      },
    });
    const d = await createValidator({ policy, scaleCheck: failing }).validate(
      update(
        variant(running, (o) => (o.spec.trainer.numNodes = 2)),
        running,
      ),
    );
    assert.deepEqual(log, ['read-ahead']);
    assert.deepEqual(
      d.causes.map((x) => x.origin),
      ['trainer-numNodes-while-suspended'],
    );
    assert.equal(d.readWaitMs, undefined);
  });

  it('starts no reads when numNodes as sent is unchanged', async () => {
    const c = checks();
    await createValidator({ policy, scaleCheck: c.ahead }).validate(
      update(
        variant(old, (o) => (o.metadata.labels = { a: 'b' })),
        old,
      ),
    );
    assert.deepEqual(c.log, []);
  });

  it('starts no reads before the decision for a caller not known to be the API server', async () => {
    const c = checks();
    const pending = createValidator({ policy, scaleCheck: c.ahead }).validate(
      unauthenticated(
        variant(old, (o) => (o.spec.trainer.numNodes = 2)),
        old,
      ),
    );
    assert.deepEqual(c.log, [], 'nothing started before the decision');
    const d = await pending;
    assert.deepEqual(d.causes, []);
    assert.deepEqual(c.log, [], 'judged by the check itself, after the rules allowed it');
  });
});
