// The validator's one I/O step: the read of the JobSet's Jobs happens only for an admitted numNodes
// change, and it only ever adds a warning: pods that still run, a failed read or no cluster never refuse.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildPolicy } from '../../src/rules/policy.ts';
import { createValidator, type JobSetReader } from '../../src/rules/validator.ts';
import type { JobSetRead } from '../../src/rules/jobset-pods.ts';
import { finished, trainJob, variant } from './fixtures.ts';

const policy = buildPolicy();
const old = trainJob();
const scaled = variant(old, (o) => (o.spec.trainer.numNodes = 2));
const running = variant(old, (o) => (o.spec.suspend = false));
/** Issue 8: a running job suspended and scaled in one update (what Kueue does). */
const suspendedAndScaled = variant(running, (o) => ((o.spec.suspend = true), (o.spec.trainer.numNodes = 2)));
const twoPodsRunning: JobSetRead = {
  kind: 'read',
  jobs: [{ metadata: { name: 'llama-ft-node-0' }, status: { active: 2, ready: 2 } }],
};

function reader(result: JobSetRead | Error): { read: JobSetReader; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    read: async (ns, name) => {
      calls.push(`${ns}/${name}`);
      if (result instanceof Error) throw result;
      return result;
    },
  };
}

const update = (object: unknown, oldObject: unknown) => ({
  uid: 'u',
  operation: 'UPDATE' as const,
  namespace: 'team-a',
  name: 'llama-ft',
  object,
  oldObject,
  dryRun: false,
});

describe('validator', () => {
  it('reads the Jobs of the JobSet of the same namespace and name for a numNodes change', async () => {
    const r = reader({ kind: 'read', jobs: [] });
    const d = await createValidator({ policy, readJobSet: r.read }).validate(update(scaled, old));
    assert.deepEqual(r.calls, ['team-a/llama-ft']);
    assert.equal(d.causes.length, 0);
  });
  it('does not read when nothing about numNodes changes', async () => {
    const r = reader({ kind: 'read', jobs: [] });
    await createValidator({ policy, readJobSet: r.read }).validate(
      update(
        variant(old, (o) => (o.metadata.labels = { a: 'b' })),
        old,
      ),
    );
    assert.deepEqual(r.calls, []);
  });
  it('does not read for a refused change, and the refusal carries no rebuild warning', async () => {
    const r = reader(twoPodsRunning);
    const d = await createValidator({ policy, readJobSet: r.read }).validate(
      update(
        variant(running, (o) => (o.spec.trainer.numNodes = 2)),
        running,
      ),
    );
    assert.deepEqual(r.calls, []);
    assert.deepEqual(
      d.causes.map((c) => c.origin),
      ['trainer-numNodes-while-suspended'],
    );
    assert.deepEqual(d.warnings, []);
  });
  it('suspend and scale in one update while two pods run: admitted, warning that the rebuild waits for the 2 pods', async () => {
    const d = await createValidator({ policy, readJobSet: reader(twoPodsRunning).read }).validate(
      update(suspendedAndScaled, running),
    );
    assert.deepEqual(d.causes, []);
    assert.equal(d.warnings.length, 2, d.warnings.join('\n'));
    assert.match(
      d.warnings[0],
      /rebuilt with 2 nodes as soon as it is suspended and none of its pods runs or is terminating/,
    );
    assert.doesNotMatch(d.warnings[0], /on resume/);
    assert.match(
      d.warnings[1],
      /^JobSet team-a\/llama-ft still has 2 pods \(2 pending or running; Job llama-ft-node-0: 2 active\)/,
    );
  });
  it('a reader that throws admits the change with a warning (fail open: the read is advisory)', async () => {
    const d = await createValidator({ policy, readJobSet: reader(new Error('connection refused')).read }).validate(
      update(scaled, old),
    );
    assert.deepEqual(d.causes, []);
    assert.ok(
      d.warnings.some((w) => /could not be counted \(connection refused\)/.test(w)),
      d.warnings.join('\n'),
    );
  });
  it('a failed read admits the change with a warning', async () => {
    const d = await createValidator({
      policy,
      readJobSet: reader({ kind: 'failed', error: 'reading its Jobs failed: HTTP 403: forbidden' }).read,
    }).validate(update(scaled, old));
    assert.deepEqual(d.causes, []);
    assert.ok(
      d.warnings.some((w) => /HTTP 403/.test(w)),
      d.warnings.join('\n'),
    );
  });
  it('without cluster access the change is allowed with a warning', async () => {
    const d = await createValidator({ policy }).validate(update(scaled, old));
    assert.equal(d.causes.length, 0);
    assert.ok(d.warnings.some((w) => /not checked/.test(w)));
  });
  it('a finished job is refused by the table, whatever runs', async () => {
    const r = reader({ kind: 'read', jobs: [] });
    const done = finished(old, 'Complete');
    const d = await createValidator({ policy, readJobSet: r.read }).validate(
      update(
        variant(done, (o) => (o.spec.trainer.numNodes = 2)),
        done,
      ),
    );
    assert.deepEqual(
      d.causes.map((c) => c.origin),
      ['trainer-numNodes-not-after-finish'],
    );
    assert.deepEqual(r.calls, []);
  });
  it('DELETE and CONNECT are allowed without evaluating anything', async () => {
    const v = createValidator({ policy });
    for (const operation of ['DELETE', 'CONNECT'] as const) {
      assert.deepEqual(await v.validate({ uid: 'u', operation, dryRun: false, object: 'garbage', oldObject: 42 }), {
        causes: [],
        warnings: [],
      });
    }
  });
});
