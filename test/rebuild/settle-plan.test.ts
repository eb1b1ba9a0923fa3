// What `settle` does with each TrainJob before an uninstall (src/rebuild/settle-plan.ts), as a table
// over the reconciler's report states, with the real Trainer-built torch and MPI JobSets.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REPORT_ANNOTATION } from '../../src/api/names.ts';
import type { TrainJob } from '../../src/api/objects.ts';
import { encodeReport, type RebuildReport } from '../../src/rebuild/report.ts';
import { builtCount, settleAction } from '../../src/rebuild/settle-plan.ts';
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
