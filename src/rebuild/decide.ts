// One reconcile of one TrainJob, decided from what was observed. Pure: it either asks for more to
// be read (`need`) or returns the ordered steps to take. Both modes share the rebuild: a stale
// JobSet that is suspended and runs nothing loses its PVCs' ownership, then is deleted with
// preconditions; Trainer's controller (companion) or this reconciler (standalone) re-creates it.
// A stale JobSet that no apply can suspend (the TrainJob was suspended in the same update as its
// numNodes change) is first suspended by a patch of spec.suspend alone, in both modes.
import { buildJobSet } from './trainer-jobset/jobset.ts';
import type { Decision, Observation, Outcome, Step } from './decision.ts';
import { neverReconciledAgain } from '../scale/finished.ts';
import { cacheInitializerOf, planInitializerCleanup } from './initializers.ts';
import { controllerOf, isDeleting, type JobSet, type Runtime, type TrainJob } from '../api/objects.ts';
import { describeDeletion, expectedMinMember, gangSchedulersOf, stalePodGroups } from './podgroup.ts';
import { planPvcHandBack, planPvcRelease, workspaceClaims } from './pvc-plan.ts';
import { eventFor, previousReport, sameReport, suspendEventFor, type RebuildReport } from './report.ts';
import { canDeleteSafely } from './safety.ts';
import { isJobSetStale, type NodeCounts } from '../scale/stale.ts';
import { statusStep, type UnbuildableReason } from './status.ts';
import { leftAlone } from './left-alone.ts';
import { judgeScale, REVERT_RUNNING, standaloneRefusal, type ScaleJudgment } from '../scale/scale-judgment.ts';
import { judgeRefusedResume } from './refused-apply.ts';

export const RETRY = {
  /** Something of the JobSet still runs: look again soon (pods vanish without a JobSet event). */
  whileRunningMs: 3_000,
  /** The JobSet is being deleted (foreground): its re-creation follows shortly. */
  whileDeletingMs: 1_000,
  /** Blocked or unreadable runtime: needs a user or an admin; look again now and then. */
  blockedMs: 30_000,
  /**
   * A suspended TrainJob whose JobSet still runs: Trainer suspends it within a reconcile; after
   * this long the sidecar does (Trainer's apply is refused, e.g. beside workspace claims).
   */
  pauseGraceMs: 3_000,
  /**
   * Unsupported from what the runtime says (the runtime is read, not watched): looked at again this
   * often, as every TrainJob was when the periodic resync ran every 5 minutes (it now runs every
   * ~10 hours, controller-runtime's default: src/reconciler/config.ts). An Unsupported verdict read
   * from watched objects alone (the TrainJob, its JobSet, the Trainer line) waits for their events.
   */
  unwatchedMs: 5 * 60_000,
};

/**
 * Malformed objects are never acted on: metadata that cannot be read is left alone here, the rest
 * (spec, runtime, children, PVCs) is checked where it is judged and reported as Unsupported,
 * unsafe or blocked.
 */
// eslint-disable-next-line complexity -- every skip, need and act of a reconcile, in the order it checks them
export function decide(o: Observation): Decision {
  const { trainJob: tj, jobSet: js } = o;
  // Unreadable metadata, another controller's TrainJob, one being deleted (left-alone.ts).
  const skip = leftAlone(tj, js);
  if (skip) return { kind: 'skip', reason: skip };
  const prev = previousReport(tj);
  if (js && controllerOf(js.metadata)?.uid !== tj.metadata.uid) {
    return act(
      'unsupported',
      reportSteps(o, prev, {
        state: 'Unsupported',
        reason: `JobSet ${js.metadata.name} is not controlled by this TrainJob (uid ${tj.metadata.uid}): left alone`,
      }),
    );
  }
  const negative = negativeNumNodes(o);
  if (negative)
    return act('unsupported', [
      ...statusSteps(o, negative, 'InvalidNumNodes'),
      ...reportSteps(o, prev, { state: 'Unsupported', reason: negative }),
    ]);
  const finished = neverReconciledAgain(tj, js, o.trainer);
  // Nothing to judge yet, so nothing to read: Trainer builds the JobSet (companion), or it goes.
  if (!js && finished) return goneForGood(o, prev, finished);
  if (!js && o.mode === 'companion') return act('no-jobset', [], undefined, finished);
  if (js && isDeleting(js.metadata))
    return (
      cacheCleanupWhileDeleting(o, js, prev) ??
      act('waiting', [], RETRY.whileDeletingMs, `JobSet ${js.metadata.name} is being deleted`)
    );
  if (!o.runtime) return { kind: 'need', what: 'runtime' };
  if (!o.runtime.found) {
    return act(
      'unsupported',
      [
        ...statusSteps(o, o.runtime.reason),
        ...reportSteps(o, prev, { state: 'Unsupported', reason: o.runtime.reason }),
      ],
      RETRY.blockedMs,
    );
  }
  const runtime = o.runtime.runtime;
  if (!js) return create(o, runtime, prev);

  const verdict = isJobSetStale(tj, runtime, js);
  if (verdict.verdict === 'unknown')
    return act(
      'unsupported',
      [...statusSteps(o, verdict.reason), ...reportSteps(o, prev, { state: 'Unsupported', reason: verdict.reason })],
      RETRY.unwatchedMs,
    );
  if (verdict.verdict === 'current') return currentByCount(o, runtime, js, verdict.counts, prev, finished);
  if (finished) return keptFinished(o, js, verdict.counts, prev, finished, verdict.differences);
  // The same judgment the webhook refuses by (scale-judgment.ts), for changes admitted without it
  // (before this version, under the VAP layout, or a runtime edited since). Claims are judged live
  // by `stale` (a dry-run create), which sees what a judgment from the objects cannot.
  const judged = judgeScale({
    mode: o.mode,
    trainer: o.trainer,
    trainJob: tj,
    runtime,
    jobSet: js,
    claimsJudgedLive: true,
  });
  if (judged.kind === 'refused') return notCarriedOut(o, js, verdict.counts, prev, judged, verdict.differences);
  return stale(o, js, verdict.counts, prev, verdict.differences);
}

/**
 * A JobSet whose counts are what Trainer builds: paused or resumed by the sidecar where Trainer's
 * apply cannot (unpausedJobSet, unresumedJobSet), rebuilt when the installed Trainer can no longer
 * apply it at all (refusedResume), else current.
 */
function currentByCount(
  o: Observation,
  runtime: Runtime,
  js: JobSet,
  counts: NodeCounts,
  prev: RebuildReport | undefined,
  finished: string | undefined,
): Decision {
  const pause = unpausedJobSet(o, js);
  if (pause) return pause;
  const refused = finished ? undefined : refusedResume(o, js, counts, prev);
  if (refused && 'kind' in refused) return refused;
  const rest = unresumedJobSet(o, js) ?? current(o, runtime, js, prev, finished);
  if (!refused || rest.kind !== 'act') return rest;
  // Look again: a refusal may still come (Trainer's Events are not watched).
  const requeueAfterMs = rest.requeueAfterMs ?? refused.pollMs;
  // The fold's write first: it tests the TrainJob's resourceVersion, which a report's apply changes.
  return {
    ...rest,
    steps: [...(refused.steps ?? []), ...rest.steps],
    requeueAfterMs,
    detail: rest.detail ?? refused.detail,
  };
}

/** What a resume that is not rebuilt adds to the other rules' decision: a later look, the fold's write. */
interface RefusalPoll {
  pollMs?: number;
  detail?: string;
  steps?: Step[];
}

/**
 * Companion mode: the TrainJob was resumed and its JobSet is still suspended. When Trainer's apply
 * of the resume was refused because an immutable part of the JobSet differs from what the
 * installed Trainer builds (refused-apply.ts), the JobSet is rebuilt like a stale one: deleted
 * once nothing of it runs, with preconditions, and Trainer re-creates it. A refusal of anything
 * else (a webhook that does not answer, say) is never acted on: `pollMs` looks again later; when
 * Trainer's later refusals are folded behind that note, the fold is recorded on the TrainJob, which
 * makes Trainer's next refusal a new Event (refused-apply.ts), read at the next look.
 */
function refusedResume(
  o: Observation,
  js: JobSet,
  counts: NodeCounts,
  prev: RebuildReport | undefined,
): Decision | RefusalPoll | undefined {
  if (o.mode !== 'companion') return undefined;
  const j = judgeRefusedResume({
    trainJob: o.trainJob,
    jobSet: js,
    previous: prev,
    refusals: o.trainerRefusals,
    nowMs: Date.parse(o.now),
    graceMs: RETRY.pauseGraceMs,
  });
  switch (j.kind) {
    case 'no':
      return j.forgetFold ? { steps: [{ kind: 'record-refusal-fold', fold: undefined }] } : undefined;
    case 'need':
      return { kind: 'need', what: 'trainer-refusals' };
    case 'wait':
      return { pollMs: j.afterMs, detail: 'the TrainJob was just resumed: Trainer resumes its JobSet' };
    case 'unexplained':
      // Trainer's new Event is read at the next look: the reconcile the write causes (at once, so
      // before that Event) sets it, as the queue drops a delay asked for before that reconcile.
      return {
        pollMs: RETRY.blockedMs,
        detail: j.detail,
        ...(j.recordFold !== undefined && { steps: [{ kind: 'record-refusal-fold', fold: j.recordFold }] }),
      };
    case 'again': {
      const report: RebuildReport = { ...countsOf(counts), ...j.report, state: 'Blocked' };
      return act('blocked', reportSteps(o, prev, report, j.detail), RETRY.blockedMs, j.report.reason);
    }
    case 'rebuild':
      return stale(o, js, counts, prev, [j.detail], j.report);
  }
}

/**
 * A count change the judgment says cannot be carried out: the JobSet is kept as it is, and
 * reported Blocked with the reason and the way out. If the TrainJob was suspended in the same
 * update, no apply can suspend the stale JobSet, so the sidecar does: no pod runs under a
 * suspended TrainJob.
 */
function notCarriedOut(
  o: Observation,
  js: JobSet,
  counts: NodeCounts,
  prev: RebuildReport | undefined,
  judged: Extract<ScaleJudgment, { kind: 'refused' }>,
  differences: string[],
): Decision {
  const report: RebuildReport = { ...countsOf(counts), state: 'Blocked', reason: `${judged.reason}; ${judged.wayOut}` };
  const steps = reportSteps(o, prev, report, differences.join('; '));
  if (o.trainJob.spec?.suspend === true && js.spec?.suspend !== true) {
    steps.push(suspendStep(js), { kind: 'event', event: suspendEventFor(report, js.metadata.uid, judged.reason) });
    return act('suspended', steps, RETRY.whileRunningMs, judged.reason);
  }
  return act('blocked', steps, RETRY.blockedMs, judged.reason);
}

function suspendStep(js: JobSet): Step {
  return {
    kind: 'suspend-jobset',
    name: js.metadata.name ?? '',
    uid: js.metadata.uid ?? '',
    resourceVersion: js.metadata.resourceVersion ?? '',
  };
}

/**
 * Companion mode: the TrainJob is suspended, its JobSet is current but still not suspended. Trainer
 * suspends it with its next apply; when that apply is refused (JobSet v0.12.0 refuses every apply
 * of a JobSet with workspace claims, as the retention it defaulted at creation is left out), the
 * TrainJob says Suspended while its pods run. Past a grace the sidecar suspends the JobSet by a
 * patch of `spec.suspend` alone, as for a stale one. Trainer's apply takes the field back
 * (ForceOwnership) when it works again.
 */
function unpausedJobSet(o: Observation, js: JobSet): Decision | undefined {
  if (o.mode !== 'companion' || o.trainJob.spec?.suspend !== true || js.spec?.suspend === true) return undefined;
  if (neverReconciledAgain(o.trainJob, js, o.trainer)) return undefined;
  const since = suspendedSince(o.trainJob);
  const waited = since === undefined ? 0 : Date.parse(o.now) - since;
  if (!(waited >= RETRY.pauseGraceMs))
    return act('waiting', [], RETRY.pauseGraceMs, 'the TrainJob was just suspended: Trainer suspends its JobSet');
  const reason = `the TrainJob is suspended but JobSet ${js.metadata.name} is not, ${RETRY.pauseGraceMs / 1000} s on (Trainer's apply is refused); suspending the JobSet`;
  return act(
    'suspended',
    [suspendStep(js), { kind: 'event', event: { type: 'Normal', reason: 'JobSetSuspended', message: reason } }],
    RETRY.whileRunningMs,
    reason,
  );
}

/**
 * The mirror of unpausedJobSet: the TrainJob is resumed, its current JobSet is still suspended, and
 * it was this sidecar that suspended it (its field manager owns spec.suspend): Trainer's apply of
 * the resume is refused for the same reason as its suspend was, so past the grace the sidecar
 * resumes the JobSet itself. A JobSet suspended by anyone else (Trainer, Kueue through Trainer)
 * is never resumed here.
 */
function unresumedJobSet(o: Observation, js: JobSet): Decision | undefined {
  if (o.mode !== 'companion' || o.trainJob.spec?.suspend === true || js.spec?.suspend !== true) return undefined;
  if (!o.fieldManager || !ownsSuspend(js, o.fieldManager) || neverReconciledAgain(o.trainJob, js, o.trainer))
    return undefined;
  const since = suspendedSince(o.trainJob, 'False');
  const waited = since === undefined ? 0 : Date.parse(o.now) - since;
  if (!(waited >= RETRY.pauseGraceMs))
    return act('waiting', [], RETRY.pauseGraceMs, 'the TrainJob was just resumed: Trainer resumes its JobSet');
  const reason = `the TrainJob is resumed but JobSet ${js.metadata.name}, which the sidecar suspended, is not, ${RETRY.pauseGraceMs / 1000} s on (Trainer's apply is refused); resuming the JobSet`;
  return act(
    'applied',
    [
      {
        kind: 'resume-jobset',
        name: js.metadata.name ?? '',
        uid: js.metadata.uid ?? '',
        resourceVersion: js.metadata.resourceVersion ?? '',
      },
      { kind: 'event', event: { type: 'Normal', reason: 'JobSetResumed', message: reason } },
    ],
    undefined,
    reason,
  );
}

/** Does this field manager own the JobSet's spec.suspend (managedFields)? */
function ownsSuspend(js: JobSet, manager: string): boolean {
  const entries = (js.metadata as { managedFields?: unknown }).managedFields;
  if (!Array.isArray(entries)) return false;
  return entries.some((e: unknown) => {
    const entry = e as { manager?: unknown; fieldsV1?: { 'f:spec'?: { 'f:suspend'?: unknown } } } | null;
    return entry?.manager === manager && entry.fieldsV1?.['f:spec']?.['f:suspend'] !== undefined;
  });
}

/** When the TrainJob's Suspended condition turned to `status` (Trainer sets it from spec.suspend), in ms. */
function suspendedSince(tj: TrainJob, status: 'True' | 'False' = 'True'): number | undefined {
  const c = tj.status?.conditions?.find((x) => x?.type === 'Suspended' && x.status === status);
  const t = typeof c?.lastTransitionTime === 'string' ? Date.parse(c.lastTransitionTime) : NaN;
  return Number.isFinite(t) ? t : undefined;
}

/**
 * A negative numNodes that reached the object (stored before the webhook ran, or under the v2.3.0
 * CRD, which has no minimum): nothing can be built from it (JobSet refuses a negative parallelism),
 * and the JobSet is kept as it is. Other malformed counts are judged where the count is read.
 */
function negativeNumNodes(o: Observation): string | undefined {
  const n: unknown = o.trainJob.spec?.trainer?.numNodes;
  if (typeof n !== 'number' || !Number.isInteger(n) || n >= 0) return undefined;
  return `spec.trainer.numNodes is ${n}: a negative node count cannot be built, so the JobSet is neither rebuilt nor created; set numNodes to 0 or more`;
}

/**
 * Stale, but the TrainJob will never be reconciled again (finished.ts): Trainer would never
 * re-create a deleted JobSet, so it is kept, suspended or not, and the report says why.
 */
function keptFinished(
  o: Observation,
  js: JobSet,
  counts: NodeCounts,
  prev: RebuildReport | undefined,
  finished: string,
  differences: string[],
): Decision {
  const builder =
    o.mode === 'companion'
      ? `${o.trainer.label} never reconciles it again`
      : `it is never built again (as ${o.trainer.label} never reconciles it again)`;
  const reason = `${finished}: ${builder}, so a deleted JobSet would never come back; JobSet ${js.metadata.name} is kept with the old node count; to train with ${counts.numNodes} nodes, create a new TrainJob`;
  return act(
    'blocked',
    reportSteps(o, prev, { ...countsOf(counts), state: 'Blocked', reason }, differences.join('; ')),
    undefined,
    finished,
  );
}

/**
 * A finished TrainJob without a JobSet: nothing is built. If its JobSet was deleted for a rebuild
 * that it then finished for good (a Failed job, under v2.3.0 rebuilt, caught by an upgrade to a line
 * where Failed is final; Complete meanwhile), no JobSet comes back: the Rebuilding report would
 * stay forever, so it says Blocked and what to do.
 */
function goneForGood(o: Observation, prev: RebuildReport | undefined, finished: string): Decision {
  if (prev?.state !== 'Rebuilding') return act('finished', [], undefined, finished);
  const reason = `${finished}: ${o.trainer.label} never reconciles it again, and its JobSet was already deleted for the rebuild, so none comes back; to train again, create a new TrainJob`;
  return act('blocked', reportSteps(o, prev, { ...prev, state: 'Blocked', reason }), undefined, finished);
}

function act(outcome: Outcome, steps: Step[], requeueAfterMs?: number, detail?: string): Decision {
  return { kind: 'act', outcome, steps, requeueAfterMs, detail };
}

function countsOf(c: NodeCounts): RebuildReport {
  return {
    state: 'Waiting',
    numNodes: c.numNodes,
    replicatedJob: c.replicatedJob,
    parallelism: { from: c.from, to: c.to },
  };
}

/** The annotation and an Event, only when the report changes. */
function reportSteps(
  o: Observation,
  prev: RebuildReport | undefined,
  next: RebuildReport | undefined,
  detail?: string,
): Step[] {
  if (sameReport(prev, next)) return [];
  return [
    { kind: 'report', report: next },
    ...(next ? [{ kind: 'event', event: eventFor(next, detail) } as Step] : []),
  ];
}

/**
 * The rebuild of a stale JobSet, gate by gate. `cause`: not a count change but a JobSet Trainer can
 * no longer apply (refusedResume); its reason leads every report of this rebuild.
 */
// eslint-disable-next-line complexity -- the delete's gates, in order (initializers last)
function stale(
  o: Observation,
  js: JobSet,
  counts: NodeCounts,
  prev: RebuildReport | undefined,
  differences: string[],
  cause?: Pick<RebuildReport, 'reason' | 'resumedAt'>,
): Decision {
  const base = cause ? causedBy(countsOf(counts), cause) : countsOf(counts);
  if (js.spec?.suspend !== true) {
    // Suspended and scaled in one update: no apply can suspend the JobSet (its replicatedJobs are
    // immutable), in either mode, so the sidecar suspends it alone.
    if (o.trainJob.spec?.suspend === true) return suspendStale(o, js, base, prev, differences);
    return act(
      'waiting',
      reportSteps(
        o,
        prev,
        { ...base, reason: 'the JobSet runs with the old node count; suspend the TrainJob to rebuild it' },
        differences.join('; '),
      ),
    );
  }
  // The watch's Jobs first: one that still runs there means waiting, with no request (its status
  // moves when its last pod goes, which queues the key again). Only then the live read the delete
  // rests on: the Jobs and every pod of the JobSet.
  if (!o.children && !o.cachedJobs) return { kind: 'need', what: 'cached-jobs' };
  const safety = o.children
    ? canDeleteSafely(js, o.children.jobs, o.children.pods)
    : canDeleteSafely(js, o.cachedJobs ?? [], []);
  if (!safety.safe) {
    const detail = safety.reasons.join('; ');
    const report = because(base, 'something of the JobSet still runs; the rebuild waits until nothing does');
    return act('waiting', reportSteps(o, prev, report, detail), RETRY.whileRunningMs, detail);
  }
  if (!o.children) return { kind: 'need', what: 'children' };
  if (!o.pvcs) return { kind: 'need', what: 'pvcs' };
  const plan = planPvcRelease(o.trainJob, js, o.pvcs);
  if (!plan.ok) {
    return act(
      'blocked',
      reportSteps(o, prev, { ...because(base, `${plan.reason}; ${plan.advice}`), state: 'Blocked' }),
      RETRY.blockedMs,
      plan.reason,
    );
  }
  const claims = workspaceClaims(js, o.pvcs);
  if (claims.length) {
    // The claims survive the delete; would the JobSet be admitted again beside them?
    if (!o.recreate) return { kind: 'need', what: 'recreate' };
    if (!o.recreate.admitted) {
      return act(
        'blocked',
        reportSteps(o, prev, { ...base, state: 'Blocked', reason: notRecreatable(js, claims, o.recreate.reason) }),
        RETRY.blockedMs,
        o.recreate.reason,
      );
    }
  }
  const initializers = initializerCleanup(o, js, base, prev);
  if (!Array.isArray(initializers)) return initializers;
  const gang = podGroupSteps(o, js, { replicatedJob: counts.replicatedJob, to: counts.to });
  if (!Array.isArray(gang)) return gang;
  const report: RebuildReport = {
    ...base,
    state: 'Rebuilding',
    replacedJobSetUID: js.metadata.uid,
    ...(plan.retained.length ? { retainedPVCs: plan.retained } : {}),
  };
  const steps: Step[] = [
    ...plan.release.map((patch): Step => ({ kind: 'release-pvc', patch })),
    // The report goes first: a crash after the delete still leaves the replaced uid on record.
    ...(sameReport(prev, report) ? [] : [{ kind: 'report', report } as Step]),
    ...gang,
    deleteJobSetStep(js),
    ...initializers,
    { kind: 'event', event: eventFor(report, [...differences, ...gangDetails(gang)].join('; ')) },
  ];
  return act('deleted', steps, RETRY.whileDeletingMs);
}

function causedBy(base: RebuildReport, cause: Pick<RebuildReport, 'reason' | 'resumedAt'>): RebuildReport {
  return { ...base, resumedAt: cause.resumedAt, reason: cause.reason };
}

/** A report of this rebuild saying `why` it waits or stops, after its cause when it has one. */
function because(base: RebuildReport, why: string): RebuildReport {
  return { ...base, reason: base.resumedAt !== undefined && base.reason ? `${base.reason}; ${why}` : why };
}

function deleteJobSetStep(js: JobSet): Step {
  const { name = '', uid = '', resourceVersion = '' } = js.metadata;
  return { kind: 'delete-jobset', name, uid, resourceVersion };
}

/**
 * Companion mode, a runtime with a podGroupPolicy: the TrainJob's PodGroups whose minMember is not
 * what Trainer builds for this JobSet's count (`count`: the count-bearing job's new count; absent:
 * the JobSet's own), deleted so that Trainer creates them again from the new count (podgroup.ts:
 * Trainer re-applies an existing PodGroup only while the TrainJob is suspended). Standalone mode
 * builds no PodGroup, so it deletes none.
 */
function podGroupSteps(o: Observation, js: JobSet, count?: { replicatedJob: string; to: number }): Decision | Step[] {
  if (o.mode !== 'companion' || !o.runtime?.found || !gangSchedulersOf(o.runtime.runtime).length) return [];
  if (!o.podGroups) return { kind: 'need', what: 'podgroups' };
  return stalePodGroups(o.trainJob, o.podGroups, expectedMinMember(js, count)).map((podGroup): Step => ({
    kind: 'delete-podgroup',
    podGroup,
  }));
}

function gangDetails(steps: Step[]): string[] {
  return steps.flatMap((s) => (s.kind === 'delete-podgroup' ? [describeDeletion(s.podGroup)] : []));
}

/**
 * Companion mode, the TrainJob suspended but its stale JobSet not: Trainer's controller applies
 * the whole JobSet (new count, env and suspend: true) and JobSet's webhook refuses it, as
 * replicatedJobs is immutable (kubeflow/trainer#3008), so the JobSet would run on with the old
 * count. The reconciler suspends it itself with a patch of `spec.suspend` alone (which JobSet's
 * webhook allows; the approach of kubeflow/trainer#3041), uid and resourceVersion tested. This is
 * not an apply of the JobSet: companion mode never applies JobSets. The rebuild then goes on as
 * usual: its pods go away, it is deleted, and Trainer re-creates it with the new count, suspended.
 */
function suspendStale(
  o: Observation,
  js: JobSet,
  base: RebuildReport,
  prev: RebuildReport | undefined,
  differences: string[],
): Decision {
  const applier = o.mode === 'companion' ? "Trainer's apply" : 'an apply';
  const report: RebuildReport = {
    ...base,
    reason: `${applier} of the suspend is refused (the JobSet's replicatedJobs are immutable); suspending the JobSet so it can be rebuilt`,
  };
  const steps: Step[] = [
    ...(sameReport(prev, report) ? [] : [{ kind: 'report', report } as Step]),
    suspendStep(js),
    { kind: 'event', event: suspendEventFor(report, js.metadata.uid, differences.join('; ')) },
  ];
  // Its pods then vanish without a JobSet event: look again soon.
  return act('suspended', steps, RETRY.whileRunningMs);
}

/**
 * The data cache initializer's objects that its second run would trip over (initializers.ts):
 * deleted in the same reconcile as the JobSet, right after it (steps to append after the JobSet's
 * delete), never before. Deleted first, a revert that fell before the JobSet's delete would leave
 * the old JobSet current and the cache gone for good: its dataset initializer has completed, and
 * JobSet resumes only active Jobs (resumeJobsIfNecessary), so it never runs again. Once the JobSet's
 * delete is sent, whatever numNodes says, Trainer re-creates it with its initializer, which creates
 * the cache anew. The objects are deleted in the background (their names free at once, so the
 * second run's creates find nothing), and a delete that fails after the JobSet's is made again
 * while the old JobSet is still being deleted (cacheCleanupWhileDeleting). Objects already being
 * deleted (by someone else) are waited for before the JobSet goes. Undefined: none left.
 */
function initializerCleanup(
  o: Observation,
  js: JobSet,
  base: RebuildReport,
  prev: RebuildReport | undefined,
): Decision | Step[] {
  const cache = cacheInitializerOf(js);
  if (!cache.cache) return [];
  if ('unreadable' in cache)
    return act(
      'blocked',
      reportSteps(o, prev, { ...because(base, cache.unreadable), state: 'Blocked' }),
      RETRY.blockedMs,
    );
  if (!o.initializerObjects) return { kind: 'need', what: 'initializer-objects' };
  const plan = planInitializerCleanup(o.trainJob, o.initializerObjects);
  switch (plan.kind) {
    case 'clear':
      return [];
    case 'foreign':
      return act('blocked', reportSteps(o, prev, { ...because(base, plan.reason), state: 'Blocked' }), RETRY.blockedMs);
    case 'wait':
      return act(
        'waiting',
        reportSteps(o, prev, because(base, `the rebuild waits: ${plan.reason}`)),
        RETRY.whileDeletingMs,
        plan.reason,
      );
    case 'delete':
      return plan.objects.map((d): Step => ({ kind: 'delete-initializer-object', ...d }));
  }
}

/**
 * The JobSet this rebuild deleted is still being deleted (foreground): the data cache objects of
 * its first run that are still there (a delete after the JobSet's failed) are deleted now, before
 * Trainer can re-create the JobSet. Undefined: nothing to do here.
 */
function cacheCleanupWhileDeleting(o: Observation, js: JobSet, prev: RebuildReport | undefined): Decision | undefined {
  if (prev?.state !== 'Rebuilding' || prev.replacedJobSetUID !== js.metadata.uid) return undefined;
  const cache = cacheInitializerOf(js);
  if (!cache.cache || 'unreadable' in cache) return undefined;
  if (!o.initializerObjects) return { kind: 'need', what: 'initializer-objects' };
  const plan = planInitializerCleanup(o.trainJob, o.initializerObjects);
  if (plan.kind !== 'delete') return undefined;
  return act(
    'waiting',
    plan.objects.map((d): Step => ({ kind: 'delete-initializer-object', ...d })),
    RETRY.whileDeletingMs,
    `JobSet ${js.metadata.name} is being deleted; the data cache's objects of its first run are deleted too`,
  );
}

/** Why a JobSet whose re-creation would be refused beside its claims is kept, and the ways out. */
function notRecreatable(js: JobSet, claims: string[], refusal: string): string {
  const exist = claims.length === 1 ? 'exists' : 'exist';
  return (
    `JobSet ${js.metadata.name} could not be re-created while PVC ${claims.join(', ')} ${exist} (${refusal}), so it is not deleted: ` +
    "that would leave the TrainJob without a JobSet, or lose the claim's data; set numNodes back to what the JobSet was built for " +
    `(admitted; for an MPI job, while its runtime can be read; ${REVERT_RUNNING}), or copy the data out of the claim and create a new TrainJob with the new count (a bound claim never equals its ` +
    'template, so even a runtime whose volumeClaimPolicies set retentionPolicy.whenDeleted: Retain cannot be re-created beside it)'
  );
}

// eslint-disable-next-line complexity -- a current JobSet's PVC hand-back, standalone apply and Rebuilt report
function current(
  o: Observation,
  runtime: Runtime,
  js: JobSet,
  prev: RebuildReport | undefined,
  finished: string | undefined,
): Decision {
  // A PVC is retained only from a JobSet's volumeClaimPolicies, and listed in the report before the
  // delete: without either, there is nothing to hand back and nothing to list.
  const mayHaveRetained = (js.spec?.volumeClaimPolicies?.length ?? 0) > 0 || (prev?.retainedPVCs?.length ?? 0) > 0;
  if (mayHaveRetained && !o.retained) return { kind: 'need', what: 'retained' };
  const steps: Step[] = planPvcHandBack(o.trainJob, js, o.retained ?? []).map((patch) => ({
    kind: 'hand-back-pvc',
    patch,
  }));
  // Once, as the re-created JobSet is found: a PodGroup Trainer built from an older count meanwhile.
  const gang = prev?.state === 'Rebuilding' && prev.replacedJobSetUID !== js.metadata.uid ? podGroupSteps(o, js) : [];
  if (!Array.isArray(gang)) return gang;
  steps.push(...gang);
  let applied = false;
  if (o.mode === 'standalone') {
    const built = standaloneBuild(o, runtime);
    if (!built.ok)
      return act(
        'unsupported',
        [...statusSteps(o, built.reason), ...reportSteps(o, prev, { state: 'Unsupported', reason: built.reason })],
        RETRY.unwatchedMs,
      );
    // Never re-applied while both run (Trainer's rule): a running JobSet is left as it is; nor once
    // the TrainJob is finished for good (Trainer never applies it again).
    if (!finished && (o.trainJob.spec?.suspend === true || js.spec?.suspend === true)) {
      steps.push({ kind: 'apply-jobset', jobSet: built.jobSet });
      applied = true;
    }
    steps.push(...statusSteps(o));
  }
  const next =
    prev?.state === 'Rebuilding' && prev.replacedJobSetUID !== js.metadata.uid
      ? { ...prev, state: 'Rebuilt' as const }
      : prev?.state === 'Rebuilt'
        ? prev
        : undefined;
  steps.push(...reportSteps(o, prev, next));
  const outcome: Outcome =
    next?.state === 'Rebuilt' && prev?.state !== 'Rebuilt' ? 'rebuilt' : applied ? 'applied' : 'current';
  return act(outcome, steps);
}

/** Standalone mode's build: only under a Trainer line whose JobSet it builds the same (scale-judgment.ts). */
function standaloneBuild(o: Observation, runtime: Runtime): ReturnType<typeof buildJobSet> {
  if (!o.trainer.standaloneBuilds)
    return {
      ok: false,
      reason: `${standaloneRefusal(o.trainer)}: no JobSet is built; run Kubeflow Trainer's controller with the reconciler in companion mode`,
    };
  return buildJobSet(o.trainJob, runtime);
}

function create(o: Observation, runtime: Runtime, prev: RebuildReport | undefined): Decision {
  const built = standaloneBuild(o, runtime);
  if (!built.ok)
    return act(
      'unsupported',
      [...statusSteps(o, built.reason), ...reportSteps(o, prev, { state: 'Unsupported', reason: built.reason })],
      RETRY.unwatchedMs,
    );
  return act('applied', [{ kind: 'apply-jobset', jobSet: built.jobSet }, ...statusSteps(o)]);
}

/** Standalone only: the TrainJob's status (status.ts), applied when it changes. */
function statusSteps(o: Observation, unbuildable?: string, why: UnbuildableReason = 'UnsupportedRuntime'): Step[] {
  if (o.mode !== 'standalone') return [];
  const step = statusStep(
    o.trainJob,
    o.jobSet,
    o.now,
    o.trainer.failedIsTerminal,
    unbuildable ? { message: unbuildable, reason: why } : undefined,
  );
  return step ? [step] : [];
}
