// One reconcile of one TrainJob key: read what is stored, let decide() ask for what else it needs,
// then take its steps in order. Any failed call throws, and the queue retries the key from a
// fresh read (preconditions make a stale write fail rather than win).
//
// Reads: the TrainJob, its JobSet and the JobSet's Jobs come from the watches' caches (no request;
// frozen, and only the fields the decisions read: cache-shape.ts, so the dry-run create beside
// workspace claims reads the JobSet live, whole);
// Trainer's runtime snapshot is read once per TrainJob (runtime-memo.ts); PVCs, the dry run and
// Trainer's refusal Events (a resumed TrainJob whose JobSet stays suspended) are read live when
// decide() asks. Right before a delete, the JobSet's Jobs and pods are listed live
// (pods are not watched), and the TrainJob and its runtime are read live, so that a delete never
// rests on a cache that lags; the JobSet's own version is pinned by the delete's uid/resourceVersion
// preconditions.
//
// What one rebuild costs (companion, torch 1 -> 2 while suspended, from the numNodes change until
// Rebuilt; trainjob_reconciler_api_requests_total in test/e2e/reconciler-rebuild-cost.test.ts,
// leader-election renewals aside): 25 requests when every reconcile read live (5 GETs each of the
// TrainJob, JobSet and runtime snapshot, 3 PVC LISTs, 1 LIST each of Jobs and pods, 5 writes), 10
// then (1 GET each of the TrainJob and snapshot, 1 LIST each of Jobs, pods and PVCs, the same 5
// writes: 2 report applies, the delete, 2 Events), 13 with the status field's 3 applies (Rebuilding,
// no JobSet, Rebuilt: status-field.ts). A reconcile that finds nothing to do costs none.
import { describeError, statusCode } from '../cluster/errors.ts';
import type { Logger } from '../observability/logger.ts';
import type { ReconcilerCluster } from './cluster.ts';
import type { TrainerLine } from '../api/trainer-line.ts';
import type { CrashPoint } from './config.ts';
import { decide, RETRY } from '../rebuild/decide.ts';
import type { Decision, Need, Observation, Step } from '../rebuild/decision.ts';
import type { Mode } from '../api/names.ts';
import { gangSchedulersOf, type ObservedPodGroup, type PodGroupDeletion } from '../rebuild/podgroup.ts';
import type { ReconcilerMetrics } from './metrics.ts';
import type { RuntimeMemo } from './runtime-memo.ts';
import type { WaitMemo } from './wait-memo.ts';
import type { SkipMemo } from './skip-memo.ts';
import type { ClusterCache } from './watches.ts';
import type { JobSet } from '../api/objects.ts';
import { splitKey } from './keys.ts';
import type { HandlerResult } from './queue.ts';
import { eventFor, previousReport, type RebuildReport } from '../rebuild/report.ts';
import { cacheInitializerOf } from '../rebuild/initializers.ts';
import { publishStatusField, type StatusFieldApply } from './status-field.ts';

export interface ReconcileDeps {
  mode: Mode;
  /** The installed Trainer line's rules now (trainer-line-source.ts). */
  trainer: () => TrainerLine;
  /** This reconciler's field manager: whether it, not Trainer, last set a JobSet's spec.suspend. */
  fieldManager?: string;
  cluster: ReconcilerCluster;
  /** The watches' caches; without one (or before they synced), everything is read live. */
  cache?: ClusterCache;
  /** Trainer's runtime snapshots already read (runtime-memo.ts); without one, read every time. */
  runtimes?: RuntimeMemo;
  /** How long each key has waited (wait-memo.ts): long waits logged once per change, polled less. */
  waits?: WaitMemo;
  /**
   * What was said of each TrainJob left alone (skip-memo.ts), skipped or held back (blocked,
   * unsupported): logged at info once per change; without one, at every look.
   */
  skips?: SkipMemo;
  logger: Logger;
  metrics: ReconcilerMetrics;
  now?: () => Date;
  /** False once this replica may no longer act (leadership lost): no write is sent then. */
  mayWrite?: () => boolean;
  /**
   * Writes status.trainjobWebhook after the steps when it changed (status-field.ts); without it
   * (tests of the steps alone) nothing is written there.
   */
  applyStatusField?: StatusFieldApply;
  /** Test only: die right after this step (see config.ts); `crash` never returns in production. */
  crashAfter?: CrashPoint;
  crash?: () => Promise<void>;
}

export class NotLeaderError extends Error {
  override name = 'NotLeaderError';
}

/** Runtime reads taken from the memo, not from the API server in this reconcile. */
const rememberedReads = new WeakSet<object>();

/** Reads what decide() asked for. False when the TrainJob turned out to be gone (live read). */
// eslint-disable-next-line complexity -- one branch per Need decide() asks for
async function read(
  o: Observation,
  what: Need,
  key: string,
  deps: ReconcileDeps,
  cache: ClusterCache | undefined,
): Promise<boolean> {
  const { cluster, runtimes } = deps;
  const namespace = o.trainJob.metadata.namespace ?? '';
  const jobSetName = o.jobSet?.metadata.name ?? '';
  const uid = o.trainJob.metadata.uid;
  if (what === 'runtime') {
    const remembered = runtimes?.get(key, uid);
    if (remembered) rememberedReads.add(remembered);
    o.runtime = remembered ?? (await cluster.readRuntime(o.trainJob));
    runtimes?.set(key, uid, o.runtime);
  }
  // Without a cache there is nothing cheap to look at first: the live read below decides.
  if (what === 'cached-jobs') o.cachedJobs = cache ? cache.listJobs(namespace, jobSetName) : [];
  if (what === 'children') {
    const [children, trainJob, runtime] = await Promise.all([
      cluster.listChildren(namespace, jobSetName),
      cache ? cluster.getTrainJob(namespace, o.trainJob.metadata.name ?? '') : o.trainJob,
      o.runtime && rememberedReads.has(o.runtime) ? cluster.readRuntime(o.trainJob) : o.runtime,
    ]);
    if (!trainJob) return false;
    // The decision is taken again on the TrainJob and runtime as stored now (a count may have moved).
    o.trainJob = trainJob;
    o.children = children;
    if (runtime) {
      o.runtime = runtime;
      runtimes?.set(key, uid, runtime);
    }
  }
  if (what === 'pvcs') o.pvcs = await cluster.listPvcs(namespace);
  if (what === 'retained') o.retained = await cluster.listRetainedPvcs(namespace, o.trainJob.metadata.uid ?? '');
  if (what === 'recreate' && o.jobSet)
    o.recreate = await cluster.dryRunRecreate(await wholeJobSet(o.jobSet, deps, cache));
  if (what === 'initializer-objects') o.initializerObjects = await readInitializerObjects(o, deps);
  if (what === 'podgroups') o.podGroups = await readPodGroups(o, cluster);
  if (what === 'trainer-refusals') o.trainerRefusals = await cluster.listTrainerRefusals(namespace, uid ?? '');
  return true;
}

/**
 * The JobSet whole, for the dry-run create of it: the cache keeps only what the decisions read
 * (cache-shape.ts), so it is read live; one that is gone or replaced since is retried from a fresh read.
 */
async function wholeJobSet(jobSet: JobSet, deps: ReconcileDeps, cache: ClusterCache | undefined): Promise<JobSet> {
  if (!cache) return jobSet;
  const { namespace = '', name = '', uid } = jobSet.metadata;
  const live = await deps.cluster.getJobSet(namespace, name);
  if (!live || live.metadata.uid !== uid)
    throw new Error(`JobSet ${namespace}/${name} was deleted or replaced since it was read`);
  return live;
}

/** The TrainJob's PodGroups of the schedulers its runtime's podGroupPolicy names (podgroup.ts). */
async function readPodGroups(o: Observation, cluster: ReconcilerCluster): Promise<ObservedPodGroup[]> {
  const schedulers = o.runtime?.found ? gangSchedulersOf(o.runtime.runtime) : [];
  const { namespace = '', name = '' } = o.trainJob.metadata;
  const read = await Promise.all(
    schedulers.map(async (scheduler) => ({
      scheduler,
      podGroup: await cluster.getPodGroup(scheduler, namespace, name),
    })),
  );
  return read.filter((r): r is ObservedPodGroup => r.podGroup !== undefined);
}

/** Deleted with preconditions; already gone is as good (Trainer creates it again either way). */
async function deletePodGroup(namespace: string, d: PodGroupDeletion, deps: ReconcileDeps, log: Logger) {
  try {
    await deps.cluster.deletePodGroup(d.scheduler, namespace, d.name, d.uid, d.resourceVersion);
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
  }
  log.info(
    { podGroup: d.name, scheduler: d.scheduler, uid: d.uid, minMember: d.minMember, want: d.want },
    'stale PodGroup deleted (uid and resourceVersion preconditions); Trainer creates it again from the new count',
  );
}

// eslint-disable-next-line complexity -- one reconcile: read, decide, execute, then its metrics, log and requeue
export async function reconcileKey(key: string, deps: ReconcileDeps): Promise<HandlerResult> {
  const { namespace, name } = splitKey(key);
  const log = deps.logger.child({ trainJob: key });
  const end = deps.metrics.duration.startTimer({ mode: deps.mode });
  try {
    const cache = deps.cache?.synced() ? deps.cache : undefined;
    const gone = () => {
      deps.runtimes?.forget(key);
      deps.waits?.clear(key);
      deps.skips?.forget(key);
      deps.metrics.reconciles.inc({ mode: deps.mode, outcome: 'gone' });
      return {};
    };
    const trainJob = cache ? cache.getTrainJob(namespace, name) : await deps.cluster.getTrainJob(namespace, name);
    if (!trainJob) return gone();
    const jobSet = cache ? cache.getJobSet(namespace, name) : await deps.cluster.getJobSet(namespace, name);
    const o: Observation = {
      mode: deps.mode,
      trainer: deps.trainer(),
      trainJob,
      jobSet,
      now: (deps.now?.() ?? new Date()).toISOString(),
      ...(deps.fieldManager ? { fieldManager: deps.fieldManager } : {}),
    };
    let decision: Decision = decide(o);
    const asked = new Set<Need>();
    while (decision.kind === 'need') {
      if (asked.has(decision.what)) throw new Error(`decide() asked twice for ${decision.what}`);
      asked.add(decision.what);
      if (!(await read(o, decision.what, key, deps, cache))) return gone();
      decision = decide(o);
    }
    if (decision.kind === 'skip') {
      deps.metrics.reconciles.inc({ mode: deps.mode, outcome: 'skipped' });
      deps.waits?.clear(key);
      logSkip(key, o, decision.reason, deps, log);
      return {};
    }
    const missed: BestEffort[] = [];
    const blocked = await execute(o, decision.steps, deps, log, missed);
    if (deps.applyStatusField) {
      const report = blocked ? { state: 'Blocked' as const, reason: blocked } : reportInForce(o, decision.steps);
      const mayWrite = () => !deps.mayWrite || deps.mayWrite();
      if (!(await publishStatusField(o, report, deps.applyStatusField, mayWrite, log))) missed.push('status-field');
    }
    const outcome = blocked ? 'blocked' : decision.outcome;
    deps.metrics.reconciles.inc({ mode: deps.mode, outcome });
    const heldBack = outcome === 'blocked' || outcome === 'unsupported';
    const line = {
      outcome,
      steps: decision.steps.map((s) => s.kind),
      detail: blocked ?? decision.detail ?? (heldBack ? reportInForce(o, decision.steps)?.reason : undefined),
      generation: o.trainJob.metadata.generation,
    };
    let requeueAfterMs = blocked ? RETRY.blockedMs : decision.requeueAfterMs;
    let quiet = outcome === 'current' || outcome === 'no-jobset' || outcome === 'finished';
    if (outcome === 'waiting' && deps.waits && requeueAfterMs !== undefined) {
      const wait = deps.waits.note(key, line.detail ?? '', (deps.now?.() ?? new Date()).getTime(), requeueAfterMs);
      requeueAfterMs = wait.delayMs;
      quiet = !wait.news && decision.steps.length === 0;
    } else if (outcome !== 'waiting') deps.waits?.clear(key);
    // Held back (blocked, unsupported): the report says why, written when it changes; the line
    // at info once per change too, not at every look (a blocked job is looked at every 30 s).
    if (heldBack) {
      const news = deps.skips?.note(key, o.trainJob.metadata.uid, line.generation, `${outcome}: ${line.detail ?? ''}`);
      quiet = news === false && decision.steps.length === 0 && !blocked;
    } else deps.skips?.forget(key);
    // A best-effort write that failed: looked at again soon, not at the next resync (hours away).
    if (missed.length > 0) requeueAfterMs = Math.min(requeueAfterMs ?? RETRY.blockedMs, RETRY.blockedMs);
    if (quiet) log.debug(line, 'reconciled');
    else log.info(line, 'reconciled');
    return { requeueAfterMs };
  } catch (err) {
    deps.metrics.reconciles.inc({ mode: deps.mode, outcome: 'error' });
    log.warn({ error: describeError(err) }, 'reconcile failed; retried with backoff');
    throw err;
  } finally {
    end();
  }
}

/** A best-effort write that failed without failing the reconcile: the TrainJob is looked at again soon. */
type BestEffort = 'status-field' | 'refusal-fold';

/** The report this reconcile writes (undefined: it removes it), else the one on record (report.ts). */
function reportInForce(o: Observation, steps: Step[]): RebuildReport | undefined {
  const written = steps.find((s): s is Extract<Step, { kind: 'report' }> => s.kind === 'report');
  return written ? written.report : previousReport(o.trainJob);
}

/**
 * A TrainJob left alone (src/rebuild/left-alone.ts) says why at info once per change of its uid,
 * generation or reason (skip-memo.ts), so that "why was my JobSet not rebuilt?" needs no debug log;
 * the looks after that (resyncs, watch events) at debug. Nothing is written to the TrainJob.
 */
function logSkip(key: string, o: Observation, reason: string, deps: ReconcileDeps, log: Logger): void {
  const { uid, generation } = o.trainJob.metadata;
  const news = deps.skips?.note(key, uid, generation, reason) ?? true;
  const line = { reason, generation: typeof generation === 'number' ? generation : undefined };
  if (news) log.info(line, 'left alone');
  else log.debug(line, 'left alone');
}

/**
 * Takes the steps in order. Returns a reason when the rebuild turned out to be blocked (a PVC
 * the reconciler may not patch): then nothing is deleted and the report says why.
 */
// eslint-disable-next-line complexity, max-lines-per-function -- one case per Step kind, each with its leader check
async function execute(
  o: Observation,
  steps: Step[],
  deps: ReconcileDeps,
  log: Logger,
  missed: BestEffort[],
): Promise<string | undefined> {
  const { cluster } = deps;
  const namespace = o.trainJob.metadata.namespace ?? '';
  const write = () => {
    if (deps.mayWrite && !deps.mayWrite()) throw new NotLeaderError('no longer the leader: nothing is written');
  };
  let released = false;
  for (const step of steps) {
    if (released && step.kind !== 'release-pvc') {
      released = false;
      if (deps.crashAfter === 'release-pvcs') await deps.crash?.();
    }
    switch (step.kind) {
      case 'release-pvc':
        write();
        try {
          await cluster.patchPvc(namespace, step.patch);
        } catch (err) {
          if (statusCode(err) !== 403) throw err;
          write(); // the report is a write of its own: the Lease may have been lost during the patch
          return blockRebuild(
            o,
            steps,
            deps,
            `PVC ${step.patch.name} cannot be released from the JobSet (${describeError(err)}); grant the reconciler patch on persistentvolumeclaims, or keep the TrainJob suspended at its old numNodes`,
          );
        }
        released = true;
        log.info({ pvc: step.patch.name }, 'PVC released from the stale JobSet; it survives the rebuild');
        break;
      case 'hand-back-pvc':
        write();
        await cluster.patchPvc(namespace, step.patch);
        log.info({ pvc: step.patch.name, jobSet: o.jobSet?.metadata.uid }, 'PVC handed back to the re-created JobSet');
        break;
      case 'delete-jobset':
        write();
        try {
          await cluster.deleteJobSet(namespace, step.name, step.uid, step.resourceVersion);
        } catch (err) {
          if (statusCode(err) !== 404) throw err;
        }
        log.info(
          { jobSet: step.name, uid: step.uid, resourceVersion: step.resourceVersion },
          'stale JobSet deleted (foreground, with uid and resourceVersion preconditions)',
        );
        if (deps.crashAfter === 'delete-jobset') await deps.crash?.();
        break;
      case 'resume-jobset':
        write();
        await cluster.setJobSetSuspend(namespace, step.name, step.uid, step.resourceVersion, false);
        log.info(
          { jobSet: step.name, uid: step.uid, resourceVersion: step.resourceVersion },
          'JobSet resumed (spec.suspend alone, as the sidecar had suspended it), since Trainer cannot apply it',
        );
        break;
      case 'suspend-jobset':
        write();
        // Refused (changed, replaced or gone meanwhile): thrown, and retried from a fresh read.
        await cluster.setJobSetSuspend(namespace, step.name, step.uid, step.resourceVersion, true);
        log.info(
          { jobSet: step.name, uid: step.uid, resourceVersion: step.resourceVersion },
          'stale JobSet suspended (spec.suspend alone, uid and resourceVersion tested), so that it can be rebuilt',
        );
        break;
      case 'delete-initializer-object': {
        const refused = await deleteInitializerObject(o, step, deps, log);
        if (refused) return blockRebuild(o, steps, deps, refused);
        break;
      }
      case 'delete-podgroup':
        write();
        await deletePodGroup(namespace, step.podGroup, deps, log);
        break;
      case 'apply-jobset':
        write();
        await cluster.applyJobSet(step.jobSet);
        break;
      case 'apply-status':
        write();
        await cluster.applyTrainJobStatus(o.trainJob, step.conditions, step.jobsStatus);
        break;
      case 'report':
        write();
        await cluster.applyReport(o.trainJob, step.report);
        break;
      case 'record-refusal-fold':
        write();
        // Best effort: it only makes Trainer's next refusal a new Event. A failed write (a 409, a
        // TrainJob webhook down) must not hold back the steps after it (a resume of the JobSet);
        // the reconcile asks to look again soon (`missed`), and that look decides it again.
        try {
          await cluster.recordRefusalFold(o.trainJob, step.fold);
        } catch (err) {
          log.warn(
            { error: describeError(err) },
            "the fold of Trainer's refusals could not be recorded on the TrainJob; the TrainJob is looked at again soon",
          );
          missed.push('refusal-fold');
          continue; // not counted as a step done
        }
        log.info(
          { fold: step.fold ?? null, resourceVersion: o.trainJob.metadata.resourceVersion },
          step.fold === undefined
            ? "the resume is over: the fold of Trainer's refusals recorded on the TrainJob is removed"
            : "Trainer's later refusals are folded behind a note a rebuild does not cure: the fold is recorded on the TrainJob, so that Trainer's next refusal is a new Event",
        );
        break;
      case 'event':
        await recordEvent(o, deps, step.event, log);
        break;
    }
    deps.metrics.steps.inc({ step: step.kind });
  }
  return undefined;
}

/** The data cache initializer's objects that exist now, read live (src/rebuild/initializers.ts). */
async function readInitializerObjects(o: Observation, deps: ReconcileDeps) {
  const cache = o.jobSet ? cacheInitializerOf(o.jobSet) : { cache: false as const };
  const refs = cache.cache && 'objects' in cache ? cache.objects : [];
  return deps.cluster.getInitializerObjects(o.trainJob.metadata.namespace ?? '', refs);
}

/**
 * One initializer object deleted; gone already is fine, a changed or replaced one (409) is thrown
 * and retried from a fresh read. A refusal (403) blocks the rebuild: returned as the reason.
 */
async function deleteInitializerObject(
  o: Observation,
  step: Extract<Step, { kind: 'delete-initializer-object' }>,
  deps: ReconcileDeps,
  log: Logger,
): Promise<string | undefined> {
  if (deps.mayWrite && !deps.mayWrite()) throw new NotLeaderError('no longer the leader: nothing is written');
  const { ref, uid, resourceVersion } = step;
  try {
    await deps.cluster.deleteInitializerObject(o.trainJob.metadata.namespace ?? '', ref, uid, resourceVersion);
  } catch (err) {
    const code = statusCode(err);
    if (code === 403)
      return `${ref.kind} ${ref.name} of the data cache cannot be deleted before the rebuild (${describeError(err)}); its initializer's second run would fail on it: grant the reconciler delete on ${ref.kind === 'ServiceAccount' ? 'serviceaccounts' : 'leaderworkersets.leaderworkerset.x-k8s.io'}, or keep the TrainJob suspended at its old numNodes`;
    if (code !== 404) throw err;
  }
  log.info(
    { kind: ref.kind, name: ref.name, uid, resourceVersion },
    'data cache object deleted before the rebuild, so that its initializer creates it anew',
  );
  return undefined;
}

async function recordEvent(
  o: Observation,
  deps: ReconcileDeps,
  event: Parameters<ReconcilerCluster['recordEvent']>[1],
  log: Logger,
): Promise<void> {
  try {
    await deps.cluster.recordEvent(o.trainJob, event);
  } catch (err) {
    // Events are best effort: the annotation carries the state.
    log.warn({ error: describeError(err), reason: event.reason }, 'could not record an Event');
  }
}

async function blockRebuild(o: Observation, steps: Step[], deps: ReconcileDeps, reason: string): Promise<string> {
  const planned =
    steps.find((s): s is Extract<Step, { kind: 'report' }> => s.kind === 'report')?.report ??
    previousReport(o.trainJob);
  const { replacedJobSetUID: _never, retainedPVCs: _none, ...counts } = planned ?? { state: 'Blocked' as const };
  const report: RebuildReport = { ...counts, state: 'Blocked', reason };
  await deps.cluster.applyReport(o.trainJob, report);
  await recordEvent(o, deps, eventFor(report), deps.logger);
  return reason;
}
