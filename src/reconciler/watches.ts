// Watches, so that nothing is missed when a hint is lost or the sidecar restarts: TrainJobs, the
// JobSets they control, and the JobSets' Jobs (a Job's status moves when its last pod goes away,
// which is when a waiting rebuild may proceed). Every event becomes a TrainJob key in the queue.
// Their caches are what a reconcile reads first (ClusterCache): no request for what is watched.
// Informers of the project's own client (src/cluster/informer.ts), as client-go's.
import type { ApiClient } from '../cluster/api-request.ts';
import { createInformer, type Informer } from '../cluster/informer.ts';
import { CORE, resourcePath } from '../cluster/resource-path.ts';
import type { Logger } from '../observability/logger.ts';
import { JOBSET, JOBSET_NAME_LABEL, TRAINJOB, TRAINJOB_KIND } from '../api/names.ts';
import { keyOf } from './keys.ts';
import type { CacheShape } from './cache-shape.ts';
import { controllerOf, type Job, type JobSet, type ObjectMeta, type TrainJob } from '../api/objects.ts';

/**
 * What the watches hold, read instead of the API server. A cache may lag behind by an event: every
 * write made from it tests a uid and resourceVersion, and the rebuild's delete is decided on a live
 * read (reconcile.ts). Objects are the stored ones, frozen: read, never changed (no copy per read).
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

export interface WatchOptions {
  /** 'resync': the informer's periodic pass, which changed nothing (so no event filter may drop it). */
  onKey(key: string, source: 'trainjob' | 'jobset' | 'job' | 'resync'): void;
  logger: Logger;
  /**
   * Every TrainJob handed to onKey again about this often, as 'resync' (the informer's resync; 0:
   * never): the period jittered once, to within ±10% (jitteredResyncMs).
   */
  resyncMs?: number;
  /**
   * What is kept of each object (cache-shape.ts), the mode's: no default, as standalone mode's
   * build reads the whole TrainJob that companion mode's shape strips.
   */
  shape: CacheShape;
}

/**
 * controller-runtime's calculateResyncPeriod (pkg/cache/internal/informers.go): the period times a
 * factor in [0.9, 1.1), drawn once per informer, so that replicas started together (and their
 * resyncs' bursts of reconciles) drift apart instead of running in lock-step.
 */
export function jitteredResyncMs(ms: number, random: () => number = Math.random): number {
  return Math.round(ms * (random() / 5 + 0.9));
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

type Source = 'trainjob' | 'jobset' | 'job';
type Stored = TrainJob | JobSet | Job;

/** The index of Jobs: `namespace/jobSetName`. */
const jobSetOfJob = (job: Job) => {
  const jobSet = job.metadata.labels?.[JOBSET_NAME_LABEL];
  return jobSet && job.metadata.namespace ? keyOf(job.metadata.namespace, jobSet) : undefined;
};

export function createWatches(client: ApiClient, opts: WatchOptions): Watches {
  const { shape } = opts;
  const informer = <T extends Stored>(
    name: Source,
    path: string,
    keyOfMeta: (meta: ObjectMeta) => string | undefined,
    transform: (raw: unknown) => T | undefined,
    more: { labelSelector?: string; indexBy?: (o: T) => string | undefined; resyncMs?: number } = {},
  ): Informer<T> => {
    const forward = (obj: T, source: Source | 'resync' = name) => {
      const key = keyOfMeta(obj.metadata ?? {});
      if (key) opts.onKey(key, source);
    };
    return createInformer<T>({
      client,
      path,
      transform,
      ...more,
      handlers: {
        onAdd: forward,
        // The informer's resync hands a stored object back as its own old version.
        onUpdate: (old, obj) => forward(obj, old === obj ? 'resync' : name),
        onDelete: forward,
        // 410 Gone is the watch's resourceVersion compacted away: routine on a long watch, answered
        // by a list (client-go logs it at V(4)); any other failure is worth a warning.
        onError: (error, code) =>
          code === 410
            ? opts.logger.info({ watch: name, error }, 'watch expired (410 Gone); listing again')
            : opts.logger.warn({ watch: name, error }, 'watch failed; restarting it'),
      },
    });
  };
  const trainJobs = informer<TrainJob>(
    'trainjob',
    resourcePath(TRAINJOB),
    (m) => (m.namespace && m.name ? keyOf(m.namespace, m.name) : undefined),
    shape.trainJob,
    { resyncMs: opts.resyncMs ? jitteredResyncMs(opts.resyncMs) : undefined },
  );
  // No label says a JobSet is a TrainJob's (Trainer's JobSet carries its runtime's labels): every
  // JobSet is watched, those no TrainJob controls kept as their identity alone (cache-shape.ts).
  const jobSets = informer<JobSet>('jobset', resourcePath(JOBSET), trainJobKeyOfJobSet, shape.jobSet);
  const jobs = informer<Job>('job', resourcePath(CORE.jobs), trainJobKeyOfJob, shape.job, {
    labelSelector: JOBSET_NAME_LABEL,
    indexBy: jobSetOfJob,
  });
  const all = [trainJobs, jobSets, jobs];
  const synced = () => all.every((i) => i.synced());
  const cache: ClusterCache = {
    synced,
    getTrainJob: (namespace, name) => trainJobs.get(namespace, name),
    getJobSet: (namespace, name) => jobSets.get(namespace, name),
    listJobs: (namespace, jobSetName) => jobs.byIndex(keyOf(namespace, jobSetName)),
  };

  return {
    cache,
    async start() {
      await Promise.all(all.map((i) => i.start()));
    },
    async stop() {
      await Promise.all(all.map((i) => i.stop()));
    },
    synced,
    trainJobKeys() {
      return trainJobs
        .list()
        .flatMap((o) =>
          o.metadata?.namespace && o.metadata.name ? [keyOf(o.metadata.namespace, o.metadata.name)] : [],
        );
    },
  };
}
