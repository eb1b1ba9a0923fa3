// Reads what the webhook reports about a TrainJob's JobSet (same namespace and name) when it admits
// a numNodes change: the JobSet's child Jobs, whose status counts their pods. One GET of the Jobs
// by label over a bounded keep-alive pool (api-request.ts), bounded in time well below the webhook's
// timeoutSeconds (10 in manifests/webhook), so a slow API server still gets an answer in-band,
// never a webhook timeout; and bounded in size, so a hostile or huge answer costs at most that.
import { JOBSET_NAME_LABEL } from '../../api/names.ts';
import type { JobSetRead } from './jobset-pods.ts';
import type { ApiClient } from '../../cluster/api-request.ts';
import { describeStatus, statusMessage } from '../../cluster/errors.ts';

// node:http's CommonJS exports: an ESM import of it loads Node's bundled undici (~5 MiB RSS), as
// src/cluster/api-request.ts explains.
const { STATUS_CODES } = process.getBuiltinModule('node:http');

/** Well below the webhook's timeoutSeconds (10): the answer, with a warning, still goes out in time. */
export const JOBSET_READ_TIMEOUT_MS = 2_000;

/**
 * A JobList this large is not read (the warning says so). A Job of a JobSet is 4-8 KB of JSON, so
 * this is over a thousand Jobs; with at most MAX_API_SOCKETS reads in flight it bounds the memory.
 */
export const JOBS_READ_MAX_BYTES = 8 * 1024 * 1024;

export interface JobSetReaderOptions {
  timeoutMs?: number;
  maxBytes?: number;
}

const hasPods = (n: unknown): boolean => typeof n === 'number' && n > 0;

/**
 * What jobset-pods.ts judges: the name and pod counts of each Job that has pods, nothing else of
 * the list kept. A Job without pods adds nothing to the warning, and keeping an entry for each
 * would let a list of tiny items under the byte cap hold ~50 times its size (review of fa48dae).
 */
function jobsOf(list: unknown): unknown[] | undefined {
  const items = (list as { items?: unknown } | null)?.items;
  if (!Array.isArray(items)) return undefined;
  const jobs: unknown[] = [];
  for (const job of items as ({
    metadata?: { name?: unknown };
    status?: { active?: unknown; terminating?: unknown };
  } | null)[]) {
    const active = job?.status?.active;
    const terminating = job?.status?.terminating;
    if (hasPods(active) || hasPods(terminating))
      jobs.push({ metadata: { name: job?.metadata?.name }, status: { active, terminating } });
  }
  return jobs;
}

/** `HTTP 403: jobs.batch is forbidden`: the Status message when the body is one, else the start of the body. */
export function describeAnswer(status: number, body: Buffer): string {
  const text = body.subarray(0, 64 * 1024).toString('utf8');
  const message = statusMessage(text) ?? text.trim();
  return describeStatus(status, message || STATUS_CODES[status] || 'no message');
}

async function readJobs(client: ApiClient, path: string, signal: AbortSignal, maxBytes: number): Promise<JobSetRead> {
  const res = await client.request(path, { signal, maxBytes });
  if (res.status !== 200)
    return { kind: 'failed', error: `reading its Jobs failed: ${describeAnswer(res.status, res.body)}` };
  let list: unknown;
  try {
    list = JSON.parse(res.body.toString('utf8'));
  } catch {
    return {
      kind: 'failed',
      error: `reading its Jobs failed: the API server's answer is not JSON (${res.body.length} bytes)`,
    };
  }
  const jobs = jobsOf(list);
  if (!jobs) return { kind: 'failed', error: `reading its Jobs failed: the API server's answer is not a list of Jobs` };
  return { kind: 'read', jobs };
}

export function jobSetReader(
  client: ApiClient,
  { timeoutMs = JOBSET_READ_TIMEOUT_MS, maxBytes = JOBS_READ_MAX_BYTES }: JobSetReaderOptions = {},
): (namespace: string, name: string) => Promise<JobSetRead> {
  return async (namespace, name) => {
    // resourceVersion 0: served from the API server's watch cache as it is. A consistent LIST (no
    // resourceVersion) first waits for the cache to reach etcd's revision, and after a write to any
    // other resource (the TrainJob update being admitted is one) that takes a progress
    // notification, about 100 ms. A warning may be that stale; the sidecar reads live before it deletes.
    const query = new URLSearchParams({ labelSelector: `${JOBSET_NAME_LABEL}=${name}`, resourceVersion: '0' });
    const path = `/apis/batch/v1/namespaces/${encodeURIComponent(namespace)}/jobs?${query}`;
    const deadline = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    // The abort ends the HTTP exchange; the race also covers what comes before it (credentials,
    // which an exec plugin may take long to give).
    const timedOut = new Promise<JobSetRead>((resolve) => {
      timer = setTimeout(() => {
        deadline.abort();
        resolve({ kind: 'failed', error: `reading its Jobs timed out after ${timeoutMs} ms` });
      }, timeoutMs);
    });
    const read = readJobs(client, path, deadline.signal, maxBytes).catch((err: unknown): JobSetRead => ({
      kind: 'failed',
      error: `reading its Jobs failed: ${(err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 300)}`,
    }));
    try {
      return await Promise.race([read, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  };
}
