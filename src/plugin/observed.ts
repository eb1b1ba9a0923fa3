// What the plugin reads of one TrainJob with the user's own credentials, and the pure readings of
// it both commands share: the pods that still run, the count the JobSet is built for, whether its
// pods are scheduled, Kueue's admission, Trainer's state (conditions by type, never by order).
import { ANCESTOR_LABEL, REPLICATED_JOB_NAME_LABEL } from '../api/names.ts';
import {
  controllerOf,
  intOf,
  isDeleting,
  type JobSet,
  type ObjectMeta,
  type ReplicatedJob,
  type Runtime,
  type TrainJob,
} from '../api/objects.ts';
import { isObject } from '../json/object.ts';
import { DATASET_INITIALIZER } from '../rebuild/initializers.ts';
import { previousReport, type RebuildReport } from '../rebuild/report.ts';
import { KUEUE_QUEUE_LABEL } from '../rebuild/settle-plan.ts';
import { nodeReplicatedJob } from '../rebuild/status-field.ts';
import { isJobSetStale } from '../scale/stale.ts';

export { KUEUE_QUEUE_LABEL };
export const MODEL_INITIALIZER = 'model-initializer';

export interface PodView {
  name: string;
  phase?: string;
  deleting: boolean;
  nodeName?: string;
  replicatedJob?: string;
}

export interface WorkloadView {
  name: string;
  /** spec.active (absent: true). */
  active: boolean;
  admitted: boolean;
  /** Kueue's reason and message of the condition that holds it back (QuotaReserved or Admitted False, Evicted True). */
  reason?: string;
  message?: string;
}

export interface KueueView {
  queue: string;
  /** The job's Workloads, or why they cannot be read. */
  workloads: WorkloadView[] | { unreadable: string };
}

export interface Observed {
  trainJob: TrainJob;
  jobSet?: JobSet;
  pods: PodView[];
  /** Present for a TrainJob Kueue queues (its queue-name label). */
  kueue?: KueueView;
  /** The runtime, when it could be read (Trainer's snapshot or runtimeRef). */
  runtime?: Runtime;
}

const conditionOf = (status: unknown, type: string): Record<string, unknown> | undefined => {
  const conditions: unknown = isObject(status) ? status.conditions : undefined;
  return Array.isArray(conditions)
    ? conditions.find((c): c is Record<string, unknown> => isObject(c) && c.type === type)
    : undefined;
};
export const isTrue = (status: unknown, type: string) => conditionOf(status, type)?.status === 'True';

/** A pod that runs or may run: not Succeeded or Failed (a finished initializer's pod stays). */
export const isLive = (p: PodView) => p.phase !== 'Succeeded' && p.phase !== 'Failed';

export function podView(raw: unknown): PodView {
  const o = isObject(raw) ? raw : {};
  const meta = isObject(o.metadata) ? o.metadata : {};
  const labels = isObject(meta.labels) ? meta.labels : {};
  const spec = isObject(o.spec) ? o.spec : {};
  const status = isObject(o.status) ? o.status : {};
  return {
    name: typeof meta.name === 'string' ? meta.name : '?',
    ...(typeof status.phase === 'string' ? { phase: status.phase } : {}),
    deleting: isDeleting(meta),
    ...(typeof spec.nodeName === 'string' && spec.nodeName ? { nodeName: spec.nodeName } : {}),
    ...(typeof labels[REPLICATED_JOB_NAME_LABEL] === 'string'
      ? { replicatedJob: labels[REPLICATED_JOB_NAME_LABEL] }
      : {}),
  };
}

/** Kueue's view of a Workload: its admission and the reason it is held back. */
export function workloadView(raw: unknown): WorkloadView {
  const o = isObject(raw) ? raw : {};
  const meta = isObject(o.metadata) ? o.metadata : {};
  const spec = isObject(o.spec) ? o.spec : {};
  const admitted = isTrue(o.status, 'Admitted');
  const evicted = conditionOf(o.status, 'Evicted');
  const held =
    (evicted?.status === 'True' ? evicted : undefined) ??
    [conditionOf(o.status, 'QuotaReserved'), conditionOf(o.status, 'Admitted')].find((c) => c?.status === 'False');
  return {
    name: typeof meta.name === 'string' ? meta.name : '?',
    active: spec.active !== false,
    admitted,
    ...(!admitted && typeof held?.reason === 'string' ? { reason: held.reason } : {}),
    ...(!admitted && typeof held?.message === 'string' ? { message: held.message } : {}),
  };
}

/** A Workload of this TrainJob: Kueue makes it with the TrainJob as its controller. */
export function isWorkloadOf(raw: unknown, trainJob: TrainJob): boolean {
  const controller = controllerOf(isObject(raw) && isObject(raw.metadata) ? (raw.metadata as ObjectMeta) : undefined);
  return controller?.kind === 'TrainJob' && controller.uid === trainJob.metadata.uid;
}

/** The replicated job that carries the node count: by the runtime's ML policy, else Trainer's labels. */
export function nodeJobOf(js: JobSet, trainJob: TrainJob, runtime: Runtime | undefined): ReplicatedJob | undefined {
  return nodeReplicatedJob(trainJob, js, runtime ? { found: true, runtime } : undefined);
}

/**
 * The numNodes the JobSet is built for, or undefined when it cannot be told. With the runtime: the
 * count whose build leaves it current (the rebuild's own judgment, stale.ts); MPI with the launcher
 * as a node builds max(n - 1, 1) pods, so p + 1 is tried too. Without it: the report of the
 * reconciler's last rebuild, else the node job's parallelism (right for every policy but MPI).
 */
// eslint-disable-next-line complexity -- the two readings, with and without the runtime
export function jobSetNodes(
  trainJob: TrainJob,
  js: JobSet | undefined,
  runtime: Runtime | undefined,
): number | undefined {
  if (!js || isDeleting(js.metadata)) return undefined;
  const p = intOf(nodeJobOf(js, trainJob, runtime)?.template?.spec?.parallelism ?? 1);
  if (p === undefined) return undefined;
  if (runtime) {
    for (const n of [p, p + 1]) {
      const spec = { ...trainJob.spec, trainer: { ...trainJob.spec?.trainer, numNodes: n } };
      if (isJobSetStale({ ...trainJob, spec }, runtime, js).verdict === 'current') return n;
    }
    return undefined;
  }
  const report = previousReport(trainJob);
  if (report?.state === 'Rebuilt' && report.numNodes !== undefined && report.parallelism?.to === p)
    return report.numNodes;
  return p;
}

/** The runtime's initializers as the JobSet (or runtime) runs them: a rebuild runs them again. */
export function initializersOf(js: JobSet | undefined, runtime: Runtime | undefined): string[] {
  const jobs = js?.spec?.replicatedJobs ?? runtime?.spec.template?.spec?.replicatedJobs ?? [];
  return (Array.isArray(jobs) ? jobs : [])
    .map((r) => r?.template?.metadata?.labels?.[ANCESTOR_LABEL] ?? r?.name)
    .filter((l): l is string => l === DATASET_INITIALIZER || l === MODEL_INITIALIZER);
}

/** The pods the JobSet runs once started: every replicated job but the initializers, parallelism × replicas. */
export function expectedPods(js: JobSet): { jobs: Set<string>; count: number } {
  const jobs = new Set<string>();
  let count = 0;
  for (const r of js.spec?.replicatedJobs ?? []) {
    const label = r?.template?.metadata?.labels?.[ANCESTOR_LABEL];
    if (label === DATASET_INITIALIZER || label === MODEL_INITIALIZER) continue;
    jobs.add(r.name);
    count += (intOf(r.template?.spec?.parallelism) ?? 1) * (intOf(r.replicas) ?? 1);
  }
  return { jobs, count };
}

/** How many of the JobSet's training pods are on a node, of how many it runs. */
export function scheduledPods(js: JobSet, pods: PodView[]): { scheduled: number; want: number } {
  const { jobs, count } = expectedPods(js);
  const scheduled = pods.filter(
    (p) => isLive(p) && !p.deleting && p.nodeName && p.replicatedJob && jobs.has(p.replicatedJob),
  ).length;
  return { scheduled, want: count };
}

/** The pod's container grace period the job's pods have to checkpoint after a suspend. */
export function gracePeriodOf(js: JobSet | undefined, trainJob: TrainJob, runtime: Runtime | undefined): number {
  const job = js ? nodeJobOf(js, trainJob, runtime) : undefined;
  return intOf(job?.template?.spec?.template?.spec?.terminationGracePeriodSeconds) ?? 30;
}

/** Trainer's state from its conditions by type: Complete, Failed, Suspended, else Running or Created. */
export function trainerState(o: Observed): string {
  const s = o.trainJob.status;
  if (isTrue(s, 'Complete')) return 'Complete';
  if (isTrue(s, 'Failed')) return 'Failed';
  if (o.trainJob.spec?.suspend === true) return 'Suspended';
  return o.pods.some((p) => isLive(p) && !p.deleting && p.phase === 'Running') ? 'Running' : 'Created';
}

/** Why the job is finished for good (Trainer never runs it again), or undefined. */
export function finishedReason(trainJob: TrainJob): string | undefined {
  if (isTrue(trainJob.status, 'Complete')) return 'it is Complete';
  const failed = conditionOf(trainJob.status, 'Failed');
  if (failed?.status === 'True' && failed.reason === 'DeadlineExceeded') return 'it failed with DeadlineExceeded';
  return undefined;
}

/** The reconciler's report when it is about this count. */
export function reportFor(trainJob: TrainJob, nodes: number): RebuildReport | undefined {
  const r = previousReport(trainJob);
  return r && (r.numNodes === undefined || r.numNodes === nodes) ? r : undefined;
}
