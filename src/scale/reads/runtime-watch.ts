// The ClusterTrainingRuntimes as a list+watch cache keeps them, so that a numNodes change need not
// GET the runtime its TrainJob names (one of the reads behind each such change, scale-check.ts).
// Only the cluster-scoped kind: those are few, written by the cluster's administrators, and the
// stock runtimes are of that kind; namespaced TrainingRuntimes are any tenant's to create, as many
// and as large as etcd takes, so caching them would let a tenant grow the webhook's memory (under
// failurePolicy Fail an OOM-killed webhook refuses every TrainJob write): those are read by GET.
// Both a GET with resourceVersion=0 (what scale-check.ts sends) and a watch are served from the
// API server's watch cache, so what the cache holds is what such a GET would answer, up to the
// event's delivery.
//
// A cached runtime is trusted only while the cache is known current: listed, a watch open, and
// that watch heard from (an event or a bookmark, which the API server sends on an idle watch
// about once a minute) within TRUST_MS; a stalled stream or a watch being taken again is not
// trusted. A name the cache does not hold is read by GET, never taken as absent: the runtime may
// have been created a moment ago, and a refusal on a cache's word would be wrong where a read is
// right.
import type { ApiClient } from '../../cluster/api-request.ts';
import { createInformer } from '../../cluster/informer.ts';
import { CLUSTER_TRAINING_RUNTIME } from '../../api/names.ts';
import { isObject } from '../../json/object.ts';
import type { Read } from '../scale-admission.ts';

/** How long a watch's last line (event or bookmark) stands for the cache being current. */
export const RUNTIME_TRUST_MS = 120_000;

/** What is kept of a runtime: what scale-check.ts reads of it. */
export interface CachedRuntime {
  metadata: { name: string };
  spec: unknown;
}

export interface RuntimeWatch {
  /** The ClusterTrainingRuntime as the cache holds it while current; undefined: it must be read (GET). */
  read(name: string): Read<unknown> | undefined;
  stop(): Promise<void>;
}

/** The informer's transform: the name and spec only (pure; objects without a name are not kept). */
export function runtimeForCache(raw: unknown): CachedRuntime | undefined {
  if (!isObject(raw) || !isObject(raw.metadata) || typeof raw.metadata.name !== 'string') return undefined;
  return { metadata: { name: raw.metadata.name }, spec: raw.spec };
}

/** Follows the ClusterTrainingRuntimes; `onError` hears each distinct failure once, until a watch delivers again. */
export function watchRuntimes(
  client: ApiClient,
  onError: (message: string) => void,
  options: { trustMs?: number; now?: () => number } = {},
): RuntimeWatch {
  const trustMs = options.trustMs ?? RUNTIME_TRUST_MS;
  const now = options.now ?? (() => performance.now());
  const { group, version, plural } = CLUSTER_TRAINING_RUNTIME;
  let watching = false;
  let heardAt = -Infinity;
  let stopped = false;
  let lastReason: string | undefined;
  const heard = () => {
    heardAt = now();
    lastReason = undefined;
  };
  const informer = createInformer<CachedRuntime>({
    client,
    path: `/apis/${group}/${version}/${plural}`,
    transform: runtimeForCache,
    handlers: {
      onWatching: () => {
        watching = true;
        heardAt = now();
      },
      onWatchActivity: heard,
      onWatchEnded: () => (watching = false),
      onError: (message) => {
        // Once per distinct failure: a role without list/watch on runtimes would say it every retry.
        if (message === lastReason) return;
        lastReason = message;
        onError(`ClusterTrainingRuntimes: ${message}; numNodes changes GET the runtime while the cache is not current`);
      },
    },
  });
  void informer.start();
  const current = () => !stopped && watching && informer.synced() && now() - heardAt <= trustMs;
  return {
    read(name) {
      if (!current()) return undefined;
      const found = informer.get(undefined, name);
      return found ? { kind: 'found', value: found } : undefined;
    },
    async stop() {
      stopped = true;
      await informer.stop();
    },
  };
}
