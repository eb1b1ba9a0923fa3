// Whether the webhook admits an allowed count change, from what it read (src/scale/scale-admission.ts):
// a table over the reads' outcomes, the reconciler's Lease and the judgment.
import { TRAINER_LINES } from '../../src/api/trainer-line.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RECONCILER_MODE_ANNOTATION } from '../../src/api/names.ts';
import type { JobSet, Runtime } from '../../src/api/objects.ts';
import {
  admitScale,
  leaderOf,
  LEASE_SKEW_MS,
  type LeaseView,
  type Read,
  type ScaleAdmission,
} from '../../src/scale/scale-admission.ts';
import { torch1, trainerJobSet, upstreamRuntime, withCount } from '../rebuild/fixtures.ts';

const NOW = Date.parse('2026-12-01T10:00:00Z');
const lease = (renewedAgoMs: number, holder = 'pod-a_1', mode?: string): LeaseView => ({
  metadata: {
    name: 'trainjob-webhook-reconciler',
    ...(mode ? { annotations: { [RECONCILER_MODE_ANNOTATION]: mode } } : {}),
  },
  spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime: new Date(NOW - renewedAgoMs).toISOString() },
});
const found = <T>(value: T): Read<T> => ({ kind: 'found', value });
const torchRuntime = found<Runtime>(upstreamRuntime('torch'));
const builtFor1 = found<JobSet>(trainerJobSet('torch1'));

function admit(over: Partial<Parameters<typeof admitScale>[0]> = {}): ScaleAdmission {
  return admitScale({
    trainer: TRAINER_LINES['v2.3.0'],
    trainJob: torch1(2),
    jobSet: builtFor1,
    runtime: torchRuntime,
    lease: found(lease(1_000)),
    nowMs: NOW,
    ...over,
  });
}

/**
 * What the facts hold beyond the TrainJob (the runtime's and JobSet's names, the Lease's holders,
 * the reads' errors and the counts below): the general words of a refusal name none of it.
 */
const NOT_IN_GENERAL = [
  /torch-distributed|deepspeed|ClusterTrainingRuntime/,
  /JobSet torch1|JobSet mpi|torch1-|mpi-/,
  /pod-a|\bHTTP\b|timed out|forbidden/,
  /Lease (does|has|was)|renewTime|\d+ s\b/,
  /controller is|Deployment|other-owner/,
  /parallelism \d/,
];
const generalOnly = (a: Extract<ScaleAdmission, { kind: 'refuse' }>) => {
  for (const re of NOT_IN_GENERAL) assert.doesNotMatch(a.general, re, a.general);
};
const isTransient = (a: ScaleAdmission, metric: string, reason: RegExp) => {
  assert.equal(a.kind, 'refuse', JSON.stringify(a));
  if (a.kind !== 'refuse') return;
  assert.equal(a.transient, true);
  assert.equal(a.metric, metric);
  assert.match(a.reason, reason);
  assert.match(a.reason, /refused for now and can be applied again in a few seconds$/);
  assert.match(a.general, /refused for now and can be applied again in a few seconds$/);
  generalOnly(a);
};
const isPermanent = (a: ScaleAdmission, metric: string, reason: RegExp) => {
  assert.equal(a.kind, 'refuse', JSON.stringify(a));
  if (a.kind !== 'refuse') return;
  assert.equal(a.transient, false);
  assert.equal(a.metric, metric);
  assert.match(a.reason, reason);
  // Each says what to do.
  assert.match(a.general, /leave numNodes as it is|restore the runtime|create a new TrainJob|set numNodes/, a.general);
  generalOnly(a);
};

describe('admitScale', () => {
  it('a stale JobSet, a runtime that can be rebuilt and a fresh Lease: admitted', () => {
    assert.equal(admit().kind, 'admit');
  });
  it('no JobSet yet: admitted, whoever leads (it is built with the new count)', () => {
    assert.equal(admit({ jobSet: { kind: 'absent' }, lease: { kind: 'absent' } }).kind, 'admit');
  });
  it('back to the count the JobSet was built with: admitted even with no reconciler, and a Lease that cannot be read', () => {
    assert.equal(admit({ trainJob: torch1(1), lease: { kind: 'absent' } }).kind, 'admit');
    assert.equal(admit({ trainJob: torch1(1), lease: { kind: 'failed', error: 'HTTP 403' } }).kind, 'admit');
  });
  it('the JobSet read failed: transient', () => {
    isTransient(
      admit({ jobSet: { kind: 'failed', error: 'timed out after 2000 ms' } }),
      'read-failed',
      /JobSet torch1 could not be read \(timed out/,
    );
  });
  it('the runtime read failed: transient', () => {
    isTransient(
      admit({ runtime: { kind: 'failed', error: 'HTTP 500' } }),
      'read-failed',
      /the runtime could not be read \(HTTP 500\)/,
    );
  });
  it('the runtime does not exist: refused for good, with the way out', () => {
    isPermanent(
      admit({ runtime: { kind: 'absent' } }),
      'no-runtime',
      /ClusterTrainingRuntime torch-distributed does not exist.*restore the runtime, or set numNodes back/,
    );
  });
  it('a JobSet that cannot be judged (no count-bearing job): refused for good', () => {
    const bare = found<JobSet>({ ...trainerJobSet('torch1'), spec: { replicatedJobs: [] } });
    isPermanent(admit({ jobSet: bare }), 'unjudgeable', /cannot be judged .* has no replicated job labelled/);
  });
  it('a change the judgment refuses is refused for good, before the Lease is looked at', () => {
    const gang = found<Runtime>({
      ...upstreamRuntime('torch'),
      spec: { ...upstreamRuntime('torch').spec, podGroupPolicy: { kai: {} } },
    });
    isPermanent(
      admit({ runtime: gang, lease: { kind: 'absent' } }),
      'cannot-rebuild',
      /gang-scheduled.*create a new TrainJob with numNodes 2/,
    );
  });
  it('no Lease: transient, no reconciler has started', () => {
    isTransient(
      admit({ lease: { kind: 'absent' } }),
      'no-reconciler',
      /no reconciler leads .* its Lease does not exist/,
    );
  });
  it('a released Lease (no holder): transient', () => {
    isTransient(admit({ lease: found(lease(1_000, '')) }), 'no-reconciler', /its Lease has no holder/);
  });
  it('an expired Lease: transient, says when it was last renewed', () => {
    isTransient(
      admit({ lease: found(lease(60_000)) }),
      'no-reconciler',
      /last renewed 60 s ago by pod-a_1 \(it expires after 15 s\)/,
    );
  });
  it('a Lease renewed within its duration plus the skew slack is fresh; one past it is not', () => {
    assert.equal(leaderOf(lease(15_000 + LEASE_SKEW_MS - 1), NOW).leading, true);
    assert.equal(leaderOf(lease(15_000 + LEASE_SKEW_MS + 1), NOW).leading, false);
    // A reconciler whose clock runs ahead of ours.
    assert.equal(leaderOf(lease(-3_000), NOW).leading, true);
  });
  it('a Lease without renewTime or duration is no leader', () => {
    assert.equal(leaderOf({ spec: { holderIdentity: 'x' } }, NOW).leading, false);
    assert.equal(
      leaderOf({ spec: { holderIdentity: 'x', renewTime: 'garbage', leaseDurationSeconds: 15 } }, NOW).leading,
      false,
    );
  });
  it('the Lease read failed: transient', () => {
    isTransient(
      admit({ lease: { kind: 'failed', error: 'HTTP 403: forbidden' } }),
      'read-failed',
      /Lease could not be read \(HTTP 403: forbidden\)/,
    );
  });
  it('back to the built count is admitted without the runtime too: gone, unreadable, or one that cannot be judged', () => {
    assert.equal(admit({ trainJob: torch1(1), runtime: { kind: 'absent' } }).kind, 'admit');
    assert.equal(admit({ trainJob: torch1(1), runtime: { kind: 'failed', error: 'HTTP 500' } }).kind, 'admit');
    const paddle = found<Runtime>({
      ...upstreamRuntime('torch'),
      spec: { ...upstreamRuntime('torch').spec, mlPolicy: { paddle: {} } },
    });
    assert.equal(admit({ trainJob: torch1(1), runtime: paddle, lease: { kind: 'absent' } }).kind, 'admit');
    assert.equal(admit({ trainJob: torch1(2), runtime: { kind: 'absent' } }).kind, 'refuse');
  });
  it('a JobSet this TrainJob does not control: refused for good (the reconciler leaves it alone)', () => {
    const foreign = trainerJobSet('torch1');
    foreign.metadata.ownerReferences = [];
    isPermanent(
      admit({ jobSet: found(foreign) }),
      'not-ours',
      /is not controlled by this TrainJob \(its controller is none\)/,
    );
  });
  it('a renewTime far ahead of our clock is no leader (clock skew), with the reason', () => {
    const ahead = leaderOf(lease(-(15_000 + LEASE_SKEW_MS + 60_000)), NOW);
    assert.equal(ahead.leading, false);
    if (!ahead.leading) assert.match(ahead.why, /renewTime lies 80 s ahead of this webhook's clock/);
  });
  it('an expired Lease still tells the mode: a standalone MPI change is refused for good, not for now', () => {
    const mpi = {
      trainJob: { ...torch1(3), spec: { ...torch1(3).spec, runtimeRef: { name: 'deepspeed-distributed' } } },
      runtime: found(upstreamRuntime('deepspeed')),
      jobSet: found(trainerJobSet('mpi')),
    };
    mpi.trainJob.metadata.uid = trainerJobSet('mpi').metadata.ownerReferences?.[0]?.uid;
    isPermanent(
      admit({ ...mpi, lease: found(lease(120_000, 'a', 'standalone')) }),
      'cannot-rebuild',
      /standalone mode/,
    );
  });
  it('not checked (--no-reconciler-check): admitted on the judgment alone', () => {
    assert.equal(admit({ lease: 'unchecked' }).kind, 'admit');
  });
  it("the leader's mode decides: an MPI job in standalone mode is refused, in companion mode admitted", () => {
    const mpi = {
      trainJob: { ...torch1(2), spec: { ...torch1(2).spec, runtimeRef: { name: 'deepspeed-distributed' } } },
      runtime: found(upstreamRuntime('deepspeed')),
      jobSet: found(trainerJobSet('mpi')),
    };
    mpi.trainJob.spec.trainer = { numNodes: 3 };
    mpi.trainJob.metadata.uid = trainerJobSet('mpi').metadata.ownerReferences?.[0]?.uid;
    assert.equal(admit({ ...mpi, lease: found(lease(1_000, 'a', 'companion')) }).kind, 'admit');
    isPermanent(admit({ ...mpi, lease: found(lease(1_000, 'a', 'standalone')) }), 'cannot-rebuild', /standalone mode/);
  });
});

describe('admitScale: an MPI JobSet is "built with this count" only as the runtime says', () => {
  // DeepSpeed runs its launcher as a node: numNodes 3 puts 2 on the `node` job, numNodes 2 puts 1.
  const builtFor3 = found<JobSet>(withCount(trainerJobSet('mpi'), 'node', 2));
  const deepspeed = upstreamRuntime('deepspeed');
  const asNode = (on: boolean) =>
    found<Runtime>({
      ...deepspeed,
      spec: {
        ...deepspeed.spec,
        mlPolicy: { ...deepspeed.spec.mlPolicy, mpi: { ...deepspeed.spec.mlPolicy?.mpi, runLauncherAsNode: on } },
      },
    });
  const mpiJob = (numNodes: number) => {
    const t = torch1(numNodes);
    t.metadata.name = 'mpi';
    t.metadata.uid = 'trainjob-uid-mpi';
    t.spec = { ...t.spec, runtimeRef: { name: 'deepspeed-distributed' } };
    return t;
  };
  const mpi = (numNodes: number, over: Partial<Parameters<typeof admitScale>[0]> = {}) =>
    admit({ trainJob: mpiJob(numNodes), jobSet: builtFor3, lease: { kind: 'absent' }, ...over });
  // A paddle policy: a runtime found whose staleness is unknown (a policy Trainer v2.3.0 has not).
  const unjudgeable = found<Runtime>({ ...deepspeed, spec: { ...deepspeed.spec, mlPolicy: { paddle: {} } } });

  it('runtime unreadable: a change to 2 (node parallelism 2 = numNodes without runLauncherAsNode) is refused for now, not admitted unjudged', () => {
    isTransient(
      mpi(2, { runtime: { kind: 'failed', error: 'HTTP 500' } }),
      'read-failed',
      /the runtime could not be read \(HTTP 500\); JobSet mpi has a node job of parallelism 2, which Trainer builds for numNodes 3 with the runtime's runLauncherAsNode on and for 2 with it off, so without the runtime numNodes 2 cannot be told apart from a change \(a revert included\)/,
    );
  });
  it('runtime unreadable: the revert to 3 cannot be told from a change either: refused for now', () => {
    isTransient(
      mpi(3, { runtime: { kind: 'failed', error: 'HTTP 500' } }),
      'read-failed',
      /for numNodes 3 with the runtime's runLauncherAsNode on and for 2 with it off, so without the runtime numNodes 3 cannot be told/,
    );
  });
  it('runtime gone: both the change to 2 and the revert to 3 are refused for now, naming the runtime', () => {
    for (const n of [2, 3])
      isTransient(
        mpi(n, { runtime: { kind: 'absent' } }),
        'no-runtime',
        /the runtime ClusterTrainingRuntime deepspeed-distributed does not exist; .*cannot be told apart from a change.*; restore the runtime/,
      );
  });
  it('runtime gone and a count neither reading gives: refused for good, and says a revert waits for the runtime too', () => {
    isPermanent(
      mpi(5, { runtime: { kind: 'absent' } }),
      'no-runtime',
      /or set numNodes back \(if it runs, with "suspend": true in the same update, then resume it; for an MPI JobSet, a revert to 2 or more waits for the runtime too/,
    );
  });
  it('numNodes 1 on a node job of 1: both readings agree, so the revert is admitted without the runtime', () => {
    const builtFor1 = found<JobSet>(trainerJobSet('mpi'));
    assert.equal(mpi(1, { jobSet: builtFor1, runtime: { kind: 'absent' } }).kind, 'admit');
    assert.equal(mpi(1, { jobSet: builtFor1, runtime: { kind: 'failed', error: 'HTTP 500' } }).kind, 'admit');
  });
  it('a runtime found whose policy cannot be judged: a change to 2 is refused for good, not admitted unjudged', () => {
    isPermanent(mpi(2, { runtime: unjudgeable }), 'unjudgeable', /cannot be judged \(ML policy "paddle"/);
  });
  it('with the runtime, its runLauncherAsNode decides: on, 3 is the built count and 2 a change; off, the reverse', () => {
    assert.deepEqual(mpi(3, { runtime: asNode(true) }), {
      kind: 'admit',
      note: 'JobSet mpi already has this count: nothing is rebuilt',
    });
    // A change: judged, then needs a leader (none here).
    isTransient(mpi(2, { runtime: asNode(true) }), 'no-reconciler', /no reconciler leads/);
    assert.equal(mpi(2, { runtime: asNode(false) }).kind, 'admit');
    isTransient(mpi(3, { runtime: asNode(false) }), 'no-reconciler', /no reconciler leads/);
  });
});
