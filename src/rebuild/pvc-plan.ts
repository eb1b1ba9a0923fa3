// Keeping workspace PVCs through a rebuild. JobSet v0.12.0 makes a volumeClaimPolicies PVC owned
// by the JobSet (so deleted with it) only when `retentionPolicy.whenDeleted: Delete` is set; such
// a PVC is released before the delete: its JobSet owner reference is swapped for a non-controller
// reference to the TrainJob (so the claim still goes when the TrainJob goes, as the user asked),
// and it is marked to be handed back to the re-created JobSet. PVCs the JobSet does not own
// survive by themselves and are never touched. Every patch is a JSON patch that first tests the
// resourceVersion it was planned from. A PVC whose metadata cannot be read blocks the release (it
// might be the JobSet's) and is never handed back. Pure.
import {
  JOBSET_API_VERSION,
  RELEASED_FROM_ANNOTATION,
  RETAINED_FOR_LABEL,
  TRAINJOB_API_VERSION,
  TRAINJOB_KIND,
} from '../api/names.ts';
import {
  isDeleting,
  type JobSet,
  type OwnerReference,
  type PersistentVolumeClaim,
  type TrainJob,
} from '../api/objects.ts';
import { malformedMetadata } from '../api/wellformed.ts';

export type JsonPatchOp = { op: 'test' | 'add'; path: string; value: unknown };

export interface PvcPatch {
  name: string;
  ops: JsonPatchOp[];
}

export type ReleasePlan =
  { ok: true; release: PvcPatch[]; retained: string[] } | { ok: false; reason: string; advice: string };

function ownedBy(pvc: PersistentVolumeClaim, uid: string | undefined): boolean {
  return !!uid && (pvc.metadata.ownerReferences ?? []).some((o) => o.uid === uid);
}

export function isRetainedFor(pvc: PersistentVolumeClaim, trainJob: TrainJob): boolean {
  return !!trainJob.metadata.uid && pvc.metadata.labels?.[RETAINED_FOR_LABEL] === trainJob.metadata.uid;
}

function rewrite(
  pvc: PersistentVolumeClaim,
  owners: OwnerReference[],
  labels: Record<string, string>,
  annotations: Record<string, string>,
): PvcPatch {
  const ops: JsonPatchOp[] = [
    { op: 'test', path: '/metadata/resourceVersion', value: pvc.metadata.resourceVersion },
    // `add` on an existing member replaces it; the test above makes the whole rewrite atomic.
    { op: 'add', path: '/metadata/labels', value: labels },
    { op: 'add', path: '/metadata/annotations', value: annotations },
    { op: 'add', path: '/metadata/ownerReferences', value: owners },
  ];
  return { name: pvc.metadata.name ?? '', ops };
}

function trainJobOwner(trainJob: TrainJob): OwnerReference {
  return {
    apiVersion: TRAINJOB_API_VERSION,
    kind: TRAINJOB_KIND,
    name: trainJob.metadata.name ?? '',
    uid: trainJob.metadata.uid ?? '',
    controller: false,
    blockOwnerDeletion: false,
  };
}

/**
 * The existing PVCs of the JobSet's volumeClaimPolicies (`<template>-<jobset>`), which outlive a
 * delete. For a JobSet judged by isJobSetStale and PVCs planPvcRelease accepted.
 */
export function workspaceClaims(jobSet: JobSet, pvcs: readonly PersistentVolumeClaim[]): string[] {
  const names = new Set<string>();
  for (const policy of (jobSet.spec?.volumeClaimPolicies ?? []) as {
    templates?: { metadata?: { name?: string } }[];
  }[]) {
    for (const t of policy.templates ?? [])
      if (t.metadata?.name) names.add(`${t.metadata.name}-${jobSet.metadata.name}`);
  }
  return pvcs
    .filter((p) => names.has(p.metadata.name ?? '') && !isDeleting(p.metadata))
    .map((p) => p.metadata.name ?? '')
    .sort();
}

/** Before deleting `jobSet`: release every PVC it owns, or say why that cannot be guaranteed. */
export function planPvcRelease(
  trainJob: TrainJob,
  jobSet: JobSet,
  pvcs: readonly PersistentVolumeClaim[],
): ReleasePlan {
  const unreadable = pvcs.map((p) => malformedMetadata('PVC', p)).find((m) => m !== undefined);
  if (unreadable) {
    return {
      ok: false,
      reason: `${unreadable}, so whether JobSet ${jobSet.metadata.name} owns it (and would take it along when deleted) cannot be told`,
      advice: 'repair or remove that claim; the rebuild proceeds once every claim of the namespace can be read',
    };
  }
  const jobSetUid = jobSet.metadata.uid;
  const owned = pvcs.filter((p) => ownedBy(p, jobSetUid));
  const dying = owned.filter((p) => isDeleting(p.metadata));
  if (dying.length) {
    const names = dying.map((p) => p.metadata.name).join(', ');
    return {
      ok: false,
      reason: `PVC ${names} owned by JobSet ${jobSet.metadata.name} is already being deleted, so its data cannot be kept through a rebuild`,
      advice:
        'copy what it holds elsewhere if it matters, then let the deletion finish (or remove its finalizers); the rebuild proceeds once the claim is gone',
    };
  }
  const release = owned.map((p) => {
    const owners = (p.metadata.ownerReferences ?? []).filter(
      (o) => o.uid !== jobSetUid && o.uid !== trainJob.metadata.uid,
    );
    return rewrite(
      p,
      [...owners, trainJobOwner(trainJob)],
      { ...p.metadata.labels, [RETAINED_FOR_LABEL]: trainJob.metadata.uid ?? '' },
      { ...p.metadata.annotations, [RELEASED_FROM_ANNOTATION]: jobSetUid ?? '' },
    );
  });
  const earlier = pvcs
    .filter((p) => isRetainedFor(p, trainJob) && !owned.includes(p))
    .map((p) => p.metadata.name ?? '');
  return { ok: true, release, retained: [...earlier, ...release.map((r) => r.name)].sort() };
}

/**
 * After the re-created JobSet exists (and is current, not being deleted): hand every PVC retained
 * for this TrainJob back to it, as JobSet itself owns such claims (controller, blockOwnerDeletion).
 */
export function planPvcHandBack(
  trainJob: TrainJob,
  jobSet: JobSet,
  pvcs: readonly PersistentVolumeClaim[],
): PvcPatch[] {
  if (isDeleting(jobSet.metadata) || !jobSet.metadata.uid) return [];
  return pvcs
    .filter((p) => malformedMetadata('PVC', p) === undefined && isRetainedFor(p, trainJob))
    .map((p) => {
      const others = (p.metadata.ownerReferences ?? []).filter(
        (o) => o.uid !== trainJob.metadata.uid && o.uid !== jobSet.metadata.uid,
      );
      const controlled = others.some((o) => o.controller === true);
      const owner: OwnerReference = {
        apiVersion: JOBSET_API_VERSION,
        kind: 'JobSet',
        name: jobSet.metadata.name ?? '',
        uid: jobSet.metadata.uid ?? '',
        controller: !controlled,
        blockOwnerDeletion: true,
      };
      const { [RETAINED_FOR_LABEL]: _label, ...labels } = p.metadata.labels ?? {};
      const { [RELEASED_FROM_ANNOTATION]: _annotation, ...annotations } = p.metadata.annotations ?? {};
      return rewrite(p, [...others, owner], labels, annotations);
    });
}
