// May the JobSet be deleted now? Only when nothing of it runs, checked on the JobSet's children
// directly: JobSet status lags behind its pods, and JobSet creates its Jobs even while suspended
// (so their existence is fine, their activity is not). Pure.
//
// "Nothing of the JobSet runs", as JobSet v0.12.0 and the Job controller of Kubernetes 1.35 define
// their states (sources in the Go module cache):
//
// - A child Job is stopped when it is suspended or finished, and counts no active or terminating
//   pod. Finished means a `Complete` or `Failed` condition with status True, exactly JobSet's
//   `JobFinished` (sigs.k8s.io/jobset@v0.12.0/pkg/controllers/jobset_controller.go:1081). JobSet
//   suspends only the Jobs it files as active, i.e. not finished (`getChildJobs`, :429-440, and
//   `suspendJobs`, :562), so a finished initializer Job keeps `suspend: false` for good. It runs
//   nothing: the Job controller adds the terminal condition only once every pod is terminal and
//   counted, none terminating (`enactJobFinished`, k8s.io/kubernetes@v1.35.8/pkg/controller/job/
//   job_controller.go:1507-1532, `delayTerminalCondition()` is on since JobManagedBy is GA and locked
//   in 1.35; Complete needs `active == 0`, :1035; Failed deletes the active pods first, :1000-1013),
//   and it never syncs a finished Job again, so it creates no pod (`syncJob`, :866). A Job that is
//   neither suspended nor finished may start a pod at any moment, even with none now: it blocks.
// - A pod runs nothing when its phase is terminal (Succeeded or Failed, `IsPodTerminal`,
//   k8s.io/kubernetes@v1.35.8/pkg/api/v1/pod/util.go:302) and it is not being deleted. The kubelet
//   sets a terminal phase only after every container stopped; the pod garbage collector sets Failed
//   on pods of deleted nodes (and deletes them). Kubernetes itself reads Failed as "no longer runs":
//   a Job with `podReplacementPolicy: Failed` starts a replacement exactly then (job_controller.go:
//   2018, `isPodFailed`), and the Job controller's own "terminating" is non-terminal with a
//   deletionTimestamp (pkg/controller/controller_utils.go:1091). Failed pods must not block: a
//   Job keeps them after it failed, and a Failed TrainJob is rebuilt like any other. A pod with
//   any other phase (Pending, Running, Unknown, none) may run containers (init containers run in
//   Pending). A terminal pod that is being deleted still blocks, cautiously, until it is gone:
//   that wait is short (deletion of a terminal pod has no grace period, pkg/registry/core/pod/
//   strategy.go:184; only finalizers hold it, such as the job-tracking one the Job controller
//   removes once it counted the pod, and at once for a pod whose Job finished or is gone,
//   job_controller.go:466-472), and it keeps "no pod exists, Terminating included" true. A terminal
//   pod that still has the job-tracking finalizer but is not being deleted runs nothing either: the
//   finalizer only means the Job controller has not counted it yet.
import { intOf, isAbsent, isDeleting, nameOf, type Job, type JobSet, type Pod } from '../api/objects.ts';
import { isObject } from '../json/object.ts';

export type Safety = { safe: true } | { safe: false; reasons: string[] };

/** The conditions that finish a Job (JobSet's `JobFinished`). */
export const FINISHED_JOB_CONDITIONS: readonly string[] = ['Complete', 'Failed'];
const TERMINAL_POD_PHASES = ['Succeeded', 'Failed'];

/**
 * Safe when the JobSet is suspended, every child Job is stopped (suspended or finished) with no
 * active or terminating pod, and every pod of the JobSet is terminal and not being deleted (see the
 * file's head for why). Whatever cannot be read (a Job or pod that is not an object, a malformed
 * count) is not safe.
 */
export function canDeleteSafely(jobSet: JobSet, childJobs: readonly Job[], pods: readonly Pod[]): Safety {
  const reasons: string[] = [];
  if (!isObject(jobSet) || jobSet.spec?.suspend !== true)
    reasons.push(`JobSet ${nameOf(jobSet) ?? '?'} is not suspended`);
  if (!Array.isArray(childJobs)) reasons.push("the JobSet's Jobs are not a list");
  else childJobs.forEach((job, i) => reasons.push(...jobBlocks(job, i)));
  if (!Array.isArray(pods)) {
    reasons.push("the JobSet's pods are not a list");
    return { safe: false, reasons };
  }
  const present = pods.map((p, i) => ({ p, i })).filter(({ p }) => !runsNothing(p));
  if (present.length > 0) {
    const terminating = present.filter(({ p }) => isObject(p) && isDeleting(p.metadata)).length;
    const names = present
      .slice(0, 3)
      .map(({ p, i }) => (isObject(p) ? (nameOf(p) ?? '?') : `pods[${i}] (not an object)`))
      .join(', ');
    const more = present.length > 3 ? ` and ${present.length - 3} more` : '';
    reasons.push(
      `${present.length} pod${present.length === 1 ? '' : 's'} of the JobSet still exist${present.length === 1 ? 's' : ''}${terminating ? ` (${terminating} terminating)` : ''}: ${names}${more}`,
    );
  }
  return reasons.length ? { safe: false, reasons } : { safe: true };
}

/** The finishing condition of a Job (`Complete` or `Failed` with status True), if it has one. */
export function finishedCondition(job: Job): string | undefined {
  const conditions: unknown = isObject(job) && isObject(job.status) ? job.status.conditions : undefined;
  if (!Array.isArray(conditions)) return undefined;
  const done = conditions.find(
    (c) => isObject(c) && c.status === 'True' && typeof c.type === 'string' && FINISHED_JOB_CONDITIONS.includes(c.type),
  );
  return done ? (done.type as string) : undefined;
}

/** Why a child Job keeps the JobSet from being deleted (none when it is stopped). Pure. */
export function jobBlocks(job: Job, i: number): string[] {
  if (!isObject(job)) return [`jobs[${i}] is not an object`];
  const name = nameOf(job) ?? '?';
  const reasons: string[] = [];
  if (job.spec?.suspend !== true && !finishedCondition(job))
    reasons.push(`Job ${name} is neither suspended nor finished`);
  for (const field of ['active', 'terminating'] as const) {
    const raw = job.status?.[field];
    const n = isAbsent(raw) ? 0 : intOf(raw);
    if (n === undefined) reasons.push(`Job ${name}: status.${field} is not a non-negative integer`);
    else if (n > 0) reasons.push(`Job ${name} has ${n} ${field} pod${n === 1 ? '' : 's'}`);
  }
  return reasons;
}

/** A pod readable as terminal (Succeeded or Failed) and not being deleted; anything else may still run something. */
function runsNothing(pod: Pod): boolean {
  return (
    isObject(pod) &&
    isObject(pod.metadata) &&
    !isDeleting(pod.metadata) &&
    TERMINAL_POD_PHASES.includes(pod.status?.phase as string)
  );
}
