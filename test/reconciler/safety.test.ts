// canDeleteSafely: the JobSet suspended, every child Job suspended with no active pod, and no pod
// of the JobSet left (Terminating ones included).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canDeleteSafely } from '../../src/reconciler/safety.ts';
import type { Job, JobSet, Pod } from '../../src/reconciler/objects.ts';
import { job, pod, trainerJobSet } from './fixtures.ts';

const suspended = (): JobSet => trainerJobSet('torch1');
const running = (): JobSet => ({ ...suspended(), spec: { ...suspended().spec, suspend: false } });

const rows: { name: string; jobSet: JobSet; jobs: Job[]; pods: Pod[]; safe: boolean; reasons?: RegExp[] }[] = [
  { name: 'suspended, Jobs suspended and idle, no pods', jobSet: suspended(), jobs: [job('torch1-node-0')], pods: [], safe: true },
  { name: 'suspended, no Jobs yet', jobSet: suspended(), jobs: [], pods: [], safe: true },
  { name: 'the JobSet is not suspended', jobSet: running(), jobs: [job('torch1-node-0')], pods: [], safe: false, reasons: [/JobSet torch1 is not suspended/] },
  { name: 'a Job is not suspended (JobSet status lags)', jobSet: suspended(), jobs: [job('torch1-node-0', { spec: { suspend: false } })], pods: [], safe: false, reasons: [/Job torch1-node-0 is not suspended/] },
  { name: 'a suspended Job still counts active pods', jobSet: suspended(), jobs: [job('torch1-node-0', { status: { active: 2 } })], pods: [], safe: false, reasons: [/Job torch1-node-0 has 2 active pods/] },
  { name: 'a Pending pod (no nodes: still active)', jobSet: suspended(), jobs: [job('torch1-node-0')], pods: [pod('torch1-node-0-0-abcde')], safe: false, reasons: [/1 pod of the JobSet still exists: torch1-node-0-0-abcde/] },
  { name: 'a Terminating pod (held by a finalizer)', jobSet: suspended(), jobs: [job('torch1-node-0')], pods: [pod('p', 'Running', true)], safe: false, reasons: [/1 pod of the JobSet still exists \(1 terminating\): p/] },
  { name: 'a Running pod', jobSet: suspended(), jobs: [job('torch1-node-0')], pods: [pod('p', 'Running')], safe: false },
  { name: 'a Failed pod (its containers may still run on a lost node)', jobSet: suspended(), jobs: [job('torch1-node-0')], pods: [pod('p', 'Failed')], safe: false },
  { name: 'a Succeeded pod (e.g. a finished initializer) runs nothing', jobSet: suspended(), jobs: [job('torch1-node-0')], pods: [pod('init', 'Succeeded')], safe: true },
  { name: 'a Succeeded pod being deleted still blocks', jobSet: suspended(), jobs: [job('torch1-node-0')], pods: [pod('init', 'Succeeded', true)], safe: false },
  {
    name: 'every reason is listed, pods summarised',
    jobSet: running(),
    jobs: [job('a', { spec: { suspend: false }, status: { active: 1 } })],
    pods: [pod('p1'), pod('p2'), pod('p3'), pod('p4', 'Running', true)],
    safe: false,
    reasons: [/not suspended/, /Job a is not suspended/, /Job a has 1 active pod$/, /4 pods of the JobSet still exist \(1 terminating\): p1, p2, p3 and 1 more/],
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
