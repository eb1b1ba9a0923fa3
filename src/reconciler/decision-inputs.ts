// What of a TrainJob, its JobSet and the JobSet's Jobs a decision (src/rebuild/decide.ts) reads, as
// views, and a gate that queues a watch event's key only when its view changed. Creating one
// suspended TrainJob beside Trainer and JobSet brings about eight events (the TrainJob's add,
// Trainer's status writes, the JobSet's add and status, three Jobs' adds and statuses); most
// change nothing a decision reads, and each was a reconcile of its own. Like controller-runtime's
// predicates (GenerationChanged, ResourceVersionChanged) in front of its work queue, but by field:
// status is read here too (conditions, a Job's active pods), so "the generation moved" would
// miss changes that matter.
//
// What the views keep: what the watches' caches keep (cache-shape.ts, the one list of what a
// decision reads), shaped again here so that a whole object is judged as its cached self, but for
// metadata.resourceVersion (every write moves it; a write from a stale version is refused and
// retried) and, of managedFields, only which managers own spec.suspend. Jobs are only read as
// canDeleteSafely's cached check (safety.ts: a suspended or finished Job with no active or
// terminating pod does not block); their view is the set of reasons jobBlocks() gives, so a Job
// created suspended (JobSet makes them so) or a status write that leaves its counts is no change,
// and one that stops blocking is.
import { isObject } from '../json/object.ts';
import { StatusFieldEchoes, type FieldEffect } from './status-field-echo.ts';
import { digest } from './view-digest.ts';
import type { Job, JobSet, TrainJob } from '../api/objects.ts';
import { STATUS_FIELD, type Mode } from '../api/names.ts';
import { jobBlocks } from '../rebuild/safety.ts';
import { splitKey } from './keys.ts';
import type { ClusterCache } from './watches.ts';
import { cacheShapeFor } from './cache-shape.ts';

export type WatchSource = 'trainjob' | 'jobset' | 'job';

/** Metadata without what every write moves and no decision reads. */
function readMetadata(meta: unknown): Record<string, unknown> {
  const { resourceVersion: _rv, managedFields: _mf, ...rest } = isObject(meta) ? meta : {};
  return rest;
}

/** The cached shape of an object, without its metadata's resourceVersion and managedFields. */
function readOf(kept: { metadata?: unknown } | undefined): Record<string, unknown> {
  return { ...kept, metadata: readMetadata(kept?.metadata) };
}

/** The cached shapes, not interned: a view is only digested (and interning would churn its tables). */
const SHAPES = {
  companion: cacheShapeFor('companion', { intern: false }),
  standalone: cacheShapeFor('standalone', { intern: false }),
};

/**
 * The TrainJob as decisions read it: the cached shape but for status.trainjobWebhook, which no
 * decision reads and the gate judges apart (DecisionInputGate.expectStatusField): the reconciler's
 * own writes of it coming back were a reconcile each (4 per created TrainJob instead of 2,
 * bench:scale), anyone else's change to it must be one (the field is rewritten only when the
 * stored one differs, status-field.ts).
 */
export function trainJobView(tj: TrainJob, mode: Mode): unknown {
  const kept = readOf(SHAPES[mode].trainJob(tj));
  if (!isObject(kept.status) || !(STATUS_FIELD in kept.status)) return kept;
  const { [STATUS_FIELD]: _own, ...status } = kept.status;
  if (Object.keys(status).length > 0) return { ...kept, status };
  // Nothing else of status is read: the view is the one from before the field's first write (no
  // status at all), or that write comes back as a change (3 reconciles per created TrainJob).
  const { status: _none, ...rest } = kept;
  return rest;
}

/** The managers that own spec.suspend (decide.ts ownsSuspend reads only that of managedFields). */
function suspendOwners(meta: Record<string, unknown> | undefined): string[] {
  const entries = meta?.managedFields;
  if (!Array.isArray(entries)) return [];
  const owners = entries.flatMap((e: unknown) => {
    const entry = isObject(e) ? e : undefined;
    const spec = isObject(entry?.fieldsV1) ? entry.fieldsV1['f:spec'] : undefined;
    return isObject(spec) && spec['f:suspend'] !== undefined ? [String(entry?.manager)] : [];
  });
  return [...new Set(owners)].sort();
}

export function jobSetView(js: JobSet, mode: Mode): unknown {
  const kept = SHAPES[mode].jobSet(js);
  return { ...readOf(kept), suspendOwners: suspendOwners(kept?.metadata as Record<string, unknown> | undefined) };
}

/** Why the Jobs keep their JobSet from being deleted, as the cached check reads them (order aside). */
export function jobsView(jobs: readonly Job[]): string[] {
  return jobs.flatMap((j, i) => jobBlocks(j, i)).sort();
}

/**
 * One watch event (old absent: an add; new absent: a delete): does it change anything a decision
 * reads? The status field is no decision input: the gate judges its changes apart (overwritten).
 */
export function eventChangesDecision(
  source: WatchSource,
  mode: Mode,
  old: TrainJob | JobSet | Job | undefined,
  current: TrainJob | JobSet | Job | undefined,
): boolean {
  if (source === 'job') return digest(old ? jobsView([old as Job]) : []) !== digest(current ? jobsView([current]) : []);
  if (!old || !current) return true;
  const view = source === 'trainjob' ? trainJobView : jobSetView;
  return digest(view(old as TrainJob & JobSet, mode)) !== digest(view(current as TrainJob & JobSet, mode));
}

interface Seen {
  /** The TrainJob's uid and generation: what the user asked for (a spec change moves the generation). */
  intent?: string;
  trainjob?: string;
  jobset?: string;
  job?: string;
}

/**
 * What a watch event brings about: `intent`, the TrainJob's spec (or the TrainJob itself) came or
 * went or changed: reconciled at once; `changed`, something else a decision reads: reconciled
 * after a short batching window, so that the several writes one controller makes in one reconcile
 * (Trainer creates the JobSet, then writes the TrainJob's status) are looked at once;
 * `overwritten`, nothing a decision reads but the status field, which someone else wrote:
 * reconciled after overwriteDelayMs (status-field-echo.ts); `unchanged`: not queued.
 */
export type EventEffect = 'intent' | 'changed' | 'overwritten' | 'unchanged';

/**
 * How long a `changed` event waits for others of the same key, as kube-controller-manager's Job
 * controller batches its pod events (syncJobBatchPeriod) and the EndpointSlice controller its
 * updates (--endpoint-updates-batch-period). Not on a count change's path: that is `intent`, and a
 * hint queues the key at once (the queue's add cancels a pending delay).
 */
export const WATCH_BATCH_MS = 500;

/**
 * Judges watch events by what the decision reads from that event's kind, against what it was when
 * the key was last queued for that kind. Read after the watch's cache took the event (client-go's
 * and client-node's informers update the store before they call handlers). Why this loses nothing:
 * a key queued when its view was V is reconciled later, from a cache at least as new as V; an
 * event whose view is still V changes nothing that reconcile reads (views of the three kinds are
 * kept apart: an event changes only its own kind). Hints, resyncs, a new leader and a Trainer line
 * change queue keys without asking.
 */
export class DecisionInputGate {
  readonly #seen = new Map<string, Seen>();
  /** The status field: this process's own writes coming back, and anyone else's. */
  readonly #echoes: StatusFieldEchoes;
  readonly #cache: ClusterCache;
  readonly #mode: Mode;

  constructor(cache: ClusterCache, mode: Mode, now: () => number = Date.now) {
    this.#cache = cache;
    this.#mode = mode;
    this.#echoes = new StatusFieldEchoes(now);
  }

  /** What an event of this source about this key brings about (and notes what it saw). */
  judge(key: string, source: WatchSource): EventEffect {
    if (!this.#cache.synced()) return 'intent';
    const { namespace, name } = splitKey(key);
    const readsTrainJob = source === 'trainjob' || !this.#seen.has(key);
    const tj = readsTrainJob ? this.#cache.getTrainJob(namespace, name) : undefined;
    if (readsTrainJob && !tj) {
      // Gone (or a key of a JobSet no TrainJob controls): the reconcile finds it so; nothing kept.
      this.#seen.delete(key);
      this.#echoes.drop(key);
      return 'intent';
    }
    const seen = this.#seen.get(key);
    const view = this.#view(source, namespace, name, tj);
    const field = tj ? this.#echoes.judge(key, tj.metadata.uid, statusFieldOf(tj)) : 'same';
    if (seen && seen[source] === view) return fieldOnly[field];
    const intent = tj ? `${tj.metadata.uid}/${tj.metadata.generation}` : seen?.intent;
    this.#noteQueued(key, { intent, [source]: view }, source, tj);
    return !seen || intent !== seen.intent ? 'intent' : 'changed';
  }

  /** The key is queued: its reconcile reads a cache at least as new as now, for every kind. */
  #noteQueued(key: string, next: Seen, source: WatchSource, tj: TrainJob | undefined): void {
    const { namespace, name } = splitKey(key);
    for (const other of ['trainjob', 'jobset', 'job'] as const)
      if (other !== source) next[other] = this.#view(other, namespace, name, tj);
    this.#seen.set(key, next);
  }

  /** Before this process writes the status field of the TrainJob (its echo is then no change). */
  expectStatusField(key: string, uid: string | undefined, field: unknown): void {
    this.#echoes.expect(key, uid, field);
  }

  /** A reconcile of the key starts: a status-field write's echo still to come is late. */
  reconcileStarts(key: string): void {
    this.#echoes.reconcileStarts(key);
  }

  /** Its status-field write failed: nothing to expect. */
  statusFieldWriteFailed(key: string): void {
    this.#echoes.writeFailed(key);
  }

  /** How long an `overwritten` key waits (longer each time in a row: two writers that disagree). */
  overwriteDelayMs(key: string): number {
    return this.#echoes.delayMs(key);
  }

  /** How many times in a row someone else overwrote the key's status field (0: not lately). */
  overwrites(key: string): number {
    return this.#echoes.overwrites(key);
  }

  #view(source: WatchSource, namespace: string, name: string, tj: TrainJob | undefined): string {
    const cache = this.#cache;
    if (source === 'trainjob')
      return viewOrNone(tj ?? cache.getTrainJob(namespace, name), (t) => trainJobView(t, this.#mode));
    if (source === 'jobset') return viewOrNone(cache.getJobSet(namespace, name), (js) => jobSetView(js, this.#mode));
    return digest(jobsView(cache.listJobs(namespace, name)));
  }

  /** Keys with something noted (views or the status field). */
  get size(): number {
    return Math.max(this.#seen.size, this.#echoes.size);
  }
}

/**
 * What an event that changed nothing a decision reads brings about, by what it did to the status
 * field: a late echo of this process's own write is looked at again after the batching window.
 */
const fieldOnly: Record<FieldEffect, EventEffect> = {
  same: 'unchanged',
  ours: 'unchanged',
  late: 'changed',
  overwritten: 'overwritten',
};

function statusFieldOf(tj: TrainJob): unknown {
  return isObject(tj.status) ? tj.status[STATUS_FIELD] : undefined;
}

function viewOrNone<T>(o: T | undefined, view: (o: T) => unknown): string {
  return o === undefined ? 'none' : digest(view(o));
}
