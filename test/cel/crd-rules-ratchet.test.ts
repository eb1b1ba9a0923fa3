// CRD rules without oldSelf are ratcheted on UPDATE (a failure on a value the update leaves
// unchanged is a warning, as the API server returns it) and fail on a changed value. Whether a
// located value ratchets is computed only when such a rule fails (src/cel/locate.ts): both ways here.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RuleRun } from '../../src/cel/run-rules.ts';
import { runCrdRules } from '../../src/cel/crd-rules.ts';
import { loadEmbeddedPolicy } from '../../src/rules/crd-policy.ts';
import { trainJob } from '../rules/fixtures.ts';
import { errorString } from '../../src/field/errors.ts';

const policy = await loadEmbeddedPolicy();
const crd = policy.crd!;

function run(
  oldUri: string | undefined,
  newUri: string,
  oldManagedBy = 'trainer.kubeflow.org/trainjob-controller',
  newManagedBy = oldManagedBy,
) {
  const oldObj: Record<string, any> = trainJob();
  const obj: Record<string, any> = trainJob();
  if (oldUri !== undefined) oldObj.spec.initializer = { dataset: { storageUri: oldUri } };
  obj.spec.initializer = { dataset: { storageUri: newUri } };
  oldObj.spec.managedBy = oldManagedBy;
  obj.spec.managedBy = newManagedBy;
  const result = runCrdRules(crd.rules, new RuleRun(true), crd.checks.root, obj, crd.checks.correlate(obj, oldObj));
  return { errors: result.errors.map(errorString), warnings: result.warnings };
}

const uriRule = 'spec.initializer.dataset.storageUri: Invalid value: "bad"';

describe('CRD rules without oldSelf on UPDATE', () => {
  it('a failing value the update leaves unchanged is a warning', () => {
    const { errors, warnings } = run('bad', 'bad');
    assert.deepEqual(errors, []);
    assert.equal(warnings.length, 1);
    assert.ok(warnings[0].startsWith(uriRule), warnings[0]);
  });
  it('a failing value the update changes is an error', () => {
    const { errors, warnings } = run('hf://x', 'bad');
    assert.deepEqual(warnings, []);
    assert.equal(errors.length, 1);
    assert.ok(errors[0].startsWith(uriRule), errors[0]);
  });
  it('a failing value that is new (no old value to correlate) is an error', () => {
    const { errors } = run(undefined, 'bad');
    assert.equal(errors.length, 1);
  });
  it('a failing value whose sibling changed: its own value is unchanged, so a warning', () => {
    const { errors, warnings } = run('bad', 'bad', 'other', 'other2');
    assert.deepEqual(
      errors.filter((e) => e.startsWith('spec.initializer')),
      [],
    );
    assert.ok(warnings.some((w) => w.startsWith(uriRule)));
    assert.ok(
      errors.some((e) => e.startsWith('spec.managedBy')),
      'the changed managedBy fails as an error',
    );
  });
});
