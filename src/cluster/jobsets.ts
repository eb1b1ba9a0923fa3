// Reads what the webhook reports about a TrainJob's JobSet (same namespace and name) when it admits
// a numNodes change: the JobSet's child Jobs, whose status counts their pods. One LIST by label,
// bounded in time well below the webhook's timeoutSeconds (10 in manifests/webhook), so a slow API
// server still gets an answer in-band, never a webhook timeout.
import { BatchV1Api, Observable, type KubeConfig, type RequestContext, type ResponseContext } from '@kubernetes/client-node';
import type { JobSetRead } from '../rules/jobset-pods.ts';
import { describeError } from './client.ts';

export const JOBSET = { group: 'jobset.x-k8s.io', version: 'v1alpha2', plural: 'jobsets' } as const;

/** JobSet labels every Job (and pod) it creates with its name. */
const JOBSET_NAME_LABEL = 'jobset.sigs.k8s.io/jobset-name';

/** Well below the webhook's timeoutSeconds (10): the answer, with a warning, still goes out in time. */
export const JOBSET_READ_TIMEOUT_MS = 2_000;

export interface JobSetReaderOptions {
  timeoutMs?: number;
}

/** Client-node middleware (its object API takes Observable middleware) that aborts the request after `ms`. */
function abortAfter(ms: number) {
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(ms));
          return new Observable(Promise.resolve(ctx));
        },
        post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append' as const,
  };
}

export function jobSetReader(kc: KubeConfig, { timeoutMs = JOBSET_READ_TIMEOUT_MS }: JobSetReaderOptions = {}): (namespace: string, name: string) => Promise<JobSetRead> {
  const api = kc.makeApiClient(BatchV1Api);
  return async (namespace, name) => {
    let timer: NodeJS.Timeout | undefined;
    // The abort covers the HTTP exchange; the race also covers what comes before it (credentials).
    const timedOut = new Promise<JobSetRead>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'failed', error: `reading its Jobs timed out after ${timeoutMs} ms` }), timeoutMs);
    });
    const read = api
      // resourceVersion 0: served from the API server's watch cache as it is. A consistent LIST (no
      // resourceVersion) first waits for the cache to reach etcd's revision, and after a write to any
      // other resource (the TrainJob update being admitted is one) that takes a progress
      // notification, about 100 ms. A warning may be that stale; the sidecar reads live before it deletes.
      .listNamespacedJob({ namespace, labelSelector: `${JOBSET_NAME_LABEL}=${name}`, resourceVersion: '0' }, abortAfter(timeoutMs))
      .then((list): JobSetRead => ({ kind: 'read', jobs: list.items }))
      .catch((err: unknown): JobSetRead => ({ kind: 'failed', error: `reading its Jobs failed: ${describeError(err)}` }));
    try {
      return await Promise.race([read, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  };
}
