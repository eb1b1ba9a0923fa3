// The scale's next step as a table: observed job, JobSet, pods, Kueue -> the step.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobSet, TrainJob } from '../../src/api/objects.ts';
import type { Observed, PodView, WorkloadView } from '../../src/plugin/observed.ts';
import { nextScaleStep, type ScalePlan } from '../../src/plugin/scale-step.ts';

const tj = (numNodes: number, suspend: boolean, extra: Partial<TrainJob> = {}): TrainJob => ({
  metadata: { name: 't', namespace: 'ns', uid: 'u1', ...extra.metadata },
  spec: { runtimeRef: { name: 'torch-distributed' }, suspend, trainer: { numNodes } },
  ...(extra.status ? { status: extra.status } : {}),
});
const js = (parallelism: number, deleting = false): JobSet => ({
  metadata: { name: 't', uid: 'js1', ...(deleting ? { deletionTimestamp: 'x' } : {}) },
  spec: {
    replicatedJobs: [
      {
        name: 'node',
        template: {
          metadata: { labels: { 'trainer.kubeflow.org/trainjob-ancestor-step': 'trainer' } },
          spec: { parallelism, completions: parallelism },
        },
      },
    ],
  },
});
const pod = (phase: string, nodeName?: string, deleting = false): PodView => ({
  name: 'p',
  phase,
  deleting,
  replicatedJob: 'node',
  ...(nodeName ? { nodeName } : {}),
});
const wl = (w: Partial<WorkloadView>): WorkloadView => ({ name: 'wl', active: true, admitted: false, ...w });

const obs = (trainJob: TrainJob, jobSet?: JobSet, pods: PodView[] = [], kueue?: WorkloadView[]): Observed => ({
  trainJob,
  ...(jobSet ? { jobSet } : {}),
  pods,
  ...(kueue ? { kueue: { queue: 'q', workloads: kueue } } : {}),
});
const to2: ScalePlan = { nodes: 2, resume: true, noResume: false };
const held2: ScalePlan = { nodes: 2, resume: false, noResume: true };
const found2: ScalePlan = { nodes: 2, resume: false, noResume: false };

describe('nextScaleStep', () => {
  const cases: [string, Observed, ScalePlan, unknown][] = [
    ['running at 1: pause', obs(tj(1, false), js(1), [pod('Running', 'n1')]), to2, { kind: 'pause' }],
    [
      'running under Kueue: one update that suspends and scales',
      obs(tj(1, false), js(1), [pod('Running', 'n1')], [wl({ admitted: true })]),
      to2,
      { kind: 'pause', numNodes: 2 },
    ],
    [
      'suspended, a pod terminating: wait',
      obs(tj(1, true), js(1), [pod('Running', 'n1', true)]),
      to2,
      { kind: 'wait', for: 'pods-gone', detail: '1 pod left (1 terminating)' },
    ],
    [
      'suspended, only a finished pod: set numNodes',
      obs(tj(1, true), js(1), [pod('Succeeded', 'n1')]),
      to2,
      { kind: 'set-nodes' },
    ],
    [
      'set, the JobSet still built for 1: wait for the rebuild, not resumed yet',
      obs(tj(2, true), js(1)),
      to2,
      { kind: 'wait', for: 'rebuild', detail: 'the JobSet is built for 1; the reconciler rebuilds it for 2' },
    ],
    [
      'set, the JobSet deleted: wait',
      obs(tj(2, true), undefined),
      to2,
      { kind: 'wait', for: 'rebuild', detail: 'the JobSet is being re-created' },
    ],
    ['set, rebuilt for 2: resume', obs(tj(2, true), js(2)), to2, { kind: 'resume' }],
    [
      'resumed, 1 of 2 pods on a node: wait',
      obs(tj(2, false), js(2), [pod('Running', 'n1'), pod('Pending')]),
      to2,
      { kind: 'wait', for: 'scheduled', detail: '1 of 2 pods scheduled' },
    ],
    [
      'resumed, both scheduled: done',
      obs(tj(2, false), js(2), [pod('Running', 'n1'), pod('Pending', 'n2')]),
      to2,
      { kind: 'done', held: false },
    ],
    ['--no-resume, rebuilt: done, held', obs(tj(2, true), js(2)), held2, { kind: 'done', held: true }],
    [
      'found paused (not resumed), rebuilt: done, not held',
      obs(tj(2, true), js(2)),
      found2,
      { kind: 'done', held: false },
    ],
    [
      'Kueue: suspended at 2, not admitted: wait with Kueue reason',
      obs(tj(2, true), js(2), [], [wl({ reason: 'Pending', message: "couldn't assign flavors" })]),
      to2,
      {
        kind: 'wait',
        for: 'admission',
        detail: "Kueue has not admitted Workload wl: Pending: couldn't assign flavors",
      },
    ],
    [
      'Kueue, Workload unreadable: wait, saying so',
      { ...obs(tj(2, true), js(2)), kueue: { queue: 'q', workloads: { unreadable: 'HTTP 403' } } },
      to2,
      {
        kind: 'wait',
        for: 'admission',
        detail: 'waiting for Kueue to admit the job (its Workload cannot be read: HTTP 403)',
      },
    ],
    [
      'Kueue --no-resume: an active Workload is deactivated first',
      obs(tj(1, false), js(1), [pod('Running', 'n1')], [wl({ admitted: true })]),
      held2,
      { kind: 'deactivate', workloads: ['wl'] },
    ],
    [
      'Kueue --no-resume: deactivated, wait until Kueue suspends',
      obs(tj(1, false), js(1), [pod('Running', 'n1')], [wl({ active: false })]),
      held2,
      { kind: 'wait', for: 'suspended', detail: 'Kueue suspends the job once its Workload is evicted' },
    ],
    [
      '--no-resume, running at 2 already: pause all the same',
      obs(tj(2, false), js(2), [pod('Running', 'n1'), pod('Running', 'n2')]),
      held2,
      { kind: 'pause' },
    ],
    [
      'Kueue --no-resume, at 2 already, deactivated: wait until Kueue suspends',
      obs(tj(2, false), js(2), [pod('Running', 'n1'), pod('Running', 'n2')], [wl({ active: false, admitted: true })]),
      held2,
      { kind: 'wait', for: 'suspended', detail: 'Kueue suspends the job once its Workload is evicted' },
    ],
    [
      'Kueue, the pause --no-resume held: numNodes set, the inactive Workload is activated (Kueue resumes the job)',
      obs(tj(2, true), js(2), [], [wl({ active: false, reason: 'InactiveWorkload' })]),
      to2,
      { kind: 'activate', workloads: ['wl'] },
    ],
    [
      'Kueue, that pause held: numNodes is set before the Workload is activated',
      obs(tj(1, true), js(1), [], [wl({ active: false })]),
      to2,
      { kind: 'set-nodes' },
    ],
    [
      'Kueue, found paused (an inactive Workload, not resumed): done once numNodes is set, the Workload left inactive',
      obs(tj(2, true), js(1), [], [wl({ active: false })]),
      found2,
      { kind: 'done', held: false },
    ],
    [
      'a Complete job: refused',
      obs(
        tj(1, false, {
          status: {
            conditions: [{ type: 'Complete', status: 'True', reason: '', message: '', lastTransitionTime: '' }],
          },
        }),
        js(1),
      ),
      to2,
      { kind: 'refuse', why: 'the TrainJob is finished (it is Complete): Trainer never runs it again' },
    ],
    [
      'a Complete=False condition does not finish it (by status, not by presence)',
      obs(
        tj(1, false, {
          status: {
            conditions: [{ type: 'Complete', status: 'False', reason: '', message: '', lastTransitionTime: '' }],
          },
        }),
        js(1),
      ),
      to2,
      { kind: 'pause' },
    ],
    [
      'the reconciler reports Blocked for this count',
      obs(
        tj(2, true, {
          metadata: {
            annotations: {
              'trainjob-webhook.kubeflow.org/jobset-rebuild': '{"state":"Blocked","numNodes":2,"reason":"a claim"}',
            },
          },
        }),
        js(1),
      ),
      to2,
      { kind: 'blocked', why: 'Blocked: a claim' },
    ],
    [
      'a report reason with terminal controls: written out',
      obs(
        tj(2, true, {
          metadata: {
            annotations: {
              'trainjob-webhook.kubeflow.org/jobset-rebuild': JSON.stringify({
                state: 'Blocked',
                numNodes: 2,
                reason: 'x\u001b]0;pwned\u0007\u001b[2J',
              }),
            },
          },
        }),
        js(1),
      ),
      to2,
      { kind: 'blocked', why: 'Blocked: x^[]0;pwned^G^[[2J' },
    ],
  ];
  for (const [name, o, plan, want] of cases)
    it(name, () => {
      assert.deepEqual(nextScaleStep(o, plan), want);
    });
});
