// The TrainJob status Trainer v2.3.0 takes from its JobSet (plugins/jobset/jobset.go `Status`,
// run by trainjob_controller.go `setTrainJobStatus` on every reconcile, finished or not):
// - `Complete`: the JobSet's `Completed` condition when True, copied with its type renamed (status,
//   reason, message, observedGeneration, lastTransitionTime); never removed once set.
// - `Failed`: likewise from the JobSet's `Failed` (True). `removeFailedCondition` drops Failed at
//   the start of each reconcile unless its reason is DeadlineExceeded, so a Failed the JobSet no
//   longer has goes. Not on Trainer's main line (#3891): there a Failed stays (`failedIsTerminal`).
// - `jobsStatus`: one entry per `status.replicatedJobsStatus` of the JobSet (name, ready,
//   succeeded, failed, active, suspended), absent when the JobSet lists none.
// Without a JobSet, Trainer's Get fails and the status it had stays (apart from the Failed drop).
// Kueue's TrainJob integration reads Complete/Failed to release the job's quota. Pure.
import { intOf, type Condition, type JobSet, type TrainJob } from '../api/objects.ts';
import { isObject } from '../json/object.ts';
import { DEADLINE_EXCEEDED } from '../scale/finished.ts';

export const COMPLETE = 'Complete';
export const FAILED = 'Failed';

export interface JobStatus {
  name: string;
  ready: number;
  succeeded: number;
  failed: number;
  active: number;
  suspended: number;
}

function conditionOf(status: unknown, type: string): Condition | undefined {
  const list: unknown = isObject(status) ? status.conditions : undefined;
  if (!Array.isArray(list)) return undefined;
  return list.find(
    (c): c is Condition =>
      isObject(c) && c.type === type && typeof c.status === 'string' && typeof c.lastTransitionTime === 'string',
  );
}

/**
 * meta.SetStatusCondition of the JobSet's condition (type renamed) over the TrainJob's: the
 * transition time moves only with the status, and then to the JobSet's. Failed was dropped just
 * before (removeFailedCondition), so it always takes the JobSet's.
 */
function copied(trainJob: TrainJob, from: Condition, type: string, now: string): Condition {
  const existing = type === FAILED ? undefined : conditionOf(trainJob.status, type);
  const lastTransitionTime =
    existing && existing.status === from.status ? existing.lastTransitionTime : from.lastTransitionTime || now;
  return {
    type,
    status: from.status,
    reason: typeof from.reason === 'string' ? from.reason : '',
    message: typeof from.message === 'string' ? from.message : '',
    lastTransitionTime,
    ...(intOf(from.observedGeneration) !== undefined ? { observedGeneration: from.observedGeneration } : {}),
  };
}

/** Complete and Failed as Trainer would leave them after a reconcile with this JobSet (or none). */
export function terminalConditions(
  trainJob: TrainJob,
  jobSet: JobSet | undefined,
  now: string,
  failedIsTerminal: boolean,
): Condition[] {
  const out: Condition[] = [];
  const completed = jobSet ? conditionOf(jobSet.status, 'Completed') : undefined;
  const complete = conditionOf(trainJob.status, COMPLETE);
  if (completed?.status === 'True') out.push(copied(trainJob, completed, COMPLETE, now));
  else if (complete) out.push(complete);
  const jsFailed = jobSet ? conditionOf(jobSet.status, 'Failed') : undefined;
  const failed = conditionOf(trainJob.status, FAILED);
  if (jsFailed?.status === 'True') out.push(copied(trainJob, jsFailed, FAILED, now));
  else if (failed && (failedIsTerminal || failed.reason === DEADLINE_EXCEEDED)) out.push(failed);
  return out;
}

function count(v: unknown): number {
  return intOf(v) ?? 0;
}

/** status.jobsStatus from the JobSet's replicatedJobsStatus; without a JobSet, the TrainJob's own. */
export function jobsStatusOf(trainJob: TrainJob, jobSet: JobSet | undefined): JobStatus[] | undefined {
  const source: unknown = jobSet ? jobSet.status?.replicatedJobsStatus : trainJob.status?.jobsStatus;
  if (!Array.isArray(source) || source.length === 0) return undefined;
  return source
    .filter((s): s is Record<string, unknown> => isObject(s) && typeof s.name === 'string')
    .map((s) => ({
      name: s.name as string,
      ready: count(s.ready),
      succeeded: count(s.succeeded),
      failed: count(s.failed),
      active: count(s.active),
      suspended: count(s.suspended),
    }));
}
