// What the webhook tells the user about the TrainJob's JobSet when it admits a numNodes change:
// the pods of the old JobSet that still run or terminate, which the rebuild waits for. Advisory
// only: pods that still run are no reason to refuse (the reconciler deletes nothing while
// any of them exists, and Kueue resizes a job by exactly the update that suspends it and changes
// its count), so nothing here refuses, and a read that failed or timed out admits the change with
// a warning (fail open): the decision was already made by the rules, and the sidecar checks the
// JobSet's Jobs and pods live before it deletes anything. Pure: it judges the read that the I/O
// edge (src/scale/reads/jobset-read.ts) performed.
import { JOBSET_NAME_LABEL } from '../../api/names.ts';
import { isObject } from '../../json/object.ts';

/**
 * The JobSet's child Jobs (label `jobset.sigs.k8s.io/jobset-name`), as read from the API server.
 * Pods are counted from each Job's status, not from the JobSet's: `replicatedJobsStatus[].active`
 * counts Jobs, not pods.
 */
export type JobSetRead = { kind: 'read'; jobs: unknown } | { kind: 'failed'; error: string };

export interface JobPods {
  job: string;
  /** Pods pending or running, not being deleted (Job `status.active`). */
  active: number;
  /** Pods being deleted that have not reached a terminal phase yet (Job `status.terminating`, GA in 1.34). */
  terminating: number;
}

const count = (v: unknown): number => {
  const n = typeof v === 'bigint' ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : 0;
};

/** Jobs with pods that still run or terminate, tolerating any shape (a malformed Job counts nothing). */
export function podsOfJobs(jobs: unknown): JobPods[] {
  if (!Array.isArray(jobs)) return [];
  return jobs.flatMap((job: unknown) => {
    if (!isObject(job)) return [];
    const name = isObject(job.metadata) && typeof job.metadata.name === 'string' ? job.metadata.name : '?';
    const status = isObject(job.status) ? job.status : {};
    const pods = { job: name, active: count(status.active), terminating: count(status.terminating) };
    return pods.active + pods.terminating > 0 ? [pods] : [];
  });
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

const WAITS = 'the rebuild waits until none of its pods runs or is terminating';

/** Warnings for an admitted numNodes change; none when nothing of the JobSet runs. */
export function jobSetPodsWarnings(read: JobSetRead, jobSetName: string): string[] {
  switch (read.kind) {
    case 'failed':
      return [
        `JobSet ${jobSetName}: its pods could not be counted (${read.error}); the change is admitted all the same and ${WAITS}`,
      ];
    case 'read': {
      const jobs = podsOfJobs(read.jobs);
      if (jobs.length === 0) return [];
      const active = jobs.reduce((n, j) => n + j.active, 0);
      const terminating = jobs.reduce((n, j) => n + j.terminating, 0);
      const parts = [
        ...(active ? [`${active} pending or running`] : []),
        ...(terminating ? [`${terminating} terminating`] : []),
      ].join(', ');
      const shown = jobs
        .slice(0, 3)
        .map(
          (j) =>
            `Job ${j.job}: ${[...(j.active ? [`${j.active} active`] : []), ...(j.terminating ? [`${j.terminating} terminating`] : [])].join(', ')}`,
        );
      const more = jobs.length > 3 ? `; and ${plural(jobs.length - 3, 'more Job')}` : '';
      return [
        `JobSet ${jobSetName} still has ${plural(active + terminating, 'pod')} (${parts}; ${shown.join('; ')}${more}): ${WAITS}, and its pods stop once the JobSet is suspended`,
      ];
    }
  }
}

/**
 * The same warnings in general words, for a caller not known to be the API server: they name the
 * request's TrainJob and no Job, pod or count, and say how to see the pods (the details go to the
 * webhook's log: scale-check.ts). The JobSet has the TrainJob's name and namespace.
 */
export function jobSetPodsGeneralWarnings(read: JobSetRead, namespace: string, name: string): string[] {
  const trainJob = `TrainJob ${namespace}/${name}`;
  const see = `\`kubectl -n ${namespace} get pods -l ${JOBSET_NAME_LABEL}=${name}\` shows them`;
  if (read.kind === 'failed')
    return [
      `${trainJob}: the pods of its JobSet could not be counted (the webhook's log says why); the change is admitted all the same and ${WAITS}; ${see}`,
    ];
  if (podsOfJobs(read.jobs).length === 0) return [];
  return [
    `${trainJob}: its JobSet's pods have not all stopped yet: ${WAITS}, and its pods stop once the JobSet is suspended; ${see}`,
  ];
}
