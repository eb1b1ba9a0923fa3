// A JobSet the installed Trainer can no longer apply (refused-apply.ts, and its place in decide()):
// which refusals name an immutable part, which resume they explain, and what the reconciler then
// does (and must never do: delete a running job's JobSet, act on a refusal a rebuild does not
// cure, or rebuild twice for one resume). Refusal notes are the forms Trainer records
// ("TrainJob resources reconciliation failed: " + the apply's error, cut after 950 characters).
import assert from 'node:assert/strict';
import { TRAINER_LINES } from '../../src/api/trainer-line.ts';
import { describe, it } from 'node:test';
import { decide, RETRY } from '../../src/rebuild/decide.ts';
import type { Decision, Need, Observation } from '../../src/rebuild/decision.ts';
import type { Job, JobSet, Pod, TrainJob } from '../../src/api/objects.ts';
import {
  immutablePartsRefused,
  judgeRefusedResume,
  refusalOfResume,
  refusalsFromEvents,
  type TrainerRefusal,
} from '../../src/rebuild/refused-apply.ts';
import { encodeReport, eventFor, type RebuildReport } from '../../src/rebuild/report.ts';
import { job, pod, trainJob, trainerJobSet, upstreamRuntime } from './fixtures.ts';

const REPORT = 'trainjob-webhook.kubeflow.org/jobset-rebuild';
const SEEN = 'trainjob-webhook.kubeflow.org/trainer-refusal-seen';
const PREFIX = 'TrainJob resources reconciliation failed: ';
const cut = (s: string) => (s.length > 950 ? `${s.slice(0, 950)} ...` : s);
const hugeJson = JSON.stringify([{ name: 'launcher', replicas: 1, template: { spec: { x: 'y'.repeat(2000) } } }]);
/** JobSet v0.12.0's webhook (apierrors.NewInvalid), as the API server relays it. */
const V012_REPLICATED = cut(
  `${PREFIX}admission webhook "vjobset.kb.io" denied the request: JobSet.jobset.x-k8s.io "mpi" is invalid: spec.replicatedJobs: Invalid value: ${hugeJson}: field is immutable`,
);
/** JobSet v0.11.1's webhook (an aggregate of field errors, no kind in front). */
const V011_REPLICATED = cut(
  `${PREFIX}admission webhook "vjobset.kb.io" denied the request: spec.replicatedJobs: Invalid value: ${hugeJson}: field is immutable`,
);
const CEL_SUCCESS = `${PREFIX}JobSet.jobset.x-k8s.io "mpi" is invalid: spec.successPolicy: Invalid value: "object": Value is immutable`;
const CLAIMS = `${PREFIX}JobSet.jobset.x-k8s.io "mpi" is invalid: spec.volumeClaimPolicies: Invalid value: "array": Value is immutable`;
const OUTAGE = `${PREFIX}Internal error occurred: failed calling webhook "vjobset.kb.io": failed to call webhook: Post "https://jobset-webhook-service.kubeflow-system.svc:443/validate-jobset-x-k8s-io-v1alpha2-jobset?timeout=10s": dial tcp 10.96.0.10:443: connect: connection refused`;
const SECRET = `${PREFIX}Secret "mpi-mpi-ssh-auth" is invalid: data: Forbidden: field is immutable when \`immutable\` is set`;

describe('immutablePartsRefused: the JobSet parts a refusal names', () => {
  const rows: [string, string, string[]][] = [
    ['v0.12.0 webhook, replicatedJobs, cut before "field is immutable"', V012_REPLICATED, ['spec.replicatedJobs']],
    ['v0.11.1 webhook, replicatedJobs', V011_REPLICATED, ['spec.replicatedJobs']],
    ['a CEL immutable part (successPolicy)', CEL_SUCCESS, ['spec.successPolicy']],
    [
      "a replicated job's dependsOn (CEL), with managedBy (webhook)",
      `${PREFIX}JobSet.jobset.x-k8s.io "x" is invalid: [spec.replicatedJobs[1].dependsOn: Invalid value: "array": Value is immutable, spec.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable]`,
      ['spec.replicatedJobs[1].dependsOn', 'spec.managedBy'],
    ],
    ['workspace claims: not a part a rebuild cures', CLAIMS, []],
    ["JobSet's webhook not answering", OUTAGE, []],
    ["the MPI SSH Secret (not the JobSet's)", SECRET, []],
    [
      'a parallelism the elastic check refuses (an indexed path, Forbidden)',
      `${PREFIX}JobSet.jobset.x-k8s.io "x" is invalid: spec.replicatedJobs[0].template.spec: Forbidden: Cannot mutate parallelism or completions when JobSet is in a terminal state (Completed or Failed)`,
      [],
    ],
    ['a path that only ends like one', `${PREFIX}jobset: xspec.replicatedJobs: Invalid value: [1]`, []],
  ];
  for (const [what, message, want] of rows) it(what, () => assert.deepEqual(immutablePartsRefused(message), want));
});

const NOW = '2026-11-30T00:00:10Z';
const RESUMED = '2026-11-30T00:00:05Z';
const CREATED = '2026-11-29T23:00:00Z';

function resumedMpi(
  over: { resumed?: string | null; suspend?: boolean; report?: RebuildReport; seen?: string } = {},
): TrainJob {
  const t = trainJob('mpi', { suspend: over.suspend ?? false, trainer: { numNodes: 1 } }, 'deepspeed-distributed');
  if (over.resumed !== null)
    t.status = {
      conditions: [
        {
          type: 'Suspended',
          status: 'False',
          reason: 'Resumed',
          message: 'TrainJob is resumed',
          lastTransitionTime: over.resumed ?? RESUMED,
        },
      ],
    };
  if (over.report) t.metadata.annotations = { [REPORT]: encodeReport(over.report) };
  if (over.seen !== undefined) t.metadata.annotations = { ...t.metadata.annotations, [SEEN]: over.seen };
  return t;
}

function suspendedJobSet(over: (js: JobSet) => void = () => {}): JobSet {
  const js = trainerJobSet('mpi');
  js.spec = { ...js.spec, suspend: true };
  js.metadata.creationTimestamp = CREATED;
  over(js);
  return js;
}

const refusal = (message: string, at = '2026-11-30T00:00:05.2Z', created = '2026-11-30T00:00:05Z'): TrainerRefusal => ({
  at,
  created,
  message,
});

describe('refusalOfResume: the refusal that explains this resume of this JobSet', () => {
  const js = suspendedJobSet();
  const resumedMs = Date.parse(RESUMED);
  it('the latest one recorded at or after the resume', () => {
    const a = refusal(V012_REPLICATED, '2026-11-30T00:00:05.1Z');
    const b = refusal(OUTAGE, '2026-11-30T00:00:06Z', '2026-11-30T00:00:06Z');
    assert.equal(refusalOfResume([b, a], resumedMs, js), b);
  });
  it('one from before the resume (while suspended) explains nothing of it', () => {
    assert.equal(refusalOfResume([refusal(V012_REPLICATED, '2026-11-30T00:00:04.9Z')], resumedMs, js), undefined);
  });
  it('one stored in the second this JobSet was created (or before) may be of the JobSet it replaced', () => {
    const young = suspendedJobSet((j) => (j.metadata.creationTimestamp = '2026-11-30T00:00:05Z'));
    assert.equal(refusalOfResume([refusal(V012_REPLICATED)], resumedMs, young), undefined);
    assert.ok(refusalOfResume([refusal(V012_REPLICATED, undefined, '2026-11-30T00:00:06Z')], resumedMs, young));
  });
  it('a JobSet without a readable creation time: none', () => {
    const odd = suspendedJobSet((j) => (j.metadata.creationTimestamp = 'yesterday'));
    assert.equal(refusalOfResume([refusal(V012_REPLICATED)], resumedMs, odd), undefined);
  });
  it('a creation time read as a Date (client-node) counts as its string', () => {
    const dated = suspendedJobSet((j) => (j.metadata.creationTimestamp = new Date(CREATED)));
    assert.ok(refusalOfResume([refusal(V012_REPLICATED)], resumedMs, dated));
  });
});

describe('judgeRefusedResume: the gates, then the verdict', () => {
  const base = {
    trainJob: resumedMpi(),
    jobSet: suspendedJobSet(),
    previous: undefined,
    refusals: [refusal(V012_REPLICATED)],
    nowMs: Date.parse(NOW),
    graceMs: RETRY.pauseGraceMs,
  };
  const rows: [string, Partial<typeof base>, string][] = [
    [
      'a suspended TrainJob: not this case (its refused apply harms nothing)',
      { trainJob: resumedMpi({ suspend: true }) },
      'no',
    ],
    ['a running JobSet: never', { jobSet: suspendedJobSet((j) => (j.spec!.suspend = false)) }, 'no'],
    [
      'a JobSet with workspace claims: left to the pause and resume by patch',
      { jobSet: suspendedJobSet((j) => (j.spec!.volumeClaimPolicies = [{ templates: [] }])) },
      'no',
    ],
    ['Trainer has not seen the resume yet (no Suspended=False)', { trainJob: resumedMpi({ resumed: null }) }, 'no'],
    ['resumed 1 s ago: Trainer gets its grace', { trainJob: resumedMpi({ resumed: '2026-11-30T00:00:09Z' }) }, 'wait'],
    ['past the grace, refusals not read yet', { refusals: undefined }, 'need'],
    ['no refusal of this resume', { refusals: [] }, 'unexplained'],
    ["JobSet's webhook does not answer: no rebuild", { refusals: [refusal(OUTAGE)] }, 'unexplained'],
    ['an immutable part refused: rebuild', {}, 'rebuild'],
  ];
  for (const [what, over, want] of rows)
    it(what, () => assert.equal(judgeRefusedResume({ ...base, ...over }).kind, want));

  it('the rebuild report names the part and the resume', () => {
    const j = judgeRefusedResume(base);
    assert.equal(j.kind, 'rebuild');
    if (j.kind !== 'rebuild') return;
    assert.equal(j.report.resumedAt, RESUMED);
    assert.match(
      j.report.reason ?? '',
      /no longer apply JobSet mpi: JobSet refuses the change of its immutable spec\.replicatedJobs/,
    );
  });

  it('the JobSet Trainer re-created after a rebuild for this same resume is refused too: never again', () => {
    const previous: RebuildReport = { state: 'Rebuilt', replacedJobSetUID: 'old-uid', resumedAt: RESUMED };
    assert.equal(judgeRefusedResume({ ...base, previous }).kind, 'again');
    // Another resume (suspended and resumed since), or the rebuild not done yet (same uid): rebuilt.
    assert.equal(
      judgeRefusedResume({ ...base, previous: { ...previous, resumedAt: '2026-11-01T00:00:00Z' } }).kind,
      'rebuild',
    );
    const js = base.jobSet;
    assert.equal(
      judgeRefusedResume({
        ...base,
        previous: { ...previous, state: 'Rebuilding', replacedJobSetUID: js.metadata.uid },
      }).kind,
      'rebuild',
    );
  });
});

describe('refusalsFromEvents: Trainer Events as listed, checked', () => {
  it('the core view of an events.k8s.io Event (eventTime; Dates from client-node), malformed ones skipped', () => {
    const got = refusalsFromEvents([
      {
        reason: 'TrainJobResourcesCreationFailed',
        message: V012_REPLICATED,
        eventTime: new Date('2026-11-30T00:00:05.200Z'),
        metadata: { creationTimestamp: new Date('2026-11-30T00:00:05Z') },
      },
      {
        reason: 'TrainJobResourcesCreationFailed',
        message: 'x',
        metadata: { creationTimestamp: '2026-11-30T00:00:01Z' },
      },
      { reason: 'Other', message: 'x', metadata: { creationTimestamp: '2026-11-30T00:00:01Z' } },
      {
        reason: 'TrainJobResourcesCreationFailed',
        message: 7,
        metadata: { creationTimestamp: '2026-11-30T00:00:01Z' },
      },
      { reason: 'TrainJobResourcesCreationFailed', message: 'x', metadata: { creationTimestamp: 'soon' } },
      null,
      'event',
    ]);
    assert.deepEqual(got, [
      { at: '2026-11-30T00:00:05.200Z', created: '2026-11-30T00:00:05.000Z', message: V012_REPLICATED },
      { at: '2026-11-30T00:00:01Z', created: '2026-11-30T00:00:01Z', message: 'x' },
    ]);
  });
});

/** decide() as the orchestrator runs it, answering each need. */
function run(w: { trainJob: TrainJob; jobSet: JobSet; refusals?: TrainerRefusal[]; jobs?: Job[]; pods?: Pod[] }): {
  decision: Decision;
  needs: Need[];
} {
  const o: Observation = {
    mode: 'companion',
    trainer: TRAINER_LINES['v2.3.0'],
    trainJob: w.trainJob,
    jobSet: w.jobSet,
    now: NOW,
  };
  const needs: Need[] = [];
  for (;;) {
    const d = decide(o);
    if (d.kind !== 'need') return { decision: d, needs };
    assert.ok(!needs.includes(d.what), `decide() asked twice for ${d.what}`);
    needs.push(d.what);
    if (d.what === 'runtime') o.runtime = { found: true, runtime: upstreamRuntime('deepspeed') };
    if (d.what === 'trainer-refusals') o.trainerRefusals = w.refusals ?? [refusal(V012_REPLICATED)];
    if (d.what === 'cached-jobs') o.cachedJobs = w.jobs ?? [job('mpi-node-0')];
    if (d.what === 'children') o.children = { jobs: w.jobs ?? [job('mpi-node-0')], pods: w.pods ?? [] };
    if (d.what === 'pvcs') o.pvcs = [];
    if (d.what === 'retained') o.retained = [];
  }
}
const kinds = (d: Decision) => (d.kind === 'act' ? d.steps.map((s) => s.kind) : []);
const reportOf = (d: Decision) =>
  d.kind === 'act' ? d.steps.find((s) => s.kind === 'report' && s.report)?.['report' as never] : undefined;

describe('decide: a JobSet the installed Trainer can no longer apply, found at the resume', () => {
  it('rebuilt through the stale path: Trainer refusals read once, nothing runs (live read), report Rebuilding with the cause, then the delete with preconditions', () => {
    const js = suspendedJobSet();
    const { decision, needs } = run({ trainJob: resumedMpi(), jobSet: js });
    assert.deepEqual(needs, ['runtime', 'trainer-refusals', 'cached-jobs', 'children', 'pvcs']);
    assert.deepEqual(kinds(decision), ['report', 'delete-jobset', 'event']);
    const del = decision.kind === 'act' ? decision.steps.find((s) => s.kind === 'delete-jobset') : undefined;
    assert.deepEqual(del, {
      kind: 'delete-jobset',
      name: 'mpi',
      uid: js.metadata.uid,
      resourceVersion: js.metadata.resourceVersion ?? '',
    });
    const report = reportOf(decision) as RebuildReport | undefined;
    assert.equal(report?.state, 'Rebuilding');
    assert.equal(report?.resumedAt, RESUMED);
    assert.equal(report?.replacedJobSetUID, js.metadata.uid);
    const ev = decision.kind === 'act' ? decision.steps.find((s) => s.kind === 'event') : undefined;
    assert.match(
      ev && ev.kind === 'event' ? ev.event.message : '',
      /^Deleted JobSet \(uid jobset-uid-mpi\) so that Trainer re-creates it: the installed Trainer can no longer apply/,
    );
  });

  it('a pod still terminating: waits (report says why), nothing deleted', () => {
    const { decision } = run({
      trainJob: resumedMpi(),
      jobSet: suspendedJobSet(),
      pods: [pod('mpi-node-0-0', 'Running', true)],
    });
    assert.equal(decision.kind === 'act' && decision.outcome, 'waiting');
    assert.ok(!kinds(decision).includes('delete-jobset'));
    assert.match(
      (reportOf(decision) as RebuildReport | undefined)?.reason ?? '',
      /no longer apply JobSet mpi.*; something of the JobSet still runs/,
    );
  });

  it("a refusal a rebuild does not cure (JobSet's webhook down): nothing written, looked at again in 30 s", () => {
    const { decision } = run({ trainJob: resumedMpi(), jobSet: suspendedJobSet(), refusals: [refusal(OUTAGE)] });
    assert.deepEqual(kinds(decision), []);
    assert.equal(decision.kind === 'act' && decision.requeueAfterMs, RETRY.blockedMs);
  });

  it('resumed just now: no request, looked at again when the grace ends', () => {
    const { decision, needs } = run({
      trainJob: resumedMpi({ resumed: '2026-11-30T00:00:09Z' }),
      jobSet: suspendedJobSet(),
    });
    assert.ok(!needs.includes('trainer-refusals'));
    assert.deepEqual(kinds(decision), []);
    assert.equal(decision.kind === 'act' && decision.requeueAfterMs, 2_000);
  });

  it('a running JobSet (the TrainJob runs as Trainer left it) is never deleted, whatever Trainer refused', () => {
    const js = suspendedJobSet((j) => (j.spec!.suspend = false));
    const { decision, needs } = run({ trainJob: resumedMpi(), jobSet: js });
    assert.ok(!needs.includes('trainer-refusals'));
    assert.deepEqual(kinds(decision), []);
  });

  it('a finished TrainJob (Complete) is never rebuilt: Trainer never reconciles it again', () => {
    const t = resumedMpi();
    t.status!.conditions!.push({
      type: 'Complete',
      status: 'True',
      reason: 'Completed',
      message: '',
      lastTransitionTime: CREATED,
    });
    const { decision, needs } = run({ trainJob: t, jobSet: suspendedJobSet() });
    assert.ok(!needs.includes('trainer-refusals'));
    assert.ok(!kinds(decision).includes('delete-jobset'));
  });

  it('the re-created JobSet refused again in the same resume: Blocked, once, never deleted', () => {
    const prev: RebuildReport = {
      state: 'Rebuilt',
      numNodes: 1,
      replacedJobSetUID: 'the-old-one',
      resumedAt: RESUMED,
      reason: 'r',
    };
    const { decision } = run({ trainJob: resumedMpi({ report: prev }), jobSet: suspendedJobSet() });
    assert.equal(decision.kind === 'act' && decision.outcome, 'blocked');
    assert.deepEqual(kinds(decision), ['report', 'event']);
    const blocked = reportOf(decision) as RebuildReport | undefined;
    assert.equal(blocked?.state, 'Blocked');
    const again = run({ trainJob: resumedMpi({ report: blocked }), jobSet: suspendedJobSet() }).decision;
    assert.deepEqual(kinds(again), []);
  });

  it('Trainer re-created it: the report turns Rebuilt, its Event names the cause', () => {
    const rebuilding: RebuildReport = {
      state: 'Rebuilding',
      numNodes: 1,
      replicatedJob: 'node',
      parallelism: { from: 1, to: 1 },
      replacedJobSetUID: 'the-old-one',
      resumedAt: RESUMED,
      reason: 'the installed Trainer can no longer apply JobSet mpi',
    };
    const fresh = suspendedJobSet((j) => ((j.spec!.suspend = false), (j.metadata.uid = 'new-uid')));
    const { decision } = run({ trainJob: resumedMpi({ report: rebuilding }), jobSet: fresh });
    assert.equal(decision.kind === 'act' && decision.outcome, 'rebuilt');
    assert.equal((reportOf(decision) as RebuildReport | undefined)?.state, 'Rebuilt');
    assert.match(eventFor({ ...rebuilding, state: 'Rebuilt' }).message, /^JobSet re-created by Trainer/);
  });

  it('a count change still goes the count path (the refusal is not read)', () => {
    const t = resumedMpi();
    t.spec!.trainer!.numNodes = 3;
    const { needs } = run({ trainJob: t, jobSet: suspendedJobSet() });
    assert.ok(!needs.includes('trainer-refusals'));
  });

  it('workspace claims: never this path (their re-creation is refused beside the claims)', () => {
    const js = suspendedJobSet((j) => (j.spec!.volumeClaimPolicies = [{ templates: [] }]));
    const { needs, decision } = run({ trainJob: resumedMpi(), jobSet: js, refusals: [refusal(CLAIMS)] });
    assert.ok(!needs.includes('trainer-refusals'));
    assert.ok(!kinds(decision).includes('delete-jobset'));
  });
});

// Trainer's events/v1 recorder folds later refusals of one TrainJob version into the first one's
// Event (series count and lastObservedTime advance, the note stays the first's): when that note is
// one a rebuild does not cure, a later immutable-part refusal would stay hidden. The reconciler then
// records the fold on the TrainJob (changing its resourceVersion) so that Trainer's next refusal is
// a new Event with its own note; once per fold seen: one write per refusal Trainer folds, never
// one that the sidecar's own write causes.
const FOLD_AT = '2026-11-30T00:00:05.3Z';
const folded = (message: string, over: Partial<TrainerRefusal> = {}): TrainerRefusal => ({
  ...refusal(message),
  event: 'mpi.1875a',
  version: '10',
  series: { count: 2, lastObserved: FOLD_AT },
  ...over,
});
const FOLD = `mpi.1875a/2@${FOLD_AT}`;

describe('judgeRefusedResume: refusals folded behind a note a rebuild does not cure', () => {
  const facts = (refusals: TrainerRefusal[], over: { seen?: string; version?: string } = {}) => {
    const trainJob = resumedMpi({ seen: over.seen });
    if (over.version) trainJob.metadata.resourceVersion = over.version;
    return {
      trainJob,
      jobSet: suspendedJobSet(),
      previous: undefined,
      refusals,
      nowMs: Date.parse(NOW),
      graceMs: RETRY.pauseGraceMs,
    };
  };
  const rows: [string, Parameters<typeof facts>, string, string | undefined][] = [
    ['first note curable, later ones folded: rebuilt on it', [[folded(V012_REPLICATED)]], 'rebuild', undefined],
    [
      'first note not curable, the series advanced, nothing recorded yet: record it',
      [[folded(OUTAGE)]],
      'unexplained',
      FOLD,
    ],
    [
      "first note not curable, the fold of an older Event recorded: record this Event's",
      [[folded(OUTAGE)], { seen: `mpi.0001/2@2026-11-30T00:00:04Z` }],
      'unexplained',
      FOLD,
    ],
    [
      'the series did not advance since it was recorded: nothing more',
      [[folded(OUTAGE)], { seen: FOLD }],
      'unexplained',
      undefined,
    ],
    [
      'the same Event, its series advanced since (its final count written as the series ended): record it',
      [[folded(OUTAGE, { series: { count: 9, lastObserved: '2026-11-30T00:07:00Z' } })], { seen: FOLD }],
      'unexplained',
      'mpi.1875a/9@2026-11-30T00:07:00Z',
    ],
    ['no series (refused once at this version): its note is the latest', [[refusal(OUTAGE)]], 'unexplained', undefined],
    [
      'folded at an older version of the TrainJob: it changed since, so its next refusal is a new Event anyway',
      [[folded(OUTAGE)], { version: '11' }],
      'unexplained',
      undefined,
    ],
    [
      'an Event that names no version: the fold alone bounds the write',
      [[folded(OUTAGE, { version: undefined })]],
      'unexplained',
      FOLD,
    ],
    [
      'a series whose time is unreadable, its count read: recorded by the count',
      [[folded(OUTAGE, { series: { count: 2 } })]],
      'unexplained',
      'mpi.1875a/2@?',
    ],
    [
      'the latest refusal is a new Event (not folded) after a folded one: its note is current',
      [[folded(OUTAGE), refusal(OUTAGE, '2026-11-30T00:00:06Z', '2026-11-30T00:00:06Z')]],
      'unexplained',
      undefined,
    ],
    [
      'a new Event that names an immutable part, after a folded one that did not: rebuilt',
      [[folded(OUTAGE), refusal(V012_REPLICATED, '2026-11-30T00:00:06Z', '2026-11-30T00:00:06Z')], { seen: FOLD }],
      'rebuild',
      undefined,
    ],
  ];
  for (const [what, args, kind, fold] of rows)
    it(what, () => {
      const j = judgeRefusedResume(facts(...args));
      assert.equal(j.kind, kind);
      assert.equal(j.kind === 'unexplained' ? j.recordFold : undefined, fold);
    });

  it("refusals since the resume folded into an Event stored in the JobSet's creation second (not judged: it may be of the JobSet it replaced): the fold is recorded, at the current version only", () => {
    const young = suspendedJobSet((j) => (j.metadata.creationTimestamp = '2026-11-30T00:00:05Z'));
    const judge = (r: TrainerRefusal, seen?: string) => judgeRefusedResume({ ...facts([r], { seen }), jobSet: young });
    const record = (j: ReturnType<typeof judge>) => (j.kind === 'unexplained' ? j.recordFold : j.kind);
    assert.equal(record(judge(folded(OUTAGE))), FOLD);
    assert.equal(record(judge(folded(V012_REPLICATED))), FOLD, 'whatever its note: it is not judged');
    assert.equal(record(judge(folded(OUTAGE), FOLD)), undefined);
    assert.equal(record(judge(folded(OUTAGE, { version: '9' }))), undefined);
    assert.equal(record(judge(refusal(OUTAGE))), undefined);
    // Before the resume: not of it.
    assert.equal(record(judge(folded(OUTAGE, { at: '2026-11-30T00:00:04.9Z' }))), undefined);
  });

  it('the resume is over (the JobSet runs, or the TrainJob is suspended again): a recorded fold is forgotten', () => {
    const running = suspendedJobSet((j) => (j.spec!.suspend = false));
    const base = facts([folded(OUTAGE)], { seen: FOLD });
    assert.deepEqual(judgeRefusedResume({ ...base, jobSet: running }), { kind: 'no', forgetFold: true });
    assert.deepEqual(judgeRefusedResume({ ...base, trainJob: resumedMpi({ suspend: true, seen: FOLD }) }), {
      kind: 'no',
      forgetFold: true,
    });
    assert.deepEqual(judgeRefusedResume({ ...facts([]), jobSet: running }), { kind: 'no' });
    // Trainer has not seen a resume yet: not over, the fold is kept.
    assert.deepEqual(judgeRefusedResume({ ...base, trainJob: resumedMpi({ resumed: null, seen: FOLD }) }), {
      kind: 'no',
    });
  });
});

describe('refusalsFromEvents: a series read defensively', () => {
  const event = (over: Record<string, unknown>) => ({
    reason: 'TrainJobResourcesCreationFailed',
    message: OUTAGE,
    eventTime: '2026-11-30T00:00:05.200000Z',
    metadata: { name: 'mpi.1875a', creationTimestamp: '2026-11-30T00:00:05Z' },
    involvedObject: { kind: 'TrainJob', name: 'mpi', resourceVersion: '10' },
    ...over,
  });
  const rows: [string, Record<string, unknown>, Partial<TrainerRefusal>][] = [
    [
      'the core view, Dates from client-node',
      { series: { count: 2, lastObservedTime: new Date(FOLD_AT) } },
      { series: { count: 2, lastObserved: '2026-11-30T00:00:05.300Z' } },
    ],
    [
      'the events/v1 view (regarding, note, microseconds)',
      {
        involvedObject: undefined,
        message: undefined,
        note: OUTAGE,
        regarding: { resourceVersion: '10' },
        series: { count: 3, lastObservedTime: '2026-11-30T00:00:05.300123Z' },
      },
      { series: { count: 3, lastObserved: '2026-11-30T00:00:05.300123Z' } },
    ],
    ['no series', {}, {}],
    ['series null', { series: null }, {}],
    ['series a string', { series: 'often' }, {}],
    ['series a list', { series: [2, FOLD_AT] }, {}],
    ['neither field readable', { series: { count: '2', lastObservedTime: 'later' } }, {}],
    ['an invalid Date', { series: { count: 2.5, lastObservedTime: new Date('nope') } }, {}],
    [
      'a negative count, a time',
      { series: { count: -1, lastObservedTime: FOLD_AT } },
      { series: { lastObserved: FOLD_AT } },
    ],
    ['a count, no time', { series: { count: 4 } }, { series: { count: 4 } }],
    ['a version that is not a string', { involvedObject: { resourceVersion: 10 } }, { version: undefined }],
    ['involvedObject not an object', { involvedObject: 'mpi' }, { version: undefined }],
    [
      'a name that is not a string',
      { metadata: { name: 7, creationTimestamp: '2026-11-30T00:00:05Z' } },
      { event: undefined },
    ],
  ];
  for (const [what, over, want] of rows)
    it(`${what}: read, and judged without a throw`, () => {
      const got = refusalsFromEvents([event(over)]);
      assert.equal(got.length, 1);
      const expected: TrainerRefusal = {
        at: '2026-11-30T00:00:05.200000Z',
        created: '2026-11-30T00:00:05Z',
        message: OUTAGE,
        event: 'mpi.1875a',
        version: '10',
        ...want,
      };
      for (const k of Object.keys(expected) as (keyof TrainerRefusal)[])
        if (expected[k] === undefined) delete expected[k];
      assert.deepEqual(got[0], expected);
      const j = judgeRefusedResume({
        trainJob: resumedMpi(),
        jobSet: suspendedJobSet(),
        previous: undefined,
        refusals: got,
        nowMs: Date.parse(NOW),
        graceMs: RETRY.pauseGraceMs,
      });
      assert.equal(j.kind, 'unexplained');
    });
});

describe('decide: the fold recorded, once, and what Trainer does next', () => {
  const foldSteps = (d: Decision) => (d.kind === 'act' ? d.steps.filter((s) => s.kind === 'record-refusal-fold') : []);
  /** The TrainJob as the fold's write leaves it: annotated, at a new resourceVersion. */
  const written = (t: TrainJob, fold: string): TrainJob => {
    const next = structuredClone(t);
    next.metadata.annotations = { ...next.metadata.annotations, [SEEN]: fold };
    next.metadata.resourceVersion = String(Number(next.metadata.resourceVersion) + 1);
    return next;
  };

  it('folded behind an outage: the fold recorded (nothing else written), looked at again in 30 s; the reconcile its write causes writes nothing', () => {
    const tj = resumedMpi();
    const first = run({ trainJob: tj, jobSet: suspendedJobSet(), refusals: [folded(OUTAGE)] }).decision;
    assert.deepEqual(foldSteps(first), [{ kind: 'record-refusal-fold', fold: FOLD }]);
    assert.deepEqual(kinds(first), ['record-refusal-fold']);
    assert.equal(first.kind === 'act' && first.requeueAfterMs, RETRY.blockedMs);
    const after = written(tj, FOLD);
    const again = run({ trainJob: after, jobSet: suspendedJobSet(), refusals: [folded(OUTAGE)] }).decision;
    assert.deepEqual(kinds(again), []);
    assert.equal(again.kind === 'act' && again.requeueAfterMs, RETRY.blockedMs);
    // Trainer's next refusal, at the new version, says what the outage hid: rebuilt.
    const next = refusal(V012_REPLICATED, '2026-11-30T00:00:06Z', '2026-11-30T00:00:06Z');
    const rebuilt = run({
      trainJob: after,
      jobSet: suspendedJobSet(),
      refusals: [folded(OUTAGE), { ...next, event: 'mpi.1875b', version: '11' }],
    }).decision;
    assert.ok(kinds(rebuilt).includes('delete-jobset'));
    assert.deepEqual(foldSteps(rebuilt), []);
  });

  it('the outage goes on: one write per new fold, each at the version Trainer refused', () => {
    let tj = resumedMpi();
    const writes: string[] = [];
    let refusals = [folded(OUTAGE)];
    for (let i = 0; i < 3; i++) {
      for (let look = 0; look < 3; look++) {
        const d = run({ trainJob: tj, jobSet: suspendedJobSet(), refusals }).decision;
        for (const s of foldSteps(d)) {
          if (s.kind !== 'record-refusal-fold' || !s.fold) continue;
          writes.push(s.fold);
          tj = written(tj, s.fold);
        }
      }
      // Trainer, at the new version: a new Event, folded again on its next retry.
      const at = `2026-11-30T00:00:0${6 + i}Z`;
      refusals = [
        ...refusals,
        folded(OUTAGE, {
          at,
          created: at,
          event: `mpi.e${i}`,
          version: tj.metadata.resourceVersion,
          series: { count: 2, lastObserved: at },
        }),
      ];
    }
    assert.deepEqual(writes, [FOLD, 'mpi.e0/2@2026-11-30T00:00:06Z', 'mpi.e1/2@2026-11-30T00:00:07Z']);
  });

  it('Trainer applied the resume after all (the JobSet runs): the recorded fold is removed, once', () => {
    const running = suspendedJobSet((j) => (j.spec!.suspend = false));
    const d = run({ trainJob: resumedMpi({ seen: FOLD }), jobSet: running }).decision;
    assert.deepEqual(kinds(d), ['record-refusal-fold']);
    assert.deepEqual(foldSteps(d), [{ kind: 'record-refusal-fold', fold: undefined }]);
    assert.deepEqual(kinds(run({ trainJob: resumedMpi(), jobSet: running }).decision), []);
  });

  it('a fold recorded and the report of a rebuild in the same reconcile: the fold first (its write tests the resourceVersion the apply changes)', () => {
    const rebuilding: RebuildReport = {
      state: 'Rebuilding',
      numNodes: 1,
      replacedJobSetUID: 'the-old-one',
      resumedAt: RESUMED,
      reason: 'the installed Trainer can no longer apply JobSet mpi',
    };
    const d = run({
      trainJob: resumedMpi({ report: rebuilding }),
      jobSet: suspendedJobSet(),
      refusals: [folded(OUTAGE)],
    }).decision;
    assert.deepEqual(kinds(d), ['record-refusal-fold', 'report', 'event']);
  });
});
