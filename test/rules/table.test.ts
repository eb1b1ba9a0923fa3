// The rule table, row by row: allow and deny, add, change and remove, around suspension.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildPolicy } from '../../src/rules/policy.ts';
import { decideUpdate } from '../../src/rules/decide.ts';
import { errorString } from '../../src/field/errors.ts';
import { RULES } from '../../src/rules/table.ts';
import { trainJob, variant, type TrainJob } from './fixtures.ts';

const policy = buildPolicy();
const running = variant(trainJob(), (o) => (o.spec.suspend = false));
const suspended = trainJob();

interface Case {
  name: string;
  old: TrainJob;
  change: (o: TrainJob) => void;
  /** Expected causes as `field type origin`; empty means allowed. */
  want: string[];
}

const cases: Case[] = [
  // spec.trainer: immutable fields, add/change/remove all count, suspended or not.
  { name: 'image changed', old: suspended, change: (o) => (o.spec.trainer.image = 'x:2'), want: ['spec.trainer.image FieldValueInvalid trainer-image-immutable'] },
  { name: 'image removed', old: suspended, change: (o) => delete o.spec.trainer.image, want: ['spec.trainer.image FieldValueInvalid trainer-image-immutable'] },
  { name: 'image added', old: variant(suspended, (o) => delete o.spec.trainer.image), change: (o) => (o.spec.trainer.image = 'x:1'), want: ['spec.trainer.image FieldValueInvalid trainer-image-immutable'] },
  { name: 'command reordered (atomic list)', old: suspended, change: (o) => o.spec.trainer.command.reverse(), want: ['spec.trainer.command FieldValueInvalid trainer-command-immutable'] },
  { name: 'args appended', old: suspended, change: (o) => o.spec.trainer.args.push('--x'), want: ['spec.trainer.args FieldValueInvalid trainer-args-immutable'] },
  { name: 'env reordered (list-type map: no change)', old: running, change: (o) => o.spec.trainer.env.reverse(), want: [] },
  { name: 'env value changed', old: suspended, change: (o) => (o.spec.trainer.env[0].value = '0.01'), want: ['spec.trainer.env FieldValueInvalid trainer-env-immutable'] },
  { name: 'env added', old: variant(suspended, (o) => delete o.spec.trainer.env), change: (o) => (o.spec.trainer.env = [{ name: 'A', value: '1' }]), want: ['spec.trainer.env FieldValueInvalid trainer-env-immutable'] },
  { name: 'resourcesPerNode changed', old: suspended, change: (o) => (o.spec.trainer.resourcesPerNode.limits['nvidia.com/gpu'] = 4), want: ['spec.trainer.resourcesPerNode FieldValueInvalid trainer-resourcesPerNode-immutable'] },
  { name: 'numProcPerNode removed', old: suspended, change: (o) => delete o.spec.trainer.numProcPerNode, want: ['spec.trainer.numProcPerNode FieldValueInvalid trainer-numProcPerNode-immutable'] },
  { name: 'a field the table does not name is immutable', old: suspended, change: (o) => (o.spec.trainer.futureField = 'x'), want: ['spec.trainer.futureField FieldValueInvalid trainer-unnamed-field-immutable'] },
  {
    name: 'trainer removed entirely (every field it had is a change; numNodes may go since the job is suspended)',
    old: suspended,
    change: (o) => delete o.spec.trainer,
    want: ['args', 'command', 'env', 'image', 'numProcPerNode', 'resourcesPerNode'].map((f) => `spec.trainer.${f} FieldValueInvalid trainer-${f}-immutable`),
  },
  // spec.trainer.numNodes: only around a suspension.
  { name: 'numNodes changed while suspended before and after', old: suspended, change: (o) => (o.spec.trainer.numNodes = 2), want: [] },
  { name: 'numNodes changed together with suspending', old: running, change: (o) => ((o.spec.suspend = true), (o.spec.trainer.numNodes = 2)), want: [] },
  { name: 'numNodes changed together with resuming', old: suspended, change: (o) => ((o.spec.suspend = false), (o.spec.trainer.numNodes = 3)), want: [] },
  { name: 'numNodes changed while running', old: running, change: (o) => (o.spec.trainer.numNodes = 2), want: ['spec.trainer.numNodes FieldValueForbidden trainer-numNodes-while-suspended'] },
  { name: 'numNodes changed, suspend absent on both sides (nil is running)', old: variant(running, (o) => delete o.spec.suspend), change: (o) => (o.spec.trainer.numNodes = 2), want: ['spec.trainer.numNodes FieldValueForbidden trainer-numNodes-while-suspended'] },
  { name: 'numNodes added while running', old: variant(running, (o) => delete o.spec.trainer.numNodes), change: (o) => (o.spec.trainer.numNodes = 2), want: ['spec.trainer.numNodes FieldValueForbidden trainer-numNodes-while-suspended'] },
  { name: 'numNodes removed while suspended', old: suspended, change: (o) => delete o.spec.trainer.numNodes, want: [] },
  { name: 'numNodes unchanged while running: nothing to refuse', old: running, change: (o) => (o.metadata.labels = { a: 'b' }), want: [] },
  // Outside spec.trainer: upstream's transition rules (an absent old value may be set).
  { name: 'runtimeRef changed', old: suspended, change: (o) => (o.spec.runtimeRef.name = 'other'), want: ['spec.runtimeRef FieldValueInvalid runtimeRef-immutable'] },
  { name: 'managedBy changed', old: suspended, change: (o) => (o.spec.managedBy = 'kueue.x-k8s.io/multikueue'), want: ['spec.managedBy FieldValueInvalid managedBy-immutable'] },
  { name: 'managedBy added where absent (upstream allows)', old: variant(suspended, (o) => delete o.spec.managedBy), change: (o) => (o.spec.managedBy = 'kueue.x-k8s.io/multikueue'), want: [] },
  { name: 'activeDeadlineSeconds changed', old: variant(suspended, (o) => (o.spec.activeDeadlineSeconds = 60)), change: (o) => (o.spec.activeDeadlineSeconds = 61), want: ['spec.activeDeadlineSeconds FieldValueInvalid activeDeadlineSeconds-immutable'] },
  { name: 'initializer changed', old: variant(suspended, (o) => (o.spec.initializer = { model: { storageUri: 'hf://a' } })), change: (o) => (o.spec.initializer.model.storageUri = 'hf://b'), want: ['spec.initializer FieldValueInvalid initializer-immutable'] },
  { name: 'runtimePatches added while running', old: running, change: (o) => (o.spec.runtimePatches = [{ manager: 'kueue' }]), want: ['spec.runtimePatches FieldValueForbidden runtimePatches-while-suspended'] },
  { name: 'runtimePatches added while suspended', old: suspended, change: (o) => (o.spec.runtimePatches = [{ manager: 'kueue' }]), want: [] },
  { name: 'several violations are all reported', old: running, change: (o) => ((o.spec.trainer.image = 'x:2'), (o.spec.trainer.numNodes = 4)), want: ['spec.trainer.image FieldValueInvalid trainer-image-immutable', 'spec.trainer.numNodes FieldValueForbidden trainer-numNodes-while-suspended'] },
];

describe('rule table (no CRD: the table alone)', () => {
  for (const c of cases) {
    it(c.name, () => {
      const verdict = decideUpdate(policy, variant(c.old, c.change), c.old);
      const got = verdict.causes.map((e) => `${e.field} ${e.type} ${e.origin}`).sort();
      assert.deepEqual(got, [...c.want].sort(), verdict.causes.map(errorString).join('\n'));
    });
  }
});

describe('messages', () => {
  it('an immutable field names the field, the new value and the reason', () => {
    const [cause] = decideUpdate(policy, variant(suspended, (o) => (o.spec.trainer.image = 'x:2')), suspended).causes;
    assert.equal(errorString(cause), 'spec.trainer.image: Invalid value: "x:2": field is immutable');
  });
  it('a numNodes change on a running job says to suspend first', () => {
    const [cause] = decideUpdate(policy, variant(running, (o) => (o.spec.trainer.numNodes = 2)), running).causes;
    assert.match(errorString(cause), /^spec\.trainer\.numNodes: Forbidden: .*suspend/);
  });
});

describe('warnings on allowed numNodes changes', () => {
  it('says the JobSet is rebuilt with the new count', () => {
    const v = decideUpdate(policy, variant(suspended, (o) => (o.spec.trainer.numNodes = 3)), suspended);
    assert.deepEqual(v.numNodesChange, { from: 1, to: 3 });
    assert.ok(v.warnings.some((w) => /rebuilt with 3 nodes/.test(w)), v.warnings.join('\n'));
  });
  it('numNodes 0 is allowed with a warning that the job completes at once', () => {
    const v = decideUpdate(policy, variant(suspended, (o) => (o.spec.trainer.numNodes = 0)), suspended);
    assert.equal(v.causes.length, 0);
    assert.ok(v.warnings.some((w) => /complete at once/.test(w)), v.warnings.join('\n'));
  });
  it('a refused change asks for no JobSet check', () => {
    const v = decideUpdate(policy, variant(running, (o) => (o.spec.trainer.numNodes = 3)), running);
    assert.equal(v.numNodesChange, undefined);
  });
});

describe('the table reads like the policy', () => {
  it('every row has an id, a field, a scope, CEL, a message and a reason', () => {
    for (const row of RULES) for (const key of ['id', 'field', 'scope', 'rule', 'message', 'reason'] as const) assert.ok(row[key], `${row.id}.${key}`);
    assert.equal(new Set(RULES.map((r) => r.id)).size, RULES.length, 'ids are unique');
  });
});
