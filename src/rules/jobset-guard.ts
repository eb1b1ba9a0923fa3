// The numNodes change is refused while the TrainJob's JobSet still runs pods. Pure: it judges the
// result of the JobSet read, which the I/O edge (src/cluster/) performs. Fails closed: a read
// that failed is a denial, never an allow.
import { fieldError, type FieldError } from '../field/errors.ts';

export type JobSetRead =
  | { kind: 'found'; jobSet: unknown }
  | { kind: 'not-found' }
  | { kind: 'failed'; error: string }
  | { kind: 'no-cluster' };

export interface GuardResult {
  causes: FieldError[];
  warnings: string[];
}

const NUM_NODES = 'spec.trainer.numNodes';

/** Replicated jobs with active pods, from `status.replicatedJobsStatus[]` (tolerating any shape). */
export function activeReplicatedJobs(jobSet: unknown): { name: string; active: number }[] {
  const statuses = (jobSet as { status?: { replicatedJobsStatus?: unknown } } | null)?.status?.replicatedJobsStatus;
  if (!Array.isArray(statuses)) return [];
  return statuses.flatMap((s: unknown) => {
    const { name, active } = (s ?? {}) as { name?: unknown; active?: unknown };
    const count = typeof active === 'number' || typeof active === 'bigint' ? Number(active) : 0;
    return count > 0 ? [{ name: typeof name === 'string' ? name : '?', active: count }] : [];
  });
}

export function guardNumNodesChange(read: JobSetRead, jobSetName: string): GuardResult {
  switch (read.kind) {
    case 'not-found':
      return { causes: [], warnings: [] };
    case 'no-cluster':
      return { causes: [], warnings: [`JobSet ${jobSetName} was not checked for active pods: the webhook runs without cluster access`] };
    case 'failed':
      return {
        causes: [{ ...fieldError.internal(NUM_NODES, `could not read JobSet ${jobSetName} to check for active pods: ${read.error}`), origin: 'jobset-guard' }],
        warnings: [],
      };
    case 'found': {
      const active = activeReplicatedJobs(read.jobSet);
      if (active.length === 0) return { causes: [], warnings: [] };
      const list = active.map((a) => `${a.name}: ${a.active}`).join(', ');
      return {
        causes: [
          {
            ...fieldError.forbidden(NUM_NODES, `numNodes may not change while JobSet ${jobSetName} still has active pods (${list}); wait until they have terminated`),
            origin: 'jobset-guard',
          },
        ],
        warnings: [],
      };
    }
  }
}
