// A rebuild deletes the JobSet and Trainer (or standalone mode) creates it again, so the runtime's
// initializers run a second time. Trainer v2.3.0's stock initializers (pkg/initializers/) are safe
// to run again except one: the data cache's (`dataset/cache.py`, STORAGE_URI `cache://...`). Its
// objects are owned by the TrainJob, so they outlive the JobSet, and its second run gets 409
// creating the LeaderWorkerSet `<job>-cache`; that falls into its outer `except ApiException`,
// which deletes the live ServiceAccount `<job>-cache` and returns (exit 0): training restarts and
// the cache fails at its next pod restart or token refresh.
//
// So in the reconcile that deletes the JobSet, right after its delete (never before: a revert that
// fell between would leave the old JobSet current and its cache gone, decide.ts), the objects of a
// first run that a second run would create again are deleted (in the background, so their names
// are free at once; uid and resourceVersion preconditions; only when this TrainJob controls them):
// - the LeaderWorkerSet `<job>-cache`: the 409 that breaks the second run;
// - the ServiceAccount `<job>-cache`: its annotations carry IAM_ROLE, which runtimePatches may
//   change while suspended; cache.py skips an existing one (409), so it is made anew instead.
// The Service `<job>-cache-service` is kept: its spec (selector `app: <job>-cache-head`, port
// 50051) depends on the TrainJob's name alone, and cache.py skips an existing one (409). What is
// lost is only the cache's content, which the new LeaderWorkerSet loads again from its table
// (METADATA_LOC). The second run then takes the first run's path. Pure.
import { ANCESTOR_LABEL, JOBSET_NAME_LABEL } from '../api/names.ts';
import {
  controllerOf,
  isDeleting,
  type EnvVar,
  type JobSet,
  type ObjectMeta,
  type ReplicatedJob,
  type TrainJob,
} from '../api/objects.ts';
import { isObject } from '../json/object.ts';

/** Trainer's name of the dataset initializer's replicated job label value and container. */
export const DATASET_INITIALIZER = 'dataset-initializer';
/** The scheme cache.py serves (pkg/initializers/utils/utils.py CACHE_SCHEME, dispatched in dataset/__main__.py). */
export const CACHE_SCHEME = 'cache';
/** cache.py's env vars this reads from the dataset initializer's container: all it reads of the containers. */
export const STORAGE_URI = 'STORAGE_URI';
export const TRAIN_JOB_NAME = 'TRAIN_JOB_NAME';
export const INITIALIZER_ENV: readonly string[] = [STORAGE_URI, TRAIN_JOB_NAME];

export interface InitializerObjectRef {
  apiVersion: string;
  kind: 'LeaderWorkerSet' | 'ServiceAccount';
  name: string;
}

/** An object an initializer made, as read live (only those that exist). */
export interface InitializerObject {
  ref: InitializerObjectRef;
  metadata: ObjectMeta;
}

export type CacheInitializer =
  { cache: false } | { cache: true; objects: InitializerObjectRef[] } | { cache: true; unreadable: string };

/**
 * Does this JobSet's dataset initializer run cache.py, and which of its objects does a second run
 * need gone? Read from the JobSet that ran (its env is what the first run saw): the replicated job
 * Trainer labels `dataset-initializer` (jobset builder.go `Initializer`), its container of that name,
 * STORAGE_URI `cache://...`, and TRAIN_JOB_NAME (a value, or the stock runtime's fieldRef to the
 * JobSet-name label). Without TRAIN_JOB_NAME cache.py fails before it creates anything.
 */
export function cacheInitializerOf(js: JobSet): CacheInitializer {
  const env = datasetInitializerEnv(js);
  const uri = env?.find((e) => e.name === STORAGE_URI)?.value;
  if (typeof uri !== 'string' || !uri.startsWith(`${CACHE_SCHEME}://`)) return { cache: false };
  const name = env?.find((e) => e.name === TRAIN_JOB_NAME);
  if (!name) return { cache: false };
  const jobName = trainJobName(js, name);
  if (!jobName)
    return {
      cache: true,
      unreadable: `the dataset initializer's TRAIN_JOB_NAME (${JSON.stringify(name)}) is neither a value nor the JobSet-name label, so the data cache's objects cannot be named`,
    };
  return {
    cache: true,
    objects: [
      { apiVersion: 'leaderworkerset.x-k8s.io/v1', kind: 'LeaderWorkerSet', name: `${jobName}-cache` },
      { apiVersion: 'v1', kind: 'ServiceAccount', name: `${jobName}-cache` },
    ],
  };
}

function datasetInitializerEnv(js: JobSet): EnvVar[] | undefined {
  const rjobs: unknown = isObject(js) && isObject(js.spec) ? js.spec.replicatedJobs : undefined;
  if (!Array.isArray(rjobs)) return undefined;
  const rjob = (rjobs as unknown[]).find(
    (r): r is ReplicatedJob =>
      isObject(r) && (r as ReplicatedJob).template?.metadata?.labels?.[ANCESTOR_LABEL] === DATASET_INITIALIZER,
  );
  const containers: unknown = rjob?.template?.spec?.template?.spec?.containers;
  if (!Array.isArray(containers)) return undefined;
  const env: unknown = containers.find((c) => isObject(c) && c.name === DATASET_INITIALIZER)?.env;
  return Array.isArray(env) ? env.filter((e): e is EnvVar => isObject(e) && typeof e.name === 'string') : undefined;
}

const JOBSET_NAME_FIELD = `metadata.labels['${JOBSET_NAME_LABEL}']`;

function trainJobName(js: JobSet, env: EnvVar): string | undefined {
  if (typeof env.value === 'string' && env.value) return env.value;
  const fieldRef: unknown = isObject(env.valueFrom) ? env.valueFrom.fieldRef : undefined;
  const path = isObject(fieldRef) ? fieldRef.fieldPath : undefined;
  // The pod's JobSet-name label is the JobSet's name (JobSet sets it on every pod).
  const jsName = js.metadata?.name;
  return path === JOBSET_NAME_FIELD && typeof jsName === 'string' && jsName ? jsName : undefined;
}

export type InitializerCleanup =
  | { kind: 'clear' }
  | { kind: 'delete'; objects: { ref: InitializerObjectRef; uid: string; resourceVersion: string }[] }
  | { kind: 'wait'; reason: string }
  | { kind: 'foreign'; reason: string };

const show = (o: InitializerObject) => `${o.ref.kind} ${o.ref.name}`;

/**
 * What to do with the objects found: none left, nothing to delete; one not controlled by this
 * TrainJob (by uid) is never touched, and the rebuild waits for a person (cache.py's first run
 * would trip over it too); the rest are deleted with the JobSet. If all are already being deleted
 * (by someone else, or held by a finalizer), the JobSet waits until they are gone: a 409 on one
 * still terminating would break the second run the same way.
 */
export function planInitializerCleanup(tj: TrainJob, found: readonly InitializerObject[]): InitializerCleanup {
  if (found.length === 0) return { kind: 'clear' };
  const foreign = found.filter((o) => !tj.metadata.uid || controllerOf(o.metadata)?.uid !== tj.metadata.uid);
  if (foreign.length)
    return {
      kind: 'foreign',
      reason: `${foreign.map(show).join(', ')} ${foreign.length === 1 ? 'is' : 'are'} not controlled by this TrainJob (uid ${tj.metadata.uid}), so the data cache initializer's second run would fail on ${foreign.length === 1 ? 'it' : 'them'} (cache.py deletes its ServiceAccount and exits 0 on a 409); left alone: delete ${foreign.length === 1 ? 'it' : 'them'} to rebuild`,
    };
  const live = found.filter((o) => !isDeleting(o.metadata));
  if (live.length === 0)
    return {
      kind: 'wait',
      reason: `${found.map(show).join(', ')} of the data cache ${found.length === 1 ? 'is' : 'are'} being deleted`,
    };
  const unreadable = live.find(
    (o) => typeof o.metadata.uid !== 'string' || typeof o.metadata.resourceVersion !== 'string',
  );
  if (unreadable) return { kind: 'foreign', reason: `${show(unreadable)} has no uid or resourceVersion: left alone` };
  return {
    kind: 'delete',
    objects: live.map((o) => ({ ref: o.ref, uid: o.metadata.uid!, resourceVersion: o.metadata.resourceVersion! })),
  };
}
