// What the webhook says about the JobSet's pods when it admits a numNodes change, as a pure
// function of the read of the JobSet's Jobs. It only ever warns: nothing here refuses.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  jobSetPodsGeneralWarnings,
  jobSetPodsWarnings,
  podsOfJobs,
  type JobSetRead,
} from '../../../src/scale/reads/jobset-pods.ts';

const job = (name: string, status: Record<string, unknown>) => ({ metadata: { name }, status });
const jobs = (...items: unknown[]): JobSetRead => ({ kind: 'read', jobs: items });

const cases: { name: string; read: JobSetRead; warning: RegExp | undefined }[] = [
  { name: 'no Jobs (no JobSet, or not yet created): nothing to say', read: jobs(), warning: undefined },
  {
    name: 'Jobs with nothing active or terminating: nothing to say',
    read: jobs(job('a-node-0', { active: 0, succeeded: 2 })),
    warning: undefined,
  },
  {
    name: 'one Job with two running pods: two pods, not one Job',
    read: jobs(job('ml-node-0', { active: 2, ready: 2 })),
    warning:
      /^JobSet ns\/job still has 2 pods \(2 pending or running; Job ml-node-0: 2 active\): the rebuild waits until none of its pods runs or is terminating, and its pods stop once the JobSet is suspended$/,
  },
  {
    name: 'terminating pods count too (Job status.terminating)',
    read: jobs(job('ml-node-0', { active: 0, terminating: 3 }), job('ml-launcher-0', { active: 1 })),
    warning:
      /still has 4 pods \(1 pending or running, 3 terminating; Job ml-node-0: 3 terminating; Job ml-launcher-0: 1 active\)/,
  },
  { name: 'one pod', read: jobs(job('ml-node-0', { active: 1 })), warning: /still has 1 pod \(/ },
  {
    name: 'many Jobs: the first three are named',
    read: jobs(...['a', 'b', 'c', 'd', 'e'].map((n) => job(n, { active: 1 }))),
    warning:
      /still has 5 pods \(5 pending or running; Job a: 1 active; Job b: 1 active; Job c: 1 active; and 2 more Jobs\)/,
  },
  {
    name: 'read failed: admitted with a warning (fail open)',
    read: { kind: 'failed', error: 'reading its Jobs failed: HTTP 403: forbidden' },
    warning:
      /^JobSet ns\/job: its pods could not be counted \(reading its Jobs failed: HTTP 403: forbidden\); the change is admitted all the same/,
  },
  {
    name: 'read timed out: the same',
    read: { kind: 'failed', error: 'reading its Jobs timed out after 2000 ms' },
    warning: /could not be counted \(reading its Jobs timed out after 2000 ms\)/,
  },
  { name: 'hostile list shapes count nothing', read: { kind: 'read', jobs: 'nope' }, warning: undefined },
  {
    name: 'hostile entries are skipped, good ones counted',
    read: jobs(null, 7, [], { status: 'x' }, { status: { active: 'x', terminating: -2 } }, job('ok', { active: 1 })),
    warning: /still has 1 pod \(1 pending or running; Job ok: 1 active\)/,
  },
];

describe('JobSet pods (advisory)', () => {
  for (const c of cases) {
    it(c.name, () => {
      const warnings = jobSetPodsWarnings(c.read, 'ns/job');
      if (!c.warning) return assert.deepEqual(warnings, []);
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0], c.warning);
    });
  }
  it('counts pods from each Job status (active + terminating), not Jobs', () => {
    assert.deepEqual(
      podsOfJobs([job('n', { active: 2, terminating: 1, ready: 2 }), { status: { active: 9007199254740993n } }]),
      [{ job: 'n', active: 2, terminating: 1 }],
    );
  });
  it('in general words (a caller not known to be the API server): the TrainJob and how to see its pods, no Job and no count', () => {
    const busy = jobSetPodsGeneralWarnings(
      { kind: 'read', jobs: [job('job-node-0', { active: 7, terminating: 5 })] },
      'ns',
      'job',
    );
    assert.deepEqual(busy, [
      "TrainJob ns/job: its JobSet's pods have not all stopped yet: the rebuild waits until none of its pods runs or is terminating, and its pods stop once the JobSet is suspended; `kubectl -n ns get pods -l jobset.sigs.k8s.io/jobset-name=job` shows them",
    ]);
    const failed = jobSetPodsGeneralWarnings(
      { kind: 'failed', error: 'HTTP 403: jobs.batch is forbidden' },
      'ns',
      'job',
    );
    assert.equal(failed.length, 1);
    assert.match(
      failed[0],
      /^TrainJob ns\/job: the pods of its JobSet could not be counted \(the webhook's log says why\); the change is admitted all the same/,
    );
    assert.doesNotMatch(failed[0], /403|forbidden/);
    assert.deepEqual(jobSetPodsGeneralWarnings({ kind: 'read', jobs: [job('idle', {})] }, 'ns', 'job'), []);
  });
});
