// Before an uninstall (or anything that puts upstream's blanket spec.trainer rule back): what to do
// with each TrainJob whose count change is not carried out yet, so that none is stranded once no
// reconciler is left and numNodes is immutable again. Pure: from the TrainJob, its JobSet and its
// runtime to one action.
import { intOf, type JobSet, type Runtime, type TrainJob } from '../api/objects.ts';
import { previousReport } from './report.ts';
import { isJobSetStale } from '../scale/stale.ts';

export type SettleAction =
  /** Nothing pending: no report, or Rebuilt, or its JobSet already has the count. */
  | { kind: 'settled' }
  /** The rebuild is under way (Rebuilding, or Waiting for pods): wait for it. */
  | { kind: 'wait'; why: string }
  /**
   * Set numNodes back to the count the JobSet was built with: admitted (an MPI job's while its
   * runtime can be read), nothing rebuilt. A running job is suspended in the same update (revertPlan).
   */
  | { kind: 'revert'; numNodes: number; why: string }
  /** Needs a person: the reason says what. */
  | { kind: 'left'; why: string };

export interface SettleFacts {
  trainJob: TrainJob;
  jobSet: JobSet | undefined;
  /** undefined: the runtime could not be read (only a wait or a report can be judged then). */
  runtime: Runtime | undefined;
  /** --revert: Waiting jobs are reverted too, instead of waited for. */
  revertWaiting: boolean;
}

/** The numNodes the JobSet was built for: the count whose build would leave it current. */
export function builtCount(trainJob: TrainJob, runtime: Runtime, jobSet: JobSet): number | undefined {
  const from = intOf(previousReport(trainJob)?.parallelism?.from);
  // MPI with runLauncherAsNode builds max(n - 1, 1) node pods: n = from + 1 rebuilds nothing too.
  for (const n of from === undefined ? [] : [from, from + 1]) {
    const spec = { ...trainJob.spec, trainer: { ...trainJob.spec?.trainer, numNodes: n } };
    if (isJobSetStale({ ...trainJob, spec }, runtime, jobSet).verdict === 'current') return n;
  }
  return undefined;
}

// eslint-disable-next-line complexity -- one action per report state, in the order a person would settle them
export function settleAction({ trainJob, jobSet, runtime, revertWaiting }: SettleFacts): SettleAction {
  const report = previousReport(trainJob);
  // Unsupported: the reconciler never acted on the job (not judged, not its JobSet), so an uninstall
  // takes nothing from it.
  if (!report || report.state === 'Rebuilt' || report.state === 'Unsupported') return { kind: 'settled' };
  if (!jobSet)
    return report.state === 'Rebuilding'
      ? { kind: 'wait', why: 'its JobSet is being re-created' }
      : { kind: 'settled' };
  if (runtime && isJobSetStale(trainJob, runtime, jobSet).verdict === 'current') return { kind: 'settled' };
  if (report.state === 'Rebuilding') return { kind: 'wait', why: 'its JobSet was deleted and is being re-created' };
  if (report.state === 'Waiting' && !revertWaiting)
    return { kind: 'wait', why: `the rebuild waits: ${report.reason ?? 'something of the JobSet still runs'}` };
  if (!runtime)
    return { kind: 'left', why: 'its runtime could not be read, so the count its JobSet was built for is not known' };
  const n = builtCount(trainJob, runtime, jobSet);
  if (n === undefined)
    return {
      kind: 'left',
      why: `${report.state}: the count its JobSet was built for is not known (${report.reason ?? 'no reason'})`,
    };
  return { kind: 'revert', numNodes: n, why: `${report.state}: ${report.reason ?? 'not rebuilt'}` };
}

/** Kueue's label on a TrainJob it queues: Kueue resumes such a job once its Workload is admitted. */
export const KUEUE_QUEUE_LABEL = 'kueue.x-k8s.io/queue-name';

/** One update of the TrainJob: these spec fields set, the rest as read (its resourceVersion tested). */
export interface RevertWrite {
  suspend?: boolean;
  numNodes?: number;
}

export interface RevertPlan {
  /** In order; each applied to the TrainJob as last read or written. */
  writes: RevertWrite[];
  /** How the job is left, for the output. */
  after: string;
}

/**
 * The updates that set numNodes back and leave the job as the user had it. The CRD's rule lets
 * numNodes change only while the TrainJob is suspended before or after the update, so a running
 * job is suspended and reverted in one update, then resumed by a second (numNodes unchanged: always
 * allowed). Under Kueue the second is left to Kueue, which resumes a job whose Workload is admitted.
 */
export function revertPlan(trainJob: TrainJob, numNodes: number): RevertPlan {
  if (trainJob.spec?.suspend === true) return { writes: [{ numNodes }], after: 'it stays suspended' };
  const restart = 'its pods restart from their last checkpoint';
  if (trainJob.metadata.labels?.[KUEUE_QUEUE_LABEL] !== undefined)
    return {
      writes: [{ suspend: true, numNodes }],
      after: `suspended in the same update; Kueue resumes it once its Workload is admitted (settle never resumes a job Kueue queues), and ${restart}`,
    };
  return {
    writes: [{ suspend: true, numNodes }, { suspend: false }],
    after: `suspended in the same update, then resumed: it runs again with ${numNodes} node${numNodes === 1 ? '' : 's'}, and ${restart}`,
  };
}

/** The TrainJob with one write applied: what is sent, whole, with the resourceVersion read. */
export function withWrite(trainJob: TrainJob, write: RevertWrite): TrainJob {
  const next = structuredClone(trainJob);
  next.spec = { ...next.spec };
  if (write.suspend !== undefined) next.spec.suspend = write.suspend;
  if (write.numNodes !== undefined) next.spec.trainer = { ...next.spec.trainer, numNodes: write.numNodes };
  return next;
}

/**
 * After a conflict on a later write of the plan (the resume): go on from the job as re-read only if
 * its spec is still the one this plan wrote (same generation: what changed is status or metadata,
 * e.g. Trainer's Suspended condition or the reconciler's report). Otherwise someone changed it
 * meanwhile, and it is left as they made it.
 */
export function mayContinue(reread: TrainJob, written: TrainJob): boolean {
  return (
    reread.metadata.uid === written.metadata.uid &&
    reread.metadata.generation !== undefined &&
    reread.metadata.generation === written.metadata.generation
  );
}
