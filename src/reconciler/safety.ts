// May the JobSet be deleted now? Only when nothing of it runs, checked on the JobSet's children
// directly: JobSet status lags behind its pods, and JobSet creates its Jobs even while suspended
// (so their existence is fine, their activity is not). Pure.
import type { Job, JobSet, Pod } from './objects.ts';
import { isDeleting } from './objects.ts';

export type Safety = { safe: true } | { safe: false; reasons: string[] };

/**
 * Safe when the JobSet is suspended, every child Job is suspended with `status.active == 0`, and
 * no pod of the JobSet exists, Terminating ones included. The one pod that does not block is a
 * Succeeded pod that is not being deleted: only the kubelet reports Succeeded, after every
 * container exited (e.g. a finished initializer), so it runs nothing. Failed pods block: the pod
 * garbage collector also marks pods Failed on lost nodes whose containers may still run.
 */
export function canDeleteSafely(jobSet: JobSet, childJobs: readonly Job[], pods: readonly Pod[]): Safety {
  const reasons: string[] = [];
  if (jobSet.spec?.suspend !== true) reasons.push(`JobSet ${jobSet.metadata.name} is not suspended`);
  for (const job of childJobs) {
    const name = job.metadata.name ?? '?';
    if (job.spec?.suspend !== true) reasons.push(`Job ${name} is not suspended`);
    const active = job.status?.active ?? 0;
    if (active > 0) reasons.push(`Job ${name} has ${active} active pod${active === 1 ? '' : 's'}`);
  }
  const present = pods.filter((p) => isDeleting(p.metadata) || p.status?.phase !== 'Succeeded');
  if (present.length > 0) {
    const terminating = present.filter((p) => isDeleting(p.metadata)).length;
    const names = present.slice(0, 3).map((p) => p.metadata.name ?? '?').join(', ');
    const more = present.length > 3 ? ` and ${present.length - 3} more` : '';
    reasons.push(`${present.length} pod${present.length === 1 ? '' : 's'} of the JobSet still exist${present.length === 1 ? 's' : ''}${terminating ? ` (${terminating} terminating)` : ''}: ${names}${more}`);
  }
  return reasons.length ? { safe: false, reasons } : { safe: true };
}
