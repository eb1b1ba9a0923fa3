// The training runtimes as list+watch caches keep them, so that a numNodes change need not GET the
// runtime its TrainJob names (one of the reads behind each such change, scale-check.ts). Runtimes
// are few and small (a cluster has tens, not thousands), so both kinds are cached cluster-wide:
// ClusterTrainingRuntimes and every namespace's TrainingRuntimes, each kept as its name and spec.
// Both a GET with resourceVersion=0 (what scale-check.ts sends) and a watch are served from the
// API server's watch cache, so what the cache holds is what such a GET would answer, up to the
// event's delivery.
//
// A cached runtime is trusted only while its cache is current: listed, and its watch running
// (from the list, or from the watch taken again after a failure, until the next failure). A name
// the cache does not hold is read by GET, never taken as absent: the runtime may have been
// created a moment ago, and a refusal on a cache's word would be wrong where a read is right.
import type { ApiClient } from '../cluster/api-request.ts';
import { createInformer, type Informer } from '../cluster/informer.ts';
import { CLUSTER_TRAINING_RUNTIME, TRAINING_RUNTIME } from '../api/names.ts';
import { isObject } from '../json/object.ts';
import type { Read } from '../rebuild/scale-admission.ts';

/** What is kept of a runtime: what scale-check.ts reads of it. */
export interface CachedRuntime {
  metadata: { name: string; namespace?: string };
  spec: unknown;
}

export type RuntimeKind = 'ClusterTrainingRuntime' | 'TrainingRuntime';

export interface RuntimeWatch {
  /** The runtime as the cache holds it while current; undefined: it must be read (GET). */
  read(kind: RuntimeKind, namespace: string, name: string): Read<unknown> | undefined;
  stop(): Promise<void>;
}

/** The informers' transform: name, namespace and spec only (pure; objects without a name are not kept). */
export function runtimeForCache(raw: unknown): CachedRuntime | undefined {
  if (!isObject(raw) || !isObject(raw.metadata) || typeof raw.metadata.name !== 'string') return undefined;
  const { name, namespace } = raw.metadata;
  return {
    metadata: typeof namespace === 'string' ? { name, namespace } : { name },
    spec: raw.spec,
  };
}

/** One cache and whether it is current (listed, its watch running since the last failure). */
function followed(
  client: ApiClient,
  path: string,
  what: string,
  onError: (message: string) => void,
): { informer: Informer<CachedRuntime>; current: () => boolean } {
  let watching = false;
  let lastReason: string | undefined;
  const informer = createInformer<CachedRuntime>({
    client,
    path,
    transform: runtimeForCache,
    handlers: {
      onWatching: () => {
        watching = true;
        lastReason = undefined;
      },
      onError: (message) => {
        watching = false;
        // Once per distinct failure: a role without list/watch on runtimes would say it every retry.
        if (message === lastReason) return;
        lastReason = message;
        onError(`${what}: ${message}; numNodes changes GET the runtime until the watch runs again`);
      },
    },
  });
  void informer.start();
  return { informer, current: () => watching && informer.synced() };
}

/** Follows both kinds of runtime; `onError` hears each distinct failure of a list or watch once. */
export function watchRuntimes(client: ApiClient, onError: (message: string) => void): RuntimeWatch {
  const path = (r: { group: string; version: string; plural: string }) => `/apis/${r.group}/${r.version}/${r.plural}`;
  const caches = {
    ClusterTrainingRuntime: followed(client, path(CLUSTER_TRAINING_RUNTIME), 'ClusterTrainingRuntimes', onError),
    TrainingRuntime: followed(client, path(TRAINING_RUNTIME), 'TrainingRuntimes', onError),
  };
  return {
    read(kind, namespace, name) {
      const cache = caches[kind];
      if (!cache.current()) return undefined;
      const found = cache.informer.get(kind === 'TrainingRuntime' ? namespace : undefined, name);
      return found ? { kind: 'found', value: found } : undefined;
    },
    async stop() {
      await Promise.all([caches.ClusterTrainingRuntime.informer.stop(), caches.TrainingRuntime.informer.stop()]);
    },
  };
}
