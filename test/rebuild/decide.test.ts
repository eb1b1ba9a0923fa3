// decide(): one reconcile, from observation to ordered steps, for both modes. Each row states
// what the cluster holds and what the reconciler must (and must not) do about it.
import { TRAINER_LINES, UNKNOWN_TRAINER_LINE } from '../../src/api/trainer-line.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide, RETRY } from '../../src/rebuild/decide.ts';
import type { Decision, Need, Observation, RecreateCheck, Step } from '../../src/rebuild/decision.ts';
import type { Mode } from '../../src/api/names.ts';
import type { Job, JobSet, PersistentVolumeClaim, Pod, Runtime, TrainJob } from '../../src/api/objects.ts';
import { encodeReport, type RebuildReport } from '../../src/rebuild/report.ts';
import { job, jobSetOwner, pod, pvc, torch1, trainJob, trainerJobSet, upstreamRuntime, withCount } from './fixtures.ts';

const REPORT = 'trainjob-webhook.kubeflow.org/jobset-rebuild';
const torch = upstreamRuntime('torch');

interface World {
  mode?: Mode;
  /** The installed Trainer line (default v2.3.0). */
  trainer?: keyof typeof TRAINER_LINES | 'unknown';
  trainJob: TrainJob;
  jobSet?: JobSet;
  runtime?: Runtime | null;
  jobs?: Job[];
  /** The Jobs as the watch holds them (default: the live ones). */
  cachedJobs?: Job[];
  pods?: Pod[];
  pvcs?: PersistentVolumeClaim[];
  recreate?: RecreateCheck;
}

/** Runs decide() as the orchestrator does: answering each `need` from the world, in order. */
// eslint-disable-next-line complexity -- answers each kind of need decide() asks, each with the World's default
function run(w: World): { decision: Decision; needs: Need[] } {
  const o: Observation = {
    mode: w.mode ?? 'companion',
    trainer: w.trainer === 'unknown' ? UNKNOWN_TRAINER_LINE : TRAINER_LINES[w.trainer ?? 'v2.3.0'],
    trainJob: w.trainJob,
    jobSet: w.jobSet,
    now: '2026-11-30T00:00:00Z',
    fieldManager: 'trainjob-webhook-reconciler',
  };
  const needs: Need[] = [];
  for (;;) {
    const d = decide(o);
    if (d.kind !== 'need') return { decision: d, needs };
    needs.push(d.what);
    if (d.what === 'runtime')
      o.runtime =
        w.runtime === null
          ? { found: false, reason: 'ClusterTrainingRuntime torch-distributed not found' }
          : { found: true, runtime: w.runtime ?? torch };
    if (d.what === 'trainer-refusals') o.trainerRefusals = [];
    if (d.what === 'cached-jobs') o.cachedJobs = w.cachedJobs ?? w.jobs ?? [];
    if (d.what === 'children') o.children = { jobs: w.jobs ?? [], pods: w.pods ?? [] };
    if (d.what === 'pvcs') o.pvcs = w.pvcs ?? [];
    if (d.what === 'recreate') o.recreate = w.recreate ?? { admitted: true };
    if (d.what === 'retained')
      o.retained = (w.pvcs ?? []).filter((p) => p.metadata.labels?.['trainjob-webhook.kubeflow.org/retained-for']);
  }
}

const kinds = (d: Decision) => (d.kind === 'act' ? d.steps.map((s) => s.kind) : []);
const stepOf = <K extends Step['kind']>(d: Decision, kind: K) =>
  d.kind === 'act' ? (d.steps.find((s) => s.kind === kind) as Extract<Step, { kind: K }> | undefined) : undefined;
const withReport = (t: TrainJob, r: RebuildReport) => ((t.metadata.annotations = { [REPORT]: encodeReport(r) }), t);
const running = (js: JobSet): JobSet => ({ ...js, spec: { ...js.spec, suspend: false } });
const deleting = <T extends { metadata: object }>(o: T): T => ({
  ...o,
  metadata: { ...o.metadata, deletionTimestamp: '2026-11-30T00:00:00Z' },
});
const stale2 = () => ({ trainJob: torch1(2), jobSet: trainerJobSet('torch1') });
/** Trainer's Suspended=True condition, set at `at` (run()'s clock reads 2026-11-30T00:00:00Z). */
const suspendedAt = (t: TrainJob, at: string): TrainJob => ({
  ...t,
  status: {
    conditions: [
      {
        type: 'Suspended',
        status: 'True',
        reason: 'Suspended',
        message: 'TrainJob is suspended',
        lastTransitionTime: at,
      },
    ],
  },
});

describe('decide: left alone', () => {
  it('a TrainJob managed by MultiKueue is skipped before anything is read', () => {
    const { decision, needs } = run({
      ...stale2(),
      trainJob: torch1(2, (t) => (t.spec!.managedBy = 'kueue.x-k8s.io/multikueue')),
    });
    assert.deepEqual(needs, []);
    assert.equal(decision.kind, 'skip');
    assert.match(decision.kind === 'skip' ? decision.reason : '', /kueue\.x-k8s\.io\/multikueue/);
  });

  it("a TrainJob with no managedBy is Trainer's, so it is reconciled", () => {
    assert.equal(run({ ...stale2(), trainJob: torch1(2, (t) => delete t.spec!.managedBy) }).decision.kind, 'act');
  });

  it('a TrainJob being deleted is skipped', () => {
    assert.equal(run({ ...stale2(), trainJob: deleting(torch1(2)) }).decision.kind, 'skip');
  });

  it('a JobSet this TrainJob does not control is reported, never touched', () => {
    const js = trainerJobSet('torch1');
    js.metadata.ownerReferences = [];
    const { decision } = run({ trainJob: torch1(2), jobSet: js });
    assert.deepEqual(kinds(decision), ['report', 'event']);
    assert.equal(stepOf(decision, 'report')?.report?.state, 'Unsupported');
  });

  it('an unknown ML policy is reported once, and not again when nothing changed', () => {
    const paddle = { ...torch, spec: { ...torch.spec, mlPolicy: { paddle: {} } } };
    const first = run({ ...stale2(), runtime: paddle }).decision;
    assert.equal(first.kind === 'act' && first.outcome, 'unsupported');
    const report = stepOf(first, 'report')?.report;
    assert.match(report?.reason ?? '', /"paddle"/);
    assert.equal(stepOf(first, 'event')?.event.type, 'Warning');
    const again = run({
      trainJob: withReport(torch1(2), report!),
      jobSet: trainerJobSet('torch1'),
      runtime: paddle,
    }).decision;
    assert.deepEqual(kinds(again), []);
  });

  it('Unsupported from what the runtime says (read, not watched) is looked at again every 5 minutes; from watched objects alone, at their next event', () => {
    const paddle = { ...torch, spec: { ...torch.spec, mlPolicy: { paddle: {} } } };
    const fromRuntime = run({ ...stale2(), runtime: paddle }).decision;
    assert.equal(fromRuntime.kind === 'act' && fromRuntime.requeueAfterMs, RETRY.unwatchedMs);
    assert.equal(RETRY.unwatchedMs, 5 * 60_000, 'what the periodic resync did before it ran every ~10 hours');
    const standaloneUnbuildable = run({ mode: 'standalone', trainer: 'v2.2.1', trainJob: torch1(2) }).decision;
    assert.equal(standaloneUnbuildable.kind === 'act' && standaloneUnbuildable.requeueAfterMs, RETRY.unwatchedMs);
    const js = trainerJobSet('torch1');
    js.metadata.ownerReferences = [];
    const notControlled = run({ trainJob: torch1(2), jobSet: js }).decision;
    assert.equal(notControlled.kind === 'act' && notControlled.outcome, 'unsupported');
    assert.equal(notControlled.kind === 'act' && notControlled.requeueAfterMs, undefined);
  });

  it('a runtime that cannot be read is reported and retried', () => {
    const { decision } = run({ ...stale2(), runtime: null });
    assert.equal(decision.kind === 'act' && decision.requeueAfterMs, RETRY.blockedMs);
    assert.match(stepOf(decision, 'report')?.report?.reason ?? '', /not found/);
  });
});

describe('decide: companion mode', () => {
  it('no JobSet: Trainer creates it, nothing to do', () => {
    const { decision } = run({ trainJob: torch1(2) });
    assert.equal(decision.kind === 'act' && decision.outcome, 'no-jobset');
    assert.deepEqual(kinds(decision), []);
  });

  it('current JobSet: nothing to do (no reads of Jobs, pods or PVCs: no volumeClaimPolicies, no PVC retained on record)', () => {
    const { decision, needs } = run({ trainJob: torch1(1), jobSet: trainerJobSet('torch1') });
    assert.deepEqual(needs, ['runtime']);
    assert.equal(decision.kind === 'act' && decision.outcome, 'current');
    assert.deepEqual(kinds(decision), []);
  });

  it('stale, suspended, nothing runs: report, then delete with uid and resourceVersion preconditions, then the Event', () => {
    const js = { ...trainerJobSet('torch1'), metadata: { ...trainerJobSet('torch1').metadata, resourceVersion: '42' } };
    const { decision, needs } = run({ trainJob: torch1(2), jobSet: js, jobs: [job('torch1-node-0')] });
    assert.deepEqual(needs, ['runtime', 'cached-jobs', 'children', 'pvcs']);
    assert.equal(decision.kind === 'act' && decision.outcome, 'deleted');
    assert.deepEqual(kinds(decision), ['report', 'delete-jobset', 'event']);
    assert.deepEqual(stepOf(decision, 'delete-jobset'), {
      kind: 'delete-jobset',
      name: 'torch1',
      uid: 'jobset-uid-torch1',
      resourceVersion: '42',
    });
    assert.deepEqual(stepOf(decision, 'report')?.report, {
      state: 'Rebuilding',
      numNodes: 2,
      replicatedJob: 'node',
      parallelism: { from: 1, to: 2 },
      replacedJobSetUID: 'jobset-uid-torch1',
    });
    assert.match(
      stepOf(decision, 'event')?.event.message ?? '',
      /Deleted stale JobSet \(uid jobset-uid-torch1, node parallelism 1 -> 2 \(numNodes 2\)\)/,
    );
  });

  it('the atomic case (resumed and scaled in one update): the old JobSet is still suspended, so it is rebuilt', () => {
    const { decision } = run({
      trainJob: torch1(2, (t) => (t.spec!.suspend = false)),
      jobSet: trainerJobSet('torch1'),
      jobs: [job('torch1-node-0')],
    });
    assert.deepEqual(kinds(decision), ['report', 'delete-jobset', 'event']);
  });

  it('stale with a pod still present (Terminating): wait and retry, never delete', () => {
    const { decision } = run({
      ...stale2(),
      jobs: [job('torch1-node-0')],
      pods: [pod('torch1-node-0-0-x', 'Running', true)],
    });
    assert.equal(decision.kind === 'act' && decision.outcome, 'waiting');
    assert.equal(decision.kind === 'act' && decision.requeueAfterMs, RETRY.whileRunningMs);
    assert.ok(!kinds(decision).includes('delete-jobset'));
    const report = stepOf(decision, 'report')?.report;
    assert.equal(report?.state, 'Waiting');
    assert.match(stepOf(decision, 'event')?.event.message ?? '', /1 pod of the JobSet still exists \(1 terminating\)/);
    // The next look, same situation: the annotation already says so; no write, no new Event.
    const again = run({
      trainJob: withReport(torch1(2), report!),
      jobSet: trainerJobSet('torch1'),
      jobs: [job('torch1-node-0')],
      pods: [pod('other-name', 'Pending')],
    });
    assert.deepEqual(kinds(again.decision), []);
  });

  it('stale, and the watch still shows a Job that runs: wait, with no live read of Jobs or pods', () => {
    const { decision, needs } = run({
      ...stale2(),
      cachedJobs: [job('torch1-node-0', { status: { active: 0, terminating: 1 } })],
      jobs: [job('torch1-node-0')],
    });
    assert.deepEqual(needs, ['runtime', 'cached-jobs']);
    assert.equal(decision.kind === 'act' && decision.outcome, 'waiting');
    assert.equal(decision.kind === 'act' && decision.requeueAfterMs, RETRY.whileRunningMs);
    assert.match(stepOf(decision, 'event')?.event.message ?? '', /Job torch1-node-0 has 1 terminating pod/);
  });

  it('stale, the watch shows every Job stopped but the live read finds a pod: wait (the delete rests on the live read only)', () => {
    const { decision, needs } = run({
      ...stale2(),
      cachedJobs: [job('torch1-node-0')],
      jobs: [job('torch1-node-0')],
      pods: [pod('torch1-node-0-0-x', 'Running', true)],
    });
    assert.deepEqual(needs, ['runtime', 'cached-jobs', 'children']);
    assert.equal(decision.kind === 'act' && decision.outcome, 'waiting');
  });

  it('stale, the watch lags (a Job it shows stopped runs again): the live read wins', () => {
    const { decision } = run({
      ...stale2(),
      cachedJobs: [job('torch1-node-0')],
      jobs: [job('torch1-node-0', { spec: { suspend: false }, status: { active: 1 } })],
    });
    assert.equal(decision.kind === 'act' && decision.outcome, 'waiting');
    assert.ok(!kinds(decision).includes('delete-jobset'));
  });

  it('a current JobSet with volumeClaimPolicies, or a report that lists retained PVCs: the retained PVCs are listed', () => {
    assert.deepEqual(
      run({
        trainJob: trainJob('ttpub', { trainer: { numNodes: 1 } }),
        jobSet: trainerJobSet('ttpub'),
        runtime: upstreamRuntime('torchtune'),
      }).needs,
      ['runtime', 'retained'],
    );
    const onRecord = withReport(torch1(1), { state: 'Rebuilt', retainedPVCs: ['x'] });
    assert.deepEqual(run({ trainJob: onRecord, jobSet: trainerJobSet('torch1') }).needs, ['runtime', 'retained']);
  });

  it('companion: no JobSet, or one being deleted: nothing is read', () => {
    assert.deepEqual(run({ trainJob: torch1(2) }).needs, []);
    assert.deepEqual(run({ trainJob: torch1(2), jobSet: deleting(trainerJobSet('torch1')) }).needs, []);
  });

  it('stale but the JobSet still runs while the TrainJob runs: reported, suspend first', () => {
    const { decision, needs } = run({
      trainJob: torch1(2, (t) => (t.spec!.suspend = false)),
      jobSet: running(trainerJobSet('torch1')),
    });
    assert.deepEqual(needs, ['runtime']);
    assert.match(stepOf(decision, 'report')?.report?.reason ?? '', /suspend the TrainJob to rebuild it/);
    assert.equal(decision.kind === 'act' && decision.requeueAfterMs, undefined);
  });

  it("stale, TrainJob suspended, JobSet still running (Trainer's apply of the suspend is refused): report, suspend the JobSet alone with preconditions, Event", () => {
    const js = running(trainerJobSet('torch1'));
    js.metadata = { ...js.metadata, resourceVersion: '42' };
    const { decision, needs } = run({
      trainJob: torch1(2),
      jobSet: js,
      jobs: [job('torch1-node-0')],
      pods: [pod('torch1-node-0-0-x', 'Running')],
    });
    assert.deepEqual(needs, ['runtime'], 'no Jobs, pods or PVCs are read before the suspend');
    assert.equal(decision.kind === 'act' && decision.outcome, 'suspended');
    assert.equal(decision.kind === 'act' && decision.requeueAfterMs, RETRY.whileRunningMs);
    assert.deepEqual(kinds(decision), ['report', 'suspend-jobset', 'event']);
    assert.deepEqual(stepOf(decision, 'suspend-jobset'), {
      kind: 'suspend-jobset',
      name: 'torch1',
      uid: 'jobset-uid-torch1',
      resourceVersion: '42',
    });
    const report = stepOf(decision, 'report')?.report;
    assert.deepEqual(
      { ...report, reason: undefined },
      { state: 'Waiting', numNodes: 2, replicatedJob: 'node', parallelism: { from: 1, to: 2 }, reason: undefined },
    );
    assert.match(report?.reason ?? '', /suspending the JobSet so it can be rebuilt/);
    assert.doesNotMatch(report?.reason ?? '', /set numNodes back/);
    const event = stepOf(decision, 'event')?.event;
    assert.deepEqual([event?.type, event?.reason], ['Normal', 'JobSetSuspended']);
    assert.match(
      event?.message ?? '',
      /Suspended stale JobSet \(uid jobset-uid-torch1, node parallelism 1 -> 2 \(numNodes 2\)\) so that it can be rebuilt/,
    );
    assert.ok(!kinds(decision).includes('delete-jobset') && !kinds(decision).includes('apply-jobset'));
    // A retry after a refused suspend: the report is already on record, the suspend is asked again.
    const again = run({ trainJob: withReport(torch1(2), report!), jobSet: js });
    assert.deepEqual(kinds(again.decision), ['suspend-jobset', 'event']);
  });

  it('stale, TrainJob not suspended, JobSet running: still only waits with the existing message (never suspends what the user runs)', () => {
    const { decision } = run({
      trainJob: torch1(2, (t) => (t.spec!.suspend = false)),
      jobSet: running(trainerJobSet('torch1')),
    });
    assert.equal(decision.kind === 'act' && decision.outcome, 'waiting');
    assert.deepEqual(kinds(decision), ['report', 'event']);
    assert.match(
      stepOf(decision, 'report')?.report?.reason ?? '',
      /the JobSet runs with the old node count; suspend the TrainJob to rebuild it/,
    );
  });

  it('stale, TrainJob suspended, JobSet already suspended: no suspend step, the existing rebuild path', () => {
    const { decision } = run({ trainJob: torch1(2), jobSet: trainerJobSet('torch1'), jobs: [job('torch1-node-0')] });
    assert.deepEqual(kinds(decision), ['report', 'delete-jobset', 'event']);
    const waiting = run({
      trainJob: torch1(2),
      jobSet: trainerJobSet('torch1'),
      jobs: [job('torch1-node-0')],
      pods: [pod('torch1-node-0-0-x', 'Running', true)],
    });
    assert.equal(waiting.decision.kind === 'act' && waiting.decision.outcome, 'waiting');
    assert.ok(!kinds(waiting.decision).includes('suspend-jobset'));
  });

  it("the JobSet is current while the TrainJob is just suspended and it is not: Trainer's own apply suspends it; look again after the grace", () => {
    const { decision } = run({ trainJob: torch1(1), jobSet: running(trainerJobSet('torch1')) });
    assert.equal(decision.kind === 'act' && decision.outcome, 'waiting');
    assert.equal(decision.kind === 'act' && decision.requeueAfterMs, RETRY.pauseGraceMs);
    assert.deepEqual(kinds(decision), []);
    const within = suspendedAt(torch1(1), '2026-11-29T23:59:58Z');
    assert.deepEqual(kinds(run({ trainJob: within, jobSet: running(trainerJobSet('torch1')) }).decision), []);
  });

  it("still not suspended past the grace (Trainer's apply refused, as beside a workspace claim): the sidecar suspends the JobSet alone, preconditions set", () => {
    const tj = suspendedAt(torch1(1), '2026-11-29T23:59:50Z');
    const js = running(trainerJobSet('torch1'));
    js.metadata.resourceVersion = '42';
    const { decision } = run({ trainJob: tj, jobSet: js });
    assert.equal(decision.kind === 'act' && decision.outcome, 'suspended');
    assert.deepEqual(kinds(decision), ['suspend-jobset', 'event']);
    assert.deepEqual(stepOf(decision, 'suspend-jobset'), {
      kind: 'suspend-jobset',
      name: js.metadata.name,
      uid: js.metadata.uid,
      resourceVersion: js.metadata.resourceVersion,
    });
  });

  describe('a JobSet the sidecar suspended, its TrainJob resumed (Trainer cannot apply the resume either)', () => {
    const resumedAt = (at: string): TrainJob => ({
      ...torch1(1, (t) => (t.spec!.suspend = false)),
      status: {
        conditions: [
          {
            type: 'Suspended',
            status: 'False',
            reason: 'Resumed',
            message: 'TrainJob is resumed',
            lastTransitionTime: at,
          },
        ],
      },
    });
    const suspendedBy = (manager: string): JobSet => {
      const js = trainerJobSet('torch1');
      js.spec = { ...js.spec, suspend: true };
      js.metadata.resourceVersion = '43';
      (js.metadata as Record<string, unknown>).managedFields = [
        { manager: 'trainer', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:replicatedJobs': {} } } },
        { manager, operation: 'Update', fieldsV1: { 'f:spec': { 'f:suspend': {} } } },
      ];
      return js;
    };
    it('past the grace: the sidecar resumes it (spec.suspend alone, preconditions set)', () => {
      const js = suspendedBy('trainjob-webhook-reconciler');
      const { decision } = run({ trainJob: resumedAt('2026-11-29T23:59:50Z'), jobSet: js });
      assert.deepEqual(kinds(decision), ['resume-jobset', 'event']);
      assert.deepEqual(stepOf(decision, 'resume-jobset'), {
        kind: 'resume-jobset',
        name: 'torch1',
        uid: js.metadata.uid,
        resourceVersion: '43',
      });
      assert.equal(stepOf(decision, 'event')?.event.reason, 'JobSetResumed');
    });
    it('within the grace: waits for Trainer', () => {
      const { decision } = run({
        trainJob: resumedAt('2026-11-29T23:59:59Z'),
        jobSet: suspendedBy('trainjob-webhook-reconciler'),
      });
      assert.deepEqual(kinds(decision), []);
      assert.equal(decision.kind === 'act' && decision.requeueAfterMs, RETRY.pauseGraceMs);
    });
    it('suspended by anyone else (Trainer, for Kueue): never resumed here', () => {
      const { decision } = run({ trainJob: resumedAt('2026-11-29T23:59:50Z'), jobSet: suspendedBy('trainer') });
      assert.ok(!kinds(decision).includes('resume-jobset'));
    });
  });

  it('a finished TrainJob is never paused by the sidecar', () => {
    const tj = suspendedAt(torch1(1), '2026-11-29T23:59:50Z');
    tj.status?.conditions?.push({
      type: 'Complete',
      status: 'True',
      reason: 'x',
      message: 'x',
      lastTransitionTime: '2026-11-29T23:00:00Z',
    });
    assert.ok(
      !kinds(run({ trainJob: tj, jobSet: running(trainerJobSet('torch1')) }).decision).includes('suspend-jobset'),
    );
  });

  it('standalone mode never takes the pause path: its own apply suspends the JobSet', () => {
    const tj = suspendedAt(torch1(1), '2026-11-29T23:59:50Z');
    const { decision } = run({ mode: 'standalone', trainJob: tj, jobSet: running(trainerJobSet('torch1')) });
    assert.ok(!kinds(decision).includes('suspend-jobset'));
  });

  it('stale and refused by the judgment (gang-scheduled by a scheduler with no PodGroup plugin): Blocked with the reason and the way out; nothing deleted', () => {
    const gang = { ...torch, spec: { ...torch.spec, podGroupPolicy: { kai: {} } } };
    const { decision } = run({ ...stale2(), runtime: gang });
    assert.equal(decision.kind === 'act' && decision.outcome, 'blocked');
    assert.ok(!kinds(decision).includes('delete-jobset'));
    assert.match(stepOf(decision, 'report')?.report?.reason ?? '', /gang-scheduled.*create a new TrainJob/);
  });

  it('stale, refused by the judgment, suspended in the same update while the JobSet runs: Blocked, and the JobSet is suspended so nothing runs', () => {
    const gang = { ...torch, spec: { ...torch.spec, podGroupPolicy: { kai: {} } } };
    const { decision } = run({ trainJob: torch1(2), jobSet: running(trainerJobSet('torch1')), runtime: gang });
    assert.equal(decision.kind === 'act' && decision.outcome, 'suspended');
    assert.deepEqual(kinds(decision), ['report', 'event', 'suspend-jobset', 'event']);
  });

  it('stale and being deleted already: wait for it', () => {
    const { decision } = run({ trainJob: torch1(2), jobSet: deleting(trainerJobSet('torch1')) });
    assert.equal(decision.kind === 'act' && decision.requeueAfterMs, RETRY.whileDeletingMs);
    assert.deepEqual(kinds(decision), []);
  });

  it('a PVC the JobSet owns is released before the delete, and listed in the report', () => {
    const tj = trainJob('ttpub', { trainer: { numNodes: 2 } }, 'torchtune-llama3.2-1b');
    const js = trainerJobSet('ttpub');
    const claim = pvc('initializer-ttpub', { ownerReferences: [jobSetOwner(js)] });
    const { decision } = run({
      trainJob: tj,
      jobSet: js,
      runtime: upstreamRuntime('torchtune'),
      pvcs: [claim, pvc('unrelated')],
    });
    assert.deepEqual(kinds(decision), ['release-pvc', 'report', 'delete-jobset', 'event']);
    assert.equal(stepOf(decision, 'release-pvc')?.patch.name, 'initializer-ttpub');
    assert.deepEqual(stepOf(decision, 'report')?.report?.retainedPVCs, ['initializer-ttpub']);
  });

  it('a workspace PVC that outlives the delete: a dry-run create checks the JobSet would be admitted again first', () => {
    const js = trainerJobSet('ttpub');
    const claim = pvc('initializer-ttpub');
    const { needs } = run({
      trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
      jobSet: js,
      runtime: upstreamRuntime('torchtune'),
      pvcs: [claim],
    });
    assert.deepEqual(needs, ['runtime', 'cached-jobs', 'children', 'pvcs', 'recreate']);
  });

  it("JobSet's webhook would refuse the re-creation beside the PVC (v0.12.0: whenDeleted must be Retain, specs equal): Blocked, never deleted", () => {
    const js = trainerJobSet('ttpub');
    const claim = pvc('initializer-ttpub', { ownerReferences: [jobSetOwner(js)] });
    const refused =
      'JobSet.jobset.x-k8s.io "ttpub" is invalid: spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted: Invalid value: "Delete": retentionPolicy must be retain when PVC exists';
    const { decision } = run({
      trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
      jobSet: js,
      runtime: upstreamRuntime('torchtune'),
      pvcs: [claim],
      recreate: { admitted: false, reason: refused },
    });
    assert.equal(decision.kind === 'act' && decision.outcome, 'blocked');
    assert.deepEqual(kinds(decision), ['report', 'event']);
    const reason = stepOf(decision, 'report')?.report?.reason ?? '';
    assert.match(
      reason,
      /could not be re-created while PVC initializer-ttpub exists \(.*retentionPolicy must be retain when PVC exists\)/,
    );
    assert.match(reason, /whenDeleted: Retain/);
  });

  it('no workspace PVC (none left, or none in the runtime): no dry run', () => {
    const { needs } = run({
      trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
      jobSet: trainerJobSet('ttpub'),
      runtime: upstreamRuntime('torchtune'),
      pvcs: [pvc('unrelated')],
    });
    assert.deepEqual(needs, ['runtime', 'cached-jobs', 'children', 'pvcs']);
  });

  it('a PVC that cannot be kept blocks the rebuild with the reason and what to do', () => {
    const js = trainerJobSet('ttpub');
    const claim = deleting(pvc('initializer-ttpub', { ownerReferences: [jobSetOwner(js)] }));
    const { decision } = run({
      trainJob: trainJob('ttpub', { trainer: { numNodes: 2 } }),
      jobSet: js,
      runtime: upstreamRuntime('torchtune'),
      pvcs: [claim],
    });
    assert.equal(decision.kind === 'act' && decision.outcome, 'blocked');
    assert.ok(!kinds(decision).includes('delete-jobset'));
    assert.equal(stepOf(decision, 'report')?.report?.state, 'Blocked');
    assert.equal(stepOf(decision, 'event')?.event.type, 'Warning');
  });

  it('after the re-creation: retained PVCs are handed back and the report says Rebuilt (once)', () => {
    const rebuilding: RebuildReport = {
      state: 'Rebuilding',
      numNodes: 2,
      replicatedJob: 'node',
      parallelism: { from: 1, to: 2 },
      replacedJobSetUID: 'old-uid',
      retainedPVCs: ['initializer-ttpub'],
    };
    const tj = withReport(trainJob('ttpub', { trainer: { numNodes: 2 } }), rebuilding);
    const js = withCount(trainerJobSet('ttpub'), 'node', 2);
    const retained = pvc('initializer-ttpub', {
      labels: { 'trainjob-webhook.kubeflow.org/retained-for': tj.metadata.uid! },
    });
    const { decision } = run({ trainJob: tj, jobSet: js, runtime: upstreamRuntime('torchtune'), pvcs: [retained] });
    assert.equal(decision.kind === 'act' && decision.outcome, 'rebuilt');
    assert.deepEqual(kinds(decision), ['hand-back-pvc', 'report', 'event']);
    assert.deepEqual(stepOf(decision, 'report')?.report, { ...rebuilding, state: 'Rebuilt' });
    const again = run({
      trainJob: withReport(trainJob('ttpub', { trainer: { numNodes: 2 } }), { ...rebuilding, state: 'Rebuilt' }),
      jobSet: js,
      runtime: upstreamRuntime('torchtune'),
    });
    assert.deepEqual(kinds(again.decision), []);
  });

  it('a Rebuilding report whose JobSet was never replaced (the user scaled back) is cleared', () => {
    const tj = withReport(torch1(1), { state: 'Rebuilding', replacedJobSetUID: 'jobset-uid-torch1' });
    const { decision } = run({ trainJob: tj, jobSet: trainerJobSet('torch1') });
    assert.deepEqual(decision.kind === 'act' && decision.steps, [{ kind: 'report', report: undefined }]);
  });

  it('MPI scaled 1 -> 2 is not rebuilt (only the hostfile moves); 2 -> 3 is', () => {
    const mpi = (n: number) => trainJob('mpi', { trainer: { numNodes: n } }, 'deepspeed-distributed');
    const world = { jobSet: trainerJobSet('mpi'), runtime: upstreamRuntime('deepspeed') };
    assert.equal(
      run({ ...world, trainJob: mpi(2) }).decision.kind === 'act' &&
        (run({ ...world, trainJob: mpi(2) }).decision as { outcome: string }).outcome,
      'current',
    );
    assert.ok(kinds(run({ ...world, trainJob: mpi(3) }).decision).includes('delete-jobset'));
  });
});

describe('decide: standalone mode', () => {
  const standalone = (w: World) => run({ ...w, mode: 'standalone' });

  it('no JobSet: build and apply it, and set Suspended', () => {
    const { decision } = standalone({ trainJob: torch1(1) });
    assert.deepEqual(kinds(decision), ['apply-jobset', 'apply-status']);
    assert.equal(stepOf(decision, 'apply-jobset')?.jobSet.spec?.replicatedJobs?.[0].template?.spec?.parallelism, 1);
    assert.deepEqual(
      stepOf(decision, 'apply-status')?.conditions.map((c) => [c.type, c.status, c.reason]),
      [['Suspended', 'True', 'Suspended']],
    );
  });

  it('MPI: a clear condition and report, never a JobSet', () => {
    const { decision } = standalone({
      trainJob: trainJob('mpi', { trainer: { numNodes: 2 } }, 'deepspeed-distributed'),
      runtime: upstreamRuntime('deepspeed'),
    });
    assert.equal(decision.kind === 'act' && decision.outcome, 'unsupported');
    assert.ok(!kinds(decision).includes('apply-jobset'));
    const conditions = stepOf(decision, 'apply-status')?.conditions ?? [];
    assert.deepEqual(
      conditions.map((c) => [c.type, c.status, c.reason]),
      [
        ['Suspended', 'True', 'Suspended'],
        ['JobSetCreated', 'False', 'UnsupportedRuntime'],
      ],
    );
    assert.match(conditions[1].message, /MPI/);
  });

  it('current and suspended: re-applied (a no-op for the API server), status unchanged so not written', () => {
    const tj = torch1(1);
    tj.status = {
      conditions: [
        {
          type: 'Suspended',
          status: 'True',
          reason: 'Suspended',
          message: 'TrainJob is suspended',
          lastTransitionTime: 't0',
          observedGeneration: 1,
        },
      ],
    };
    const { decision } = standalone({ trainJob: tj, jobSet: trainerJobSet('torch1') });
    assert.deepEqual(kinds(decision), ['apply-jobset']);
  });

  it('resumed: the JobSet is applied unsuspended, and Suspended turns False/Resumed', () => {
    const tj = torch1(1, (t) => (t.spec!.suspend = false));
    tj.status = {
      conditions: [
        {
          type: 'Suspended',
          status: 'True',
          reason: 'Suspended',
          message: 'TrainJob is suspended',
          lastTransitionTime: 't0',
        },
      ],
    };
    const { decision } = standalone({ trainJob: tj, jobSet: trainerJobSet('torch1') });
    assert.equal(stepOf(decision, 'apply-jobset')?.jobSet.spec?.suspend, false);
    const [c] = stepOf(decision, 'apply-status')?.conditions ?? [];
    assert.deepEqual(
      [c.status, c.reason, c.message, c.lastTransitionTime],
      ['False', 'Resumed', 'TrainJob is resumed', '2026-11-30T00:00:00Z'],
    );
  });

  it('both running: never re-applied', () => {
    const { decision } = standalone({
      trainJob: torch1(1, (t) => (t.spec!.suspend = false)),
      jobSet: running(trainerJobSet('torch1')),
    });
    assert.ok(!kinds(decision).includes('apply-jobset'));
  });

  it('stale, TrainJob suspended, JobSet still running: suspends the JobSet alone, as in companion mode (its own apply would be refused too)', () => {
    const { decision } = standalone({ trainJob: torch1(2), jobSet: running(trainerJobSet('torch1')) });
    assert.equal(decision.kind === 'act' && decision.outcome, 'suspended');
    assert.ok(kinds(decision).includes('suspend-jobset'));
    assert.ok(!kinds(decision).includes('apply-jobset'));
    assert.match(stepOf(decision, 'report')?.report?.reason ?? '', /^an apply of the suspend is refused/);
  });

  it('stale: the same guarded rebuild as companion mode (delete, then re-apply once it is gone)', () => {
    const { decision } = standalone({ ...stale2(), jobs: [job('torch1-node-0')] });
    assert.deepEqual(kinds(decision), ['report', 'delete-jobset', 'event']);
  });
});

// Issue 8: Trainer v2.3.0 never reconciles a Complete TrainJob again, nor one Failed with
// DeadlineExceeded (and a Completed JobSet makes its TrainJob Complete); other Failed ones are.
describe('decide: finished TrainJobs', () => {
  const cond = (type: string, reason = 'r', status: 'True' | 'False' = 'True') => ({
    type,
    status,
    reason,
    message: 'm',
    lastTransitionTime: 't0',
  });
  const withStatus = (t: TrainJob, ...conditions: ReturnType<typeof cond>[]) => ((t.status = { conditions }), t);
  const complete = () => withStatus(torch1(2), cond('Complete', 'AllJobsCompleted'));
  const deadline = () => withStatus(torch1(2), cond('Failed', 'DeadlineExceeded'));
  const failed = () => withStatus(torch1(2), cond('Failed', 'FailedJobs'));
  const jobSetCompleted = (js: JobSet): JobSet => ({
    ...js,
    status: { conditions: [cond('Completed', 'AllJobsCompleted')] },
  });
  /** What a finished JobSet leaves: its Jobs finished and never suspended, their pods terminal. */
  const finishedJob = (name: string, type: 'Complete' | 'Failed'): Job =>
    job(name, { spec: { suspend: false }, status: { active: 0, conditions: [{ type, status: 'True' }] } });
  const finishedChildren = {
    jobs: [finishedJob('torch1-node-0', 'Failed')],
    pods: [pod('torch1-node-0-0-a', 'Failed'), pod('torch1-node-0-0-b', 'Failed')],
  };

  const never: { name: string; w: World }[] = [
    {
      name: 'Complete, stale JobSet suspended and stopped',
      w: { trainJob: complete(), jobSet: trainerJobSet('torch1'), jobs: [finishedJob('torch1-node-0', 'Complete')] },
    },
    {
      name: 'Complete, stale JobSet not suspended (never suspended for it either)',
      w: { trainJob: complete(), jobSet: running(trainerJobSet('torch1')) },
    },
    {
      name: "Failed with DeadlineExceeded, stale JobSet left (Trainer's own delete failed)",
      w: { trainJob: deadline(), jobSet: trainerJobSet('torch1'), ...finishedChildren },
    },
    {
      name: 'the JobSet is Completed, the TrainJob not marked Complete yet',
      w: {
        trainJob: torch1(2),
        jobSet: jobSetCompleted(trainerJobSet('torch1')),
        jobs: [finishedJob('torch1-node-0', 'Complete')],
      },
    },
  ];
  for (const mode of ['companion', 'standalone'] as const) {
    for (const row of never) {
      it(`${mode}: ${row.name}: Blocked with the reason, never deleted, suspended or applied`, () => {
        const { decision } = run({ ...row.w, mode });
        assert.equal(decision.kind === 'act' && decision.outcome, 'blocked');
        for (const k of ['delete-jobset', 'suspend-jobset', 'apply-jobset', 'release-pvc'])
          assert.ok(!kinds(decision).includes(k as Step['kind']), `${k} in ${kinds(decision)}`);
        const report = stepOf(decision, 'report')?.report;
        assert.equal(report?.state, 'Blocked');
        assert.deepEqual(report?.parallelism, { from: 1, to: 2 });
        assert.match(
          report?.reason ?? '',
          /never .* a deleted JobSet would never come back; JobSet torch1 is kept with the old node count; to train with 2 nodes, create a new TrainJob/,
        );
        assert.deepEqual(
          [stepOf(decision, 'event')?.event.type, stepOf(decision, 'event')?.event.reason],
          ['Warning', 'JobSetRebuildBlocked'],
        );
        assert.equal(
          decision.kind === 'act' && decision.requeueAfterMs,
          undefined,
          'only a change of the TrainJob can change this',
        );
        // Reported once: the next look finds the same report and writes nothing.
        const again = run({ ...row.w, mode, trainJob: withReport(structuredClone(row.w.trainJob), report!) });
        assert.deepEqual(kinds(again.decision), []);
      });
    }
  }

  it('the reasons name what finished the TrainJob', () => {
    const reason = (w: World) => stepOf(run(w).decision, 'report')?.report?.reason ?? '';
    assert.match(reason(never[0].w), /^the TrainJob is Complete: Trainer v2\.3\.0 never reconciles it again/);
    assert.match(reason(never[2].w), /^the TrainJob failed with DeadlineExceeded/);
    assert.match(reason(never[3].w), /^its JobSet torch1 is Completed/);
    assert.match(reason({ ...never[0].w, mode: 'standalone' }), /it is never built again/);
  });

  it('a Failed condition that is not True, or a Complete one that is False, does not finish it', () => {
    const { decision } = run({
      trainJob: withStatus(torch1(2), cond('Complete', 'r', 'False'), cond('Failed', 'DeadlineExceeded', 'False')),
      jobSet: trainerJobSet('torch1'),
      jobs: [job('torch1-node-0')],
    });
    assert.deepEqual(kinds(decision), ['report', 'delete-jobset', 'event']);
  });

  for (const mode of ['companion', 'standalone'] as const) {
    it(`${mode}: Failed for another reason (Trainer reconciles it again): rebuilt like any job, its finished Jobs and Failed pods running nothing`, () => {
      const { decision } = run({ mode, trainJob: failed(), jobSet: trainerJobSet('torch1'), ...finishedChildren });
      assert.equal(decision.kind === 'act' && decision.outcome, 'deleted');
      assert.deepEqual(kinds(decision), ['report', 'delete-jobset', 'event']);
    });
  }

  // Trainer's main line keeps every Failed (kubeflow/trainer#3891): the JobSet of a Failed
  // TrainJob is never built again there, so it is kept; so under an unknown line.
  for (const trainer of ['main-8c0f5059', 'unknown'] as const) {
    it(`companion under ${trainer}: Failed for another reason: Blocked, the JobSet kept (never deleted, suspended or applied)`, () => {
      const { decision } = run({ trainer, trainJob: failed(), jobSet: trainerJobSet('torch1'), ...finishedChildren });
      assert.equal(decision.kind === 'act' && decision.outcome, 'blocked');
      assert.deepEqual(kinds(decision), ['report', 'event']);
      const report = stepOf(decision, 'report')?.report;
      assert.equal(report?.state, 'Blocked');
      assert.match(
        report?.reason ?? '',
        trainer === 'unknown'
          ? /^the TrainJob is Failed \(FailedJobs\), which is final under an unknown Trainer version: an unknown Trainer version never reconciles it again/
          : /^the TrainJob is Failed \(FailedJobs\), which is final under Trainer's main line at 8c0f5059 .* never reconciles it again, so a deleted JobSet would never come back/,
      );
    });
  }
  it('a JobSet deleted for a rebuild of a job that is then finished for good (Failed, Trainer upgraded to main mid-rebuild): Blocked, not Rebuilding forever', () => {
    const rebuilding: RebuildReport = { state: 'Rebuilding', numNodes: 2, parallelism: { from: 1, to: 2 } };
    for (const mode of ['companion', 'standalone'] as const) {
      const { decision } = run({ mode, trainer: 'main-8c0f5059', trainJob: withReport(failed(), rebuilding) });
      assert.equal(decision.kind === 'act' && decision.outcome, 'blocked', mode);
      const report = stepOf(decision, 'report')?.report;
      assert.equal(report?.state, 'Blocked');
      assert.equal(report?.numNodes, 2);
      assert.match(
        report?.reason ?? '',
        /^the TrainJob is Failed \(FailedJobs\), which is final under .*: .* never reconciles it again, and its JobSet was already deleted for the rebuild, so none comes back; to train again, create a new TrainJob$/,
      );
      // Once said, not said again.
      const again = run({ mode, trainer: 'main-8c0f5059', trainJob: withReport(failed(), report!) });
      assert.deepEqual(kinds(again.decision), [], mode);
    }
    // Where Trainer builds a Failed job again (v2.3.0), the rebuild goes on: Trainer re-creates the JobSet.
    const v230 = run({ trainJob: withReport(failed(), rebuilding) });
    assert.equal(v230.decision.kind === 'act' && v230.decision.outcome, 'no-jobset');
    // Finished without a rebuild under way: nothing to say.
    assert.deepEqual(kinds(run({ trainer: 'main-8c0f5059', trainJob: failed() }).decision), []);
  });

  it('v2.2.1 rebuilds a Failed job as v2.3.0 does (both drop a Failed that is not DeadlineExceeded)', () => {
    const { decision } = run({
      trainer: 'v2.2.1',
      trainJob: failed(),
      jobSet: trainerJobSet('torch1'),
      ...finishedChildren,
    });
    assert.deepEqual(kinds(decision), ['report', 'delete-jobset', 'event']);
  });

  it('standalone: a finished TrainJob without a JobSet gets none (Complete, TTL-deleted; deadline, deleted by Trainer)', () => {
    for (const tj of [complete(), deadline()]) {
      const { decision } = run({ mode: 'standalone', trainJob: tj });
      assert.equal(decision.kind === 'act' && decision.outcome, 'finished');
      assert.deepEqual(kinds(decision), []);
    }
    assert.deepEqual(kinds(run({ mode: 'standalone', trainJob: failed() }).decision), ['apply-jobset', 'apply-status']);
  });

  it("standalone: a finished TrainJob's current JobSet is not re-applied", () => {
    const tj = withStatus(torch1(1), cond('Suspended', 'Suspended'), cond('Complete', 'AllJobsCompleted'));
    const { decision } = run({ mode: 'standalone', trainJob: tj, jobSet: jobSetCompleted(trainerJobSet('torch1')) });
    assert.ok(!kinds(decision).includes('apply-jobset'), JSON.stringify(kinds(decision)));
  });

  it('companion: a finished TrainJob whose JobSet is current: nothing to do', () => {
    const { decision } = run({
      trainJob: withStatus(torch1(1), cond('Complete', 'AllJobsCompleted')),
      jobSet: trainerJobSet('torch1'),
    });
    assert.deepEqual(kinds(decision), []);
  });
});

// Issue 8: a negative numNodes stored before the webhook (or under the v2.3.0 CRD, no minimum).
describe('decide: a negative numNodes', () => {
  for (const mode of ['companion', 'standalone'] as const) {
    for (const jobSet of [trainerJobSet('torch1'), undefined]) {
      it(`${mode}, ${jobSet ? 'with its JobSet' : 'no JobSet'}: reported with the value and what to do; nothing built, deleted or suspended, nothing read`, () => {
        const { decision, needs } = run({ mode, trainJob: torch1(-1), jobSet, jobs: [job('torch1-node-0')] });
        assert.deepEqual(needs, []);
        assert.equal(decision.kind === 'act' && decision.outcome, 'unsupported');
        for (const k of ['delete-jobset', 'suspend-jobset', 'apply-jobset'])
          assert.ok(!kinds(decision).includes(k as Step['kind']));
        const reason = stepOf(decision, 'report')?.report?.reason ?? '';
        assert.equal(
          reason,
          'spec.trainer.numNodes is -1: a negative node count cannot be built, so the JobSet is neither rebuilt nor created; set numNodes to 0 or more',
        );
        assert.deepEqual(
          [stepOf(decision, 'event')?.event.type, stepOf(decision, 'event')?.event.reason],
          ['Warning', 'JobSetNotReconciled'],
        );
        if (mode === 'standalone') {
          const c = stepOf(decision, 'apply-status')?.conditions.find((x) => x.type === 'JobSetCreated');
          assert.deepEqual([c?.status, c?.reason, c?.message], ['False', 'InvalidNumNodes', reason]);
        }
      });
    }
  }

  it('0 is a count like any other (a torch job completes at once on resume)', () => {
    assert.ok(
      kinds(
        run({ trainJob: torch1(0), jobSet: trainerJobSet('torch1'), jobs: [job('torch1-node-0')] }).decision,
      ).includes('delete-jobset'),
    );
  });
});

// Standalone mode builds Trainer v2.3.0's JobSets, which main@8c0f5059 builds the same for its
// runtimes (src/api/trainer-line.ts); under v2.2.1 (which builds differently) or an unknown line
// it builds nothing and says why.
describe('decide: standalone mode per Trainer line', () => {
  it('v2.3.0 and main: the same JobSet applied for a new TrainJob', () => {
    const built = (['v2.3.0', 'main-8c0f5059'] as const).map(
      (trainer) => stepOf(run({ mode: 'standalone', trainer, trainJob: torch1(2) }).decision, 'apply-jobset')?.jobSet,
    );
    assert.ok(built[0]);
    assert.deepEqual(built[1], built[0]);
  });
  for (const trainer of ['v2.2.1', 'unknown'] as const) {
    it(`${trainer}: nothing applied, the TrainJob's condition and the report say why`, () => {
      const { decision } = run({ mode: 'standalone', trainer, trainJob: torch1(2) });
      assert.equal(decision.kind === 'act' && decision.outcome, 'unsupported');
      assert.ok(!kinds(decision).includes('apply-jobset'));
      const report = stepOf(decision, 'report')?.report;
      assert.equal(report?.state, 'Unsupported');
      assert.match(
        report?.reason ?? '',
        /standalone mode the reconciler builds the JobSet itself as Trainer v2\.3\.0 and main@8c0f5059 build it/,
      );
      assert.match(
        report?.reason ?? '',
        trainer === 'v2.2.1' ? /Trainer v2\.2\.1 builds it differently/ : /not known to be the same/,
      );
      const status = stepOf(decision, 'apply-status');
      assert.ok(status?.conditions.some((c) => c.status === 'False' && /companion mode/.test(c.message ?? '')));
    });
  }
  it('v2.2.1: a stale JobSet is kept and reported Blocked (its rebuild would need a build)', () => {
    const { decision } = run({ mode: 'standalone', trainer: 'v2.2.1', ...stale2(), jobs: [job('torch1-node-0')] });
    assert.ok(!kinds(decision).includes('delete-jobset'));
    assert.ok(!kinds(decision).includes('apply-jobset'));
  });
});
