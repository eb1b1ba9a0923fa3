// canDeleteSafely: the JobSet suspended, every child Job stopped (suspended, or finished as JobSet's
// JobFinished reads it) with no active or terminating pod, and every pod of the JobSet terminal and
// not being deleted (Terminating ones block).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canDeleteSafely } from '../../src/rebuild/safety.ts';
import type { Job, JobSet, Pod } from '../../src/api/objects.ts';
import { job, pod, trainerJobSet } from './fixtures.ts';

const suspended = (): JobSet => trainerJobSet('torch1');
const running = (): JobSet => ({ ...suspended(), spec: { ...suspended().spec, suspend: false } });
const condition = (type: string, status = 'True') => ({ type, status, reason: 'r' });
/** A Job as JobSet leaves it once it finished: never suspended (JobSet suspends only active Jobs). */
const finished = (name: string, type: 'Complete' | 'Failed', status: Job['status'] = {}): Job =>
  job(name, {
    spec: { suspend: false },
    status: { active: 0, conditions: [condition('SuccessCriteriaMet'), condition(type)], ...status },
  });

const rows: { name: string; jobSet: JobSet; jobs: Job[]; pods: Pod[]; safe: boolean; reasons?: RegExp[] }[] = [
  {
    name: 'suspended, Jobs suspended and idle, no pods',
    jobSet: suspended(),
    jobs: [job('torch1-node-0')],
    pods: [],
    safe: true,
  },
  { name: 'suspended, no Jobs yet', jobSet: suspended(), jobs: [], pods: [], safe: true },
  {
    name: 'the JobSet is not suspended',
    jobSet: running(),
    jobs: [job('torch1-node-0')],
    pods: [],
    safe: false,
    reasons: [/JobSet torch1 is not suspended/],
  },
  {
    name: 'a Job is not suspended (JobSet status lags)',
    jobSet: suspended(),
    jobs: [job('torch1-node-0', { spec: { suspend: false } })],
    pods: [],
    safe: false,
    reasons: [/Job torch1-node-0 is neither suspended nor finished/],
  },
  {
    name: 'an unsuspended Job with no pod yet (it may start one any moment)',
    jobSet: suspended(),
    jobs: [job('torch1-node-0', { spec: { suspend: false }, status: { active: 0 } })],
    pods: [],
    safe: false,
  },
  {
    name: 'a suspended Job still counts active pods',
    jobSet: suspended(),
    jobs: [job('torch1-node-0', { status: { active: 2 } })],
    pods: [],
    safe: false,
    reasons: [/Job torch1-node-0 has 2 active pods/],
  },
  {
    name: 'a suspended Job still counts terminating pods',
    jobSet: suspended(),
    jobs: [job('torch1-node-0', { status: { active: 0, terminating: 1 } })],
    pods: [],
    safe: false,
    reasons: [/Job torch1-node-0 has 1 terminating pod$/],
  },
  {
    name: 'a malformed terminating count',
    jobSet: suspended(),
    jobs: [job('torch1-node-0', { status: { active: 0, terminating: -1 } })],
    pods: [],
    safe: false,
    reasons: [/status\.terminating is not a non-negative integer/],
  },
  // Issue 8: a finished initializer keeps suspend: false; its pods are Succeeded.
  {
    name: 'a Complete initializer Job (unsuspended) and its Succeeded pod, the trainer Job suspended',
    jobSet: suspended(),
    jobs: [finished('llama-cache-dataset-initializer-0', 'Complete'), job('llama-cache-node-0')],
    pods: [pod('llama-cache-dataset-initializer-0-0-x', 'Succeeded')],
    safe: true,
  },
  {
    name: 'a Failed Job (unsuspended) and its Failed pods',
    jobSet: suspended(),
    jobs: [finished('a', 'Failed')],
    pods: [pod('a-0', 'Failed'), pod('a-1', 'Failed')],
    safe: true,
  },
  {
    name: 'a Complete condition that is not True does not finish a Job',
    jobSet: suspended(),
    jobs: [job('a', { spec: { suspend: false }, status: { conditions: [condition('Complete', 'False')] } })],
    pods: [],
    safe: false,
  },
  {
    name: 'an interim SuccessCriteriaMet/FailureTarget condition does not finish a Job',
    jobSet: suspended(),
    jobs: [
      job('a', {
        spec: { suspend: false },
        status: { conditions: [condition('SuccessCriteriaMet'), condition('FailureTarget')] },
      }),
    ],
    pods: [],
    safe: false,
  },
  {
    name: 'malformed conditions do not finish a Job',
    jobSet: suspended(),
    jobs: [job('a', { spec: { suspend: false }, status: { conditions: 'Complete' as never } })],
    pods: [],
    safe: false,
  },
  {
    name: 'a finished Job still counting an active pod',
    jobSet: suspended(),
    jobs: [finished('a', 'Complete', { active: 1 })],
    pods: [],
    safe: false,
    reasons: [/Job a has 1 active pod$/],
  },
  {
    name: 'a finished Job whose pod still runs (pods are read live)',
    jobSet: suspended(),
    jobs: [finished('a', 'Complete')],
    pods: [pod('a-0', 'Running')],
    safe: false,
  },
  {
    name: 'a Pending pod (no nodes: still active)',
    jobSet: suspended(),
    jobs: [job('torch1-node-0')],
    pods: [pod('torch1-node-0-0-abcde')],
    safe: false,
    reasons: [/1 pod of the JobSet still exists: torch1-node-0-0-abcde/],
  },
  {
    name: 'a Terminating pod (held by a finalizer)',
    jobSet: suspended(),
    jobs: [job('torch1-node-0')],
    pods: [pod('p', 'Running', true)],
    safe: false,
    reasons: [/1 pod of the JobSet still exists \(1 terminating\): p/],
  },
  {
    name: 'a Running pod',
    jobSet: suspended(),
    jobs: [job('torch1-node-0')],
    pods: [pod('p', 'Running')],
    safe: false,
  },
  {
    name: 'an Unknown pod',
    jobSet: suspended(),
    jobs: [job('torch1-node-0')],
    pods: [pod('p', 'Unknown')],
    safe: false,
  },
  {
    name: 'a pod with no phase',
    jobSet: suspended(),
    jobs: [job('torch1-node-0')],
    pods: [{ metadata: { name: 'p' } }],
    safe: false,
  },
  {
    name: 'a Failed pod runs nothing (kubelet, or the pod GC on a deleted node)',
    jobSet: suspended(),
    jobs: [job('torch1-node-0')],
    pods: [pod('p', 'Failed')],
    safe: true,
  },
  {
    name: 'a Succeeded pod (e.g. a finished initializer) runs nothing',
    jobSet: suspended(),
    jobs: [job('torch1-node-0')],
    pods: [pod('init', 'Succeeded')],
    safe: true,
  },
  {
    name: 'a Succeeded pod being deleted still blocks until it is gone',
    jobSet: suspended(),
    jobs: [job('torch1-node-0')],
    pods: [pod('init', 'Succeeded', true)],
    safe: false,
    reasons: [/1 pod of the JobSet still exists \(1 terminating\): init/],
  },
  {
    name: 'a Failed pod being deleted (pod GC, job-tracking finalizer) still blocks until it is gone',
    jobSet: suspended(),
    jobs: [job('torch1-node-0')],
    pods: [pod('p', 'Failed', true)],
    safe: false,
  },
  {
    name: 'every reason is listed, pods summarised',
    jobSet: running(),
    jobs: [job('a', { spec: { suspend: false }, status: { active: 1 } })],
    pods: [pod('p1'), pod('p2'), pod('p3'), pod('p4', 'Running', true)],
    safe: false,
    reasons: [
      /not suspended/,
      /Job a is neither suspended nor finished/,
      /Job a has 1 active pod$/,
      /4 pods of the JobSet still exist \(1 terminating\): p1, p2, p3 and 1 more/,
    ],
  },
];

describe('canDeleteSafely', () => {
  for (const row of rows) {
    it(`${row.name}: ${row.safe ? 'safe' : 'not safe'}`, () => {
      const got = canDeleteSafely(row.jobSet, row.jobs, row.pods);
      assert.equal(got.safe, row.safe, JSON.stringify(got));
      if (!got.safe && row.reasons) {
        assert.equal(got.reasons.length, row.reasons.length, got.reasons.join('\n'));
        row.reasons.forEach((re, i) => assert.match(got.reasons[i], re));
      }
    });
  }
});
