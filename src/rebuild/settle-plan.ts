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
   * runtime can be read), nothing rebuilt.
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
