// Watches, so that nothing is missed when a hint is lost or the sidecar restarts: TrainJobs, the
// JobSets they control, and the JobSets' Jobs (a Job's status moves when its last pod goes away,
// which is when a waiting rebuild may proceed). Every event becomes a TrainJob key in the queue.
// Their caches are what a reconcile reads first (ClusterCache): no request for what is watched.
import {
  BatchV1Api,
  CustomObjectsApi,
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import { describeError } from '../cluster/errors.ts';
import type { Logger } from '../observability/logger.ts';
import { JOBSET, JOBSET_NAME_LABEL, TRAINJOB, TRAINJOB_KIND } from '../api/names.ts';
import { keyOf } from './keys.ts';
import { controllerOf, type Job, type JobSet, type ObjectMeta, type TrainJob } from '../api/objects.ts';

/**
 * What the watches hold, read instead of the API server. A cache may lag behind by an event: every
 * write made from it tests a uid and resourceVersion, and the rebuild's delete is decided on a live
 * read (reconcile.ts). Objects are copies: the caller may change them.
 */
export interface ClusterCache {
  /** Every watch has listed once (before that, reads go to the API server). */
  synced(): boolean;
  getTrainJob(namespace: string, name: string): TrainJob | undefined;
  getJobSet(namespace: string, name: string): JobSet | undefined;
  /** The Jobs labelled with this JobSet's name. */
  listJobs(namespace: string, jobSetName: string): Job[];
}

export interface Watches {
  /** Starts every informer (a failed first list is retried; see synced()). */
  start(): Promise<void>;
  stop(): Promise<void>;
  synced(): boolean;
  /** The keys of every TrainJob in the cache (for periodic resyncs and a new leader). */
  trainJobKeys(): string[];
  cache: ClusterCache;
}

type Watched = Informer<KubernetesObject> & ObjectCache<KubernetesObject>;

export interface WatchOptions {
  onKey(key: string, source: 'trainjob' | 'jobset' | 'job'): void;
  logger: Logger;
  /** Delay before an informer that failed is started again. */
  restartDelayMs?: number;
}

/** The TrainJob a JobSet event concerns: its controller, when that is a TrainJob. */
export function trainJobKeyOfJobSet(meta: ObjectMeta): string | undefined {
  const owner = controllerOf(meta);
  return owner?.kind === TRAINJOB_KIND && meta.namespace ? keyOf(meta.namespace, owner.name) : undefined;
}

/** The TrainJob a Job event concerns: the JobSet it belongs to is named like its TrainJob. */
export function trainJobKeyOfJob(meta: ObjectMeta): string | undefined {
  const jobSet = meta.labels?.[JOBSET_NAME_LABEL];
  return jobSet && meta.namespace ? keyOf(meta.namespace, jobSet) : undefined;
}

// eslint-disable-next-line max-lines-per-function -- three informers and their cache share `listed` and `stopped`
export function createWatches(kc: KubeConfig, opts: WatchOptions): Watches {
  const objects = kc.makeApiClient(CustomObjectsApi);
  const batch = kc.makeApiClient(BatchV1Api);
  const listed = new Set<string>();
  // Synced means every informer has listed once (a failed list is retried through 'error').
  const list = (name: string, p: Promise<unknown>) =>
    (p as Promise<KubernetesListObject<KubernetesObject>>).then((l) => {
      listed.add(name);
      return l;
    });
  const specs: {
    name: 'trainjob' | 'jobset' | 'job';
    informer: Watched;
    keyOf: (meta: ObjectMeta) => string | undefined;
  }[] = [
    {
      name: 'trainjob',
      informer: makeInformer(kc, `/apis/${TRAINJOB.group}/${TRAINJOB.version}/${TRAINJOB.plural}`, () =>
        list('trainjob', objects.listClusterCustomObject({ ...TRAINJOB })),
      ),
      keyOf: (m) => (m.namespace && m.name ? keyOf(m.namespace, m.name) : undefined),
    },
    {
      name: 'jobset',
      informer: makeInformer(kc, `/apis/${JOBSET.group}/${JOBSET.version}/${JOBSET.plural}`, () =>
        list('jobset', objects.listClusterCustomObject({ ...JOBSET })),
      ),
      keyOf: trainJobKeyOfJobSet,
    },
    {
      name: 'job',
      informer: makeInformer(
        kc,
        '/apis/batch/v1/jobs',
        () => list('job', batch.listJobForAllNamespaces({ labelSelector: JOBSET_NAME_LABEL })),
        JOBSET_NAME_LABEL,
      ),
      keyOf: trainJobKeyOfJob,
    },
  ];
  let stopped = false;

  for (const spec of specs) {
    const forward = (obj: KubernetesObject) => {
      const key = spec.keyOf((obj.metadata ?? {}) as ObjectMeta);
      if (key) opts.onKey(key, spec.name);
    };
    spec.informer.on('add', forward);
    spec.informer.on('update', forward);
    spec.informer.on('delete', forward);
    spec.informer.on('error', (err: unknown) => {
      if (stopped) return;
      opts.logger.warn({ watch: spec.name, error: describeError(err) }, 'watch failed; restarting it');
      setTimeout(() => {
        if (!stopped)
          spec.informer
            .start()
            .catch((e: unknown) =>
              opts.logger.warn({ watch: spec.name, error: describeError(e) }, 'watch restart failed'),
            );
      }, opts.restartDelayMs ?? 5_000).unref();
    });
  }

  const [trainJobs, jobSets, jobs] = specs.map((s) => s.informer);
  const synced = () => specs.every((s) => listed.has(s.name));
  const copy = <T>(o: KubernetesObject | undefined): T | undefined =>
    o === undefined ? undefined : (structuredClone(o) as T);
  const cache: ClusterCache = {
    synced,
    getTrainJob: (namespace, name) => copy<TrainJob>(trainJobs.get(name, namespace)),
    getJobSet: (namespace, name) => copy<JobSet>(jobSets.get(name, namespace)),
    listJobs: (namespace, jobSetName) =>
      jobs
        .list(namespace)
        .filter((j) => j.metadata?.labels?.[JOBSET_NAME_LABEL] === jobSetName)
        .map((j) => copy<Job>(j)!),
  };

  return {
    cache,
    async start() {
      await Promise.all(specs.map((s) => s.informer.start()));
    },
    async stop() {
      stopped = true;
      await Promise.all(specs.map((s) => s.informer.stop()));
    },
    synced,
    trainJobKeys() {
      return specs[0].informer
        .list()
        .flatMap((o) =>
          o.metadata?.namespace && o.metadata.name ? [keyOf(o.metadata.namespace, o.metadata.name)] : [],
        );
    },
  };
}
