// PVC retention through a rebuild: release what the JobSet owns (as JSON patches that test the
// resourceVersion), refuse when a claim cannot be kept, hand retained claims back afterwards.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import jsonpatch from 'fast-json-patch';
import { planPvcHandBack, planPvcRelease, workspaceClaims, type PvcPatch } from '../../src/rebuild/pvc-plan.ts';
import type { JobSet, PersistentVolumeClaim } from '../../src/api/objects.ts';
import { jobSetOwner, pvc, trainJob, trainerJobSet } from './fixtures.ts';

const tj = trainJob('ttpub', {}, 'torchtune-llama3.2-1b');
const oldJs = trainerJobSet('ttpub');
const newJs: JobSet = {
  ...trainerJobSet('ttpub'),
  metadata: { ...trainerJobSet('ttpub').metadata, uid: 'jobset-uid-new' },
};
const owned = () =>
  pvc('initializer-ttpub', {
    labels: { 'jobset.sigs.k8s.io/jobset-name': 'ttpub' },
    ownerReferences: [jobSetOwner(oldJs)],
  });
const unowned = () => pvc('initializer-other', { labels: { 'jobset.sigs.k8s.io/jobset-name': 'ttpub' } });

function applied(p: PersistentVolumeClaim, patch: PvcPatch): PersistentVolumeClaim {
  return jsonpatch.applyPatch(structuredClone(p), patch.ops as jsonpatch.Operation[], true, false).newDocument;
}

describe('planPvcRelease', () => {
  it('a PVC without an owner (no retention policy, as published) is never touched', () => {
    const plan = planPvcRelease(tj, oldJs, [unowned()]);
    assert.deepEqual(plan, { ok: true, release: [], retained: [] });
  });

  it('a PVC the JobSet owns (whenDeleted: Delete) is released to the TrainJob and marked for hand-back', () => {
    const plan = planPvcRelease(tj, oldJs, [owned(), unowned()]);
    assert.ok(plan.ok);
    assert.deepEqual(plan.retained, ['initializer-ttpub']);
    assert.equal(plan.release.length, 1);
    assert.deepEqual(plan.release[0].ops[0], { op: 'test', path: '/metadata/resourceVersion', value: '7' });
    const after = applied(owned(), plan.release[0]);
    assert.deepEqual(after.metadata.ownerReferences, [
      {
        apiVersion: 'trainer.kubeflow.org/v1alpha1',
        kind: 'TrainJob',
        name: 'ttpub',
        uid: tj.metadata.uid,
        controller: false,
        blockOwnerDeletion: false,
      },
    ]);
    assert.equal(after.metadata.labels?.['trainjob-webhook.kubeflow.org/retained-for'], tj.metadata.uid);
    assert.equal(after.metadata.labels?.['jobset.sigs.k8s.io/jobset-name'], 'ttpub');
    assert.equal(
      after.metadata.annotations?.['trainjob-webhook.kubeflow.org/released-from-jobset'],
      oldJs.metadata.uid,
    );
  });

  it('other owners stay', () => {
    const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'other' };
    const p = pvc('initializer-ttpub', { ownerReferences: [other, jobSetOwner(oldJs)] });
    const plan = planPvcRelease(tj, oldJs, [p]);
    assert.ok(plan.ok);
    assert.deepEqual(
      applied(p, plan.release[0]).metadata.ownerReferences?.map((o) => o.uid),
      ['other', tj.metadata.uid],
    );
  });

  it('a patch planned from an older resourceVersion fails its test instead of overwriting', () => {
    const plan = planPvcRelease(tj, oldJs, [owned()]);
    assert.ok(plan.ok);
    const newer = { ...owned(), metadata: { ...owned().metadata, resourceVersion: '8' } };
    assert.throws(() => applied(newer, plan.release[0]), /Test operation failed/);
  });

  it('a PVC already released earlier (crash after the release) is listed as retained, not patched again', () => {
    const released = applied(owned(), (planPvcRelease(tj, oldJs, [owned()]) as { release: PvcPatch[] }).release[0]);
    const plan = planPvcRelease(tj, oldJs, [released]);
    assert.deepEqual(plan, { ok: true, release: [], retained: ['initializer-ttpub'] });
  });

  it('a PVC the JobSet owns that is already being deleted blocks the rebuild, with advice', () => {
    const dying = pvc('initializer-ttpub', {
      ownerReferences: [jobSetOwner(oldJs)],
      deletionTimestamp: '2026-01-01T00:00:00Z',
    });
    const plan = planPvcRelease(tj, oldJs, [dying]);
    assert.equal(plan.ok, false);
    if (plan.ok) return;
    assert.match(plan.reason, /initializer-ttpub .* already being deleted/);
    assert.match(plan.advice, /copy what it holds/);
  });
});

describe('workspaceClaims', () => {
  it('the existing volumeClaimPolicies PVCs (<template>-<jobset>), not others, not dying ones', () => {
    assert.deepEqual(workspaceClaims(oldJs, [owned(), unowned(), pvc('initializer-other-jobset')]), [
      'initializer-ttpub',
    ]);
    assert.deepEqual(
      workspaceClaims(oldJs, [{ ...owned(), metadata: { ...owned().metadata, deletionTimestamp: 'x' } }]),
      [],
    );
    assert.deepEqual(workspaceClaims(trainerJobSet('torch1'), [owned()]), []);
  });
});

describe('planPvcHandBack', () => {
  const released = () => applied(owned(), (planPvcRelease(tj, oldJs, [owned()]) as { release: PvcPatch[] }).release[0]);

  it('hands a retained PVC to the re-created JobSet as JobSet owns it, and clears the marks', () => {
    const [patch] = planPvcHandBack(tj, newJs, [released()]);
    const after = applied(released(), patch);
    assert.deepEqual(after.metadata.ownerReferences, [jobSetOwner(newJs)]);
    assert.equal(after.metadata.labels?.['trainjob-webhook.kubeflow.org/retained-for'], undefined);
    assert.equal(after.metadata.annotations?.['trainjob-webhook.kubeflow.org/released-from-jobset'], undefined);
    assert.equal(after.metadata.labels?.['jobset.sigs.k8s.io/jobset-name'], 'ttpub');
  });

  it('never to a JobSet that is being deleted (the garbage collector would take the claim with it)', () => {
    const dying: JobSet = { ...newJs, metadata: { ...newJs.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } };
    assert.deepEqual(planPvcHandBack(tj, dying, [released()]), []);
  });

  it('PVCs retained for another TrainJob (same name, earlier uid) are not taken', () => {
    const other = trainJob('ttpub', {}, 'torchtune-llama3.2-1b');
    other.metadata.uid = 'another-uid';
    assert.deepEqual(planPvcHandBack(other, newJs, [released()]), []);
  });

  it('a claim someone else now controls gets the JobSet as a plain owner', () => {
    const p = released();
    p.metadata.ownerReferences = [
      ...(p.metadata.ownerReferences ?? []),
      { apiVersion: 'v1', kind: 'X', name: 'x', uid: 'x', controller: true },
    ];
    const after = applied(p, planPvcHandBack(tj, newJs, [p])[0]);
    assert.deepEqual(
      after.metadata.ownerReferences?.map((o) => [o.uid, o.controller]),
      [
        ['x', true],
        ['jobset-uid-new', false],
      ],
    );
  });
});
