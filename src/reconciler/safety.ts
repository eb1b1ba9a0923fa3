// May the JobSet be deleted now? Only when nothing of it runs, checked on the JobSet's children
// directly: JobSet status lags behind its pods, and JobSet creates its Jobs even while suspended
// (so their existence is fine, their activity is not). Pure.
import { intOf, isAbsent, isDeleting, isObject, nameOf, type Job, type JobSet, type Pod } from './objects.ts';

export type Safety = { safe: true } | { safe: false; reasons: string[] };

/**
 * Safe when the JobSet is suspended, every child Job is suspended with `status.active == 0`, and
 * no pod of the JobSet exists, Terminating ones included. The one pod that does not block is a
 * Succeeded pod that is not being deleted: only the kubelet reports Succeeded, after every
 * container exited (e.g. a finished initializer), so it runs nothing. Failed pods block: the pod
 * garbage collector also marks pods Failed on lost nodes whose containers may still run.
 * Whatever cannot be read (a Job or pod that is not an object, a malformed count) is not safe.
 */
export function canDeleteSafely(jobSet: JobSet, childJobs: readonly Job[], pods: readonly Pod[]): Safety {
  const reasons: string[] = [];
  if (!isObject(jobSet) || jobSet.spec?.suspend !== true) reasons.push(`JobSet ${nameOf(jobSet) ?? '?'} is not suspended`);
  if (!Array.isArray(childJobs)) reasons.push("the JobSet's Jobs are not a list");
  else childJobs.forEach((job, i) => reasons.push(...jobBlocks(job, i)));
  if (!Array.isArray(pods)) {
    reasons.push("the JobSet's pods are not a list");
    return { safe: false, reasons };
  }
  const present = pods.map((p, i) => ({ p, i })).filter(({ p }) => !runsNothing(p));
  if (present.length > 0) {
    const terminating = present.filter(({ p }) => isObject(p) && isDeleting(p.metadata)).length;
    const names = present.slice(0, 3).map(({ p, i }) => (isObject(p) ? (nameOf(p) ?? '?') : `pods[${i}] (not an object)`)).join(', ');
    const more = present.length > 3 ? ` and ${present.length - 3} more` : '';
    reasons.push(`${present.length} pod${present.length === 1 ? '' : 's'} of the JobSet still exist${present.length === 1 ? 's' : ''}${terminating ? ` (${terminating} terminating)` : ''}: ${names}${more}`);
  }
  return reasons.length ? { safe: false, reasons } : { safe: true };
}

function jobBlocks(job: Job, i: number): string[] {
  if (!isObject(job)) return [`jobs[${i}] is not an object`];
  const name = nameOf(job) ?? '?';
  const reasons: string[] = [];
  if (job.spec?.suspend !== true) reasons.push(`Job ${name} is not suspended`);
  const raw = job.status?.active;
  const active = isAbsent(raw) ? 0 : intOf(raw);
  if (active === undefined) reasons.push(`Job ${name}: status.active is not a non-negative integer`);
  else if (active > 0) reasons.push(`Job ${name} has ${active} active pod${active === 1 ? '' : 's'}`);
  return reasons;
}

/** A pod readable as Succeeded and not being deleted; anything else may still run something. */
function runsNothing(pod: Pod): boolean {
  return isObject(pod) && isObject(pod.metadata) && !isDeleting(pod.metadata) && pod.status?.phase === 'Succeeded';
}
