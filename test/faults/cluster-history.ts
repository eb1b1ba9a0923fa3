// What the API server stored for one namespace's pods and JobSets, every version in order, kept by
// watches that resume from the last resourceVersion seen (across sidecar kills and API-server
// restarts), and the safety check read from it: no JobSet was deleted while any of its pods still
// ran, Terminating ones included.
//
// Why versions and not polls: a poll sees a pod some time after it changed, so a JobSet deleted
// while a pod ran and that pod's end can fall between two polls. Each write in this world gets the
// next etcd revision as its resourceVersion, across all resources, so "the pods as stored just
// before the JobSet's deletion" is exact: every pod's last version below the revision of the write
// that deleted the JobSet. A watch can only resume where the API server still has history: after an
// API-server restart its watch cache starts empty, so the suites that restart it turn that cache
// off for pods and JobSets (`--watch-cache-sizes`), and their watches are served from etcd, which
// keeps every revision. Lost history (a 410 Gone) is recorded and fails the check: an incomplete
// record proves nothing.
import { CoreV1Api, CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';

/** The API-server flag that lets the history's watches resume across a restart (see above). */
export const HISTORY_APISERVER_ARGS = ['--watch-cache-sizes=pods#0,jobsets.jobset.x-k8s.io#0'];

export interface StoredVersion {
  resource: 'pods' | 'jobsets';
  /** ADDED, MODIFIED, DELETED, or LISTED (from the list a watch started at). */
  type: string;
  rv: number;
  object: KubeObject;
}

export interface KubeObject {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    deletionTimestamp?: unknown;
    labels?: Record<string, string>;
  };
  status?: { phase?: string };
  spec?: unknown;
}

const PATHS = {
  pods: (ns: string) => `/api/v1/namespaces/${ns}/pods`,
  jobsets: (ns: string) => `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${ns}/jobsets`,
};

export interface ClusterHistory {
  versions: StoredVersion[];
  /** Where history was lost (a 410 on resume): the check then fails. */
  gaps: string[];
  stop(): Promise<void>;
}

/** Starts recording the pods and JobSets of `namespace`. Resolves once both watches run. */
export async function recordHistory(kc: KubeConfig, namespace: string): Promise<ClusterHistory> {
  const versions: StoredVersion[] = [];
  const gaps: string[] = [];
  let stopped = false;
  const aborts = new Set<AbortController>();
  const watch = new Watch(kc);

  const follow = async (resource: 'pods' | 'jobsets'): Promise<void> => {
    const path = PATHS[resource](namespace);
    let from: string | undefined;
    const list = async () => {
      const res = await fetchList(kc, resource, namespace);
      for (const object of res.items)
        versions.push({ resource, type: 'LISTED', rv: Number(object.metadata?.resourceVersion), object });
      from = res.metadata.resourceVersion;
    };
    await list();
    const started = (async () => {
      while (!stopped) {
        const ended = await new Promise<unknown>((resolve) => {
          watch
            .watch(
              path,
              { resourceVersion: from, allowWatchBookmarks: true, timeoutSeconds: 20 },
              (type, object: KubeObject & { code?: number; message?: string }) => {
                if (type === 'BOOKMARK') {
                  from = object.metadata?.resourceVersion ?? from;
                  return;
                }
                if (type === 'ERROR') {
                  resolve(object);
                  return;
                }
                from = object.metadata?.resourceVersion ?? from;
                versions.push({ resource, type, rv: Number(from), object });
              },
              (err: unknown) => resolve(err ?? undefined),
            )
            .then((abort) => aborts.add(abort), resolve);
        });
        if (stopped) return;
        const status = ended as { code?: number; message?: string } | undefined;
        if (status?.code === 410) {
          gaps.push(`${resource}: ${status.message ?? '410 Gone'} (history lost after ${from})`);
          await retrying(list, () => stopped);
        } else if (ended !== undefined) {
          // The API server is down or restarting: resume from the same version once it is back.
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    })();
    running.push(started);
  };
  const running: Promise<void>[] = [];
  await Promise.all([follow('pods'), follow('jobsets')]);
  return {
    versions,
    gaps,
    async stop() {
      stopped = true;
      for (const a of aborts) a.abort();
      await Promise.all(running);
    },
  };
}

async function retrying(fn: () => Promise<void>, stop: () => boolean): Promise<void> {
  for (;;) {
    try {
      return await fn();
    } catch {
      if (stop()) return;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

async function fetchList(
  kc: KubeConfig,
  resource: 'pods' | 'jobsets',
  namespace: string,
): Promise<{ metadata: { resourceVersion: string }; items: KubeObject[] }> {
  if (resource === 'pods') {
    const list = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace });
    return { metadata: { resourceVersion: list.metadata?.resourceVersion ?? '' }, items: list.items as KubeObject[] };
  }
  return (await kc
    .makeApiClient(CustomObjectsApi)
    .listNamespacedCustomObject({ group: 'jobset.x-k8s.io', version: 'v1alpha2', namespace, plural: 'jobsets' })) as {
    metadata: { resourceVersion: string };
    items: KubeObject[];
  };
}

const TERMINAL = new Set(['Succeeded', 'Failed']);

export interface EarlyDelete {
  jobSet: string;
  uid: string;
  /** The revision of the write that deleted it (deletionTimestamp set, or the object removed). */
  deletedAt: number;
  /** Its pods that still ran then (not terminal), and whether each was Terminating. */
  running: string[];
}

export interface DeletionRecord {
  jobSet: string;
  uid: string;
  deletedAt: number;
  /** Pods of it the history holds any version of before that revision (gone ones included). */
  podsSeen: number;
  /** Of those, the ones still stored then, all terminal. */
  podsTerminal: number;
}

/**
 * For every JobSet deleted in the history: the pods of it (label jobset-uid) as stored just before
 * the deleting write. A pod whose phase is not terminal (Pending, Running, Unknown; Terminating or
 * not) still ran: that deletion was early. Pure.
 */
// eslint-disable-next-line complexity -- a scan of the history per JobSet; mostly ?. and ?? on stored objects
export function checkDeletions(versions: readonly StoredVersion[]): {
  deletions: DeletionRecord[];
  early: EarlyDelete[];
} {
  const sorted = [...versions].sort((a, b) => a.rv - b.rv);
  const deletions: DeletionRecord[] = [];
  const early: EarlyDelete[] = [];
  const seen = new Set<string>();
  for (const v of sorted) {
    if (v.resource !== 'jobsets') continue;
    const uid = v.object.metadata?.uid ?? '';
    if (seen.has(uid)) continue;
    const deleting =
      v.type === 'DELETED' ||
      (v.object.metadata?.deletionTimestamp !== undefined && v.object.metadata.deletionTimestamp !== null);
    if (!deleting) continue;
    seen.add(uid);
    // A DELETED event carries the object at the deleting revision; a foreground delete's first
    // MODIFIED with deletionTimestamp is the deleting write itself.
    const deletedAt = v.rv;
    const pods = new Map<string, StoredVersion>();
    for (const p of sorted) {
      if (p.rv >= deletedAt) break;
      if (p.resource === 'pods' && p.object.metadata?.labels?.['jobset.sigs.k8s.io/jobset-uid'] === uid)
        pods.set(p.object.metadata?.uid ?? '', p);
    }
    const stored = [...pods.values()].filter((p) => p.type !== 'DELETED');
    const running = stored
      .filter((p) => !TERMINAL.has(p.object.status?.phase ?? ''))
      .map(
        (p) =>
          `${p.object.metadata?.name}(${p.object.status?.phase ?? 'no phase'}${p.object.metadata?.deletionTimestamp ? ', Terminating' : ''})`,
      );
    const name = v.object.metadata?.name ?? '?';
    deletions.push({ jobSet: name, uid, deletedAt, podsSeen: pods.size, podsTerminal: stored.length - running.length });
    if (running.length) early.push({ jobSet: name, uid, deletedAt, running });
  }
  return { deletions, early };
}
