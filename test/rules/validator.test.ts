// The validator's one I/O step: the JobSet read happens only for an otherwise allowed numNodes change.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildPolicy } from '../../src/rules/policy.ts';
import { createValidator, type JobSetReader } from '../../src/validator.ts';
import type { JobSetRead } from '../../src/rules/jobset-guard.ts';
import { trainJob, variant } from './fixtures.ts';

const policy = buildPolicy();
const old = trainJob();
const scaled = variant(old, (o) => (o.spec.trainer.numNodes = 2));

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

const update = (object: unknown, oldObject: unknown) => ({ uid: 'u', operation: 'UPDATE' as const, namespace: 'team-a', name: 'llama-ft', object, oldObject, dryRun: false });

describe('validator', () => {
  it('reads the JobSet of the same namespace and name for a numNodes change', async () => {
    const r = reader({ kind: 'not-found' });
    const d = await createValidator({ policy, readJobSet: r.read }).validate(update(scaled, old));
    assert.deepEqual(r.calls, ['team-a/llama-ft']);
    assert.equal(d.causes.length, 0);
  });
  it('does not read the JobSet when nothing about numNodes changes', async () => {
    const r = reader({ kind: 'not-found' });
    await createValidator({ policy, readJobSet: r.read }).validate(update(variant(old, (o) => (o.metadata.labels = { a: 'b' })), old));
    assert.deepEqual(r.calls, []);
  });
  it('a reader that throws is a denial, not an allow', async () => {
    const r = reader(new Error('connection refused'));
    const d = await createValidator({ policy, readJobSet: r.read }).validate(update(scaled, old));
    assert.deepEqual(d.causes.map((c) => c.type), ['InternalError']);
  });
  it('active pods refuse the change', async () => {
    const r = reader({ kind: 'found', jobSet: { status: { replicatedJobsStatus: [{ name: 'node', active: 1 }] } } });
    const d = await createValidator({ policy, readJobSet: r.read }).validate(update(scaled, old));
    assert.deepEqual(d.causes.map((c) => c.type), ['FieldValueForbidden']);
  });
  it('without cluster access the change is allowed with a warning', async () => {
    const d = await createValidator({ policy }).validate(update(scaled, old));
    assert.equal(d.causes.length, 0);
    assert.ok(d.warnings.some((w) => /not checked/.test(w)));
  });
  it('DELETE and CONNECT are allowed without evaluating anything', async () => {
    const v = createValidator({ policy });
    for (const operation of ['DELETE', 'CONNECT'] as const) {
      assert.deepEqual(await v.validate({ uid: 'u', operation, dryRun: false, object: 'garbage', oldObject: 42 }), { causes: [], warnings: [] });
    }
  });
});
