// After a restore, the restorer gives back `.spec.versions` (an atomic list for server-side apply)
// so that Helm 4's next apply of the CRD cannot conflict with it: only its own and other Update entries change,
// the entry goes when nothing is left in it, the resourceVersion is tested, and managed fields it
// cannot read leave the object alone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { disclaimVersionsOps } from '../../src/rules/crd-patch-ownership.ts';

const ME = 'trainjob-webhook-crd-patch-restorer';
const helm = {
  manager: 'helm',
  operation: 'Apply',
  apiVersion: 'apiextensions.k8s.io/v1',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:metadata': { 'f:labels': {} }, 'f:spec': { 'f:group': {}, 'f:names': {}, 'f:scope': {} } },
};
const mine = (fieldsV1: unknown) => ({
  manager: ME,
  operation: 'Update',
  apiVersion: 'apiextensions.k8s.io/v1',
  time: '2026-01-01T00:00:00Z',
  fieldsType: 'FieldsV1',
  fieldsV1,
});
const crd = (managedFields: unknown, resourceVersion: unknown = '7') => ({
  metadata: { name: 'trainjobs.trainer.kubeflow.org', resourceVersion, managedFields },
});

describe('giving back .spec.versions after a restore', () => {
  it("drops the restorer's entry that owned only .spec.versions; the others are untouched", () => {
    const other = mine({ 'f:spec': { 'f:versions': {} } });
    const ops = disclaimVersionsOps(crd([helm, other]), ME);
    assert.deepEqual(ops, [
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'replace', path: '/metadata/managedFields', value: [helm] },
    ]);
  });

  it('keeps what else its entry owns', () => {
    const ops = disclaimVersionsOps(
      crd([mine({ 'f:metadata': { 'f:annotations': {} }, 'f:spec': { 'f:versions': {}, 'f:scope': {} } })]),
      ME,
    );
    assert.deepEqual((ops?.[1] as { value: unknown }).value, [
      mine({ 'f:metadata': { 'f:annotations': {} }, 'f:spec': { 'f:scope': {} } }),
    ]);
  });

  it("an install's `kubectl patch` (an Update of another manager) gives .spec.versions back too: Helm 4's next apply would conflict with it just the same", () => {
    const kubectlPatch = { ...mine({ 'f:spec': { 'f:versions': {} } }), manager: 'kubectl-patch' };
    const ops = disclaimVersionsOps(crd([helm, kubectlPatch]), ME);
    assert.deepEqual(ops, [
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'replace', path: '/metadata/managedFields', value: [helm] },
    ]);
  });

  it("an Apply owner's .spec.versions (Helm 4's own) is not ours to give back", () => {
    const helmOwnsVersions = { ...helm, fieldsV1: { 'f:spec': { 'f:versions': {} } } };
    assert.equal(disclaimVersionsOps(crd([helmOwnsVersions]), ME), undefined);
    assert.equal(disclaimVersionsOps(crd([helm, mine({ 'f:spec': { 'f:scope': {} } })]), ME), undefined);
  });

  it('managed fields it cannot read leave the object alone (never throws)', () => {
    for (const hostile of [
      undefined,
      null,
      'x',
      crd('not a list'),
      crd([null, 3, 'x', { manager: ME, fieldsV1: 'f:spec' }, { manager: ME, fieldsV1: { 'f:spec': [] } }]),
      crd([mine({ 'f:spec': { 'f:versions': {} } })], ''),
      crd([mine({ 'f:spec': { 'f:versions': {} } })], 7),
      { metadata: null },
    ]) {
      assert.equal(disclaimVersionsOps(hostile, ME), undefined, JSON.stringify(hostile));
    }
  });

  it('entries it cannot read are kept as they are when its own is edited', () => {
    const odd = [null, 'x', { manager: ME, fieldsV1: 'f:spec' }];
    const ops = disclaimVersionsOps(crd([...odd, mine({ 'f:spec': { 'f:versions': {} } })]), ME);
    assert.deepEqual((ops?.[1] as { value: unknown }).value, odd);
  });
});
