// What `settle` does with each TrainJob before an uninstall (src/rebuild/settle-plan.ts), as a table
// over the reconciler's report states, with the real Trainer-built torch and MPI JobSets.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REPORT_ANNOTATION } from '../../src/api/names.ts';
import type { TrainJob } from '../../src/api/objects.ts';
import { encodeReport, type RebuildReport } from '../../src/rebuild/report.ts';
import {
  builtCount,
  KUEUE_QUEUE_LABEL,
  mayContinue,
  revertPlan,
  settleAction,
  withWrite,
  type RevertWrite,
} from '../../src/rebuild/settle-plan.ts';
import { torch1, trainJob, trainerJobSet, upstreamRuntime } from './fixtures.ts';

const torch = upstreamRuntime('torch');
const reported = (t: TrainJob, r: RebuildReport): TrainJob => ({
  ...t,
  metadata: { ...t.metadata, annotations: { [REPORT_ANNOTATION]: encodeReport(r) } },
});
const blocked = (n: number): RebuildReport => ({
  state: 'Blocked',
  numNodes: n,
  replicatedJob: 'node',
  parallelism: { from: 1, to: n },
  reason: 'JobSet torch1 could not be re-created',
});

describe('settleAction', () => {
  it('no report, or Rebuilt: settled', () => {
    assert.equal(
      settleAction({ trainJob: torch1(2), jobSet: trainerJobSet('torch1'), runtime: torch, revertWaiting: false }).kind,
      'settled',
    );
    const rebuilt = reported(torch1(2), { state: 'Rebuilt', numNodes: 2, parallelism: { from: 1, to: 2 } });
    assert.equal(
      settleAction({ trainJob: rebuilt, jobSet: trainerJobSet('torch1'), runtime: torch, revertWaiting: false }).kind,
      'settled',
    );
  });
  it('Unsupported (the reconciler never acted on it): settled, an uninstall takes nothing from it', () => {
    const unsupported = reported(torch1(2), { state: 'Unsupported', reason: 'no trainer job' });
    assert.equal(
      settleAction({ trainJob: unsupported, jobSet: trainerJobSet('torch1'), runtime: torch, revertWaiting: true })
        .kind,
      'settled',
    );
  });
  it('Blocked: reverted to the count the JobSet was built with', () => {
    const action = settleAction({
      trainJob: reported(torch1(2), blocked(2)),
      jobSet: trainerJobSet('torch1'),
      runtime: torch,
      revertWaiting: false,
    });
    assert.deepEqual(action.kind === 'revert' && action.numNodes, 1);
  });
  it('Blocked, but the JobSet already has the count (the user set it back): settled', () => {
    assert.equal(
      settleAction({
        trainJob: reported(torch1(1), blocked(2)),
        jobSet: trainerJobSet('torch1'),
        runtime: torch,
        revertWaiting: false,
      }).kind,
      'settled',
    );
  });
  it('Rebuilding: waited for, with or without its JobSet', () => {
    const rebuilding = reported(torch1(2), {
      state: 'Rebuilding',
      numNodes: 2,
      parallelism: { from: 1, to: 2 },
      replacedJobSetUID: 'x',
    });
    assert.equal(
      settleAction({ trainJob: rebuilding, jobSet: undefined, runtime: torch, revertWaiting: true }).kind,
      'wait',
    );
    assert.equal(
      settleAction({ trainJob: rebuilding, jobSet: trainerJobSet('torch1'), runtime: torch, revertWaiting: true }).kind,
      'wait',
    );
  });
  it('Waiting: waited for, or reverted with --revert', () => {
    const waiting = reported(torch1(2), {
      state: 'Waiting',
      numNodes: 2,
      parallelism: { from: 1, to: 2 },
      reason: 'pods run',
    });
    assert.equal(
      settleAction({ trainJob: waiting, jobSet: trainerJobSet('torch1'), runtime: torch, revertWaiting: false }).kind,
      'wait',
    );
    assert.equal(
      settleAction({ trainJob: waiting, jobSet: trainerJobSet('torch1'), runtime: torch, revertWaiting: true }).kind,
      'revert',
    );
  });
  it('no runtime readable: left for a person, with the reason', () => {
    const action = settleAction({
      trainJob: reported(torch1(2), blocked(2)),
      jobSet: trainerJobSet('torch1'),
      runtime: undefined,
      revertWaiting: false,
    });
    assert.equal(action.kind, 'left');
  });
  it('MPI with the launcher as a node: the count whose build leaves the node job as it is', () => {
    const deepspeed = upstreamRuntime('deepspeed');
    const tj = reported(trainJob('mpi', { trainer: { numNodes: 5 } }, 'deepspeed-distributed'), {
      ...blocked(5),
      parallelism: { from: 1, to: 4 },
    });
    const n = builtCount(tj, deepspeed, trainerJobSet('mpi'));
    assert.ok(n === 1 || n === 2, String(n));
  });
  it('a report that is not one (edited by hand) is no report', () => {
    const t = torch1(2);
    t.metadata.annotations = { [REPORT_ANNOTATION]: '{"state":"Nonsense"' };
    assert.equal(
      settleAction({ trainJob: t, jobSet: trainerJobSet('torch1'), runtime: torch, revertWaiting: true }).kind,
      'settled',
    );
  });
});

describe('revertPlan: the updates that set numNodes back, leaving the job as the user had it', () => {
  const running = (labels?: Record<string, string>) =>
    torch1(2, (t) => {
      t.spec = { ...t.spec, suspend: false };
      if (labels) t.metadata.labels = labels;
    });
  const cases: [string, TrainJob, RevertWrite[], RegExp][] = [
    [
      'suspended: numNodes alone, and it stays suspended',
      torch1(2, (t) => (t.spec = { ...t.spec, suspend: true })),
      [{ numNodes: 1 }],
      /stays suspended/,
    ],
    [
      // The CRD's rule refuses numNodes alone on a running job (422): suspended in the same update,
      // then resumed with numNodes unchanged.
      'running: suspended and reverted in one update, then resumed',
      running(),
      [{ suspend: true, numNodes: 1 }, { suspend: false }],
      /runs again with 1 node.*restart from their last checkpoint/,
    ],
    [
      'running with suspend absent: the same',
      torch1(2, (t) => delete t.spec?.suspend),
      [{ suspend: true, numNodes: 1 }, { suspend: false }],
      /runs again/,
    ],
    [
      'running under Kueue: suspended and reverted in one update; never resumed by settle, Kueue resumes it',
      running({ [KUEUE_QUEUE_LABEL]: 'team-a' }),
      [{ suspend: true, numNodes: 1 }],
      /Kueue resumes it.*last checkpoint/,
    ],
  ];
  for (const [name, tj, writes, after] of cases)
    it(name, () => {
      const plan = revertPlan(tj, 1);
      assert.deepEqual(plan.writes, writes);
      assert.match(plan.after, after);
    });

  it('each write, applied to the job read, changes only what it names; every write but the first leaves numNodes alone', () => {
    const tj = running();
    const [first, second] = revertPlan(tj, 1).writes.map((w) => withWrite(tj, w));
    assert.deepEqual(first!.spec?.trainer, { ...tj.spec?.trainer, numNodes: 1 });
    assert.equal(first!.spec?.suspend, true);
    assert.equal(first!.metadata.resourceVersion, tj.metadata.resourceVersion, 'the resourceVersion read is tested');
    assert.equal(withWrite(first!, revertPlan(tj, 1).writes[1]!).spec?.trainer?.numNodes, 1);
    assert.equal(second!.spec?.suspend, false);
    assert.equal(tj.spec?.trainer?.numNodes, 2, 'the job read is not changed');
  });

  it('after a conflict on the resume: goes on only while the spec is the one written (same generation)', () => {
    const written = torch1(1, (t) => (t.metadata.generation = 4));
    const statusOnly = structuredClone(written);
    statusOnly.metadata.resourceVersion = '99';
    assert.equal(mayContinue(statusOnly, written), true);
    const userChanged = structuredClone(statusOnly);
    userChanged.metadata.generation = 5;
    assert.equal(mayContinue(userChanged, written), false);
    const replaced = structuredClone(statusOnly);
    replaced.metadata.uid = 'another';
    assert.equal(mayContinue(replaced, written), false);
  });
});
