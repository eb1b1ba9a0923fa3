// The TrainJob's gang-scheduling PodGroup through a rebuild. Pure.
//
// Trainer v2.3.0's coscheduling and volcano plugins (plugins/coscheduling, plugins/volcano: Build)
// apply a PodGroup named after the TrainJob, controlled by it, with minMember = the sum of every
// PodSet's count (one PodSet per replicated job; the JobSet plugin's SyncParallelCount writes each
// count into that job's parallelism). But Build skips the apply whenever the PodGroup exists and the
// TrainJob is not suspended, and the controller stops at the first apply that fails (reconcileObjects),
// in an order fixed per process by ranging over a map (framework/core: New). So a job resumed before
// its JobSet is re-created (Kueue resumes at once; or one update that resumes and scales) keeps the
// old minMember about half the time: fewer pods than minMember never schedule, more lose the gang.
// Deleting the stale PodGroup makes Trainer create it again from the new count, suspended or not.
import type { JobSet, ObjectMeta, Runtime, TrainJob } from '../api/objects.ts';
import { controllerOf, intOf, isDeleting } from '../api/objects.ts';
import { TRAINJOB_KIND } from '../api/names.ts';

/** The gang schedulers Trainer v2.3.0 builds a PodGroup for (runtime `spec.podGroupPolicy`). */
export type GangScheduler = 'coscheduling' | 'volcano';

export interface PodGroup {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: { minMember?: number; [key: string]: unknown };
}

/** A PodGroup read for a scheduler the runtime names (absent: none of that name, or no such CRD). */
export interface ObservedPodGroup {
  scheduler: GangScheduler;
  podGroup: PodGroup;
}

/** What a stale PodGroup's deletion carries: its identity (the preconditions) and why. */
export interface PodGroupDeletion {
  scheduler: GangScheduler;
  name: string;
  uid: string;
  resourceVersion: string;
  minMember: number | undefined;
  want: number;
}

/**
 * The schedulers whose PodGroup Trainer builds for this runtime: each plugin acts when its member
 * of `podGroupPolicy` is set (the CRD allows one; both are listed if both are set, as both build).
 */
export function gangSchedulersOf(runtime: Runtime): GangScheduler[] {
  const policy: unknown = runtime.spec.podGroupPolicy;
  if (typeof policy !== 'object' || policy === null) return [];
  const set = (k: string) => {
    const v = (policy as Record<string, unknown>)[k];
    return v !== undefined && v !== null;
  };
  return (['coscheduling', 'volcano'] as const).filter(set);
}

/**
 * minMember as Trainer computes it for this JobSet's replicated jobs: the sum of their counts, the
 * count-bearing job's taken as `count.to` (the new node count's; see stale.ts), every other one's
 * as Trainer built it into parallelism (1 when unset, as a PodSet's count starts at parallelism or 1).
 */
export function expectedMinMember(jobSet: JobSet, count?: { replicatedJob: string; to: number }): number {
  let total = 0;
  for (const rJob of jobSet.spec?.replicatedJobs ?? []) {
    total += rJob.name === count?.replicatedJob ? count.to : (intOf(rJob.template?.spec?.parallelism) ?? 1);
  }
  return total;
}

export type PodGroupVerdict =
  | { verdict: 'left-alone'; reason: string }
  | { verdict: 'current'; minMember: number }
  | { verdict: 'stale'; deletion: PodGroupDeletion };

/** Is this PodGroup the TrainJob's (its name, controlled by its uid), and does its minMember differ from `want`? */
export function judgePodGroup(trainJob: TrainJob, observed: ObservedPodGroup, want: number): PodGroupVerdict {
  const { podGroup, scheduler } = observed;
  const meta: ObjectMeta = podGroup.metadata ?? {};
  const owner = controllerOf(meta);
  const name = meta.name;
  const controlled = owner?.kind === TRAINJOB_KIND && owner.uid === trainJob.metadata.uid;
  if (!name || name !== trainJob.metadata.name || !controlled)
    return { verdict: 'left-alone', reason: `${scheduler} PodGroup ${name} is not controlled by this TrainJob` };
  if (isDeleting(meta)) return { verdict: 'left-alone', reason: `${scheduler} PodGroup ${meta.name} is being deleted` };
  if (!meta.uid || !meta.resourceVersion)
    return { verdict: 'left-alone', reason: `${scheduler} PodGroup ${name} has no uid or resourceVersion` };
  const minMember = intOf(podGroup.spec?.minMember);
  if (minMember === want) return { verdict: 'current', minMember };
  return {
    verdict: 'stale',
    deletion: { scheduler, name, uid: meta.uid, resourceVersion: meta.resourceVersion, minMember, want },
  };
}

/** The deletions that make Trainer re-create each stale PodGroup of this TrainJob from the new count. */
export function stalePodGroups(trainJob: TrainJob, observed: ObservedPodGroup[], want: number): PodGroupDeletion[] {
  return observed.flatMap((o) => {
    const v = judgePodGroup(trainJob, o, want);
    return v.verdict === 'stale' ? [v.deletion] : [];
  });
}

/** For logs and the Event: what was wrong with the PodGroup. */
export function describeDeletion(d: PodGroupDeletion): string {
  const had = d.minMember === undefined ? 'no minMember' : `minMember ${d.minMember}`;
  return `${d.scheduler} PodGroup ${d.name} has ${had}, Trainer builds ${d.want} for this node count`;
}
