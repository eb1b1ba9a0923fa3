// The JobSet guard as a pure function of the JobSet read.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { guardNumNodesChange, type JobSetRead } from '../../src/rules/jobset-guard.ts';
import { errorString } from '../../src/field/errors.ts';

const jobSet = (statuses: unknown): JobSetRead => ({ kind: 'found', jobSet: { status: { replicatedJobsStatus: statuses } } });

const cases: { name: string; read: JobSetRead; causes: string[]; warns: boolean }[] = [
  { name: 'no JobSet yet: fine', read: { kind: 'not-found' }, causes: [], warns: false },
  { name: 'JobSet with nothing active: fine', read: jobSet([{ name: 'node', active: 0, ready: 0 }]), causes: [], warns: false },
  { name: 'JobSet without status: fine', read: { kind: 'found', jobSet: {} }, causes: [], warns: false },
  { name: 'JobSet with an active replicated job: refused', read: jobSet([{ name: 'node', active: 2 }]), causes: ['FieldValueForbidden'], warns: false },
  { name: 'one active among several: refused', read: jobSet([{ name: 'init', active: 0 }, { name: 'node', active: 1 }]), causes: ['FieldValueForbidden'], warns: false },
  { name: 'read failed: refused as an internal error (fail closed)', read: { kind: 'failed', error: 'forbidden' }, causes: ['InternalError'], warns: false },
  { name: 'no cluster access: allowed with a warning', read: { kind: 'no-cluster' }, causes: [], warns: true },
  { name: 'hostile status shapes are tolerated', read: jobSet('nope'), causes: [], warns: false },
  { name: 'hostile entries are tolerated', read: jobSet([null, 7, { active: 'x' }, { name: 'node', active: 1 }]), causes: ['FieldValueForbidden'], warns: false },
];

describe('JobSet guard', () => {
  for (const c of cases) {
    it(c.name, () => {
      const r = guardNumNodesChange(c.read, 'ns/job');
      assert.deepEqual(r.causes.map((e) => e.type), c.causes);
      assert.equal(r.warnings.length > 0, c.warns);
      for (const e of r.causes) assert.equal(e.field, 'spec.trainer.numNodes');
    });
  }
  it('names the replicated job and its active count', () => {
    const [cause] = guardNumNodesChange(jobSet([{ name: 'node', active: 2 }]), 'ns/job').causes;
    assert.match(errorString(cause), /JobSet ns\/job still has active pods \(node: 2\)/);
  });
});
