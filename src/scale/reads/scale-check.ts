// Judges a numNodes change the rules allow against the cluster (the I/O edge of
// src/scale/scale-admission.ts): reads the TrainJob's JobSet, its runtime (the one runtimeRef
// names), the reconciler's Lease and the JobSet's Jobs, all at once and each bounded in time and
// size well below the webhook's timeoutSeconds (10), then asks the pure judgment. A read that
// fails refuses the change for now (transient), never for good, and never any other update.
// The Lease and the runtime come from watches while they run and are current (lease-watch.ts,
// runtime-watch.ts). Any pod that reaches the webhook's port can send a review, so what it can
// make the webhook read is bounded: nothing before the rules allow the change (`readAhead` only for
// an authenticated caller, src/rules/validator.ts); one read in flight per object, shared by the
// judgments that need it (`Coalesced`); and those reads on their own share of the API
// connections (`withOwnSlots`), so a flood of them cannot hold the ones other requests need.
//
// A caller not known to be the API server has its change judged only when the review's oldObject
// is the stored TrainJob (its uid, read from the watch cache by the TrainJob reader the Scale path
// uses, trainjob-read.ts; a different resourceVersion only makes it look again, stored-version.ts):
// the judgment otherwise told such a caller whether a JobSet of any name exists in any namespace
// (admitted when absent, refused when another TrainJob's) and the count it was built for (admitted
// as "already has this count"). Anything else gets one general 503 before any other read. For a
// genuine write that gate is one watch-cache read (about a millisecond, shared by the reviews of
// one TrainJob in flight); a Scale's change, whose oldObject is the TrainJob the Scale path has
// just read and gated the same way (`oldObjectStored`), is not read again.
//
// What the answer says depends on who asked: a caller known to be the API server (`serve
// --client-ca`) gets what the reads found (the JobSet's controller, its Jobs and pod counts, a
// read's error, the Lease's holder); any other caller gets the same verdict in general words that
// name only its TrainJob, and those details go to the webhook's log, one info line per judgment.
//
// The webhook reads the named runtime, not Trainer's `<job>-runtime-snapshot` ConfigMap (reading
// ConfigMaps cluster-wide is a right it should not have); the reconciler judges from the
// snapshot again before it deletes anything, and reports what the webhook could not foresee.
import { CLUSTER_TRAINING_RUNTIME, JOBSET, TRAINING_RUNTIME, TRAINJOB_GROUP } from '../../api/names.ts';
import type { JobSet, Runtime, RuntimeSpec, TrainJob } from '../../api/objects.ts';
import { isObject } from '../../json/object.ts';
import type { ApiClient } from '../../cluster/api-request.ts';
import { OMIT_VALUE } from '../../field/errors.ts';
import type { WebhookMetrics } from '../../observability/metrics.ts';
import type { AdmissionStage } from '../../observability/admission-stages.ts';
import { admitScale, type LeaseView, type Read, type ScaleAdmission } from '../scale-admission.ts';
import type { ScaleChange, ScaleCheck, ScaleCheckResult, ScaleTarget } from '../../rules/contract.ts';
import type { TrainerLine } from '../../api/trainer-line.ts';
import { MAX_API_SOCKETS } from '../../cluster/api-request.ts';
import { Slots } from '../../cluster/slots.ts';
import type { Logger } from '../../observability/logger.ts';
import { WindowCap } from './window-cap.ts';
import { readTheStored } from './stored-version.ts';
import { trainJobReader, type TrainJobReader } from './trainjob-read.ts';
import { Coalesced } from './coalesced.ts';
import { jobSetPodsGeneralWarnings, jobSetPodsWarnings, type JobSetRead } from './jobset-pods.ts';
import { describeAnswer, JOBSET_READ_TIMEOUT_MS } from './jobset-read.ts';

/** A JobSet or runtime is at most etcd's 1.5 MiB object; JSON of it is not much larger. */
const OBJECT_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The API connections the count-change reads may hold at once, of the client's MAX_API_SOCKETS:
 * half, so the CRD follower and certificate rotation always find one.
 */
export const COUNT_CHANGE_READ_SLOTS = MAX_API_SOCKETS / 2;

/** `client` whose requests first take one of `slots` (waiting in order until their signal aborts). */
export function withOwnSlots(client: ApiClient, slots: Slots = new Slots(COUNT_CHANGE_READ_SLOTS)): ApiClient {
  return {
    server: client.server,
    async request(path, options) {
      await slots.acquire(options.signal);
      try {
        return await client.request(path, options);
      } finally {
        slots.release();
      }
    },
    stream: (path, signal) => client.stream(path, signal),
  };
}

export interface ScaleCheckOptions {
  /** The reconciler's Lease; undefined: no reconciler is required (`--no-reconciler-check`). */
  lease: { namespace: string; name: string } | undefined;
  /**
   * The Lease as a running watch last delivered it (lease-watch.ts), or undefined when it must be
   * read; without this every change GETs the Lease.
   */
  watchedLease?: () => Read<LeaseView> | undefined;
  /**
   * A ClusterTrainingRuntime as a running watch's cache holds it (runtime-watch.ts), or undefined
   * when it must be read; without this (and for a namespaced TrainingRuntime) the change GETs it.
   */
  watchedRuntime?: (name: string) => Read<unknown> | undefined;
  readJobs: (namespace: string, name: string) => Promise<JobSetRead>;
  /**
   * Reads the TrainJob a caller not known to be the API server changes, to check that its
   * oldObject is the stored one: the Scale path's reader (one coalescing, its own connections).
   * A reader on `api` unless given.
   */
  readTrainJob?: TrainJobReader;
  /** stored-version.ts REREAD_AFTER_MS unless given (tests). */
  rereadAfterMs?: number[];
  metrics: WebhookMetrics;
  /** Hears, at info, the details an answer in general words left out (a caller not known to be the API server). */
  logger?: Pick<Logger, 'info'>;
  /** UNAUTHENTICATED_QUORUM_READS unless given (tests). */
  quorumReadsPerWindow?: number;
  timeoutMs?: number;
  now?: () => number;
}

/**
 * Quorum reads (from etcd, not the watch cache) that count changes from callers not known to be
 * the API server may cause per QUORUM_WINDOW_MS. A JobSet the watch cache lacks is confirmed
 * absent by one; forged count changes naming many TrainJobs that have none would each cost one,
 * bounded otherwise only by COUNT_CHANGE_READ_SLOTS. Past the cap such a change is refused for
 * now (503) without the quorum read. A genuine change of a TrainJob with no JobSet is rare (Trainer
 * builds one, suspended or not, as soon as the TrainJob exists).
 */
export const UNAUTHENTICATED_QUORUM_READS = 20;
export const QUORUM_WINDOW_MS = 1_000;

/** The longest detail a log line carries of one judgment (a read's error is at most ~300 characters). */
const LOGGED_DETAIL_CHARS = 2_000;
const clip = (text: string, chars: number) => (text.length > chars ? `${text.slice(0, chars)}…` : text);

/** What the reads found, as logged when the answer says it in general words. */
export interface WithheldDetails {
  namespace: string;
  name: string;
  result: 'admitted' | 'refused' | 'transient';
  reason: string;
  detail?: string;
  warnings: string[];
}

/**
 * One GET, as a Read: 404 is absent, any other failure (status, transport, timeout, not JSON) failed.
 * `quorumIfAbsent`: an object the watch cache does not have is asked of etcd again before it is
 * called absent (the JobSet: its absence admits a change unjudged), within the same time bound,
 * when `mayQuorum` allows one now; when it does not, the read failed.
 */
async function getObject(
  api: ApiClient,
  path: string,
  what: string,
  timeoutMs: number,
  quorumIfAbsent: false | { mayQuorum: () => boolean; refused?: string } = false,
): Promise<Read<unknown>> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    // resourceVersion 0: from the API server's watch cache, as the Jobs are (see jobset-read.ts).
    let res = await api.request(`${path}?resourceVersion=0`, { signal, maxBytes: OBJECT_MAX_BYTES });
    // The watch cache may lag etcd: a JobSet Trainer has just created can be missing from it. A GET
    // without resourceVersion is a quorum read from etcd (consistent), so its 404 is the truth.
    if (res.status === 404 && quorumIfAbsent) {
      if (!quorumIfAbsent.mayQuorum())
        return {
          kind: 'failed',
          error: `reading ${what}: the watch cache does not have it, and confirming that from etcd ${quorumIfAbsent.refused ?? 'is not allowed now'}`,
        };
      res = await api.request(path, { signal, maxBytes: OBJECT_MAX_BYTES });
    }
    if (res.status === 404) return { kind: 'absent' };
    if (res.status !== 200)
      return { kind: 'failed', error: `reading ${what}: ${describeAnswer(res.status, res.body)}` };
    const value: unknown = JSON.parse(res.body.toString('utf8'));
    if (!isObject(value)) return { kind: 'failed', error: `reading ${what}: the answer is not an object` };
    return { kind: 'found', value };
  } catch (err) {
    const text = signal.aborted
      ? `timed out after ${timeoutMs} ms`
      : err instanceof SyntaxError
        ? 'the answer is not JSON'
        : (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 300);
    return { kind: 'failed', error: `reading ${what}: ${text}` };
  }
}

const seg = encodeURIComponent;

type RuntimeKind = 'ClusterTrainingRuntime' | 'TrainingRuntime';

/** Trainer's lookup of runtimeRef (kind defaults to ClusterTrainingRuntime); undefined: names no runtime. */
function runtimePath(tj: TrainJob, namespace: string): { path: string; kind: RuntimeKind; name: string } | undefined {
  const ref = isObject(tj.spec?.runtimeRef) ? tj.spec.runtimeRef : {};
  const name = typeof ref.name === 'string' ? ref.name : '';
  if ((ref.apiGroup ?? TRAINJOB_GROUP) !== TRAINJOB_GROUP || !name) return undefined;
  if (ref.kind === 'TrainingRuntime') {
    const { group, version, plural } = TRAINING_RUNTIME;
    return {
      path: `/apis/${group}/${version}/namespaces/${seg(namespace)}/${plural}/${seg(name)}`,
      kind: 'TrainingRuntime',
      name,
    };
  }
  const { group, version, plural } = CLUSTER_TRAINING_RUNTIME;
  return { path: `/apis/${group}/${version}/${plural}/${seg(name)}`, kind: 'ClusterTrainingRuntime', name };
}

function asRuntime(read: Read<unknown>, kind: string, name: string): Read<Runtime> {
  if (read.kind !== 'found') return read;
  const spec = (read.value as { spec?: unknown }).spec;
  return isObject(spec) ? { kind: 'found', value: { kind, name, spec: spec as RuntimeSpec } } : { kind: 'absent' };
}

/** asRuntime of a read in hand (a cache's) or one under way (a GET). */
async function asRuntimeRead(read: Read<unknown> | Promise<Read<unknown>>, kind: string, name: string) {
  return asRuntime(await read, kind, name);
}

/** When a JobSet the watch cache lacks may be confirmed absent by a quorum read: always, or under the cap. */
function quorumPolicies(limit: number) {
  const quorumCap = new WindowCap(limit, QUORUM_WINDOW_MS);
  return {
    always: { mayQuorum: () => true },
    capped: {
      mayQuorum: () => quorumCap.take(),
      refused: `would pass the ${quorumCap.limit} quorum reads per ${QUORUM_WINDOW_MS / 1000} s allowed to callers not known to be the API server`,
    },
  };
}

export function scaleChecker(api: ApiClient, options: ScaleCheckOptions): ScaleCheck {
  const timeoutMs = options.timeoutMs ?? JOBSET_READ_TIMEOUT_MS;
  const now = options.now ?? Date.now;
  const coalesced = new Coalesced();
  const { always, capped } = quorumPolicies(options.quorumReadsPerWindow ?? UNAUTHENTICATED_QUORUM_READS);
  // A read that confirms an absence with a quorum read is shared only with reads that do too,
  // under the same cap (none for the API server).
  const get = (path: string, what: string, quorum?: 'always' | 'capped') =>
    coalesced.run(quorum ? `${path} quorum ${quorum}` : path, () =>
      getObject(api, path, what, timeoutMs, quorum === 'always' ? always : quorum === 'capped' ? capped : false),
    );
  const readJobs = (namespace: string, name: string) =>
    coalesced.run(`jobs ${namespace}/${name}`, () => options.readJobs(namespace, name));
  const readAhead = ({ namespace, name, object, callerAuthenticated }: ScaleTarget) => {
    const trainJob = (isObject(object) ? object : { metadata: {} }) as unknown as TrainJob;
    const runtimeAt = runtimePath(trainJob, namespace);
    const { group, version, plural } = JOBSET;
    const lease = options.lease;
    const startedAt = performance.now();
    const timed = <T>(stage: AdmissionStage, read: Promise<T>): Promise<T> =>
      read.finally(() => options.metrics.stages.add(stage, performance.now() - startedAt));
    const jobSetPath = `/apis/${group}/${version}/namespaces/${seg(namespace)}/${plural}/${seg(name)}`;
    const leasePath = lease
      ? `/apis/coordination.k8s.io/v1/namespaces/${seg(lease.namespace)}/leases/${seg(lease.name)}`
      : '';
    const reads = Promise.all([
      timed('read-jobset', get(jobSetPath, 'the JobSet', callerAuthenticated ? 'always' : 'capped')),
      runtimeAt
        ? asRuntimeRead(
            (runtimeAt.kind === 'ClusterTrainingRuntime' ? options.watchedRuntime?.(runtimeAt.name) : undefined) ??
              timed('read-runtime', get(runtimeAt.path, `${runtimeAt.kind} ${runtimeAt.name}`)),
            runtimeAt.kind,
            runtimeAt.name,
          )
        : Promise.resolve<Read<Runtime>>({ kind: 'absent' }),
      !lease
        ? Promise.resolve('unchecked' as const)
        : (options.watchedLease?.() ??
          timed('read-lease', get(leasePath, `the reconciler's Lease ${lease.namespace}/${lease.name}`))),
      timed('read-jobs', readJobs(namespace, name)),
    ]).finally(() => options.metrics.stages.add('reads', performance.now() - startedAt));
    // Started before the rules decide (an authenticated caller): a change they refuse never awaits its reads.
    reads.catch(() => {});
    return async (trainer: TrainerLine): Promise<ScaleCheckResult> => {
      const [jobSet, runtime, leaseRead, jobs] = await reads;
      const verdict = admitScale({
        trainer,
        trainJob: { ...trainJob, metadata: { ...trainJob.metadata, name } },
        jobSet: jobSet as Read<JobSet>,
        runtime,
        lease: leaseRead as Read<LeaseView> | 'unchecked',
        nowMs: now(),
      });
      const result = verdict.kind === 'admit' ? 'admitted' : verdict.transient ? 'transient' : 'refused';
      const reason = verdict.kind === 'admit' ? '' : verdict.metric;
      options.metrics.scaleJudgments.inc({ result, reason });
      const warnings = jobSetPodsWarnings(jobs, `${namespace}/${name}`);
      if (callerAuthenticated) return scaleCheckResult(verdict, warnings);
      if (verdict.kind === 'refuse' || warnings.length > 0)
        options.logger?.info(
          {
            namespace: clip(namespace, 256),
            name: clip(name, 256),
            result,
            reason,
            ...(verdict.kind === 'refuse' ? { detail: clip(verdict.reason, LOGGED_DETAIL_CHARS) } : {}),
            warnings: warnings.map((w) => clip(w, LOGGED_DETAIL_CHARS)),
          } satisfies WithheldDetails,
          'count change answered in general words (the caller is not known to be the API server); what the reads found',
        );
      return scaleCheckResult(verdict, jobSetPodsGeneralWarnings(jobs, namespace, name), 'general');
    };
  };
  const readTrainJob = options.readTrainJob ?? trainJobReader(api, { timeoutMs });
  const judge = (change: ScaleChange) => readAhead(change)(change.trainer);
  const check = (change: ScaleChange) =>
    change.callerAuthenticated || change.oldObjectStored
      ? judge(change)
      : judgedIfStored(change, readTrainJob, judge, options);
  return Object.assign(check, { readAhead });
}

/**
 * A change from a caller not known to be the API server: `judge`d only when its oldObject is the
 * stored TrainJob (readTheStored: its uid); otherwise the one general 503, the reason
 * logged, before any other read.
 */
async function judgedIfStored(
  change: ScaleChange,
  readTrainJob: TrainJobReader,
  judge: (change: ScaleChange) => Promise<ScaleCheckResult>,
  options: Pick<ScaleCheckOptions, 'metrics' | 'logger' | 'rereadAfterMs'>,
): Promise<ScaleCheckResult> {
  const { namespace, name } = change;
  const sent = isObject(change.oldObject) && isObject(change.oldObject.metadata) ? change.oldObject.metadata : {};
  const found = await readTheStored(() => readTrainJob({ namespace, name }), sent, options.rereadAfterMs);
  if ('stored' in found) {
    // The uid is immutable: the judgment compares the JobSet's controller with the stored one's,
    // whatever uid the review's object carries.
    const object = isObject(change.object) ? change.object : {};
    const uid = (found.stored.metadata as { uid: string }).uid;
    const metadata = { ...(isObject(object.metadata) ? object.metadata : {}), uid };
    return judge({ ...change, object: { ...object, metadata } });
  }
  options.metrics.scaleJudgments.inc({ result: 'transient', reason: 'not-the-stored' });
  options.logger?.info(
    {
      namespace: clip(namespace, 256),
      name: clip(name, 256),
      result: 'transient',
      reason: 'not-the-stored',
      detail: clip(found.why, LOGGED_DETAIL_CHARS),
      warnings: [],
    } satisfies WithheldDetails,
    'count change answered in general words (the caller is not known to be the API server); what the reads found',
  );
  return scaleCheckResult(NOT_THE_STORED, [], 'general');
}

/** The answer when the review's oldObject is not the stored TrainJob: the same whatever the reason. */
const NOT_THE_STORED: ScaleAdmission = {
  kind: 'refuse',
  transient: true,
  reason: 'the TrainJob could not be read for the judgment',
  general:
    "the TrainJob could not be read for the judgment (the webhook's log says why); the change is refused for now and can be applied again in a few seconds",
  metric: 'not-the-stored',
};

/**
 * The admission's answer as the validator takes it: one cause on spec.trainer.numNodes when
 * refused, its detail the verdict's reason, or its general words (`told` 'general').
 */
export function scaleCheckResult(
  verdict: ScaleAdmission,
  warnings: string[],
  told: 'detailed' | 'general' = 'detailed',
): ScaleCheckResult {
  if (verdict.kind === 'admit') return { causes: [], warnings };
  return {
    causes: [
      {
        type: 'FieldValueForbidden',
        field: 'spec.trainer.numNodes',
        value: OMIT_VALUE,
        detail: told === 'general' ? verdict.general : verdict.reason,
        origin: verdict.transient ? 'scale-check:transient' : 'scale-check',
      },
    ],
    warnings: [],
    ...(verdict.transient ? { transient: true as const } : {}),
  };
}
