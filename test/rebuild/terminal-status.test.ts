// Complete, Failed and jobsStatus in standalone mode, as Trainer v2.3.0's jobset plugin copies them
// from the JobSet (plugins/jobset/jobset.go Status; trainjob_controller.go removeFailedCondition).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Condition, JobSet, TrainJob } from '../../src/api/objects.ts';
import { statusApplyConfiguration, statusStep } from '../../src/rebuild/status.ts';
import { jobsStatusOf, terminalConditions } from '../../src/rebuild/terminal-status.ts';
import { torch1, trainerJobSet } from './fixtures.ts';

const NOW = '2026-12-01T00:00:00Z';
const cond = (
  type: string,
  status: Condition['status'],
  reason: string,
  extra: Partial<Condition> = {},
): Condition => ({
  type,
  status,
  reason,
  message: `${reason} message`,
  lastTransitionTime: 't-js',
  ...extra,
});
const withJobSetStatus = (status: Record<string, unknown>): JobSet => ({ ...trainerJobSet('torch1'), status });
const withStatus = (t: TrainJob, status: TrainJob['status']) => ((t.status = status), t);
const rjs = (name: string, n: Partial<Record<'ready' | 'succeeded' | 'failed' | 'active' | 'suspended', number>>) => ({
  name,
  ready: 0,
  succeeded: 0,
  failed: 0,
  active: 0,
  suspended: 0,
  ...n,
});

describe('terminalConditions', () => {
  it("Complete: the JobSet's Completed (True) copied, type renamed, its reason, message, time and generation", () => {
    const js = withJobSetStatus({
      conditions: [cond('Completed', 'True', 'AllJobsCompleted', { observedGeneration: 3 })],
    });
    assert.deepEqual(terminalConditions(torch1(), js, NOW, false), [
      {
        type: 'Complete',
        status: 'True',
        reason: 'AllJobsCompleted',
        message: 'AllJobsCompleted message',
        lastTransitionTime: 't-js',
        observedGeneration: 3,
      },
    ]);
  });

  it("Failed: the JobSet's Failed (True) copied; a Completed or Failed that is not True is not", () => {
    const js = withJobSetStatus({
      conditions: [cond('Failed', 'True', 'FailedJobs'), cond('Completed', 'False', 'x')],
    });
    assert.deepEqual(
      terminalConditions(torch1(), js, NOW, false).map((c) => [c.type, c.status, c.reason]),
      [['Failed', 'True', 'FailedJobs']],
    );
    assert.deepEqual(
      terminalConditions(torch1(), withJobSetStatus({ conditions: [cond('Failed', 'False', 'x')] }), NOW, false),
      [],
    );
  });

  it('Complete stays once set (JobSet gone, TTL); Failed goes unless DeadlineExceeded (removeFailedCondition)', () => {
    const complete = cond('Complete', 'True', 'AllJobsCompleted', { lastTransitionTime: 't0' });
    assert.deepEqual(terminalConditions(withStatus(torch1(), { conditions: [complete] }), undefined, NOW, false), [
      complete,
    ]);
    const failed = cond('Failed', 'True', 'FailedJobs');
    assert.deepEqual(
      terminalConditions(withStatus(torch1(), { conditions: [failed] }), trainerJobSet('torch1'), NOW, false),
      [],
    );
    const deadline = cond('Failed', 'True', 'DeadlineExceeded');
    assert.deepEqual(terminalConditions(withStatus(torch1(), { conditions: [deadline] }), undefined, NOW, false), [
      deadline,
    ]);
  });

  it('an existing Complete keeps its transition time (SetStatusCondition: same status)', () => {
    const tj = withStatus(torch1(), {
      conditions: [cond('Complete', 'True', 'AllJobsCompleted', { lastTransitionTime: 't0' })],
    });
    const js = withJobSetStatus({ conditions: [cond('Completed', 'True', 'AllJobsCompleted')] });
    assert.equal(terminalConditions(tj, js, NOW, false)[0].lastTransitionTime, 't0');
  });
});

describe('jobsStatusOf', () => {
  it("one entry per replicatedJobsStatus; none when the JobSet lists none; the TrainJob's own without a JobSet", () => {
    const js = withJobSetStatus({ replicatedJobsStatus: [rjs('node', { succeeded: 2 })] });
    assert.deepEqual(jobsStatusOf(torch1(), js), [rjs('node', { succeeded: 2 })]);
    assert.equal(jobsStatusOf(torch1(), trainerJobSet('torch1')), undefined);
    const tj = withStatus(torch1(), { jobsStatus: [rjs('node', { active: 1 })] });
    assert.deepEqual(jobsStatusOf(tj, undefined), [rjs('node', { active: 1 })]);
  });
});

describe('statusStep (standalone)', () => {
  const finished = withJobSetStatus({
    conditions: [cond('Completed', 'True', 'AllJobsCompleted')],
    replicatedJobsStatus: [rjs('node', { succeeded: 1 })],
  });
  const suspended = cond('Suspended', 'False', 'Resumed', { message: 'TrainJob is resumed', lastTransitionTime: 't1' });

  it('a finished JobSet: Complete and jobsStatus are applied; once the TrainJob says so, nothing is', () => {
    const tj = withStatus(
      torch1(1, (t) => (t.spec!.suspend = false)),
      { conditions: [suspended] },
    );
    const step = statusStep(tj, finished, NOW, false);
    assert.deepEqual(
      step?.conditions.map((c) => c.type),
      ['Suspended', 'Complete'],
    );
    assert.deepEqual(step?.jobsStatus, [rjs('node', { succeeded: 1 })]);
    assert.deepEqual(statusApplyConfiguration(tj, step!.conditions, step!.jobsStatus).status, {
      conditions: step!.conditions,
      jobsStatus: [rjs('node', { succeeded: 1 })],
    });
    const after = withStatus(structuredClone(tj), { conditions: step!.conditions, jobsStatus: step!.jobsStatus });
    assert.equal(statusStep(after, finished, NOW, false), undefined);
  });

  it('jobsStatus that changes is applied; a Failed the JobSet no longer has is left out (the apply removes it)', () => {
    const tj = withStatus(
      torch1(1, (t) => (t.spec!.suspend = false)),
      {
        conditions: [suspended, cond('Failed', 'True', 'FailedJobs')],
        jobsStatus: [rjs('node', { active: 1 })],
      },
    );
    const js = withJobSetStatus({ replicatedJobsStatus: [rjs('node', { active: 2 })] });
    const step = statusStep(tj, js, NOW, false);
    assert.deepEqual(
      step?.conditions.map((c) => c.type),
      ['Suspended'],
    );
    assert.deepEqual(step?.jobsStatus, [rjs('node', { active: 2 })]);
  });
});

// Trainer's main line keeps a Failed the JobSet no longer has (kubeflow/trainer#3891: no
// removeFailedCondition); standalone mode under main writes the status as main would.
describe('terminalConditions per Trainer line', () => {
  it('a Failed (FailedJobs) the JobSet no longer has: dropped on v2.3.0, kept where Failed is terminal', () => {
    const failed = cond('Failed', 'True', 'FailedJobs');
    const tj = withStatus(torch1(1), { conditions: [failed] });
    const js = withJobSetStatus({});
    assert.deepEqual(terminalConditions(tj, js, NOW, false), []);
    assert.deepEqual(terminalConditions(tj, js, NOW, true), [failed]);
  });
});
